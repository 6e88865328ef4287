/*
 * tokenizer_gguf.c — builds an adil_tokenizer_desc from GGUF metadata.
 */
#include "text/tokenizer_gguf.h"

#include <stdlib.h>
#include <string.h>

#define KEY(name) "tokenizer.ggml." name

/* Temporary arrays that the desc points at (the strings themselves stay in
 * the mapped file). */
typedef struct gguf_desc {
    adil_tokenizer_desc d;
    char model[32];
    char pre[64];
    const char **tokens;
    uint32_t *token_lens;
    float *scores;
    int32_t *types;
    const char **merges;
    uint32_t *merge_lens;
} gguf_desc;

static void gguf_desc_free(gguf_desc *g) {
    free(g->tokens);
    free(g->token_lens);
    free(g->scores);
    free(g->types);
    free(g->merges);
    free(g->merge_lens);
}

/* Copies a short string key into buf (NUL-terminated). */
static adil_status get_name(const gguf_file *f, const char *key, char *buf, size_t cap, bool *found) {
    gguf_str s = {"", 0};
    adil_status st = gguf_get_cstr(f, key, &s, found);
    if (st != ADIL_OK || (found && !*found)) {
        return st;
    }
    if (s.len >= cap) {
        return adil_fail(ADIL_STATUS_CAPABILITY,
                         "tokenizer: key '%s': expected a name of under "
                         "%zu bytes, got %llu bytes",
                         key, cap, (unsigned long long)s.len);
    }
    memcpy(buf, s.ptr, (size_t)s.len);
    buf[s.len] = '\0';
    return ADIL_OK;
}

static adil_status read_strings(const gguf_array *a, const char *key, const char ***ptrs, uint32_t **lens) {
    size_t n = a->count ? (size_t)a->count : 1;
    *ptrs = malloc(n * sizeof **ptrs);
    *lens = malloc(n * sizeof **lens);
    if (!*ptrs || !*lens) {
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "tokenizer: out of memory for '%s'", key);
    }
    for (uint64_t i = 0; i < a->count; i++) {
        gguf_str s = gguf_array_str(a, i);
        if (s.len > UINT32_MAX) {
            return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                             "tokenizer: key '%s' element %llu: "
                             "expected under 4 GiB, got %llu bytes",
                             key, (unsigned long long)i, (unsigned long long)s.len);
        }
        (*ptrs)[i] = s.ptr;
        (*lens)[i] = (uint32_t)s.len;
    }
    return ADIL_OK;
}

static adil_status read_tokens(const gguf_file *f, gguf_desc *g) {
    gguf_array a;
    adil_status st = gguf_get_array_of(f, KEY("tokens"), GGUF_TYPE_STRING, &a, NULL);
    if (st != ADIL_OK) {
        return st;
    }
    if (a.count == 0 || a.count > (uint64_t)INT32_MAX) {
        return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                         "tokenizer: key '" KEY("tokens") "': expected "
                                                          "1..%d tokens, got %llu",
                         INT32_MAX, (unsigned long long)a.count);
    }
    g->d.n_vocab = (uint32_t)a.count;
    st = read_strings(&a, KEY("tokens"), &g->tokens, &g->token_lens);
    g->d.tokens = g->tokens;
    g->d.token_lens = g->token_lens;
    return st;
}

/* An optional per-token array: at least n_vocab elements of an allowed type. */
static adil_status get_per_token(const gguf_file *f, const char *key, uint32_t n_vocab, bool want_float,
                                 gguf_array *a, bool *found) {
    adil_status st = gguf_get_array(f, key, a, found);
    if (st != ADIL_OK || !*found) {
        return st;
    }
    bool ok_type = a->type == GGUF_TYPE_INT32 || (want_float && a->type == GGUF_TYPE_FLOAT32);
    if (!ok_type) {
        return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                         "tokenizer: key '%s': expected an array of "
                         "%s, got element type %u",
                         key, want_float ? "float32 or int32" : "int32", a->type);
    }
    if (a->count < n_vocab) {
        return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                         "tokenizer: key '%s': expected at least %u "
                         "elements, got %llu",
                         key, n_vocab, (unsigned long long)a->count);
    }
    return ADIL_OK;
}

static adil_status read_scores_and_types(const gguf_file *f, gguf_desc *g) {
    gguf_array a;
    bool found = false;
    uint32_t n = g->d.n_vocab;
    adil_status st = get_per_token(f, KEY("scores"), n, true, &a, &found);
    if (st == ADIL_OK && found) {
        g->scores = malloc(n * sizeof *g->scores);
        if (!g->scores) {
            return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "tokenizer: out of memory for scores");
        }
        for (uint32_t i = 0; i < n; i++) {
            g->scores[i] = gguf_array_f32(&a, i);
        }
        g->d.scores = g->scores;
    }
    if (st == ADIL_OK) {
        st = get_per_token(f, KEY("token_type"), n, false, &a, &found);
    }
    if (st == ADIL_OK && found) {
        g->types = malloc(n * sizeof *g->types);
        if (!g->types) {
            return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "tokenizer: out of memory for types");
        }
        for (uint32_t i = 0; i < n; i++) {
            g->types[i] = (int32_t)gguf_array_i64(&a, i);
        }
        g->d.token_types = g->types;
    }
    return st;
}

static adil_status read_merges(const gguf_file *f, gguf_desc *g) {
    gguf_array a;
    adil_status st = gguf_get_array_of(f, KEY("merges"), GGUF_TYPE_STRING, &a, NULL);
    if (st != ADIL_OK) {
        return st;
    }
    if (a.count > (uint64_t)INT32_MAX) {
        return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                         "tokenizer: key '" KEY("merges") "': expected "
                                                          "at most %d merges, got %llu",
                         INT32_MAX, (unsigned long long)a.count);
    }
    g->d.n_merges = (uint32_t)a.count;
    st = read_strings(&a, KEY("merges"), &g->merges, &g->merge_lens);
    g->d.merges = g->merges;
    g->d.merge_lens = g->merge_lens;
    return st;
}

/* A special id: the key's value when it is a vocabulary id, else `dflt`. */
static adil_status read_id(const gguf_file *f, const char *key, uint32_t n_vocab, int32_t dflt,
                           int32_t *out) {
    uint32_t v = 0;
    bool found = false;
    adil_status st = gguf_get_u32(f, key, &v, &found);
    *out = (found && v < n_vocab) ? (int32_t)v : dflt;
    return st;
}

static adil_status read_flag(const gguf_file *f, const char *key, int32_t *out) {
    bool v = false, found = false;
    adil_status st = gguf_get_bool(f, key, &v, &found);
    if (st == ADIL_OK && found) {
        *out = v ? 1 : 0;
    }
    return st;
}

static adil_status read_specials(const gguf_file *f, gguf_desc *g) {
    bool spm = strcmp(g->model, "llama") == 0;
    uint32_t n = g->d.n_vocab;
    /* llama.cpp's defaults when a key is absent. */
    adil_status st = read_id(f, KEY("bos_token_id"), n, spm ? 1 : 11, &g->d.bos_id);
    if (st == ADIL_OK) {
        st = read_id(f, KEY("eos_token_id"), n, spm ? 2 : 11, &g->d.eos_id);
    }
    if (st == ADIL_OK) {
        st = read_id(f, KEY("eot_token_id"), n, -1, &g->d.eot_id);
    }
    if (st == ADIL_OK) {
        st = read_id(f, KEY("unknown_token_id"), n, spm ? 0 : -1, &g->d.unk_id);
    }
    if (st == ADIL_OK) {
        st = read_id(f, KEY("padding_token_id"), n, -1, &g->d.pad_id);
    }
    if (st == ADIL_OK) {
        st = read_flag(f, KEY("add_bos_token"), &g->d.add_bos);
    }
    if (st == ADIL_OK) {
        st = read_flag(f, KEY("add_eos_token"), &g->d.add_eos);
    }
    if (st == ADIL_OK) {
        st = read_flag(f, KEY("add_space_prefix"), &g->d.add_space_prefix);
    }
    return st;
}

adil_status adil_tokenizer_from_gguf(const gguf_file *f, adil_tokenizer **out) {
    if (!f || !out) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_tokenizer_from_gguf: NULL argument");
    }
    *out = NULL;
    gguf_desc g;
    memset(&g, 0, sizeof g);
    adil_tokenizer_desc_init(&g.d);
    bool has_pre = false;
    adil_status st = get_name(f, KEY("model"), g.model, sizeof g.model, NULL);
    if (st == ADIL_OK) {
        st = get_name(f, KEY("pre"), g.pre, sizeof g.pre, &has_pre);
    }
    g.d.model = g.model;
    g.d.pre = has_pre ? g.pre : NULL;
    if (st == ADIL_OK) {
        st = read_tokens(f, &g);
    }
    if (st == ADIL_OK) {
        st = read_scores_and_types(f, &g);
    }
    if (st == ADIL_OK && strcmp(g.model, "gpt2") == 0) {
        st = read_merges(f, &g);
    }
    if (st == ADIL_OK) {
        st = read_specials(f, &g);
    }
    if (st == ADIL_OK) {
        st = adil_tokenizer_new(&g.d, out);
    }
    gguf_desc_free(&g);
    return st;
}
