/*
 * grammar_mask.c — the grammar library's own cost (native/grammar/grammar.h),
 * for bench/grammar_compare: compile time of a schema and mask time per token
 * over a given token sequence, without a model or a run around it.
 *
 *   adil_grammar_mask VOCAB SCHEMA TOKENS COMPILES PASSES [FLUSH_MB]
 *
 * VOCAB is the vocabulary as bench/grammar_compare writes it: "ADILVOC1", a
 * little-endian u32 token count, then per token a u8 kind (grammar_token_kind),
 * a u32 length and the bytes.  SCHEMA is the grammar's JSON text, TOKENS the
 * ids of the sequence (decimal, whitespace-separated).  The schema is compiled
 * COMPILES times (each timed); then PASSES times a fresh matcher goes over the
 * sequence, each step as a run does it: the forced text
 * (grammar_matcher_forced), the mask, accepting the token; and once more after
 * the last token (the step where the end of generation is allowed).  Prints
 * one JSON object: vocab_ms, compile_us[], forced_ns, mask_ns and accept_ns
 * [pass][step], and per step (first pass) the allowed count, whether the
 * token was in the mask and the number of forced bytes.
 *
 * FLUSH_MB (default 0): before each mask, read and write a buffer of that
 * many MiB (not timed), as a model's forward pass between two masks does: the
 * caches are cold, as they are in a run.  0: warm caches (the masks follow one
 * another).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include "grammar.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int fail(const char *what, adil_status st) {
    fprintf(stderr, "%s: %s: %s\n", what, adil_status_string(st), adil_last_error());
    return 1;
}

/* The whole file, NUL-terminated; NULL (and a message) on failure. */
static uint8_t *read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    long size = -1;
    if (f && fseek(f, 0, SEEK_END) == 0) size = ftell(f);
    if (size >= 0 && fseek(f, 0, SEEK_SET) == 0 && (buf = malloc((size_t)size + 1)) != NULL) {
        if (fread(buf, 1, (size_t)size, f) == (size_t)size) {
            buf[size] = 0;
            *len = (size_t)size;
        } else {
            free(buf);
            buf = NULL;
        }
    }
    if (f) fclose(f);
    if (!buf) fprintf(stderr, "cannot read %s\n", path);
    return buf;
}

static uint32_t read_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Parses the vocab file into tokens pointing into `data`; 0 when malformed. */
static uint32_t parse_vocab(const uint8_t *data, size_t len, grammar_token **out) {
    if (len < 12 || memcmp(data, "ADILVOC1", 8) != 0) return 0;
    const uint32_t n = read_u32(data + 8);
    grammar_token *tokens = calloc(n ? n : 1, sizeof *tokens);
    if (!tokens) return 0;
    size_t at = 12;
    for (uint32_t i = 0; i < n; i++) {
        if (len - at < 5) break;
        const uint8_t kind = data[at];
        const uint32_t tlen = read_u32(data + at + 1);
        at += 5;
        if (kind > GRAMMAR_TOKEN_END || tlen > len - at) break;
        tokens[i] = (grammar_token){.bytes = data + at, .len = tlen, .kind = (grammar_token_kind)kind};
        at += tlen;
        if (i + 1 == n && at == len) {
            *out = tokens;
            return n;
        }
    }
    free(tokens);
    return 0;
}

/* The decimal ids of the tokens file; NULL when one is not a number. */
static int32_t *parse_ids(const char *text, size_t *n) {
    size_t cap = 64;
    int32_t *ids = malloc(cap * sizeof *ids);
    *n = 0;
    for (const char *p = text; ids;) {
        while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
        if (!*p) return ids;
        char *end = NULL;
        const long v = strtol(p, &end, 10);
        if (end == p || v < 0 || v > INT32_MAX) break;
        if (*n == cap) {
            int32_t *more = realloc(ids, 2 * cap * sizeof *ids);
            if (!more) break;
            ids = more;
            cap *= 2;
        }
        ids[(*n)++] = (int32_t)v;
        p = end;
    }
    free(ids);
    return NULL;
}

static int compile_times(const grammar_vocab *vocab, const uint8_t *schema, size_t len, int compiles,
                         adil_grammar **out) {
    printf("\"compile_us\": [");
    for (int r = 0; r < compiles; r++) {
        adil_grammar *g = NULL;
        const uint64_t t0 = now_ns();
        const adil_status st = grammar_compile(vocab, (const char *)schema, len, &g);
        const uint64_t t1 = now_ns();
        if (st != ADIL_OK) return fail("grammar_compile", st);
        printf("%s%.3f", r ? ", " : "", (double)(t1 - t0) / 1e3);
        if (*out) grammar_free(*out);
        *out = g;
    }
    printf("],\n");
    return 0;
}

/* Evicts the caches: writes a line of every 64 bytes of `n` (a model's
 * weights and activations pass through the caches between two masks). */
static volatile uint8_t g_sink;
static void flush(uint8_t *buf, size_t n) {
    uint8_t acc = 0;
    for (size_t i = 0; i < n; i += 64) {
        acc ^= buf[i];
        buf[i] = (uint8_t)(acc + 1);
    }
    g_sink = acc;
}

typedef struct flusher {
    uint8_t *buf;
    size_t len;
} flusher;

/* What a step costs, in the order a run does it: the forced text, the mask,
 * accepting the token. */
enum { T_FORCED, T_MASK, T_ACCEPT, N_TIMES };
static const char *const k_time_names[N_TIMES] = {"forced_ns", "mask_ns", "accept_ns"};

typedef struct step_info {
    size_t allowed;
    int in_mask;
    size_t forced;
} step_info;

/* One pass: a fresh matcher over the sequence; ns[i * N_TIMES + T_*] are
 * step i's times.  *n_steps becomes the number of steps done (fewer when a
 * token is refused). */
static int one_pass(const adil_grammar *g, const int32_t *ids, size_t n, uint32_t *mask, uint64_t *ns,
                    step_info *info, size_t *n_steps, const flusher *fl) {
    grammar_matcher *m = NULL;
    const adil_status st = grammar_matcher_new(g, &m);
    if (st != ADIL_OK) return fail("grammar_matcher_new", st);
    *n_steps = 0;
    for (size_t i = 0; i <= n; i++) {
        uint64_t *t = ns + i * N_TIMES;
        uint8_t forced[64];
        if (fl->len) flush(fl->buf, fl->len);
        const uint64_t t0 = now_ns();
        const size_t n_forced = grammar_matcher_forced(m, forced, sizeof forced);
        const uint64_t t1 = now_ns();
        const size_t allowed = grammar_matcher_mask(m, mask);
        const uint64_t t2 = now_ns();
        const bool ok = i < n && grammar_matcher_accept_token(m, ids[i], NULL);
        t[T_FORCED] = t1 - t0;
        t[T_MASK] = t2 - t1;
        t[T_ACCEPT] = i < n ? now_ns() - t2 : 0;
        *n_steps = i + 1;
        if (info) {
            info[i].allowed = allowed;
            info[i].in_mask = i < n && ((mask[(uint32_t)ids[i] / 32] >> ((uint32_t)ids[i] % 32)) & 1u);
            info[i].forced = n_forced;
        }
        if (!ok) break;
    }
    grammar_matcher_free(m);
    return 0;
}

static void print_times(const uint64_t *ns, size_t n_steps, int passes, int which) {
    printf("\"%s\": [", k_time_names[which]);
    for (int p = 0; p < passes; p++) {
        printf("%s[", p ? ", " : "");
        for (size_t i = 0; i < n_steps; i++)
            printf("%s%" PRIu64, i ? ", " : "", ns[((size_t)p * n_steps + i) * N_TIMES + (size_t)which]);
        printf("]");
    }
    printf("],\n");
}

static void print_steps(const uint64_t *ns, const step_info *info, size_t n_steps, int passes) {
    for (int w = 0; w < N_TIMES; w++) print_times(ns, n_steps, passes, w);
    printf("\"allowed\": [");
    for (size_t i = 0; i < n_steps; i++) printf("%s%zu", i ? ", " : "", info[i].allowed);
    printf("],\n\"in_mask\": [");
    for (size_t i = 0; i < n_steps; i++) printf("%s%d", i ? ", " : "", info[i].in_mask);
    printf("],\n\"forced_bytes\": [");
    for (size_t i = 0; i < n_steps; i++) printf("%s%zu", i ? ", " : "", info[i].forced);
    printf("]\n}\n");
}

static int mask_times(const adil_grammar *g, const int32_t *ids, size_t n, int passes, const flusher *fl) {
    const uint32_t n_vocab = grammar_vocab_size(grammar_vocab_of(g));
    uint32_t *mask = malloc(((size_t)n_vocab + 31) / 32 * sizeof *mask);
    uint64_t *ns = calloc((size_t)passes * (n + 1) * N_TIMES, sizeof *ns);
    step_info *info = calloc(n + 1, sizeof *info);
    int rc = !mask || !ns || !info;
    size_t n_steps = 0;
    for (int p = 0; !rc && p < passes; p++) {
        size_t done = 0; /* every pass stops where the first did */
        rc = one_pass(g, ids, n, mask, ns + (size_t)p * n_steps * N_TIMES, p == 0 ? info : NULL,
                      p == 0 ? &n_steps : &done, fl);
    }
    if (!rc) print_steps(ns, info, n_steps, passes);
    free(mask);
    free(ns);
    free(info);
    return rc;
}

int main(int argc, char **argv) {
    if (argc != 6 && argc != 7) {
        fprintf(stderr, "usage: %s VOCAB SCHEMA TOKENS COMPILES PASSES [FLUSH_MB]\n", argv[0]);
        return 2;
    }
    const int compiles = atoi(argv[4]), passes = atoi(argv[5]), flush_mb = argc == 7 ? atoi(argv[6]) : 0;
    flusher fl = {NULL, flush_mb > 0 && flush_mb <= 4096 ? (size_t)flush_mb << 20 : 0};
    if (fl.len && !(fl.buf = calloc(fl.len, 1))) fl.len = 0;
    size_t vlen = 0, slen = 0, tlen = 0, n_ids = 0;
    uint8_t *vdata = read_file(argv[1], &vlen), *schema = read_file(argv[2], &slen),
            *ttext = read_file(argv[3], &tlen);
    grammar_token *tokens = NULL;
    const uint32_t n_tok = vdata ? parse_vocab(vdata, vlen, &tokens) : 0;
    int32_t *ids = ttext ? parse_ids((const char *)ttext, &n_ids) : NULL;
    int rc = 1;
    if (compiles < 1 || passes < 1 || !schema || !ids || n_tok == 0) {
        fprintf(stderr, "bad arguments, vocab file or tokens file\n");
    } else {
        grammar_vocab *vocab = NULL;
        adil_grammar *g = NULL;
        const uint64_t t0 = now_ns();
        const adil_status st = grammar_vocab_new(tokens, n_tok, &vocab);
        printf("{\"vocab_ms\": %.3f,\n", (double)(now_ns() - t0) / 1e6);
        rc = st != ADIL_OK ? fail("grammar_vocab_new", st) : compile_times(vocab, schema, slen, compiles, &g);
        if (!rc) rc = mask_times(g, ids, n_ids, passes, &fl);
        grammar_free(g);
        grammar_vocab_free(vocab);
    }
    free(fl.buf);
    free(tokens);
    free(ids);
    free(vdata);
    free(schema);
    free(ttext);
    return rc;
}
