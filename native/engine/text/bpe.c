/*
 * bpe.c — byte-level BPE of the "gpt2" tokenizer model (llama 3, qwen 2).
 *
 * A raw fragment is decoded to code points (invalid UTF-8 becomes U+FFFD),
 * split into words by the pre-tokenizer, and each word's UTF-8 bytes are
 * written as GPT-2's printable code points (byte 0x20 ' ' becomes U+0120
 * 'Ġ', ...), the alphabet the vocabulary and merges are written in.  Within
 * a word, adjacent symbols merge lowest merge rank first (ties: leftmost)
 * with merge.c's loop, the rank as the cost; some pre-tokenizers (llama-3,
 * tekken) also take a whole word that is a token as is ("ignore merges").
 */
#include "text/tokenizer_internal.h"
#include "text/unicode.h"

#include <stdlib.h>
#include <string.h>

/* ---- GPT-2's byte <-> code point map -------------------------------------- */

static bool byte_is_printable(unsigned b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

void adil_bpe_init_byte_map(adil_tokenizer *tok) {
    /* Printable Latin-1 bytes stand for themselves; the other 68 bytes take
     * the code points from U+0100 on, in byte order. */
    uint32_t next = 0x100;
    for (unsigned b = 0; b < 256; b++) {
        tok->byte_to_cp[b] = byte_is_printable(b) ? b : next++;
    }
}

int adil_bpe_byte_of_cp(const adil_tokenizer *tok, uint32_t cp) {
    if (cp < 256 && byte_is_printable(cp)) {
        return (int)cp;
    }
    if (cp >= 0x100 && cp < 0x100 + 68) {
        for (unsigned b = 0; b < 256; b++) {
            if (tok->byte_to_cp[b] == cp) {
                return (int)b;
            }
        }
    }
    return -1;
}

/* ---- merging ------------------------------------------------------------- */

/* A pair merges when the merge table has it; the lowest rank merges first. */
static bool rank_cost(const adil_tokenizer *tok, const char *word, const adil_merge_symbol *l,
                      const adil_merge_symbol *r, double *cost) {
    int32_t rank = adil_merge_rank(tok, word + l->start, l->n, word + r->start, r->n);
    if (rank < 0) {
        return false;
    }
    *cost = (double)rank;
    return true;
}

/* Per-call scratch, reused across the words of a fragment. */
typedef struct bpe_work {
    char *word; /* the encoded word */
    size_t word_cap;
    adil_merge_symbol *syms;
    size_t syms_cap;
    adil_merge_heap heap;
} bpe_work;

/* Emits a merged symbol: its token, else the tokens of its single bytes
 * that exist (llama.cpp drops the others). */
static adil_status emit_symbol(const adil_tokenizer *tok, const char *s, size_t n, adil_ids *out) {
    int32_t id = adil_vocab_find(tok, s, n);
    if (id >= 0) {
        return adil_ids_push(out, id);
    }
    for (size_t i = 0; i < n; i++) {
        int32_t b = adil_vocab_find(tok, s + i, 1);
        if (b >= 0) {
            adil_status st = adil_ids_push(out, b);
            if (st != ADIL_OK) {
                return st;
            }
        }
    }
    return ADIL_OK;
}

/* Writes word = the byte-level encoding of cps[0..n); returns its length. */
static adil_status encode_word(const adil_tokenizer *tok, bpe_work *w, const uint32_t *cps, size_t n,
                               size_t *len) {
    /* Each code point has at most 4 bytes, each byte becomes at most 2. */
    adil_status st = adil_grow((void **)&w->word, &w->word_cap, n * 8, 1, "tokenize: word bytes");
    if (st != ADIL_OK) {
        return st;
    }
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t raw[4];
        size_t nb = adil_utf8_encode(cps[i], raw);
        for (size_t j = 0; j < nb; j++) {
            k += adil_utf8_encode(tok->byte_to_cp[raw[j]], (uint8_t *)w->word + k);
        }
    }
    *len = k;
    return ADIL_OK;
}

static adil_status tokenize_word(const adil_tokenizer *tok, bpe_work *w, const uint32_t *cps, size_t n,
                                 adil_ids *out) {
    size_t len;
    adil_status st = encode_word(tok, w, cps, n, &len);
    if (st != ADIL_OK) {
        return st;
    }
    if (tok->ignore_merges) {
        int32_t id = adil_vocab_find(tok, w->word, len);
        if (id >= 0) {
            return adil_ids_push(out, id); /* ignore_merges: a whole-word token wins */
        }
    }
    st = adil_grow((void **)&w->syms, &w->syms_cap, len, sizeof *w->syms, "tokenize: symbols");
    if (st != ADIL_OK) {
        return st;
    }
    size_t n_syms = adil_merge_split_chars(w->word, len, w->syms);
    st = adil_merge_symbols(tok, w->word, w->syms, n_syms, rank_cost, &w->heap);
    for (int32_t i = 0; st == ADIL_OK && n_syms > 0 && i >= 0; i = w->syms[i].next) {
        st = emit_symbol(tok, w->word + w->syms[i].start, w->syms[i].n, out);
    }
    return st;
}

adil_status adil_bpe_tokenize(const adil_tokenizer *tok, const char *text, size_t len, adil_ids *out) {
    uint32_t *cps = malloc((len ? len : 1) * sizeof *cps);
    size_t *lens = malloc((len ? len : 1) * sizeof *lens);
    bpe_work w = {.heap = {.what = "tokenize: pairs"}};
    adil_status st = ADIL_OK;
    if (!cps || !lens) {
        st = adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "tokenize: out of memory for %zu bytes", len);
    }
    size_t n = 0, n_words = 0;
    for (size_t pos = 0; st == ADIL_OK && pos < len;) {
        cps[n++] = adil_utf8_decode((const uint8_t *)text, len, &pos);
    }
    if (st == ADIL_OK) {
        adil_pretokenize(tok->pretok, cps, n, lens, &n_words);
    }
    size_t at = 0;
    for (size_t i = 0; st == ADIL_OK && i < n_words; i++) {
        st = tokenize_word(tok, &w, cps + at, lens[i], out);
        at += lens[i];
    }
    free(w.word);
    free(w.syms);
    free(w.heap.data);
    free(lens);
    free(cps);
    return st;
}
