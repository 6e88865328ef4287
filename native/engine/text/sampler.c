/*
 * sampler.c — the sampling chain of sampler.h.
 */
#include "text/sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct candidate {
    int32_t id;
    float logit;
    float p;
} candidate;

struct adil_sampler {
    adil_sampling_params params;
    int64_t n_vocab;
    uint64_t rng[4];      /* xoshiro256** state */
    int32_t *history;     /* ring of the last repeat_last_n accepted tokens */
    int64_t n_history;    /* tokens in the ring (<= repeat_last_n) */
    int64_t history_head; /* next slot to write */
    int32_t *window;      /* scratch copy of the ring, sorted to find distinct ids */
    candidate *cand;      /* (n_vocab) */
};

/* ---- random numbers ------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xoshiro_next(uint64_t s[4]) {
    const uint64_t result = rotl(s[1] * 5, 7) * 9;
    const uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

/* Uniform in [0, 1) with 53 random bits. */
static double uniform(uint64_t s[4]) { return (double)(xoshiro_next(s) >> 11) * 0x1.0p-53; }

/* ---- lifecycle -------------------------------------------------------------- */

static adil_status check_params(const adil_sampling_params *p) {
    if (!(isfinite(p->temperature) && p->temperature >= 0.0f))
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "sampling: temperature: expected >= 0, got %g",
                         (double)p->temperature);
    if (!(p->top_p > 0.0f && p->top_p <= 1.0f))
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "sampling: top_p: expected in (0, 1], got %g",
                         (double)p->top_p);
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "sampling: min_p: expected in [0, 1], got %g",
                         (double)p->min_p);
    if (!(isfinite(p->repeat_penalty) && p->repeat_penalty > 0.0f))
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "sampling: repeat_penalty: expected > 0, got %g",
                         (double)p->repeat_penalty);
    if (p->repeat_last_n < 0)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "sampling: repeat_last_n: expected >= 0, got %d",
                         p->repeat_last_n);
    return ADIL_OK;
}

adil_status adil_sampler_new(const adil_sampling_params *params, int64_t n_vocab, adil_sampler **out) {
    if (!out) return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "sampler: out is NULL");
    *out = NULL;
    if (n_vocab < 1 || n_vocab > INT32_MAX)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "sampler: n_vocab: expected 1..%d, got %lld",
                         INT32_MAX, (long long)n_vocab);
    adil_sampling_params p;
    adil_sampling_default_params(&p);
    adil_status st =
        adil_copy_params(&p, sizeof p, params, ADIL_SIZE_2_0_SAMPLING_PARAMS, "adil_sampling_params");
    if (st == ADIL_OK) st = check_params(&p);
    if (st != ADIL_OK) return st;

    adil_sampler *s = calloc(1, sizeof *s);
    if (!s) return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "sampler: out of memory");
    s->params = p;
    s->n_vocab = n_vocab;
    const size_t n_hist = p.repeat_last_n > 0 ? (size_t)p.repeat_last_n : 1;
    s->history = malloc(n_hist * sizeof *s->history);
    s->window = malloc(n_hist * sizeof *s->window);
    s->cand = malloc((size_t)n_vocab * sizeof *s->cand);
    if (!s->history || !s->window || !s->cand) {
        adil_sampler_free(s);
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "sampler: cannot allocate %lld candidates",
                         (long long)n_vocab);
    }
    uint64_t seed = p.seed;
    for (int i = 0; i < 4; i++) s->rng[i] = splitmix64(&seed);
    *out = s;
    return ADIL_OK;
}

void adil_sampler_free(adil_sampler *s) {
    if (!s) return;
    free(s->history);
    free(s->window);
    free(s->cand);
    free(s);
}

void adil_sampler_reset(adil_sampler *s) {
    s->n_history = 0;
    s->history_head = 0;
}

void adil_sampler_accept(adil_sampler *s, int32_t token) {
    const int64_t cap = s->params.repeat_last_n;
    if (cap <= 0) return;
    s->history[s->history_head] = token;
    s->history_head = (s->history_head + 1) % cap;
    if (s->n_history < cap) s->n_history++;
}

/* ---- the chain ------------------------------------------------------------------ */

static int cmp_i32(const void *a, const void *b) {
    const int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Step 1: each distinct token of the window once. */
static void apply_repetition_penalty(adil_sampler *s, float *logits) {
    const float pen = s->params.repeat_penalty;
    if (pen == 1.0f || s->n_history == 0) return;
    memcpy(s->window, s->history, (size_t)s->n_history * sizeof *s->window);
    qsort(s->window, (size_t)s->n_history, sizeof *s->window, cmp_i32);
    for (int64_t i = 0; i < s->n_history; i++) {
        const int32_t id = s->window[i];
        if ((i > 0 && id == s->window[i - 1]) || id < 0 || id >= s->n_vocab) continue;
        logits[id] = logits[id] > 0.0f ? logits[id] / pen : logits[id] * pen;
    }
}

static float clean(float x) { return isnan(x) ? -INFINITY : x; }

/* The tokens the chain considers: ids[0 .. n_scan) (ascending), or, without
 * ids, the tokens 0 .. n_scan whose bit is set in mask (every one when mask
 * is NULL); n_allowed of them in all. */
typedef struct selection {
    const int32_t *ids;
    const uint32_t *mask;
    int64_t n_scan, n_allowed;
} selection;

static inline int32_t id_at(const selection *sel, int64_t i) { return sel->ids ? sel->ids[i] : (int32_t)i; }

/* Asked only of a token that would change the result (a new best, a token
 * that enters the top k): a mask costs a bit test for those few. */
static inline bool allowed(const selection *sel, int32_t id) {
    return !sel->mask || ((sel->mask[id >> 5] >> (id & 31)) & 1u);
}

/* Step 2 over the whole row: the unconstrained path keeps its plain loop. */
static int32_t argmax_all(const float *logits, int64_t n) {
    int32_t best = 0;
    float best_v = clean(logits[0]);
    for (int64_t i = 1; i < n; i++)
        if (clean(logits[i]) > best_v) {
            best_v = logits[i];
            best = (int32_t)i;
        }
    return best;
}

/* Step 2: the highest logit, the lowest id on ties. */
static int32_t argmax(const float *logits, const selection *sel) {
    if (!sel->ids && !sel->mask) return argmax_all(logits, sel->n_scan);
    int32_t best = -1;
    float best_v = -INFINITY;
    for (int64_t i = 0; i < sel->n_scan; i++) {
        const int32_t id = id_at(sel, i);
        const float v = clean(logits[id]);
        if ((v > best_v || best < 0) && allowed(sel, id)) {
            best_v = v;
            best = id;
        }
    }
    return best < 0 ? 0 : best;
}

/* Descending logit, ascending id: a total order, so results never depend
 * on the sort algorithm. */
static int cmp_cand(const void *a, const void *b) {
    const candidate *x = a, *y = b;
    if (x->logit != y->logit) return x->logit < y->logit ? 1 : -1;
    return (x->id > y->id) - (x->id < y->id);
}

/* Min-heap on (logit, -id) for top-k selection: the root is the worst kept. */
static bool worse(const candidate *a, const candidate *b) {
    return a->logit < b->logit || (a->logit == b->logit && a->id > b->id);
}

static void sift_down(candidate *h, int64_t n, int64_t i) {
    for (;;) {
        int64_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < n && worse(&h[l], &h[w])) w = l;
        if (r < n && worse(&h[r], &h[w])) w = r;
        if (w == i) return;
        candidate t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

/* Step 3: fills s->cand with the k best of the tokens considered (all when
 * k is off), sorted. */
static int64_t top_k(adil_sampler *s, const float *logits, const selection *sel) {
    const int64_t n = sel->n_allowed;
    int64_t k = s->params.top_k > 0 && s->params.top_k < n ? s->params.top_k : n;
    candidate *c = s->cand;
    int64_t filled = 0, i = 0;
    for (; filled < k && i < sel->n_scan; i++) {
        const int32_t id = id_at(sel, i);
        if (allowed(sel, id)) c[filled++] = (candidate){id, clean(logits[id]), 0.0f};
    }
    k = filled;
    for (int64_t h = k / 2 - 1; h >= 0; h--) sift_down(c, k, h);
    if (!sel->ids && !sel->mask) /* the whole row: the plain scan */
        for (; k > 0 && i < sel->n_scan; i++) {
            const candidate x = {(int32_t)i, clean(logits[i]), 0.0f};
            if (worse(&c[0], &x)) {
                c[0] = x;
                sift_down(c, k, 0);
            }
        }
    for (; k > 0 && i < sel->n_scan; i++) {
        const int32_t id = id_at(sel, i);
        const candidate x = {id, clean(logits[id]), 0.0f};
        if (worse(&c[0], &x) && allowed(sel, id)) {
            c[0] = x;
            sift_down(c, k, 0);
        }
    }
    qsort(c, (size_t)k, sizeof *c, cmp_cand);
    return k;
}

/* Softmax of the first n candidates' logits / temp into .p. */
static void softmax(candidate *c, int64_t n, float temp) {
    const float max = c[0].logit;
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        c[i].p = c[i].logit == -INFINITY ? 0.0f : expf((c[i].logit - max) / temp);
        sum += c[i].p;
    }
    for (int64_t i = 0; i < n; i++) c[i].p = (float)(c[i].p / sum);
}

/* Step 4: the shortest prefix whose probability reaches top_p. */
static int64_t top_p(const candidate *c, int64_t n, float p) {
    if (p >= 1.0f) return n;
    double cum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        cum += c[i].p;
        if (cum >= p) return i + 1;
    }
    return n;
}

/* Step 5: tokens at least min_p times as likely as the best one. */
static int64_t min_p(const candidate *c, int64_t n, float mp) {
    if (mp <= 0.0f) return n;
    const float floor = c[0].p * mp;
    int64_t keep = 1;
    while (keep < n && c[keep].p >= floor) keep++;
    return keep;
}

/* The chain over a selection of n_allowed >= 1 tokens. */
static int32_t sample(adil_sampler *s, float *logits, const selection *sel) {
    apply_repetition_penalty(s, logits);
    if (s->params.temperature <= 0.0f) return argmax(logits, sel);

    int64_t n = top_k(s, logits, sel);
    if (n == 0 || s->cand[0].logit == -INFINITY) return n ? s->cand[0].id : 0; /* degenerate row */
    softmax(s->cand, n, 1.0f);
    n = top_p(s->cand, n, s->params.top_p);
    n = min_p(s->cand, n, s->params.min_p);

    /* Step 6: temperature, then one draw */
    softmax(s->cand, n, s->params.temperature);
    const double r = uniform(s->rng);
    double cum = 0.0;
    for (int64_t i = 0; i < n; i++) {
        cum += s->cand[i].p;
        if (r < cum) return s->cand[i].id;
    }
    return s->cand[n - 1].id; /* rounding left r just above the sum */
}

int32_t adil_sampler_sample(adil_sampler *s, float *logits) {
    const selection all = {NULL, NULL, s->n_vocab, s->n_vocab};
    return sample(s, logits, &all);
}

int32_t adil_sampler_sample_among(adil_sampler *s, float *logits, const int32_t *ids, size_t n_ids) {
    const selection among = {ids, NULL, (int64_t)n_ids, (int64_t)n_ids};
    return sample(s, logits, &among);
}

int32_t adil_sampler_sample_masked(adil_sampler *s, float *logits, const uint32_t *mask, size_t n_allowed) {
    const selection masked = {NULL, mask, s->n_vocab, (int64_t)n_allowed};
    return sample(s, logits, &masked);
}

/* ---- log-probabilities ---------------------------------------------------------- */

/* log(sum(exp(logits))), from the largest logit (no overflow), summed in double. */
static double log_sum_exp(const float *logits, int64_t n) {
    float max = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (clean(logits[i]) > max) max = logits[i];
    if (max == -INFINITY) return NAN; /* no finite logit: no distribution */
    double sum = 0.0;
    for (int64_t i = 0; i < n; i++) sum += (double)expf(clean(logits[i]) - max);
    return (double)max + log(sum);
}

void adil_logprobs_of_row(const float *logits, int64_t n_vocab, int32_t token, uint32_t k, float *logprob,
                          int32_t *top_ids, float *top_logprobs) {
    const double lse = log_sum_exp(logits, n_vocab);
    *logprob = (float)((double)clean(logits[token]) - lse);
    candidate heap[ADIL_MAX_LOGPROBS];
    const int64_t want = k < ADIL_MAX_LOGPROBS ? (int64_t)k : ADIL_MAX_LOGPROBS;
    const int64_t n = want < n_vocab ? want : n_vocab;
    if (n <= 0) return;
    for (int64_t i = 0; i < n; i++) heap[i] = (candidate){(int32_t)i, clean(logits[i]), 0.0f};
    for (int64_t h = n / 2 - 1; h >= 0; h--) sift_down(heap, n, h);
    for (int64_t i = n; i < n_vocab; i++) {
        const candidate x = {(int32_t)i, clean(logits[i]), 0.0f};
        if (worse(&heap[0], &x)) {
            heap[0] = x;
            sift_down(heap, n, 0);
        }
    }
    qsort(heap, (size_t)n, sizeof *heap, cmp_cand);
    for (int64_t i = 0; i < n; i++) {
        top_ids[i] = heap[i].id;
        top_logprobs[i] = (float)((double)heap[i].logit - lse);
    }
}
