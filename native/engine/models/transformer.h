/*
 * transformer.h — a decoder-only transformer as the architectures in this
 * folder describe it: hyperparameters, weights (pointing into the mapped GGUF
 * file), and the per-context state a forward pass works in (KV cache,
 * activation buffers, thread pool, stop check).
 *
 * Each architecture is one file (llama.c, gemma3.c, qwen2.c, ...) exporting an
 * adil_arch: a loader that reads its hyperparameters and binds its tensors,
 * and a forward pass that reads like llama2.c's run.c.  arch.c maps
 * general.architecture to one of them.
 *
 * Shapes are written (rows, cols) for matrices, row-major, with `cols`
 * contiguous; a GGUF tensor with ne = [cols, rows].  `T` is the number of
 * tokens of the batch being evaluated.
 */
#ifndef ADIL_TRANSFORMER_H
#define ADIL_TRANSFORMER_H

#include "adil_common.h"
#include "compute/matmul.h"
#include "compute/threadpool.h"
#include "format/gguf.h"
#include "models/kv_cache.h"

#include <stdbool.h>
#include <stdint.h>

/* ---- hyperparameters --------------------------------------------------- */

typedef enum adil_ffn_act {
    ADIL_FFN_SILU = 0,       /* SwiGLU: silu(gate) * up */
    ADIL_FFN_GELU_TANH = 1,  /* GeGLU with the tanh approximation of GELU */
    ADIL_FFN_SWIGLU_OAI = 2, /* gpt-oss: clamped, sigmoid(1.702 gate), up + 1 (compute/activation.h) */
} adil_ffn_act;

/* YaRN (rope.scaling.type "yarn", ggml's rope_yarn): frequency i of a head
 * turns by base^(-2i/n_rot) * (scale (1 - r_i) + r_i) per position, r_i =
 * ext_factor * ramp(i): the fast frequencies (ramp 1) keep their unscaled
 * angle, the slow ones (ramp 0) are interpolated by `scale`, with a linear
 * ramp between the dims where a frequency turns beta_fast and beta_slow
 * times over n_ctx_orig positions:
 *     corr(beta) = n_rot ln(n_ctx_orig / (2 pi beta)) / (2 ln base),
 *     low = max(0, floor(corr(beta_fast))), high = min(n_rot - 1, ceil(corr(beta_slow))),
 *     ramp(i) = 1 - clamp((i - low) / max(0.001, high - low), 0, 1);
 * cos and sin are multiplied by attn_factor, and by 1 + 0.1 ln(1 / scale)
 * when ext_factor != 0. */
typedef struct adil_yarn {
    float ext_factor;           /* 1 with YaRN, 0 without */
    float attn_factor;          /* llama.cpp's yarn_attn_factor (1 for plain files) */
    float beta_fast, beta_slow; /* 32 and 1 (llama.cpp's defaults) */
    int64_t n_ctx_orig;         /* rope.scaling.original_context_length */
} adil_yarn;

/* How a mixture-of-experts layer turns router logits into each token's
 * n_expert_used experts and their weights. */
typedef enum adil_expert_gating {
    ADIL_GATING_SOFTMAX_TOPK = 0, /* softmax over all experts, then the top k (qwen3moe) */
    ADIL_GATING_TOPK_SOFTMAX = 1, /* the top k logits, then softmax over those k (gpt-oss) */
} adil_expert_gating;

typedef struct adil_hparams {
    int64_t n_vocab; /* rows of the embedding */
    int64_t n_embd;  /* model width */
    int64_t n_layer;
    int64_t n_head;     /* query heads */
    int64_t n_head_kv;  /* key/value heads (GQA: n_head % n_head_kv == 0) */
    int64_t head_dim;   /* width of one query/key head */
    int64_t head_dim_v; /* width of one value head */
    int64_t n_ff;       /* hidden width of the feed-forward block */
    int64_t n_rot;      /* leading dims of a head that RoPE rotates (even) */
    uint32_t n_ctx_train;
    float rms_eps;
    float rope_base;        /* RoPE base of global (full-attention) layers */
    float rope_base_local;  /* RoPE base of sliding-window layers */
    float rope_scale;       /* position multiplier (1 / linear scaling factor) */
    adil_yarn rope_yarn;    /* YaRN on top of rope_scale (ext_factor 0: off) */
    bool rope_neox;         /* rotate pairs (i, i + n_rot/2) instead of (2i, 2i+1) */
    int64_t sliding_window; /* tokens a local layer sees (itself included); 0 = none */
    int64_t swa_period;     /* layer l is local when l % swa_period != swa_period - 1; 0 = every layer */
    float attn_scale;       /* multiplies q·k */
    float embd_scale;       /* multiplies the looked-up embeddings */
    float final_softcap;    /* logits = c * tanh(logits / c); 0 = off */
    adil_ffn_act ffn_act;
    /* mixture of experts (n_expert == 0: a dense FFN on every layer) */
    int64_t n_expert;         /* experts per layer */
    int64_t n_expert_used;    /* experts each token goes through (k) */
    int64_t n_ff_exp;         /* hidden width of one expert */
    bool expert_weights_norm; /* divide each token's k weights by their sum */
    adil_expert_gating expert_gating;
} adil_hparams;

/* True when layer `il` attends only to the last sliding_window positions:
 * every layer when swa_period is 0 (Mistral), else all but the last of each
 * period (gemma3: 5 of 6). */
static inline bool adil_layer_is_local(const adil_hparams *hp, int64_t il) {
    if (hp->sliding_window <= 0) return false;
    return hp->swa_period == 0 || il % hp->swa_period != hp->swa_period - 1;
}

/* ---- weights ------------------------------------------------------------- */

typedef struct adil_layer {
    const float *attn_norm;         /* (n_embd) */
    adil_weight wq;                 /* (n_head * head_dim, n_embd) */
    adil_weight wk;                 /* (n_head_kv * head_dim, n_embd) */
    adil_weight wv;                 /* (n_head_kv * head_dim_v, n_embd) */
    const float *q_norm;            /* (head_dim) or NULL: RMS norm of each query head */
    const float *k_norm;            /* (head_dim) or NULL: RMS norm of each key head */
    const float *attn_sinks;        /* (n_head) or NULL: per-head logits that join the softmax */
    adil_weight wo;                 /* (n_embd, n_head * head_dim_v) */
    const float *bq, *bk, *bv, *bo; /* (rows) or NULL: biases added to wq, wk, wv, wo's outputs */
    const float *post_attn_norm;    /* (n_embd) or NULL: norm of the attention output */
    const float *ffn_norm;          /* (n_embd) */
    adil_weight ffn_gate;           /* (n_ff, n_embd) */
    adil_weight ffn_up;             /* (n_ff, n_embd) */
    adil_weight ffn_down;           /* (n_embd, n_ff) */
    const float *post_ffn_norm;     /* (n_embd) or NULL: norm of the FFN output */
    /* mixture of experts (models/moe.h; ffn_gate/up/down unused).  The expert
     * tensors are 3-D in the file, ne = [cols, rows, n_expert]: expert e is
     * rows [e * rows, (e + 1) * rows) of the matrix seen as 2-D. */
    adil_weight ffn_gate_inp;     /* (n_expert, n_embd) router, a float type */
    const float *ffn_gate_inp_b;  /* (n_expert) or NULL */
    adil_weight ffn_gate_exps;    /* (n_expert * n_ff_exp, n_embd) */
    adil_weight ffn_up_exps;      /* (n_expert * n_ff_exp, n_embd) */
    adil_weight ffn_down_exps;    /* (n_expert * n_embd, n_ff_exp) */
    const float *ffn_gate_exps_b; /* (n_expert, n_ff_exp) or NULL */
    const float *ffn_up_exps_b;   /* (n_expert, n_ff_exp) or NULL */
    const float *ffn_down_exps_b; /* (n_expert, n_embd) or NULL */
} adil_layer;

typedef struct adil_transformer {
    adil_hparams hp;
    adil_weight tok_embd;           /* (n_vocab, n_embd) */
    adil_layer *layers;             /* (n_layer) */
    const float *output_norm;       /* (n_embd) */
    adil_weight output;             /* (n_vocab, n_embd); == tok_embd when tied */
    const float *rope_factors;      /* (n_rot / 2) or NULL: per-frequency divisors (llama 3; phi3 short) */
    const float *rope_factors_long; /* (n_rot / 2) or NULL: phi3's divisors past n_ctx_orig */
    float *owned;                   /* norm vectors, dequantized to f32 at load */
    void *repacked;                 /* weights in the 8-row layout (models/repack_weights.c) or NULL */
    uint64_t n_params;              /* elements of all tensors */
    uint64_t n_bytes;               /* bytes of all tensors */
    uint64_t decode_bytes;          /* bytes one decoded token reads (adil_model_info.decode_bytes) */
    uint64_t decode_params;         /* weights one decoded token multiplies (.decode_params) */
} adil_transformer;

/* ---- the state a forward pass works in (one per context) ------------------ */

/* Polled between layers and before each batch; returns ADIL_OK to go on or
 * the status to stop with (ADIL_STATUS_CANCELLED, ADIL_STATUS_DEADLINE). */
typedef adil_status (*adil_stop_fn)(void *user);

/* How RoPE rotates (see adil_rope_rows in ops.h). */
typedef struct adil_rope {
    int64_t n_rot;
    float base;
    float scale;
    bool neox;
    const float *factors;
    const adil_yarn *yarn; /* NULL or off (ext_factor 0, attn_factor 1): plain scaling */
} adil_rope;

/* cos / sin of the RoPE angles of one configuration for a batch's positions
 * pos0 .. pos0 + T - 1: made by the first layer that needs them, reused by
 * the others.  Local and global layers of gemma3 use two configurations. */
#define ADIL_ROPE_TABLES 2
typedef struct adil_rope_table {
    adil_rope cfg;
    int64_t pos0, T;
    bool valid;
    uint64_t used;  /* rope_clock when last used */
    float *cs, *sn; /* (n_batch, n_rot / 2) */
} adil_rope_table;

/* Floats of one part of a row's attention (adil_forward.att_parts): its
 * output, max and sum. */
#define ADIL_ATT_PART_FLOATS(hp) ((hp)->head_dim_v + 2)

typedef struct adil_forward {
    adil_kv_cache kv;
    adil_pool *pool; /* threads of this context (may be NULL: one thread) */
    int64_t n_batch; /* most tokens evaluated at once */
    /* activations of one batch */
    float *x;      /* (n_batch, n_embd) the residual stream */
    float *xb;     /* (n_batch, n_embd) normed input of a block */
    float *xb2;    /* (n_batch, n_embd) output of a block */
    float *q;      /* (n_batch, n_head * head_dim) */
    float *k;      /* (n_batch, n_head_kv * head_dim) */
    float *v;      /* (n_batch, n_head_kv * head_dim_v) */
    float *att;    /* (n_batch, n_head * head_dim_v) attention output */
    float *scores; /* (n_threads, ADIL_ATT_MAX_ROWS * kv.n_ctx) attention scratch */
    /* a long range's parts (compute/attention.h): each an output row of
     * head_dim_v floats, its max and its sum (ADIL_ATT_PART_FLOATS) */
    float *att_parts;     /* (n_head * (n_ctx / ADIL_ATT_PART + 2)) one decode's parts */
    float *att_part_rows; /* (n_threads * ADIL_ATT_MAX_ROWS) a tile's part in a batch */
    float *hb;            /* (n_batch, n_ff) gate */
    float *hb2;           /* (n_batch, n_ff) up */
    void *mm_scratch;     /* quantized activations for adil_matmul_group */
    size_t mm_scratch_size;

    /* mixture of experts (NULL without experts); A = n_batch * n_expert_used
     * assignments (token, slot), ordered by expert */
    float *moe_logits; /* (n_batch, n_expert) router logits */
    float *moe_w;      /* (n_batch, n_expert_used) weight of each token's experts */
    int32_t *moe_ids;  /* (A) expert, (A) row in expert order, (A) token, (n_expert + 1) offsets */
    float *moe_h;      /* (A, n_ff_exp) gate, then act(gate) * up */
    float *moe_h2;     /* (A, n_ff_exp) up */
    float *moe_y;      /* (A, n_embd) each expert's output for its tokens */

    adil_rope_table rope[ADIL_ROPE_TABLES];
    uint64_t rope_clock;
    adil_stop_fn stop; /* may be NULL */
    void *stop_user;
} adil_forward;

/* How a context keeps its KV cache: element type, and whether
 * sliding-window layers get rings (kv_cache.h). */
typedef struct adil_kv_opts {
    adil_kv_type type;
    bool ring;
} adil_kv_opts;

/* Sizes and allocates the state for `m` with a KV cache of n_ctx positions
 * kept as `kv` says, batches of up to n_batch tokens, on `pool` (borrowed;
 * may be NULL). */
adil_status adil_forward_init(adil_forward *fw, const adil_transformer *m, adil_kv_opts kv, int64_t n_ctx,
                              int64_t n_batch, adil_pool *pool);
void adil_forward_free(adil_forward *fw);

/* The bytes adil_forward_init allocates for these sizes with nth threads
 * (KV cache, activations, matmul scratch); UINT64_MAX when that overflows. */
uint64_t adil_forward_bytes(const adil_transformer *m, adil_kv_opts kv, int64_t n_ctx, int64_t n_batch,
                            int nth);

/* The bytes of the KV cache alone (part of adil_forward_bytes). */
uint64_t adil_forward_kv_bytes(const adil_transformer *m, adil_kv_opts kv, int64_t n_ctx, int64_t n_batch);

/* ---- architectures ------------------------------------------------------- */

/* Evaluates tokens[0..n) at positions pos0.. (n <= fw->n_batch, pos0 + n <=
 * kv.n_ctx, the cache holding positions [0, pos0)), appends their keys and
 * values to the cache, and writes logits: (n, n_vocab) when all_logits, else
 * (1, n_vocab) for the last token (logits NULL: none).  On a stop status the cache is left as
 * it was (positions >= pos0 are invalid). */
typedef adil_status (*adil_forward_fn)(const adil_transformer *m, adil_forward *fw, const int32_t *tokens,
                                       int64_t n, int64_t pos0, float *logits, bool all_logits);

typedef struct adil_arch {
    const char *name; /* general.architecture */
    /* Reads hyperparameters and binds tensors of `f` into m (zeroed).  May
     * leave allocations in m on failure: the caller frees with
     * adil_transformer_free. */
    adil_status (*load)(const gguf_file *f, adil_transformer *m);
    adil_forward_fn forward;
} adil_arch;

extern const adil_arch adil_arch_llama;
extern const adil_arch adil_arch_gemma3;
extern const adil_arch adil_arch_qwen3moe;
extern const adil_arch adil_arch_qwen2;
extern const adil_arch adil_arch_qwen3;
extern const adil_arch adil_arch_phi3;
extern const adil_arch adil_arch_gpt_oss;

/* The architecture called `name` (len bytes), or NULL. */
const adil_arch *adil_arch_find(const char *name, size_t len);

/* The names of every architecture, ", "-separated, into buf (cap bytes,
 * NUL-terminated, cut short when too small). */
void adil_arch_names(char *buf, size_t cap);

/* Frees what a loader allocated (not the struct). */
void adil_transformer_free(adil_transformer *m);

/* Moves every matrix weight whose type has an 8-row layout at this CPU
 * level (compute/repack.h) into that layout, in one allocation owned by m,
 * on the pool's threads (pool may be NULL).  Left out: weights whose rows
 * are not a multiple of 8, and a token embedding that is not also the output
 * head (only looked up row by row); a tied one is repacked with the head, and
 * adil_get_rows unpacks the rows it looks up.  Nothing is
 * repacked when ADIL_REPACK=0 (the row-major reference, read at each load)
 * or when the copy cannot be allocated: the weights stay row-major, which
 * is slower, not wrong.  source_mapped: the weights' bytes are a read-only
 * private file mapping, whose pages under repacked weights are then dropped
 * (not for a copy of the file in memory).  Always ADIL_OK. */
adil_status adil_transformer_repack(adil_transformer *m, adil_pool *pool, bool source_mapped);

#endif /* ADIL_TRANSFORMER_H */
