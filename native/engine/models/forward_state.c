/*
 * forward_state.c — the per-context state of a forward pass: KV cache and
 * activation buffers sized from the model and the context params.
 */
#include "models/transformer.h"

#include "compute/attention.h"
#include "compute/matmul.h"
#include "models/blocks.h"
#include "models/moe.h"

#include <stdlib.h>
#include <string.h>

/* a * b floats, refusing overflow (0 then). */
static size_t floats(int64_t a, int64_t b) {
    if (a <= 0 || b <= 0) return 0;
    if ((uint64_t)a > SIZE_MAX / sizeof(float) / (uint64_t)b) return 0;
    return (size_t)a * (size_t)b;
}

static adil_status alloc_floats(float **out, int64_t a, int64_t b, const char *what) {
    size_t n = floats(a, b);
    *out = n ? malloc(n * sizeof(float)) : NULL;
    if (!*out)
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "context: cannot allocate %s (%lld x %lld floats)", what,
                         (long long)a, (long long)b);
    return ADIL_OK;
}

/* The most scratch any matrix product of a batch needs. */
static size_t matmul_scratch(const adil_transformer *m, int64_t n_batch) {
    const adil_mm_group head = {.n = 1, .w = {&m->output}, .y = {NULL}};
    const size_t blocks = adil_blocks_scratch_size(m, n_batch);
    const size_t moe = adil_moe_scratch_size(m, n_batch);
    const size_t out = adil_matmul_group_scratch_size(&head, n_batch);
    const size_t most = blocks > out ? blocks : out;
    return moe > most ? moe : most;
}

/* An activation buffer of a forward pass: where it goes and its shape. */
typedef struct fw_buffer {
    float **ptr;
    int64_t rows, cols;
    const char *what;
} fw_buffer;

#define FW_BUFFERS (12 + 2 * ADIL_ROPE_TABLES + 5)

/* The activation buffers for `m` with n_ctx positions, batches of n_batch
 * and nth threads: the one list that sizing and allocation both read.
 * Returns how many there are (the MoE ones only with experts). */
static int fw_buffers(adil_forward *fw, const adil_hparams *hp, int64_t n_ctx, int64_t n_batch, int64_t nth,
                      fw_buffer out[FW_BUFFERS]) {
    const int64_t half_rot = hp->n_rot / 2 > 0 ? hp->n_rot / 2 : 1;
    int n = 0;
    out[n++] = (fw_buffer){&fw->x, n_batch, hp->n_embd, "x"};
    out[n++] = (fw_buffer){&fw->xb, n_batch, hp->n_embd, "xb"};
    out[n++] = (fw_buffer){&fw->xb2, n_batch, hp->n_embd, "xb2"};
    out[n++] = (fw_buffer){&fw->q, n_batch, hp->n_head * hp->head_dim, "q"};
    out[n++] = (fw_buffer){&fw->k, n_batch, hp->n_head_kv * hp->head_dim, "k"};
    out[n++] = (fw_buffer){&fw->v, n_batch, hp->n_head_kv * hp->head_dim_v, "v"};
    out[n++] = (fw_buffer){&fw->att, n_batch, hp->n_head * hp->head_dim_v, "att"};
    out[n++] = (fw_buffer){&fw->scores, nth * ADIL_ATT_MAX_ROWS, n_ctx, "scores"};
    out[n++] = (fw_buffer){&fw->att_parts, hp->n_head * (n_ctx / ADIL_ATT_PART + 2), ADIL_ATT_PART_FLOATS(hp),
                           "attention parts"};
    out[n++] = (fw_buffer){&fw->att_part_rows, nth * ADIL_ATT_MAX_ROWS, ADIL_ATT_PART_FLOATS(hp),
                           "attention part rows"};
    out[n++] = (fw_buffer){&fw->hb, n_batch, hp->n_ff, "hb"};
    out[n++] = (fw_buffer){&fw->hb2, n_batch, hp->n_ff, "hb2"};
    for (int i = 0; i < ADIL_ROPE_TABLES; i++) {
        out[n++] = (fw_buffer){&fw->rope[i].cs, n_batch, half_rot, "rope cos"};
        out[n++] = (fw_buffer){&fw->rope[i].sn, n_batch, half_rot, "rope sin"};
    }
    if (hp->n_expert > 0) {
        const int64_t A = n_batch * hp->n_expert_used; /* (token, slot) assignments */
        out[n++] = (fw_buffer){&fw->moe_logits, n_batch, hp->n_expert, "moe logits"};
        out[n++] = (fw_buffer){&fw->moe_w, n_batch, hp->n_expert_used, "moe weights"};
        out[n++] = (fw_buffer){&fw->moe_h, A, hp->n_ff_exp, "moe gate"};
        out[n++] = (fw_buffer){&fw->moe_h2, A, hp->n_ff_exp, "moe up"};
        out[n++] = (fw_buffer){&fw->moe_y, A, hp->n_embd, "moe outputs"};
    }
    return n;
}

/* int32s of fw->moe_ids: expert, row and token of each assignment, and the
 * per-expert offsets (0 without experts). */
static size_t moe_ints(const adil_hparams *hp, int64_t n_batch) {
    if (hp->n_expert <= 0) return 0;
    return 3 * floats(n_batch, hp->n_expert_used) + (size_t)hp->n_expert + 1;
}

/* a + b, saturating at UINT64_MAX (the "does not fit" of a byte count). */
static uint64_t add_bytes(uint64_t a, uint64_t b) { return a > UINT64_MAX - b ? UINT64_MAX : a + b; }

/* The KV cache's shape for m (each local layer's window into the returned
 * array, which the caller frees); NULL when out of memory. */
static int64_t *kv_shape(const adil_transformer *m, adil_kv_opts kv, int64_t n_ctx, int64_t n_batch,
                         adil_kv_shape *shape) {
    const adil_hparams *hp = &m->hp;
    int64_t *window = malloc((size_t)(hp->n_layer > 0 ? hp->n_layer : 1) * sizeof *window);
    for (int64_t il = 0; window && il < hp->n_layer; il++)
        window[il] = adil_layer_is_local(hp, il) ? hp->sliding_window : 0;
    *shape = (adil_kv_shape){.type = kv.type,
                             .n_layer = hp->n_layer,
                             .n_ctx = n_ctx,
                             .n_batch = n_batch,
                             .k_width = hp->n_head_kv * hp->head_dim,
                             .v_width = hp->n_head_kv * hp->head_dim_v,
                             .window = window,
                             .ring = kv.ring};
    return window;
}

uint64_t adil_forward_kv_bytes(const adil_transformer *m, adil_kv_opts kv, int64_t n_ctx, int64_t n_batch) {
    adil_kv_shape shape;
    int64_t *window = kv_shape(m, kv, n_ctx, n_batch, &shape);
    const uint64_t bytes = window ? adil_kv_cache_bytes(&shape) : UINT64_MAX;
    free(window);
    return bytes;
}

uint64_t adil_forward_bytes(const adil_transformer *m, adil_kv_opts kv, int64_t n_ctx, int64_t n_batch,
                            int nth) {
    const adil_hparams *hp = &m->hp;
    uint64_t total = adil_forward_kv_bytes(m, kv, n_ctx, n_batch);
    adil_forward fw;
    fw_buffer bufs[FW_BUFFERS];
    const int n_bufs = fw_buffers(&fw, hp, n_ctx, n_batch, nth, bufs);
    for (int i = 0; i < n_bufs; i++) {
        const size_t n = floats(bufs[i].rows, bufs[i].cols);
        total = add_bytes(total, n ? n * sizeof(float) : UINT64_MAX);
    }
    total = add_bytes(total, moe_ints(hp, n_batch) * sizeof(int32_t));
    return add_bytes(total, matmul_scratch(m, n_batch));
}

adil_status adil_forward_init(adil_forward *fw, const adil_transformer *m, adil_kv_opts kv, int64_t n_ctx,
                              int64_t n_batch, adil_pool *pool) {
    const adil_hparams *hp = &m->hp;
    memset(fw, 0, sizeof *fw);
    fw->pool = pool;
    fw->n_batch = n_batch;
    adil_kv_shape shape;
    int64_t *window = kv_shape(m, kv, n_ctx, n_batch, &shape);
    adil_status st = window ? adil_kv_cache_init(&fw->kv, &shape)
                            : adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "context: out of memory");
    free(window);
    fw_buffer bufs[FW_BUFFERS];
    const int n_bufs = fw_buffers(fw, hp, n_ctx, n_batch, adil_pool_n_threads(pool), bufs);
    for (int i = 0; st == ADIL_OK && i < n_bufs; i++)
        st = alloc_floats(bufs[i].ptr, bufs[i].rows, bufs[i].cols, bufs[i].what);
    const size_t n_ints = moe_ints(hp, n_batch);
    if (st == ADIL_OK && n_ints > 0 && !(fw->moe_ids = malloc(n_ints * sizeof(int32_t))))
        st = adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "context: cannot allocate %zu expert ids", n_ints);
    if (st == ADIL_OK) {
        fw->mm_scratch_size = matmul_scratch(m, n_batch);
        fw->mm_scratch = malloc(fw->mm_scratch_size ? fw->mm_scratch_size : 1);
        if (!fw->mm_scratch)
            st = adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "context: cannot allocate %zu bytes of matmul scratch",
                           fw->mm_scratch_size);
    }
    if (st != ADIL_OK) adil_forward_free(fw);
    return st;
}

void adil_forward_free(adil_forward *fw) {
    adil_kv_cache_free(&fw->kv);
    free(fw->x);
    free(fw->xb);
    free(fw->xb2);
    free(fw->q);
    free(fw->k);
    free(fw->v);
    free(fw->att);
    free(fw->scores);
    free(fw->att_parts);
    free(fw->att_part_rows);
    free(fw->hb);
    free(fw->hb2);
    free(fw->moe_logits);
    free(fw->moe_w);
    free(fw->moe_ids);
    free(fw->moe_h);
    free(fw->moe_h2);
    free(fw->moe_y);
    for (int i = 0; i < ADIL_ROPE_TABLES; i++) {
        free(fw->rope[i].cs);
        free(fw->rope[i].sn);
    }
    free(fw->mm_scratch);
    memset(fw, 0, sizeof *fw);
}
