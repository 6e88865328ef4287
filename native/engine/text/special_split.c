/*
 * special_split.c — cutting text at special tokens before it is tokenized.
 *
 * llama.cpp takes its special tokens (control, user-defined, unknown) longest
 * first and cuts every occurrence of each out of the raw text that is left,
 * leftmost first.  Doing that for all 6,414 of gemma's special tokens on
 * every call would cost n_special passes over the text, so we first find
 * which special tokens occur at all (one walk of a byte trie from each text
 * position), then make llama.cpp's passes for those tokens only, in its
 * order.  The result is the same fragments.
 */
#include "text/tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- building ---------------------------------------------------------- */

static bool is_special_attr(uint8_t attr) {
    return (attr & (ADIL_ATTR_CONTROL | ADIL_ATTR_USER_DEFINED | ADIL_ATTR_UNKNOWN)) != 0;
}

/* Ordering of specials: longer text first, then lower id.  (llama.cpp's
 * std::sort by length alone leaves equal lengths in an unspecified order;
 * equal-length specials can only compete where their texts overlap, which
 * gemma's never do.) */
typedef struct special_key {
    uint32_t len;
    int32_t id;
} special_key;

static int cmp_special(const void *a, const void *b) {
    const special_key *x = a, *y = b;
    if (x->len != y->len) {
        return x->len > y->len ? -1 : 1;
    }
    return (x->id > y->id) - (x->id < y->id);
}

static adil_status trie_add(adil_tokenizer *tok, size_t *cap, const char *s, size_t len, int32_t special) {
    uint32_t node = 0;
    for (size_t i = 0; i < len; i++) {
        uint8_t b = (uint8_t)s[i];
        uint32_t c = tok->trie[node].child;
        while (c != 0 && tok->trie[c].byte != b) {
            c = tok->trie[c].sibling;
        }
        if (c == 0) {
            adil_status st = adil_grow((void **)&tok->trie, cap, (size_t)tok->n_trie + 1, sizeof *tok->trie,
                                       "tokenizer: special-token trie");
            if (st != ADIL_OK) {
                return st;
            }
            c = tok->n_trie++;
            tok->trie[c] =
                (adil_trie_node){.child = 0, .sibling = tok->trie[node].child, .special = -1, .byte = b};
            tok->trie[node].child = c;
        }
        node = c;
    }
    if (tok->trie[node].special < 0) {
        tok->trie[node].special = special; /* the first in order wins a repeated text */
    }
    return ADIL_OK;
}

adil_status adil_special_index(adil_tokenizer *tok) {
    uint32_t n = 0;
    for (uint32_t id = 0; id < tok->n_vocab; id++) {
        n += is_special_attr(tok->vocab[id].attr) && tok->vocab[id].len > 0;
    }
    special_key *keys = malloc((size_t)(n ? n : 1) * sizeof *keys);
    tok->specials = malloc((size_t)(n ? n : 1) * sizeof *tok->specials);
    size_t cap = 1024;
    tok->trie = malloc(cap * sizeof *tok->trie);
    if (!keys || !tok->specials || !tok->trie) {
        free(keys);
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "tokenizer: out of memory for %u special tokens", n);
    }
    uint32_t k = 0;
    for (uint32_t id = 0; id < tok->n_vocab; id++) {
        if (is_special_attr(tok->vocab[id].attr) && tok->vocab[id].len > 0) {
            keys[k++] = (special_key){.len = tok->vocab[id].len, .id = (int32_t)id};
        }
    }
    qsort(keys, n, sizeof *keys, cmp_special);
    tok->trie[0] = (adil_trie_node){.child = 0, .sibling = 0, .special = -1, .byte = 0};
    tok->n_trie = 1;
    adil_status st = ADIL_OK;
    for (uint32_t i = 0; i < n && st == ADIL_OK; i++) {
        tok->specials[i] = keys[i].id;
        st = trie_add(tok, &cap, adil_vocab_text(tok, keys[i].id), keys[i].len, (int32_t)i);
    }
    tok->n_special = n;
    free(keys);
    return st;
}

/* ---- splitting ----------------------------------------------------------- */

static adil_status frag_push(adil_fragments *f, size_t start, size_t len, int32_t token) {
    adil_status st = adil_grow((void **)&f->data, &f->cap, f->n + 1, sizeof *f->data, "tokenize: fragments");
    if (st != ADIL_OK) {
        return st;
    }
    f->data[f->n++] = (adil_fragment){.start = start, .len = len, .token = token};
    return ADIL_OK;
}

static bool allowed(const adil_tokenizer *tok, int32_t id, bool parse_special) {
    /* Control and unknown tokens only when asked; user-defined always. */
    return parse_special || (tok->vocab[id].attr & (ADIL_ATTR_CONTROL | ADIL_ATTR_UNKNOWN)) == 0;
}

/* Marks in `present` (one byte per special) every allowed special token
 * that occurs somewhere in the text. */
static void find_present(const adil_tokenizer *tok, const char *text, size_t len, bool parse_special,
                         uint8_t *present) {
    for (size_t pos = 0; pos < len; pos++) {
        uint32_t node = 0;
        for (size_t i = pos; i < len; i++) {
            uint8_t b = (uint8_t)text[i];
            uint32_t c = tok->trie[node].child;
            while (c != 0 && tok->trie[c].byte != b) {
                c = tok->trie[c].sibling;
            }
            if (c == 0) {
                break;
            }
            node = c;
            int32_t s = tok->trie[node].special;
            if (s >= 0 && allowed(tok, tok->specials[s], parse_special)) {
                present[s] = 1;
            }
        }
    }
}

/* The first occurrence of needle in hay[from, end), or SIZE_MAX. */
static size_t find_in(const char *hay, size_t from, size_t end, const char *needle, size_t n) {
    if (n == 0 || end - from < n) {
        return SIZE_MAX;
    }
    for (size_t p = from; p + n <= end; p++) {
        const char *q = memchr(hay + p, needle[0], end - n + 1 - p);
        if (!q) {
            return SIZE_MAX;
        }
        p = (size_t)(q - hay);
        if (memcmp(hay + p, needle, n) == 0) {
            return p;
        }
    }
    return SIZE_MAX;
}

/* Cuts every occurrence of special token `id` out of the raw fragments of
 * `in`, writing the new fragment list to `out`. */
static adil_status cut_token(const adil_tokenizer *tok, const char *text, int32_t id,
                             const adil_fragments *in, adil_fragments *out) {
    const char *needle = adil_vocab_text(tok, id);
    size_t n = tok->vocab[id].len;
    out->n = 0;
    for (size_t f = 0; f < in->n; f++) {
        adil_fragment fr = in->data[f];
        if (fr.token >= 0) {
            adil_status st = frag_push(out, fr.start, fr.len, fr.token);
            if (st != ADIL_OK) {
                return st;
            }
            continue;
        }
        size_t cur = fr.start, end = fr.start + fr.len;
        for (;;) {
            size_t p = find_in(text, cur, end, needle, n);
            adil_status st = ADIL_OK;
            if (p == SIZE_MAX) {
                if (end > cur) {
                    st = frag_push(out, cur, end - cur, -1);
                }
                if (st != ADIL_OK) {
                    return st;
                }
                break;
            }
            if (p > cur) {
                st = frag_push(out, cur, p - cur, -1);
            }
            if (st == ADIL_OK) {
                st = frag_push(out, p, n, id);
            }
            if (st != ADIL_OK) {
                return st;
            }
            cur = p + n;
        }
    }
    return ADIL_OK;
}

adil_status adil_special_split(const adil_tokenizer *tok, const char *text, size_t len, bool parse_special,
                               adil_fragments *out) {
    if (len == 0) {
        return ADIL_OK; /* no fragments at all, as llama.cpp for "" */
    }
    adil_status st = frag_push(out, 0, len, -1);
    if (st != ADIL_OK || tok->n_special == 0) {
        return st;
    }
    uint8_t *present = calloc(tok->n_special, 1);
    if (!present) {
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "tokenize: out of memory");
    }
    find_present(tok, text, len, parse_special, present);
    adil_fragments other = {0};
    for (uint32_t s = 0; s < tok->n_special && st == ADIL_OK; s++) {
        if (!present[s]) {
            continue;
        }
        st = cut_token(tok, text, tok->specials[s], out, &other);
        adil_fragments swap = *out;
        *out = other;
        other = swap;
    }
    free(other.data);
    free(present);
    return st;
}
