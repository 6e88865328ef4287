/*
 * vocab.c — a model's vocabulary indexed for masks (grammar_internal.h):
 * the byte trie of TEXT tokens in preorder (a subtree is a contiguous run of
 * nodes, so a refused byte skips it in one jump), and the sets the string
 * fast path needs: the tokens of plain string text by code-point count, and
 * the tokens of plain text followed by a quote or backslash, grouped by
 * what follows the plain part (their "suffix class").
 */
#include "grammar_internal.h"
#include "strlex.h"

#include <stdlib.h>
#include <string.h>

#define OOM(what) adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "grammar_vocab_new: out of memory (%s)", what)

/* ---- sorting token ids (by bytes, or by the bytes of their suffixes) -------------- */

typedef struct sort_key {
    const grammar_vocab *v;
    const uint32_t *from; /* NULL: whole tokens; else where each token's suffix starts */
} sort_key;

static int compare(const void *ctx, uint32_t a, uint32_t b) {
    const sort_key *k = ctx;
    const grammar_vocab *v = k->v;
    const uint32_t sa = k->from ? k->from[a] : 0, sb = k->from ? k->from[b] : 0;
    const uint32_t la = v->len[a] - sa, lb = v->len[b] - sb;
    const int r = memcmp(v->bytes + v->off[a] + sa, v->bytes + v->off[b] + sb, la < lb ? la : lb);
    if (r) return r;
    if (la != lb) return la < lb ? -1 : 1;
    return (a > b) - (a < b);
}

/* ---- the trie ---------------------------------------------------------------------- */

static uint32_t lcp(const grammar_vocab *v, uint32_t a, uint32_t b) {
    const uint32_t n = v->len[a] < v->len[b] ? v->len[a] : v->len[b];
    uint32_t i = 0;
    while (i < n && v->bytes[v->off[a] + i] == v->bytes[v->off[b] + i]) i++;
    return i;
}

/* kids2: the depth-2 nodes, grouped by their first byte (preorder already
 * has them grouped, first bytes ascending). */
static adil_status index_depth2(grammar_vocab *v) {
    uint32_t n2 = 0;
    for (uint32_t i = 0; i < v->n_nodes; i++) n2 += v->trie[i].depth == 2;
    v->kids2 = malloc((n2 + 1) * sizeof *v->kids2);
    v->kids2_byte = malloc(n2 + 1);
    if (!v->kids2 || !v->kids2_byte) return OOM("trie");
    uint32_t k = 0, next_b = 0;
    for (uint32_t i = 0; i < v->n_nodes; i++) {
        const trie_node *t = &v->trie[i];
        if (t->depth == 1)
            for (; next_b <= t->byte; next_b++) v->kids2_off[next_b] = k;
        if (t->depth == 2) {
            v->kids2[k] = i;
            v->kids2_byte[k++] = t->byte;
        }
    }
    for (; next_b <= 256; next_b++) v->kids2_off[next_b] = k;
    return ADIL_OK;
}

static adil_status build_trie(grammar_vocab *v, const uint32_t *sorted, uint32_t n_text, size_t total) {
    v->trie = calloc(total + 1, sizeof *v->trie);
    v->t_ids = malloc((n_text + 1) * sizeof *v->t_ids);
    if (!v->trie || !v->t_ids) return OOM("trie");
    for (int b = 0; b < 256; b++) v->root[b] = GRAMMAR_NONE;
    uint32_t open[GRAMMAR_MAX_TOKEN_BYTES + 1], depth = 0, n = 0;
    for (uint32_t k = 0; k < n_text; k++) {
        const uint32_t id = sorted[k], len = v->len[id];
        const uint32_t shared = k ? lcp(v, sorted[k - 1], id) : 0;
        for (; depth > shared; depth--) v->trie[open[depth]].end = n;
        for (uint32_t d = shared + 1; d <= len; d++) {
            trie_node *t = &v->trie[n];
            t->byte = v->bytes[v->off[id] + d - 1];
            t->depth = (uint8_t)d;
            if (d == 1) v->root[t->byte] = n;
            open[d] = n++;
        }
        depth = len;
        trie_node *t = &v->trie[open[len]];
        if (t->ntok == 0) t->tok = k;
        if (t->ntok < UINT16_MAX) t->ntok++;
        v->t_ids[k] = id;
    }
    for (; depth > 0; depth--) v->trie[open[depth]].end = n;
    v->n_nodes = n;
    return index_depth2(v);
}

/* ---- string text ------------------------------------------------------------------ */

enum { PIECE_INVALID, PIECE_PLAIN, PIECE_SPECIAL };

/* What a token is inside a string, from a character boundary: plain text
 * (its code points in *cp), plain text then a quote or backslash at *at, or
 * never valid there. */
static int classify(const grammar_vocab *v, uint32_t id, uint32_t *cp, uint32_t *at) {
    strlex s = {0};
    *cp = 0;
    for (uint32_t i = 0; i < v->len[id]; i++) {
        const uint8_t b = v->bytes[v->off[id] + i];
        if (s.need == 0 && (b == '"' || b == '\\')) {
            *at = i;
            return PIECE_SPECIAL;
        }
        const lex_result r = lex_byte(&s, b, true);
        if (r == LEX_REJECT) return PIECE_INVALID;
        if (r == LEX_CHAR) ++*cp;
    }
    return PIECE_PLAIN;
}

static uint32_t *new_mask(const grammar_vocab *v) {
    return calloc(v->words ? v->words : 1, sizeof(uint32_t));
}

static adil_status build_plain(grammar_vocab *v, uint32_t *at) {
    v->plain_all = new_mask(v);
    v->cp = calloc(v->n, 1);
    v->special = calloc(v->n, sizeof *v->special);
    v->long_plain = malloc(v->n * sizeof *v->long_plain);
    if (!v->plain_all || !v->cp || !v->special || !v->long_plain) return OOM("string sets");
    for (uint32_t c = 0; c <= PLAIN_BUCKETS; c++)
        if (!(v->plain_upto[c] = new_mask(v))) return OOM("string sets");
    for (uint32_t id = 0; id < v->n; id++) {
        if (v->kind[id] != GRAMMAR_TOKEN_TEXT) continue;
        uint32_t cp = 0;
        const int kind = classify(v, id, &cp, &at[id]);
        v->cp[id] = (uint8_t)(cp > 255 ? 255 : cp);
        if (kind == PIECE_SPECIAL) {
            v->special[v->n_special++] = (special_token){.id = id, .cp = v->cp[id]};
        } else if (kind == PIECE_PLAIN) {
            mask_set(v->plain_all, id);
            v->n_plain_all++;
            for (uint32_t c = cp; c <= PLAIN_BUCKETS; c++) {
                mask_set(v->plain_upto[c], id);
                v->n_plain_upto[c]++;
            }
            if (cp > PLAIN_BUCKETS) v->long_plain[v->n_long_plain++] = id;
        }
    }
    return ADIL_OK;
}

/* Whether a suffix closes the string, and the code points it adds before. */
static void describe_suffix(const grammar_vocab *v, uint32_t id, uint32_t at, uint8_t *closes, uint8_t *cp) {
    strlex s = {0};
    uint32_t n = 0;
    *closes = 0;
    for (uint32_t i = at; i < v->len[id]; i++) {
        const lex_result r = lex_byte(&s, v->bytes[v->off[id] + i], true);
        if (r == LEX_CLOSE) *closes = 1;
        if (r == LEX_CLOSE || r == LEX_REJECT) break;
        if (r == LEX_CHAR) n++;
    }
    *cp = (uint8_t)(n > 255 ? 255 : n);
}

/* Copies the suffix of token id from `at` as class c's bytes. */
static void add_suffix(grammar_vocab *v, uint32_t id, uint32_t at, uint32_t c) {
    const uint32_t len = v->len[id] - at;
    memcpy(v->suffix_bytes + v->suffix_off[c], v->bytes + v->off[id] + at, len);
    v->suffix_off[c + 1] = v->suffix_off[c] + len;
    describe_suffix(v, id, at, &v->suffix_closes[c], &v->suffix_cp[c]);
}

/* Suffix classes: special tokens sorted by what follows their plain part. */
static adil_status build_suffixes(grammar_vocab *v, const uint32_t *at) {
    const uint32_t n = v->n_special;
    uint32_t *order = malloc((n + 1) * sizeof *order), *tmp = malloc((n + 1) * sizeof *tmp);
    uint32_t *slot = malloc((size_t)v->n * sizeof *slot);
    size_t bytes = 0;
    for (uint32_t k = 0; k < n; k++) bytes += v->len[v->special[k].id] - at[v->special[k].id];
    v->suffix_bytes = malloc(bytes + 1);
    v->suffix_off = calloc(n + 2, sizeof *v->suffix_off);
    v->suffix_closes = malloc(n + 1);
    v->suffix_cp = malloc(n + 1);
    adil_status st = ADIL_OK;
    if (!order || !tmp || !slot || !v->suffix_bytes || !v->suffix_off || !v->suffix_closes || !v->suffix_cp)
        st = OOM("suffixes");
    if (st == ADIL_OK) {
        for (uint32_t k = 0; k < n; k++) {
            order[k] = v->special[k].id;
            slot[v->special[k].id] = k;
        }
        const sort_key key = {v, at};
        grammar_sort_ids(order, tmp, n, compare, &key);
        for (uint32_t k = 0; k < n; k++) {
            const uint32_t id = order[k];
            const uint32_t prev = k ? order[k - 1] : 0;
            const bool same = k && v->len[id] - at[id] == v->len[prev] - at[prev] &&
                              !memcmp(v->bytes + v->off[id] + at[id], v->bytes + v->off[prev] + at[prev],
                                      v->len[id] - at[id]);
            if (!same) add_suffix(v, id, at[id], v->n_suffix++);
            v->special[slot[id]].cls = v->n_suffix - 1;
        }
    }
    free(order);
    free(tmp);
    free(slot);
    return st;
}

/* ---- building ------------------------------------------------------------------------ */

static adil_status copy_tokens(grammar_vocab *v, const grammar_token *tokens, size_t *total) {
    size_t bytes = 0;
    for (uint32_t i = 0; i < v->n; i++) bytes += tokens[i].bytes ? tokens[i].len : 0;
    v->kind = malloc(v->n);
    v->off = malloc(v->n * sizeof *v->off);
    v->len = malloc(v->n * sizeof *v->len);
    v->bytes = malloc(bytes + 1);
    if (!v->kind || !v->off || !v->len || !v->bytes || bytes > UINT32_MAX) return OOM("tokens");
    size_t at = 0;
    *total = 0;
    for (uint32_t i = 0; i < v->n; i++) {
        const grammar_token *t = &tokens[i];
        const uint32_t len = t->bytes ? t->len : 0;
        v->kind[i] = (uint8_t)t->kind;
        if (t->kind == GRAMMAR_TOKEN_TEXT && (len == 0 || len > GRAMMAR_MAX_TOKEN_BYTES))
            v->kind[i] = GRAMMAR_TOKEN_CONTROL;
        if (t->kind > GRAMMAR_TOKEN_END) v->kind[i] = GRAMMAR_TOKEN_CONTROL;
        v->off[i] = (uint32_t)at;
        v->len[i] = len;
        if (len) memcpy(v->bytes + at, t->bytes, len);
        at += len;
        if (v->kind[i] == GRAMMAR_TOKEN_TEXT) *total += len;
        if (v->kind[i] == GRAMMAR_TOKEN_END) v->n_end++;
    }
    return ADIL_OK;
}

static adil_status index_tokens(grammar_vocab *v, size_t total) {
    uint32_t *sorted = malloc((v->n + 1) * sizeof *sorted), *tmp = malloc((v->n + 1) * sizeof *tmp);
    uint32_t *at = calloc(v->n, sizeof *at);
    v->end_ids = malloc((v->n_end + 1) * sizeof *v->end_ids);
    adil_status st = sorted && tmp && at && v->end_ids ? ADIL_OK : OOM("index");
    uint32_t n_text = 0, n_end = 0;
    for (uint32_t i = 0; st == ADIL_OK && i < v->n; i++) {
        if (v->kind[i] == GRAMMAR_TOKEN_TEXT) sorted[n_text++] = i;
        if (v->kind[i] == GRAMMAR_TOKEN_END) v->end_ids[n_end++] = i;
    }
    if (st == ADIL_OK) {
        const sort_key key = {v, NULL};
        grammar_sort_ids(sorted, tmp, n_text, compare, &key);
        st = build_trie(v, sorted, n_text, total);
    }
    if (st == ADIL_OK) st = build_plain(v, at);
    if (st == ADIL_OK) st = build_suffixes(v, at);
    free(sorted);
    free(tmp);
    free(at);
    return st;
}

adil_status grammar_vocab_new(const grammar_token *tokens, uint32_t n_tokens, grammar_vocab **out) {
    if (out) *out = NULL;
    if (!tokens || !out || n_tokens == 0 || n_tokens > (1u << 24))
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "grammar_vocab_new: expected 1 to 2^24 tokens, got %u",
                         n_tokens);
    grammar_vocab *v = calloc(1, sizeof *v);
    if (!v) return OOM("vocab");
    v->n = n_tokens;
    v->words = (n_tokens + 31) / 32;
    size_t total = 0;
    adil_status st = copy_tokens(v, tokens, &total);
    if (st == ADIL_OK) st = index_tokens(v, total);
    if (st != ADIL_OK) {
        grammar_vocab_free(v);
        return st;
    }
    *out = v;
    return ADIL_OK;
}

void grammar_vocab_free(grammar_vocab *v) {
    if (!v) return;
    free(v->kids2);
    free(v->kids2_byte);
    void *all[] = {v->kind,    v->off,          v->len,        v->bytes,         v->trie,
                   v->t_ids,   v->end_ids,      v->plain_all,  v->long_plain,    v->cp,
                   v->special, v->suffix_bytes, v->suffix_off, v->suffix_closes, v->suffix_cp};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) free(all[i]);
    for (int c = 0; c <= PLAIN_BUCKETS; c++) free(v->plain_upto[c]);
    free(v);
}

uint32_t grammar_vocab_size(const grammar_vocab *v) { return v ? v->n : 0; }
