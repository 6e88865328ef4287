/*
 * tokenizer.c — building a tokenizer from its desc, and the public calls:
 * tokenize (special-token cut, then SentencePiece or byte-level BPE per raw
 * fragment) and token_to_piece.
 */
#include "text/tokenizer_internal.h"
#include "text/unicode.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static const char k_space_marker[] = "\xe2\x96\x81"; /* U+2581 "▁" */

void adil_tokenizer_desc_init(adil_tokenizer_desc *desc) {
    memset(desc, 0, sizeof *desc);
    desc->bos_id = desc->eos_id = desc->eot_id = desc->unk_id = desc->pad_id = -1;
    desc->add_bos = desc->add_eos = desc->add_space_prefix = -1;
}

/* ---- construction -------------------------------------------------------- */

static uint8_t attr_of_type(int32_t type) {
    switch (type) {
    case ADIL_TOKEN_TYPE_NORMAL:
        return ADIL_ATTR_NORMAL;
    case ADIL_TOKEN_TYPE_UNKNOWN:
        return ADIL_ATTR_UNKNOWN;
    case ADIL_TOKEN_TYPE_CONTROL:
        return ADIL_ATTR_CONTROL;
    case ADIL_TOKEN_TYPE_USER_DEFINED:
        return ADIL_ATTR_USER_DEFINED;
    case ADIL_TOKEN_TYPE_UNUSED:
        return ADIL_ATTR_UNUSED;
    case ADIL_TOKEN_TYPE_BYTE:
        return ADIL_ATTR_BYTE;
    default:
        return ADIL_ATTR_UNDEFINED;
    }
}

static adil_status check_desc(const adil_tokenizer_desc *d) {
    if (!d->model) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "tokenizer: model: expected a name, got NULL");
    }
    if (d->n_vocab == 0 || d->n_vocab > (uint32_t)INT32_MAX || !d->tokens || !d->token_lens) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "tokenizer: vocabulary: expected 1..%d strings with lengths, got %u "
                         "(tokens %s)",
                         INT32_MAX, d->n_vocab, d->tokens ? "given" : "NULL");
    }
    if (d->n_merges > 0 && (!d->merges || !d->merge_lens)) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "tokenizer: merges: expected %u strings, got NULL",
                         d->n_merges);
    }
    return ADIL_OK;
}

/* The tokenizer.ggml.pre names llama.cpp (0c1e57098, llama-vocab.cpp)
 * knows for the patterns we have, with its settings for each: whether a
 * whole word that is a token skips the merges, and whether BOS is added
 * when the file does not say. */
typedef struct pre_name {
    const char *name;
    adil_pretok kind;
    bool ignore_merges;
    bool add_bos;
} pre_name;

#define LLAMA3_LIKE(n) {n, ADIL_PRETOK_LLAMA3, true, true}
#define PLAIN(n, kind) {n, kind, false, false}

static const pre_name k_pre_names[] = {
    PLAIN("default", ADIL_PRETOK_DEFAULT), /* also a file without tokenizer.ggml.pre */
    LLAMA3_LIKE("llama3"),
    LLAMA3_LIKE("llama-v3"),
    LLAMA3_LIKE("llama-bpe"),
    LLAMA3_LIKE("falcon3"),
    LLAMA3_LIKE("falcon-h1"),
    LLAMA3_LIKE("pixtral"),
    LLAMA3_LIKE("midm-2.0"),
    LLAMA3_LIKE("lfm2"),
    LLAMA3_LIKE("jina-v5-nano"),
    PLAIN("dbrx", ADIL_PRETOK_LLAMA3),
    PLAIN("smaug-bpe", ADIL_PRETOK_LLAMA3),
    PLAIN("qwen2", ADIL_PRETOK_QWEN2),
    PLAIN("deepseek-r1-qwen", ADIL_PRETOK_QWEN2),
    PLAIN("kormo", ADIL_PRETOK_QWEN2),
    PLAIN("f2llmv2", ADIL_PRETOK_QWEN2),
    PLAIN("stablelm2", ADIL_PRETOK_QWEN2),
    PLAIN("hunyuan", ADIL_PRETOK_QWEN2),
    PLAIN("solar-open", ADIL_PRETOK_QWEN2),
    PLAIN("megrez", ADIL_PRETOK_QWEN2),
    PLAIN("grok-2", ADIL_PRETOK_QWEN2),
    PLAIN("qwen35", ADIL_PRETOK_QWEN35),
    PLAIN("smollm", ADIL_PRETOK_SMOLLM),
    PLAIN("starcoder", ADIL_PRETOK_SMOLLM),
    PLAIN("refact", ADIL_PRETOK_SMOLLM),
    PLAIN("command-r", ADIL_PRETOK_SMOLLM),
    PLAIN("codeshell", ADIL_PRETOK_SMOLLM),
    PLAIN("exaone", ADIL_PRETOK_SMOLLM),
    PLAIN("minerva-7b", ADIL_PRETOK_SMOLLM),
    PLAIN("mellum2", ADIL_PRETOK_SMOLLM),
    PLAIN("gpt-2", ADIL_PRETOK_GPT2),
    PLAIN("phi-2", ADIL_PRETOK_GPT2),
    PLAIN("gigachat", ADIL_PRETOK_GPT2),
    PLAIN("a.x-4.0", ADIL_PRETOK_GPT2),
    PLAIN("mellum", ADIL_PRETOK_GPT2),
    PLAIN("exaone4", ADIL_PRETOK_GPT2),
    PLAIN("mpt", ADIL_PRETOK_GPT2),
    PLAIN("olmo", ADIL_PRETOK_GPT2),
    PLAIN("jais", ADIL_PRETOK_GPT2),
    PLAIN("trillion", ADIL_PRETOK_GPT2),
    PLAIN("granite-docling", ADIL_PRETOK_GPT2),
    PLAIN("gpt-4o", ADIL_PRETOK_GPT4O),
    PLAIN("llama4", ADIL_PRETOK_GPT4O),
    PLAIN("kanana2", ADIL_PRETOK_GPT4O),
    PLAIN("talkie", ADIL_PRETOK_GPT4O),
    PLAIN("minimax-m2", ADIL_PRETOK_GPT4O),
    {"tekken", ADIL_PRETOK_TEKKEN, true, true},
    PLAIN("deepseek-llm", ADIL_PRETOK_DEEPSEEK_LLM),
    PLAIN("deepseek-coder", ADIL_PRETOK_DEEPSEEK_CODER),
    PLAIN("deepseek-v3", ADIL_PRETOK_DEEPSEEK_V3),
    PLAIN("hunyuan-dense", ADIL_PRETOK_DEEPSEEK_V3),
    PLAIN("joyai-llm", ADIL_PRETOK_DEEPSEEK_V3),
    PLAIN("hy_v4", ADIL_PRETOK_DEEPSEEK_V3),
};

#undef LLAMA3_LIKE
#undef PLAIN

static adil_status choose_model(adil_tokenizer *tok, const adil_tokenizer_desc *d) {
    if (strcmp(d->model, "llama") == 0) {
        tok->is_spm = true;
        tok->pretok = ADIL_PRETOK_NONE;
        return ADIL_OK;
    }
    if (strcmp(d->model, "gpt2") != 0) {
        return adil_fail(ADIL_STATUS_CAPABILITY,
                         "tokenizer: tokenizer.ggml.model: expected \"llama\" or \"gpt2\", got \"%s\"",
                         d->model);
    }
    const char *pre = d->pre ? d->pre : "default";
    tok->is_spm = false;
    for (size_t i = 0; i < N_OF(k_pre_names); i++) {
        if (strcmp(pre, k_pre_names[i].name) == 0) {
            tok->pretok = k_pre_names[i].kind;
            tok->ignore_merges = k_pre_names[i].ignore_merges;
            tok->default_add_bos = k_pre_names[i].add_bos;
            return ADIL_OK;
        }
    }
    return adil_fail(
        ADIL_STATUS_CAPABILITY,
        "tokenizer: tokenizer.ggml.pre: unsupported pre-tokenizer \"%s\" (supported: the patterns "
        "of default, llama-bpe, qwen2, qwen35, smollm, gpt-2, gpt-4o, tekken, deepseek-llm, deepseek-coder "
        "and "
        "deepseek-v3, under the names llama.cpp gives them)",
        pre);
}

/* Copies the vocabulary into one block.  An empty string becomes
 * "[EMPTY_<id>]" as in llama.cpp, so that it can never match text. */
static adil_status copy_vocab(adil_tokenizer *tok, const adil_tokenizer_desc *d) {
    uint64_t total = 0;
    for (uint32_t i = 0; i < d->n_vocab; i++) {
        total += d->token_lens[i] ? d->token_lens[i] : 24;
        if (d->token_lens[i] && !d->tokens[i]) {
            return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                             "tokenizer: token %u: expected %u bytes, "
                             "got NULL",
                             i, d->token_lens[i]);
        }
    }
    if (total >= UINT32_MAX) {
        return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                         "tokenizer: vocabulary: expected under 4 GiB "
                         "of token text, got %llu bytes",
                         (unsigned long long)total);
    }
    tok->text = malloc((size_t)total + 1);
    tok->vocab = calloc(d->n_vocab, sizeof *tok->vocab);
    if (!tok->text || !tok->vocab) {
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "tokenizer: out of memory for %u tokens", d->n_vocab);
    }
    uint32_t off = 0;
    for (uint32_t i = 0; i < d->n_vocab; i++) {
        adil_vocab_entry *e = &tok->vocab[i];
        e->offset = off;
        if (d->token_lens[i] > 0) {
            memcpy(tok->text + off, d->tokens[i], d->token_lens[i]);
            e->len = d->token_lens[i];
        } else {
            e->len = (uint32_t)snprintf(tok->text + off, 25, "[EMPTY_%u]", i);
        }
        off += e->len;
        e->score = d->scores ? d->scores[i] : 0.0f;
        e->attr = d->token_types ? attr_of_type(d->token_types[i]) : ADIL_ATTR_NORMAL;
    }
    return ADIL_OK;
}

static adil_status copy_merges(adil_tokenizer *tok, const adil_tokenizer_desc *d) {
    uint64_t total = 0;
    for (uint32_t i = 0; i < d->n_merges; i++) {
        if (d->merge_lens[i] && !d->merges[i]) {
            return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "tokenizer: merge %u: got NULL", i);
        }
        total += d->merge_lens[i];
    }
    size_t n = d->n_merges ? d->n_merges : 1;
    tok->merge_text = malloc((size_t)total + 1);
    tok->merge_offset = malloc(n * sizeof *tok->merge_offset);
    tok->merge_len = malloc(n * sizeof *tok->merge_len);
    tok->merge_split = malloc(n * sizeof *tok->merge_split);
    if (!tok->merge_text || !tok->merge_offset || !tok->merge_len || !tok->merge_split) {
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "tokenizer: out of memory for %u merges", d->n_merges);
    }
    uint64_t off = 0;
    for (uint32_t i = 0; i < d->n_merges; i++) {
        uint32_t len = d->merge_lens[i];
        if (len) {
            memcpy(tok->merge_text + off, d->merges[i], len);
        }
        /* The pair splits at the first space after the first byte. */
        const char *sp = len > 1 ? memchr(d->merges[i] + 1, ' ', len - 1) : NULL;
        tok->merge_offset[i] = off;
        tok->merge_len[i] = len;
        tok->merge_split[i] = sp ? (uint32_t)(sp - d->merges[i]) : UINT32_MAX;
        off += len;
    }
    tok->n_merges = d->n_merges;
    return adil_merges_index(tok);
}

static int32_t valid_id(const adil_tokenizer *tok, int32_t id) {
    return (id >= 0 && (uint32_t)id < tok->n_vocab) ? id : -1;
}

/* llama: each byte's <0xXX> token, else the one-byte token, else none. */
static void index_bytes(adil_tokenizer *tok) {
    for (unsigned b = 0; b < 256; b++) {
        char hex[7];
        snprintf(hex, sizeof hex, "<0x%02X>", b);
        int32_t id = adil_vocab_find(tok, hex, 6);
        if (id < 0) {
            char one = (char)b;
            id = adil_vocab_find(tok, &one, 1);
        }
        tok->byte_token[b] = id;
    }
}

static void set_flags(adil_tokenizer *tok, const adil_tokenizer_desc *d) {
    tok->bos_id = valid_id(tok, d->bos_id);
    tok->eos_id = valid_id(tok, d->eos_id);
    tok->eot_id = valid_id(tok, d->eot_id);
    tok->unk_id = valid_id(tok, d->unk_id);
    tok->pad_id = valid_id(tok, d->pad_id);
    bool def_bos = tok->is_spm || tok->default_add_bos;
    tok->add_bos = d->add_bos < 0 ? def_bos : d->add_bos != 0;
    tok->add_eos = d->add_eos > 0;
    tok->add_space_prefix = d->add_space_prefix < 0 ? tok->is_spm : d->add_space_prefix != 0;
}

adil_status adil_tokenizer_new(const adil_tokenizer_desc *desc, adil_tokenizer **out) {
    if (!out) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_tokenizer_new: out is NULL");
    }
    *out = NULL;
    if (!desc) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "adil_tokenizer_new: desc is NULL");
    }
    adil_status st = check_desc(desc);
    adil_tokenizer *tok = st == ADIL_OK ? calloc(1, sizeof *tok) : NULL;
    if (st == ADIL_OK && !tok) {
        st = adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_tokenizer_new: out of memory");
    }
    if (st == ADIL_OK) {
        tok->n_vocab = desc->n_vocab;
        st = choose_model(tok, desc);
    }
    if (st == ADIL_OK) {
        st = copy_vocab(tok, desc);
    }
    if (st == ADIL_OK) {
        st = adil_vocab_index(tok);
    }
    if (st == ADIL_OK && !tok->is_spm) {
        st = copy_merges(tok, desc);
    }
    if (st == ADIL_OK) {
        set_flags(tok, desc);
        adil_token_fixups(tok);
        index_bytes(tok);
        adil_bpe_init_byte_map(tok);
        st = adil_special_index(tok);
    }
    if (st != ADIL_OK) {
        adil_tokenizer_free(tok);
        return st;
    }
    *out = tok;
    return ADIL_OK;
}

void adil_tokenizer_free(adil_tokenizer *tok) {
    if (!tok) {
        return;
    }
    adil_hash_index_free(&tok->by_text);
    adil_hash_index_free(&tok->by_merge);
    free(tok->text);
    free(tok->vocab);
    free(tok->merge_text);
    free(tok->merge_offset);
    free(tok->merge_len);
    free(tok->merge_split);
    free(tok->specials);
    free(tok->trie);
    free(tok);
}

/* ---- tokenize ------------------------------------------------------------ */

/* SentencePiece on one raw fragment: optional leading space, then every
 * space written as "▁". */
static adil_status spm_fragment(const adil_tokenizer *tok, const char *text, size_t len, bool space_prefix,
                                adil_ids *out) {
    size_t n_spaces = space_prefix ? 1 : 0;
    for (size_t i = 0; i < len; i++) {
        n_spaces += text[i] == ' ';
    }
    size_t n = len + (space_prefix ? 1 : 0) + 2 * n_spaces;
    char *buf = malloc(n ? n : 1);
    if (!buf) {
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "tokenize: out of memory for %zu bytes", n);
    }
    size_t k = 0;
    if (space_prefix) {
        memcpy(buf + k, k_space_marker, 3);
        k += 3;
    }
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') {
            memcpy(buf + k, k_space_marker, 3);
            k += 3;
        } else {
            buf[k++] = text[i];
        }
    }
    adil_status st = adil_spm_tokenize(tok, buf, k, out);
    free(buf);
    return st;
}

static adil_status tokenize_fragments(const adil_tokenizer *tok, const char *text,
                                      const adil_fragments *frags, adil_ids *out) {
    bool prev_special = true; /* the text's start counts as after a special token */
    adil_status st = ADIL_OK;
    for (size_t i = 0; i < frags->n && st == ADIL_OK; i++) {
        const adil_fragment *f = &frags->data[i];
        if (f->token >= 0) {
            st = adil_ids_push(out, f->token);
            prev_special = true;
        } else if (tok->is_spm) {
            st = spm_fragment(tok, text + f->start, f->len, tok->add_space_prefix && prev_special, out);
            prev_special = false;
        } else {
            st = adil_bpe_tokenize(tok, text + f->start, f->len, out);
        }
    }
    return st;
}

static adil_status check_tokenize_args(const adil_tokenizer *tok, const char *text, size_t len,
                                       int32_t add_bos, const int32_t *ids, size_t capacity,
                                       const size_t *n_needed) {
    if (!tok || (!text && len > 0) || (!ids && capacity > 0) || !n_needed) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "tokenize: expected tokenizer, text (when text_len > 0), ids (when "
                         "capacity > 0) and n_tokens, got a NULL");
    }
    if (len > (size_t)INT32_MAX / 4) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "tokenize: text_len: expected at most %d bytes, got %zu", INT32_MAX / 4, len);
    }
    if (add_bos == 1 && tok->bos_id < 0) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "tokenize: add_bos = 1, but the model has no BOS token");
    }
    return ADIL_OK;
}

adil_status adil_tokenizer_tokenize(const adil_tokenizer *tok, const char *text, size_t text_len,
                                    int32_t add_bos, int32_t parse_special, int32_t *ids, size_t capacity,
                                    size_t *n_needed) {
    adil_status st = check_tokenize_args(tok, text, text_len, add_bos, ids, capacity, n_needed);
    if (st != ADIL_OK) {
        return st;
    }
    bool want_bos = add_bos == 1 || (add_bos < 0 && tok->add_bos);
    bool want_eos = add_bos != 0 && tok->add_eos && tok->eos_id >= 0;
    adil_ids out = {0};
    adil_fragments frags = {0};
    if (want_bos && tok->bos_id >= 0) {
        st = adil_ids_push(&out, tok->bos_id);
    }
    if (st == ADIL_OK) {
        st = adil_special_split(tok, text, text_len, parse_special != 0, &frags);
    }
    if (st == ADIL_OK) {
        st = tokenize_fragments(tok, text, &frags, &out);
    }
    if (st == ADIL_OK && want_eos) {
        st = adil_ids_push(&out, tok->eos_id);
    }
    if (st == ADIL_OK) {
        size_t n = out.n < capacity ? out.n : capacity;
        if (n > 0) {
            memcpy(ids, out.data, n * sizeof *ids);
        }
        *n_needed = out.n;
    }
    free(frags.data);
    adil_ids_free(&out);
    return st;
}

/* ---- token_to_piece ------------------------------------------------------- */

/* Writes `n` bytes of `src` (as far as they fit) and counts them. */
typedef struct piece_out {
    char *buf;
    size_t cap;
    size_t n;
} piece_out;

static void put(piece_out *o, const void *src, size_t n) {
    if (o->n < o->cap) {
        size_t k = o->cap - o->n < n ? o->cap - o->n : n;
        memcpy(o->buf + o->n, src, k);
    }
    o->n += n;
}

/* llama: the text with every "▁" written as a space. */
static void unescape_spaces(const char *s, size_t len, piece_out *o) {
    for (size_t i = 0; i < len;) {
        if (i + 3 <= len && memcmp(s + i, k_space_marker, 3) == 0) {
            put(o, " ", 1);
            i += 3;
        } else {
            put(o, s + i, 1);
            i++;
        }
    }
}

/* gpt2: every code point back to the byte it stands for; a code point
 * outside GPT-2's map gives llama.cpp's "[UNK_BYTE_0x..<token>]" marker. */
static void decode_byte_level(const adil_tokenizer *tok, const char *s, size_t len, piece_out *o) {
    for (size_t i = 0; i < len;) {
        size_t start = i;
        uint32_t cp = adil_utf8_decode((const uint8_t *)s, len, &i);
        int b = adil_bpe_byte_of_cp(tok, cp);
        if (b >= 0) {
            uint8_t byte = (uint8_t)b;
            put(o, &byte, 1);
            continue;
        }
        char hex[3];
        put(o, "[UNK_BYTE_0x", 12);
        for (size_t k = start; k < i; k++) {
            snprintf(hex, sizeof hex, "%02x", (uint8_t)s[k]);
            put(o, hex, 2);
        }
        put(o, s, len);
        put(o, "]", 1);
    }
}

static int hex_digit(char c) {
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

/* The byte of a "<0xXX>" token: the hex digits at offsets 3 and 4 (as far as
 * they are digits; none gives 0, like strtol). */
static uint8_t byte_of_token(const char *s, size_t len) {
    unsigned v = 0;
    for (size_t i = 3; i < 5 && i < len && hex_digit(s[i]) >= 0; i++) {
        v = v * 16 + (unsigned)hex_digit(s[i]);
    }
    return (uint8_t)v;
}

adil_status adil_tokenizer_token_to_piece(const adil_tokenizer *tok, int32_t id, int32_t special, char *buf,
                                          size_t capacity, size_t *n_bytes) {
    if (!tok || (!buf && capacity > 0) || !n_bytes) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "token_to_piece: expected tokenizer, buf (when capacity > 0) and n_bytes, "
                         "got a NULL");
    }
    if (id < 0 || (uint32_t)id >= tok->n_vocab) {
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "token_to_piece: token: expected 0..%u, got %d",
                         tok->n_vocab - 1, id);
    }
    piece_out o = {.buf = buf, .cap = capacity, .n = 0};
    const adil_vocab_entry *e = &tok->vocab[id];
    const char *s = adil_vocab_text(tok, id);
    uint8_t attr = e->attr;
    if (attr & (ADIL_ATTR_CONTROL | ADIL_ATTR_UNKNOWN)) {
        if (special) {
            put(&o, s, e->len);
        }
    } else if (attr & ADIL_ATTR_USER_DEFINED) {
        put(&o, s, e->len);
    } else if (attr & ADIL_ATTR_NORMAL) {
        if (tok->is_spm) {
            unescape_spaces(s, e->len, &o);
        } else {
            decode_byte_level(tok, s, e->len, &o);
        }
    } else if (attr & ADIL_ATTR_BYTE) {
        uint8_t b = byte_of_token(s, e->len);
        put(&o, &b, 1);
    }
    *n_bytes = o.n;
    return ADIL_OK;
}

/* ---- facts ------------------------------------------------------------------ */

void adil_tokenizer_get_info(const adil_tokenizer *tok, adil_tokenizer_info *out) {
    *out = (adil_tokenizer_info){
        .n_vocab = tok->n_vocab,
        .bos_id = tok->bos_id,
        .eos_id = tok->eos_id,
        .eot_id = tok->eot_id,
        .unk_id = tok->unk_id,
        .pad_id = tok->pad_id,
        .add_bos = tok->add_bos,
        .add_eos = tok->add_eos,
        .add_space_prefix = tok->add_space_prefix,
        .is_spm = tok->is_spm,
    };
}

int32_t adil_tokenizer_find(const adil_tokenizer *tok, const char *text, size_t len) {
    return (text || len == 0) ? adil_vocab_find(tok, text ? text : "", len) : -1;
}

adil_token_type adil_tokenizer_token_type(const adil_tokenizer *tok, int32_t id) {
    if (id < 0 || (uint32_t)id >= tok->n_vocab) {
        return ADIL_TOKEN_TYPE_UNDEFINED;
    }
    uint8_t a = tok->vocab[id].attr;
    if (a & ADIL_ATTR_CONTROL) return ADIL_TOKEN_TYPE_CONTROL;
    if (a & ADIL_ATTR_UNKNOWN) return ADIL_TOKEN_TYPE_UNKNOWN;
    if (a & ADIL_ATTR_USER_DEFINED) return ADIL_TOKEN_TYPE_USER_DEFINED;
    if (a & ADIL_ATTR_NORMAL) return ADIL_TOKEN_TYPE_NORMAL;
    if (a & ADIL_ATTR_BYTE) return ADIL_TOKEN_TYPE_BYTE;
    if (a & ADIL_ATTR_UNUSED) return ADIL_TOKEN_TYPE_UNUSED;
    return ADIL_TOKEN_TYPE_UNDEFINED;
}

bool adil_tokenizer_is_eog(const adil_tokenizer *tok, int32_t id) {
    return id >= 0 && (uint32_t)id < tok->n_vocab && (tok->vocab[id].attr & ADIL_ATTR_EOG) != 0;
}
