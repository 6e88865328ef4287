/*
 * matcher.c — one run's position in a grammar: accepting tokens, the forced
 * continuation, and the mask of allowed tokens.
 *
 * A mask is computed one of three ways:
 *   - free text (lazy mode, before the trigger): every token, except those
 *     that complete the trigger and then break the document (only the
 *     grammar's short list of trigger-completing tokens is fed);
 *   - inside a string (between characters): the vocab's precomputed set of
 *     plain-text tokens (by code points left, when a maxLength is near), and
 *     the tokens of plain text then a quote or backslash fed once per suffix
 *     class (or one by one when a length bound or a key's identity depends on
 *     the plain part);
 *   - anywhere else: a walk over the vocab's byte trie, one state per depth,
 *     skipping every subtree whose first byte is refused.
 */
#include "grammar_internal.h"
#include "strlex.h"

#include <stdlib.h>
#include <string.h>

struct grammar_matcher {
    const adil_grammar *g;
    arena a, spare;
    uint32_t top;
    uint32_t st[GRAMMAR_MAX_TOKEN_BYTES + 1], mark[GRAMMAR_MAX_TOKEN_BYTES + 1];
    uint8_t *suffix_ok;
    bool suffix_known; /* suffix_ok holds the classes of the string the matcher is in */
};

adil_status grammar_matcher_new(const adil_grammar *g, grammar_matcher **out) {
    if (out) *out = NULL;
    if (!g || !out)
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT, "grammar_matcher_new: grammar and out are required");
    grammar_matcher *m = calloc(1, sizeof *m);
    if (!m) return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "grammar_matcher_new: out of memory");
    m->g = g;
    m->suffix_ok = malloc(g->vocab->n_suffix + 1);
    const feeder fd = {.g = g, .a = &m->a};
    m->top = m->suffix_ok ? grammar_start(&fd, g->root, g->lazy) : GRAMMAR_NONE;
    if (m->top == GRAMMAR_NONE) {
        grammar_matcher_free(m);
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "grammar_matcher_new: out of memory");
    }
    *out = m;
    return ADIL_OK;
}

void grammar_matcher_free(grammar_matcher *m) {
    if (!m) return;
    free(m->a.f);
    free(m->spare.f);
    free(m->suffix_ok);
    free(m);
}

static feeder feeder_of(grammar_matcher *m) { return (feeder){.g = m->g, .a = &m->a}; }

grammar_position grammar_matcher_position(const grammar_matcher *m) {
    const feeder fd = {.g = m->g, .a = (arena *)&m->a};
    return grammar_position_of(&fd, m->top);
}

/* Feeds bytes[0 .. len) from state *s, stopping at the first refused byte:
 * returns how many were taken, *s the state after them.  The frames stay in
 * the arena (callers drop or commit them). */
static size_t feed_run(grammar_matcher *m, uint32_t *s, const uint8_t *bytes, size_t len) {
    const feeder fd = feeder_of(m);
    size_t i = 0;
    for (uint32_t next = *s; i < len && grammar_feed(&fd, &next, bytes[i]); i++) *s = next;
    return i;
}

/* Drops the scratch frames above `base`. */
static void drop_to(grammar_matcher *m, uint32_t base) {
    m->a.len = base;
    m->a.failed = false;
}

/* Feeds bytes from state s on scratch frames (dropped afterwards). */
static bool feeds(grammar_matcher *m, uint32_t s, const uint8_t *bytes, uint32_t len) {
    const uint32_t base = m->a.len;
    const bool ok = feed_run(m, &s, bytes, len) == len;
    drop_to(m, base);
    return ok;
}

static const uint8_t *token_bytes(const grammar_vocab *v, uint32_t id) { return v->bytes + v->off[id]; }

/* ---- accepting ---------------------------------------------------------------------- */

static bool in_string_body(const grammar_matcher *m, uint32_t s) {
    const frame *f = &m->a.f[s];
    return f->type == FR_VALUE && m->g->nodes[f->node].kind == NODE_STRING && f->phase == S_BODY;
}

/* Makes state s the matcher's.  The suffix classes of a string stay known
 * while the matcher stays in it: a string's frame is replaced under the same
 * parent, a new string always has a new parent frame. */
static void commit(grammar_matcher *m, uint32_t s) {
    m->suffix_known = m->suffix_known && in_string_body(m, m->top) && in_string_body(m, s) &&
                      m->a.f[m->top].parent == m->a.f[s].parent;
    const uint32_t t = grammar_compact_with(m->g, &m->a, s, &m->spare);
    if (t != GRAMMAR_NONE) m->top = t;
}

static bool in_free_text(const grammar_matcher *m) {
    const frame *f = &m->a.f[m->top];
    return f->type == FR_ROOT && f->phase == R_FREE;
}

bool grammar_matcher_accept_token(grammar_matcher *m, int32_t token, size_t *bad_byte) {
    const grammar_vocab *v = m->g->vocab;
    if (bad_byte) *bad_byte = 0;
    if (token < 0 || (uint32_t)token >= v->n) return false;
    const uint32_t id = (uint32_t)token;
    if (v->kind[id] != GRAMMAR_TOKEN_TEXT) {
        const bool ok = in_free_text(m) ||
                        (v->kind[id] == GRAMMAR_TOKEN_END && grammar_matcher_position(m) != GRAMMAR_OPEN);
        if (!ok && bad_byte) *bad_byte = v->len[id];
        return ok;
    }
    const uint32_t base = m->a.len;
    uint32_t s = m->top;
    const size_t taken = feed_run(m, &s, token_bytes(v, id), v->len[id]);
    if (taken < v->len[id]) {
        drop_to(m, base);
        if (bad_byte) *bad_byte = taken;
        return false;
    }
    commit(m, s);
    return true;
}

bool grammar_matcher_accept_bytes(grammar_matcher *m, const uint8_t *bytes, size_t n, size_t *bad_byte) {
    uint32_t s = m->top;
    const size_t taken = feed_run(m, &s, bytes, n);
    if (taken < n && bad_byte) *bad_byte = taken;
    commit(m, s); /* the bytes before a refused one stay accepted */
    return taken == n;
}

bool grammar_matcher_peek(grammar_matcher *m, const int32_t *tokens, size_t n, grammar_position *out) {
    const grammar_vocab *v = m->g->vocab;
    const uint32_t base = m->a.len;
    uint32_t s = m->top;
    bool ok = true;
    for (size_t i = 0; ok && i < n; i++) {
        const int32_t t = tokens[i];
        ok = t >= 0 && (uint32_t)t < v->n && v->kind[t] == GRAMMAR_TOKEN_TEXT &&
             feed_run(m, &s, token_bytes(v, (uint32_t)t), v->len[t]) == v->len[t];
    }
    const feeder fd = feeder_of(m);
    if (ok) *out = grammar_position_of(&fd, s);
    drop_to(m, base);
    return ok;
}

/* ---- forced bytes ---------------------------------------------------------------------- */

/* Whitespace that fills a gap between lexemes (optional) rather than being
 * content (a space in a string, a key, an enum value): feeding it bumps the
 * gap's whitespace count. */
static bool is_padding(grammar_matcher *m, uint32_t s, uint8_t b) {
    const feeder fd = feeder_of(m);
    const uint32_t base = m->a.len;
    uint32_t t = s;
    const bool padding = json_ws(b) && grammar_feed(&fd, &t, b) && m->a.f[t].ws > 0;
    drop_to(m, base);
    return padding;
}

/* The one byte that may follow state s, optional whitespace aside, or -1. */
static int only_byte(grammar_matcher *m, uint32_t s) {
    int only = -1;
    for (int b = 0; b < 256; b++) {
        const uint8_t byte = (uint8_t)b;
        if (!feeds(m, s, &byte, 1) || is_padding(m, s, byte)) continue;
        if (only >= 0) return -1;
        only = b;
    }
    return only;
}

size_t grammar_matcher_forced(const grammar_matcher *cm, uint8_t *buf, size_t capacity) {
    grammar_matcher *m = (grammar_matcher *)cm; /* scratch frames only; the state is unchanged */
    const feeder fd = feeder_of(m);
    const uint32_t base = m->a.len;
    uint32_t s = m->top;
    size_t n = 0;
    while (n < capacity && grammar_position_of(&fd, s) == GRAMMAR_OPEN) {
        const int b = only_byte(m, s);
        if (b < 0 || !grammar_feed(&fd, &s, (uint8_t)b)) break;
        buf[n++] = (uint8_t)b;
    }
    drop_to(m, base);
    return n;
}

/* ---- masks --------------------------------------------------------------------------- */

static size_t free_text_mask(grammar_matcher *m, uint32_t *mask) {
    const grammar_vocab *v = m->g->vocab;
    size_t count = v->n;
    memset(mask, 0xFF, v->words * sizeof *mask);
    if (v->n % 32) mask[v->words - 1] = (1u << (v->n % 32)) - 1;
    const uint32_t j = m->a.f[m->top].count;
    for (uint32_t k = 0; k < m->g->n_trig_tokens[j]; k++) {
        const uint32_t id = m->g->trig_tokens[j][k];
        if (mask_test(mask, id) && !feeds(m, m->top, token_bytes(v, id), v->len[id])) {
            mask_clear(mask, id);
            count--;
        }
    }
    return count;
}

/* The state of `top` with its string's length raised to `count`, where
 * only the closing quote depends on it (see string_mask). */
static uint32_t with_count(grammar_matcher *m, uint32_t count) {
    frame f = m->a.f[m->top];
    if (f.count >= count) return m->top;
    f.count = count;
    const feeder fd = feeder_of(m);
    return grammar_push(&fd, &f);
}

/* Which suffix classes are valid (suffix_ok), each fed once from the state
 * with its length raised to minLength (so a quote may close): a token's own
 * length after its plain part is then checked against the bounds (see
 * special_ok); the rest of a suffix does not depend on the length, so the
 * classes hold for the rest of the string (a longer string only makes the
 * bound checks stricter). */
static void suffix_classes(grammar_matcher *m, const gnode *n) {
    const grammar_vocab *v = m->g->vocab;
    const uint32_t from = with_count(m, n->min_len);
    for (uint32_t c = 0; c < v->n_suffix; c++) {
        const uint32_t at = v->suffix_off[c];
        m->suffix_ok[c] =
            from != GRAMMAR_NONE && feeds(m, from, v->suffix_bytes + at, v->suffix_off[c + 1] - at);
    }
}

/* A special token (plain text, then its suffix class c) by its class. */
static bool special_ok(const grammar_matcher *m, const gnode *n, uint32_t length, uint32_t c) {
    const grammar_vocab *v = m->g->vocab;
    const uint64_t end = (uint64_t)length + v->suffix_cp[c];
    return m->suffix_ok[c] && end <= n->max_len && (!v->suffix_closes[c] || end >= n->min_len);
}

/* The string fast path; false when the state is not between characters of
 * a string (or a key that may still be an additional one).  Adds the
 * tokens it allows to *count. */
static bool string_mask(grammar_matcher *m, uint32_t *mask, size_t *count) {
    const grammar_vocab *v = m->g->vocab;
    const frame *f = &m->a.f[m->top];
    const gnode *n = &m->g->nodes[f->node];
    const bool key = f->type == FR_KEY;
    if (key ? !(f->flags & KEY_GENERIC)
            : (f->type != FR_VALUE || n->kind != NODE_STRING || f->phase != S_BODY))
        return false;
    if (!lex_clean(&f->s)) return false;
    const uint32_t length = f->count, left = key ? UINT32_MAX : n->max_len - length;
    const uint32_t bucket = left < PLAIN_BUCKETS ? left : PLAIN_BUCKETS;
    memcpy(mask, left > 255 ? v->plain_all : v->plain_upto[bucket], v->words * sizeof *mask);
    *count += left > 255 ? v->n_plain_all : v->n_plain_upto[bucket];
    for (uint32_t k = 0; left > PLAIN_BUCKETS && left <= 255 && k < v->n_long_plain; k++)
        if (v->cp[v->long_plain[k]] <= left) {
            mask_set(mask, v->long_plain[k]);
            ++*count;
        }
    /* A key's identity depends on its plain part (a declared name, a key
     * written before) unless its object declares none and has none yet. */
    const bool key_by_class = key && n->b == 0 && m->a.f[f->parent].y == GRAMMAR_NONE;
    if (key_by_class) {
        static const gnode any_length = {.kind = NODE_STRING, .max_len = UINT32_MAX};
        suffix_classes(m, &any_length);
        m->suffix_known = false; /* the classes of this key, not of a string */
    } else if (!key && !m->suffix_known) {
        suffix_classes(m, n); /* valid for the whole string: see special_ok */
        m->suffix_known = true;
    }
    for (uint32_t k = 0; k < v->n_special; k++) {
        const special_token *t = &v->special[k];
        const uint32_t after = length + t->cp; /* the string's length after the plain part */
        /* Other keys and tokens still short of minLength (the raised state
         * is stricter) are fed whole. */
        bool ok;
        if (key_by_class)
            ok = m->suffix_ok[t->cls];
        else if (key || after < n->min_len)
            ok = feeds(m, m->top, token_bytes(v, t->id), v->len[t->id]);
        else
            ok = special_ok(m, n, after, t->cls);
        if (ok) {
            mask_set(mask, t->id);
            ++*count;
        }
    }
    return true;
}

/* Sets the tokens a trie node spells; returns how many. */
static size_t set_tokens(const grammar_vocab *v, const trie_node *t, uint32_t *mask) {
    for (uint32_t k = 0; k < t->ntok; k++) mask_set(mask, v->t_ids[t->tok + k]);
    return t->ntok;
}

/* Walks the subtree below node r (whose byte took the state to
 * st[depth of r]). */
static size_t walk_subtree(grammar_matcher *m, uint32_t r, uint32_t *mask) {
    const grammar_vocab *v = m->g->vocab;
    const feeder fd = feeder_of(m);
    size_t count = 0;
    for (uint32_t i = r + 1; i < v->trie[r].end;) {
        const trie_node *t = &v->trie[i];
        m->a.len = m->mark[t->depth - 1];
        uint32_t s = m->st[t->depth - 1];
        if (!grammar_feed(&fd, &s, t->byte)) {
            i = t->end;
            continue;
        }
        m->st[t->depth] = s;
        m->mark[t->depth] = m->a.len;
        count += set_tokens(v, t, mask);
        i++;
    }
    return count;
}

/* The trie walk: each first byte fed once, each second byte of an accepted
 * first byte once (from the sequential kids2 table); only the subtrees of
 * accepted two-byte prefixes are read. */
static size_t trie_mask(grammar_matcher *m, uint32_t *mask) {
    const grammar_vocab *v = m->g->vocab;
    const feeder fd = feeder_of(m);
    const uint32_t base = m->a.len;
    size_t count = 0;
    for (int b = 0; b < 256; b++) {
        const uint32_t r = v->root[b];
        if (r == GRAMMAR_NONE) continue;
        m->a.len = base;
        uint32_t s = m->top;
        if (!grammar_feed(&fd, &s, (uint8_t)b)) continue;
        m->st[1] = s;
        m->mark[1] = m->a.len;
        count += set_tokens(v, &v->trie[r], mask);
        for (uint32_t j = v->kids2_off[b]; j < v->kids2_off[b + 1]; j++) {
            m->a.len = m->mark[1];
            uint32_t s2 = m->st[1];
            if (!grammar_feed(&fd, &s2, v->kids2_byte[j])) continue;
            m->st[2] = s2;
            m->mark[2] = m->a.len;
            count += set_tokens(v, &v->trie[v->kids2[j]], mask) + walk_subtree(m, v->kids2[j], mask);
        }
    }
    drop_to(m, base);
    return count;
}

size_t grammar_matcher_mask(grammar_matcher *m, uint32_t *mask) {
    const grammar_vocab *v = m->g->vocab;
    const grammar_position pos = grammar_matcher_position(m);
    const uint32_t base = m->a.len;
    size_t count = 0;
    if (in_free_text(m)) {
        count = free_text_mask(m, mask);
    } else {
        memset(mask, 0, v->words * sizeof *mask);
        if (pos != GRAMMAR_DONE && !string_mask(m, mask, &count)) count = trie_mask(m, mask);
        for (uint32_t k = 0; pos != GRAMMAR_OPEN && k < v->n_end; k++) mask_set(mask, v->end_ids[k]);
        if (pos != GRAMMAR_OPEN) count += v->n_end;
    }
    drop_to(m, base);
    return count;
}
