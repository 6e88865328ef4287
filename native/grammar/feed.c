/*
 * feed.c — the automaton: advancing a state (the top frame of an immutable
 * chain) over one byte.
 *
 * Each frame steps one byte and answers CONSUMED, REJECT, or AGAIN: it ended
 * without taking the byte (a number or literal meets what follows it), or it
 * pushed a child that must see the byte first.  A frame never changes in
 * place: the new state is a copy at the arena's end, so older states stay
 * valid.  Every refusal happens at the first byte that leaves no valid
 * completion, so an accepted prefix is never a dead end (bounds, lengths,
 * item counts and required keys are checked as the bytes come).
 */
#include "grammar_internal.h"
#include "number.h"
#include "strlex.h"

#include <stdlib.h>
#include <string.h>

enum { CONSUMED, REJECT, AGAIN };

enum { O_START, O_FIRST, O_KEY, O_AFTER_KEY, O_COLON, O_VALUE, O_AFTER_VALUE, O_COMMA };
enum { A_START, A_FIRST, A_ITEM, A_AFTER, A_COMMA };

/* ---- the arena ----------------------------------------------------------------- */

uint32_t grammar_push(const feeder *fd, const frame *f) {
    arena *a = fd->a;
    if (a->len == a->cap) {
        uint32_t cap = a->cap ? a->cap * 2 : 256;
        frame *grown = cap > a->cap ? realloc(a->f, (size_t)cap * sizeof *grown) : NULL;
        if (!grown) {
            a->failed = true;
            return GRAMMAR_NONE;
        }
        a->f = grown;
        a->cap = cap;
    }
    a->f[a->len] = *f;
    return a->len++;
}

static inline const frame *at(const feeder *fd, uint32_t i) { return &fd->a->f[i]; }
static inline const gnode *node_of(const feeder *fd, const frame *f) { return &fd->g->nodes[f->node]; }

/* Whitespace in a gap between lexemes: inside a document one space at
 * most (the ", " and ": " of common JSON styles; more lets a model pad its
 * output with blank lines); around a lazy document a little of any kind. */
static int take_ws(const feeder *fd, uint32_t *top, frame *f, uint8_t b) {
    const bool outside = f->type == FR_ROOT;
    if (outside ? !fd->g->lazy || f->ws >= GRAMMAR_MAX_LAZY_WS : b != ' ' || f->ws >= GRAMMAR_MAX_WS)
        return REJECT;
    f->ws++;
    *top = grammar_push(fd, f);
    return CONSUMED;
}

static int replace(const feeder *fd, uint32_t *top, frame *f) {
    f->ws = 0;
    *top = grammar_push(fd, f);
    return CONSUMED;
}

/* ---- children ------------------------------------------------------------------ */

/* Pushes a value of `node` under the (already updated) parent *top. */
static int start_child(const feeder *fd, uint32_t *top, uint32_t node) {
    const frame *parent = at(fd, *top);
    frame c = {.parent = *top, .node = node, .type = FR_VALUE, .depth = parent->depth};
    *top = grammar_push(fd, &c);
    return AGAIN;
}

/* Hashes of an object's additional keys: a chain of FR_LIST frames. */
static bool list_has(const feeder *fd, uint32_t i, uint64_t hash) {
    for (; i != GRAMMAR_NONE; i = at(fd, i)->parent)
        if (at(fd, i)->x == hash) return true;
    return false;
}

/* The parent of a frame that just ended, updated for it. */
static void child_done(const feeder *fd, uint32_t *top, const frame *child) {
    frame p = *at(fd, child->parent);
    p.ws = 0;
    if (p.type == FR_ROOT) {
        p.phase = fd->g->lazy ? R_TRAIL : R_DONE;
        p.count = 0;
    } else if (child->type == FR_KEY) {
        p.phase = O_AFTER_KEY;
        p.lo = child->y;
        if (child->y != GRAMMAR_NONE) {
            p.x |= 1ull << child->y;
        } else {
            frame item = {.parent = p.y, .type = FR_LIST, .x = child->x};
            p.y = grammar_push(fd, &item);
        }
    } else {
        switch (node_of(fd, &p)->kind) {
        case NODE_OBJECT:
            p.phase = O_AFTER_VALUE;
            break;
        case NODE_ARRAY:
            p.phase = A_AFTER;
            p.count++;
            break;
        default:
            p.phase++;
            break; /* TOOLCALL: the step after the arguments */
        }
    }
    *top = grammar_push(fd, &p);
}

/* ---- objects --------------------------------------------------------------------- */

static uint64_t all_props(const gnode *n) { return n->b >= 64 ? ~0ull : (1ull << n->b) - 1; }
static bool more_keys(const gnode *n, const frame *f) {
    return n->additional || (f->x & all_props(n)) != all_props(n);
}
static bool required_met(const gnode *n, const frame *f) { return (f->x & n->required) == n->required; }

static int open_key(const feeder *fd, uint32_t *top, frame *f) {
    const gnode *n = node_of(fd, f);
    if (!more_keys(n, f)) return REJECT;
    f->phase = O_KEY;
    replace(fd, top, f);
    frame k = {.parent = *top, .node = f->node, .type = FR_KEY, .hi = n->b, .x = 1469598103934665603ull};
    k.flags = n->additional ? KEY_GENERIC : 0;
    *top = grammar_push(fd, &k);
    return CONSUMED;
}

static int close_container(const feeder *fd, uint32_t *top, const frame *f) {
    child_done(fd, top, f);
    return CONSUMED;
}

/* The declared keys whose values cannot fit at `depth` (the object's own):
 * they start out as written, so that no key, comma or quote leads to one.
 * Never a required key: the object opens only where those fit (gnode.nest). */
static uint64_t too_deep(const feeder *fd, const gnode *n, uint32_t depth) {
    uint64_t x = 0;
    for (uint32_t i = 0; i < n->b; i++)
        if (depth + fd->g->nodes[fd->g->props[n->a + i].value].nest > GRAMMAR_MAX_DEPTH) x |= 1ull << i;
    return x;
}

static int step_object(const feeder *fd, uint32_t *top, frame *f, uint8_t b) {
    const gnode *n = node_of(fd, f);
    switch (f->phase) {
    case O_START:
        if (b != '{' || f->depth + n->nest > GRAMMAR_MAX_DEPTH) return REJECT;
        f->depth++;
        f->phase = O_FIRST;
        f->x = too_deep(fd, n, f->depth);
        f->y = GRAMMAR_NONE;
        return replace(fd, top, f);
    case O_FIRST:
    case O_AFTER_VALUE:
        if (json_ws(b)) return take_ws(fd, top, f, b);
        if (b == '}') return required_met(n, f) ? close_container(fd, top, f) : REJECT;
        if (f->phase == O_FIRST) return b == '"' ? open_key(fd, top, f) : REJECT;
        if (b != ',' || !more_keys(n, f)) return REJECT;
        f->phase = O_COMMA;
        return replace(fd, top, f);
    case O_COMMA:
        if (json_ws(b)) return take_ws(fd, top, f, b);
        return b == '"' ? open_key(fd, top, f) : REJECT;
    case O_AFTER_KEY:
        if (json_ws(b)) return take_ws(fd, top, f, b);
        if (b != ':') return REJECT;
        f->phase = O_COLON;
        return replace(fd, top, f);
    case O_COLON: {
        if (json_ws(b)) return take_ws(fd, top, f, b);
        f->phase = O_VALUE;
        replace(fd, top, f);
        const uint32_t value = f->lo != GRAMMAR_NONE ? fd->g->props[n->a + f->lo].value : fd->g->any;
        return start_child(fd, top, value);
    }
    default:
        return REJECT;
    }
}

/* ---- keys ------------------------------------------------------------------------- */

static const uint8_t *text_of(const feeder *fd, gtext t) { return fd->g->pool + t.off; }

/* An unseen declared key among [lo, hi)? */
static bool declared_alive(uint64_t seen, uint32_t lo, uint32_t hi) {
    for (uint32_t i = lo; i < hi; i++)
        if (!(seen >> i & 1)) return true;
    return false;
}

/* The i-th of texts `stride` bytes apart: a run of gtext, or the keys of a
 * run of gprop. */
static inline gtext text_at(const gtext *first, size_t stride, uint32_t i) {
    return *(const gtext *)((const char *)first + (size_t)i * stride);
}

/* Narrows [lo, hi) of sorted texts sharing `pos` bytes to those with byte b
 * at pos. */
static void narrow_texts(const feeder *fd, const gtext *first, size_t stride, uint32_t pos, uint8_t b,
                         uint32_t *lo, uint32_t *hi) {
    uint32_t i = *lo;
    while (i < *hi &&
           (text_at(first, stride, i).len <= pos || text_of(fd, text_at(first, stride, i))[pos] < b))
        i++;
    uint32_t j = i;
    while (j < *hi && text_at(first, stride, j).len > pos && text_of(fd, text_at(first, stride, j))[pos] == b)
        j++;
    *lo = i;
    *hi = j;
}

static int close_key(const feeder *fd, uint32_t *top, frame *k) {
    const gnode *n = node_of(fd, k);
    const frame *obj = at(fd, k->parent);
    const gprop *p = fd->g->props + n->a;
    if (k->lo < k->hi && p[k->lo].key.len == k->count) { /* a declared key, whole */
        if (obj->x >> k->lo & 1) return REJECT;          /* written before */
        k->y = k->lo;
    } else if ((k->flags & KEY_GENERIC) && lex_clean(&k->s) && !list_has(fd, obj->y, k->x)) {
        k->y = GRAMMAR_NONE;
    } else {
        return REJECT;
    }
    child_done(fd, top, k);
    return CONSUMED;
}

static int step_key(const feeder *fd, uint32_t *top, frame *k, uint8_t b) {
    const gnode *n = node_of(fd, k);
    const gprop *p = fd->g->props + n->a;
    if (b == '"' && ((k->lo < k->hi && p[k->lo].key.len == k->count) || (k->flags & KEY_GENERIC)))
        if (close_key(fd, top, k) == CONSUMED) return CONSUMED;
    uint32_t lo = k->lo, hi = k->hi;
    narrow_texts(fd, &p[0].key, sizeof *p, k->count, b, &lo, &hi);
    if (k->flags & KEY_GENERIC) {
        const lex_result r = lex_byte(&k->s, b, fd->checking_value);
        if (r == LEX_REJECT || r == LEX_CLOSE) k->flags &= ~KEY_GENERIC;
        k->x = (k->x ^ b) * 1099511628211ull;
    }
    if (!(k->flags & KEY_GENERIC) && !declared_alive(at(fd, k->parent)->x, lo, hi)) return REJECT;
    k->lo = lo;
    k->hi = hi;
    k->count++;
    return replace(fd, top, k);
}

/* ---- arrays ----------------------------------------------------------------------- */

static int step_array(const feeder *fd, uint32_t *top, frame *f, uint8_t b) {
    const gnode *n = node_of(fd, f);
    switch (f->phase) {
    case A_START:
        if (b != '[' || f->depth + n->nest > GRAMMAR_MAX_DEPTH) return REJECT;
        f->depth++;
        f->phase = A_FIRST;
        f->count = 0;
        return replace(fd, top, f);
    case A_FIRST:
    case A_AFTER:
        if (json_ws(b)) return take_ws(fd, top, f, b);
        if (b == ']') return f->count >= n->min_len ? close_container(fd, top, f) : REJECT;
        if (f->phase == A_AFTER) {
            if (b != ',' || f->count >= n->max_len) return REJECT;
            f->phase = A_COMMA;
            return replace(fd, top, f);
        }
        if (n->max_len == 0) return REJECT;
        f->phase = A_ITEM;
        replace(fd, top, f);
        return start_child(fd, top, n->a);
    case A_COMMA:
        if (json_ws(b)) return take_ws(fd, top, f, b);
        f->phase = A_ITEM;
        replace(fd, top, f);
        return start_child(fd, top, n->a);
    default:
        return REJECT;
    }
}

/* ---- strings ------------------------------------------------------------------------ */

static int step_string(const feeder *fd, uint32_t *top, frame *f, uint8_t b) {
    const gnode *n = node_of(fd, f);
    if (f->phase == S_START) {
        if (b != '"') return REJECT;
        f->phase = S_BODY;
        f->count = 0;
        return replace(fd, top, f);
    }
    switch (lex_byte(&f->s, b, true)) {
    case LEX_REJECT:
        return REJECT;
    case LEX_CLOSE:
        return f->count >= n->min_len ? close_container(fd, top, f) : REJECT;
    case LEX_CHAR:
        if (f->count >= n->max_len) return REJECT;
        f->count++;
        break;
    case LEX_MORE:
        break;
    }
    return replace(fd, top, f);
}

/* ---- literals: enum, const, booleans, null; tool names ------------------------------- */

/* One byte of a choice among texts; *whole: the choice ended (one text,
 * matched to its end).  AGAIN: a text was complete and b does not extend any. */
static int step_texts(const feeder *fd, frame *f, const gtext *t, uint8_t b, bool *whole) {
    uint32_t lo = f->lo, hi = f->hi;
    const bool complete = lo < hi && t[lo].len == f->count;
    narrow_texts(fd, t, sizeof *t, f->count, b, &lo, &hi);
    *whole = false;
    if (lo == hi) return complete ? AGAIN : REJECT;
    f->lo = lo;
    f->hi = hi;
    f->count++;
    *whole = hi - lo == 1 && t[lo].len == f->count;
    return CONSUMED;
}

static int step_literals(const feeder *fd, uint32_t *top, frame *f, uint8_t b) {
    const gnode *n = node_of(fd, f);
    const gtext *t = fd->g->lits + n->a;
    if (f->phase == 0) {
        f->phase = 1;
        f->lo = 0;
        f->hi = n->b;
        f->count = 0;
    }
    bool whole;
    const int r = step_texts(fd, f, t, b, &whole);
    if (r == AGAIN) {
        child_done(fd, top, f);
        return AGAIN;
    }
    if (r == REJECT) return REJECT;
    if (whole) {
        child_done(fd, top, f);
        return CONSUMED;
    }
    return replace(fd, top, f);
}

/* ---- numbers ---------------------------------------------------------------------- */

static int step_number(const feeder *fd, uint32_t *top, frame *f, uint8_t b) {
    const gnode *n = node_of(fd, f);
    switch (number_step(n, f, b)) {
    case NUM_TAKEN:
        return replace(fd, top, f);
    case NUM_ENDED:
        child_done(fd, top, f);
        return AGAIN;
    default:
        return REJECT;
    }
}

/* ---- tool calls: {"name":N,"arguments":A} ------------------------------------------ */

enum { TC_LIT, TC_WS, TC_NAME, TC_ARGS, TC_END };
typedef struct tc_op {
    uint8_t op;
    const char *text;
} tc_op;
static const tc_op TC_PROGRAM[] = {{TC_LIT, "{"}, {TC_WS, NULL}, {TC_LIT, "\"name\""},      {TC_WS, NULL},
                                   {TC_LIT, ":"}, {TC_WS, NULL}, {TC_NAME, NULL},           {TC_WS, NULL},
                                   {TC_LIT, ","}, {TC_WS, NULL}, {TC_LIT, "\"arguments\""}, {TC_WS, NULL},
                                   {TC_LIT, ":"}, {TC_WS, NULL}, {TC_ARGS, NULL},           {TC_WS, NULL},
                                   {TC_LIT, "}"}, {TC_END, NULL}};

static int step_toolcall(const feeder *fd, uint32_t *top, frame *f, uint8_t b) {
    const gnode *n = node_of(fd, f);
    const tc_op *op = &TC_PROGRAM[f->phase];
    switch (op->op) {
    case TC_WS:
        if (json_ws(b)) return take_ws(fd, top, f, b);
        f->phase++;
        f->ws = 0;
        return step_toolcall(fd, top, f, b);
    case TC_LIT:
        if (f->phase == 0 && f->count == 0) {
            if (f->depth + n->nest > GRAMMAR_MAX_DEPTH) return REJECT;
            f->depth++;
        }
        if ((uint8_t)op->text[f->count] != b) return REJECT;
        if (op->text[++f->count] == '\0') {
            f->count = 0;
            if (TC_PROGRAM[++f->phase].op == TC_END) return close_container(fd, top, f);
        }
        return replace(fd, top, f);
    case TC_NAME: {
        if (f->count == 0) {
            f->lo = 0;
            f->hi = n->b;
        }
        bool whole;
        if (step_texts(fd, f, fd->g->lits + n->a, b, &whole) != CONSUMED) return REJECT;
        if (whole) {
            f->y = f->lo;
            f->count = 0;
            f->phase++;
        }
        return replace(fd, top, f);
    }
    case TC_ARGS:
        replace(fd, top, f);
        return start_child(fd, top, fd->g->lit_kids[n->a + f->y]);
    default:
        return REJECT;
    }
}

/* ---- unions: a type list, told apart by the first byte ---------------------------------- */

static bool starts(const feeder *fd, uint32_t node, uint8_t b) {
    const gnode *n = &fd->g->nodes[node];
    switch (n->kind) {
    case NODE_OBJECT:
    case NODE_TOOLCALL:
        return b == '{';
    case NODE_ARRAY:
        return b == '[';
    case NODE_STRING:
        return b == '"';
    case NODE_INTEGER:
    case NODE_NUMBER:
        return b == '-' || (b >= '0' && b <= '9');
    case NODE_LITERALS:
        for (uint32_t i = 0; i < n->b; i++)
            if (fd->g->lits[n->a + i].len && text_of(fd, fd->g->lits[n->a + i])[0] == b) return true;
        return false;
    default:
        return false;
    }
}

static int step_union(const feeder *fd, uint32_t *top, frame *f, uint8_t b) {
    const gnode *n = node_of(fd, f);
    for (uint32_t i = 0; i < n->b; i++) {
        const uint32_t kid = fd->g->kids[n->a + i];
        if (starts(fd, kid, b)) {
            f->node = kid;
            *top = grammar_push(fd, f);
            return AGAIN;
        }
    }
    return REJECT;
}

/* ---- the root ------------------------------------------------------------------------- */

static int step_root(const feeder *fd, uint32_t *top, frame *f, uint8_t b) {
    const adil_grammar *g = fd->g;
    switch (f->phase) {
    case R_FREE: {
        const uint32_t j = kmp_next(g, f->count, b);
        f->count = j;
        if (j == g->trigger.len) {
            f->phase = R_LEAD;
            f->count = 0;
        }
        return replace(fd, top, f);
    }
    case R_LEAD:
        if (json_ws(b)) return take_ws(fd, top, f, b);
        f->phase = R_DOC;
        replace(fd, top, f);
        return start_child(fd, top, f->node);
    case R_TRAIL: {
        if (f->count == 0 && json_ws(b)) return take_ws(fd, top, f, b);
        if (g->pool[g->end.off + f->count] != b) return REJECT;
        if (++f->count == g->end.len) {
            f->phase = R_FREE;
            f->count = 0;
        }
        return replace(fd, top, f);
    }
    default:
        return REJECT;
    }
}

/* ---- dispatch ------------------------------------------------------------------------- */

static int step(const feeder *fd, uint32_t *top, uint8_t b) {
    frame f = *at(fd, *top);
    if (f.type == FR_ROOT) return step_root(fd, top, &f, b);
    if (f.type == FR_KEY) return step_key(fd, top, &f, b);
    switch (node_of(fd, &f)->kind) {
    case NODE_OBJECT:
        return step_object(fd, top, &f, b);
    case NODE_ARRAY:
        return step_array(fd, top, &f, b);
    case NODE_STRING:
        return step_string(fd, top, &f, b);
    case NODE_INTEGER:
    case NODE_NUMBER:
        return step_number(fd, top, &f, b);
    case NODE_LITERALS:
        return step_literals(fd, top, &f, b);
    case NODE_UNION:
    case NODE_ANY:
        return step_union(fd, top, &f, b);
    case NODE_TOOLCALL:
        return step_toolcall(fd, top, &f, b);
    }
    return REJECT;
}

bool grammar_feed(const feeder *fd, uint32_t *top, uint8_t b) {
    /* AGAIN happens at most twice per level (an ended value, a pushed child),
     * and a byte crosses at most every level of the stack once. */
    for (int guard = 0; guard < 4 * (GRAMMAR_MAX_DEPTH + 4); guard++) {
        if (fd->a->failed || *top == GRAMMAR_NONE) return false;
        const int r = step(fd, top, b);
        if (r != AGAIN) return r == CONSUMED && !fd->a->failed;
    }
    return false;
}

uint32_t grammar_start(const feeder *fd, uint32_t node, bool lazy) {
    frame root = {.parent = GRAMMAR_NONE, .node = node, .type = FR_ROOT, .phase = lazy ? R_FREE : R_LEAD};
    return grammar_push(fd, &root);
}

grammar_position grammar_position_of(const feeder *fd, uint32_t top) {
    const frame *f = at(fd, top);
    if (f->type == FR_ROOT) {
        if (f->phase == R_FREE) return GRAMMAR_CAN_END;
        return f->phase == R_DONE ? GRAMMAR_DONE : GRAMMAR_OPEN;
    }
    /* A complete top-level number or literal may end the output. */
    const frame *parent = at(fd, f->parent);
    if (f->type != FR_VALUE || parent->type != FR_ROOT || fd->g->lazy) return GRAMMAR_OPEN;
    const gnode *n = node_of(fd, f);
    if (n->kind == NODE_INTEGER || n->kind == NODE_NUMBER)
        return number_can_end(n, f) ? GRAMMAR_CAN_END : GRAMMAR_OPEN;
    if (n->kind == NODE_LITERALS && f->phase == 1) {
        const gtext *t = fd->g->lits + n->a;
        return f->lo < f->hi && t[f->lo].len == f->count ? GRAMMAR_CAN_END : GRAMMAR_OPEN;
    }
    return GRAMMAR_OPEN;
}

/* Copies frame i (and what it refers to) into `to`; returns its new index. */
static uint32_t copy_chain(const feeder *from, const feeder *to, uint32_t i) {
    if (i == GRAMMAR_NONE) return GRAMMAR_NONE;
    frame f = *at(from, i);
    f.parent = copy_chain(from, to, f.parent);
    if (f.type == FR_VALUE && from->g->nodes[f.node].kind == NODE_OBJECT && f.phase != O_START)
        f.y = copy_chain(from, to, f.y);
    return grammar_push(to, &f);
}

uint32_t grammar_compact_with(const adil_grammar *g, arena *a, uint32_t top, arena *scratch) {
    feeder from = {.g = g, .a = a}, to = {.g = g, .a = scratch};
    scratch->len = 0;
    scratch->failed = false;
    const uint32_t t = copy_chain(&from, &to, top);
    arena swap = *a;
    *a = *scratch;
    *scratch = swap;
    return t;
}
