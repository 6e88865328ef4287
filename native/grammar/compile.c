/*
 * compile.c — from JSON-schema text to a tree of nodes (grammar_internal.h).
 *
 * Each schema becomes one node: an object, array, string, integer or number
 * node, a literal choice (enum, const, booleans, null), or a union of those
 * for a type list (they start with different bytes, so the first byte picks
 * one).  Errors name the JSON Pointer of the keyword at fault.  A schema no
 * document satisfies (minimum above maximum, an enum none of whose values fits
 * the rest of the schema) is refused here, so a run never meets a dead end.
 */
#include "compiler.h"
#include "number.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_OBJECT = 1, T_ARRAY = 2, T_STRING = 4, T_INTEGER = 8, T_NUMBER = 16, T_BOOLEAN = 32, T_NULL = 64 };
static const char *const TYPE_NAMES[] = {"object", "array", "string", "integer", "number", "boolean", "null"};
static const char *const KEYWORDS[] = {"type",     "properties",  "required",  "additionalProperties",
                                       "items",    "enum",        "const",     "minimum",
                                       "maximum",  "minLength",   "maxLength", "minItems",
                                       "maxItems", "description", "title"};

/* ---- errors and pointers ------------------------------------------------------- */

adil_status fail_at(const compiler *c, const char *key, adil_status st, const char *fmt, ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return adil_fail(st, "adil_grammar_compile: at \"%s%s%s\": %s", c->ptr, key ? "/" : "", key ? key : "",
                     what);
}

/* Appends one escaped pointer segment (~ as ~0, / as ~1); returns the old length. */
size_t ptr_push(compiler *c, const char *segment, size_t len) {
    const size_t old = c->ptr_len;
    char buf[sizeof c->ptr];
    size_t n = 0;
    buf[n++] = '/';
    for (size_t i = 0; i < len && n + 3 < sizeof buf; i++) {
        if (segment[i] == '~' || segment[i] == '/') {
            buf[n++] = '~';
            buf[n++] = segment[i] == '~' ? '0' : '1';
        } else {
            buf[n++] = segment[i];
        }
    }
    if (c->ptr_len + n + 1 < sizeof c->ptr) {
        memcpy(c->ptr + c->ptr_len, buf, n);
        c->ptr_len += n;
    }
    c->ptr[c->ptr_len] = '\0';
    return old;
}

void ptr_pop(compiler *c, size_t old) {
    c->ptr_len = old;
    c->ptr[old] = '\0';
}

/* ---- growing the grammar's arrays --------------------------------------------------- */

bool grammar_grow(void **items, uint32_t *cap, uint32_t need, size_t size) {
    if (need <= *cap) return true;
    uint32_t n = *cap ? *cap : 16;
    while (n < need) n *= 2;
    void *grown = realloc(*items, (size_t)n * size);
    if (!grown) return false;
    *items = grown;
    *cap = n;
    return true;
}

adil_status grammar_add_node(adil_grammar *g, const gnode *n, uint32_t *out) {
    if (g->n_nodes >= (1u << 24) ||
        !grammar_grow((void **)&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof *n))
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_grammar_compile: out of memory");
    g->nodes[g->n_nodes] = *n;
    *out = g->n_nodes++;
    return ADIL_OK;
}

adil_status grammar_add_lit(adil_grammar *g, gtext t, uint32_t kid) {
    if (!grammar_grow((void **)&g->lits, &g->cap_lits, g->n_lits + 1, sizeof t) ||
        !grammar_grow((void **)&g->lit_kids, &g->cap_lit_kids, g->n_lits + 1, sizeof kid))
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_grammar_compile: out of memory");
    g->lits[g->n_lits] = t;
    g->lit_kids[g->n_lits++] = kid;
    return ADIL_OK;
}

/* ---- reading keyword values ------------------------------------------------------- */

static adil_status read_count(const compiler *c, const adil_json *s, const char *key, uint32_t *out) {
    const adil_json *v = adil_json_get(s, key);
    if (!v) return ADIL_OK;
    if (v->kind != ADIL_JSON_NUMBER || !v->is_integer || v->integer < 0)
        return fail_at(c, key, ADIL_STATUS_INVALID_ARGUMENT, "expected a non-negative integer, got %s",
                       adil_json_kind_name(v->kind));
    *out = v->integer > (int64_t)UINT32_MAX - 1 ? UINT32_MAX - 1 : (uint32_t)v->integer;
    return ADIL_OK;
}

static adil_status read_bound(const compiler *c, const adil_json *s, const char *key, double *out) {
    const adil_json *v = adil_json_get(s, key);
    if (!v) return ADIL_OK;
    if (v->kind != ADIL_JSON_NUMBER)
        return fail_at(c, key, ADIL_STATUS_INVALID_ARGUMENT, "expected a number, got %s",
                       adil_json_kind_name(v->kind));
    const double x = strtod(c->src + v->start, NULL);
    if (!isfinite(x)) return fail_at(c, key, ADIL_STATUS_INVALID_ARGUMENT, "expected a finite number");
    *out = x;
    return ADIL_OK;
}

static adil_status read_types(const compiler *c, const adil_json *s, unsigned *types) {
    const adil_json *v = adil_json_get(s, "type");
    *types = 127;
    if (!v) return ADIL_OK;
    const adil_json *names = v->kind == ADIL_JSON_ARRAY ? v->items : v;
    const size_t n = v->kind == ADIL_JSON_ARRAY ? v->n_items : 1;
    if (n == 0) return fail_at(c, "type", ADIL_STATUS_INVALID_ARGUMENT, "an empty list of types");
    *types = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned bit = 0;
        for (unsigned t = 0; names[i].kind == ADIL_JSON_STRING && t < 7; t++)
            if (strcmp(names[i].str, TYPE_NAMES[t]) == 0) bit = 1u << t;
        if (!bit)
            return fail_at(c, "type", ADIL_STATUS_INVALID_ARGUMENT,
                           "expected a type name (object, array, string, integer, number, boolean, "
                           "null) or a list of them");
        *types |= bit;
    }
    return ADIL_OK;
}

static int key_order(const void *ctx, uint32_t a, uint32_t b) {
    const adil_json_member *ma = (const adil_json_member *)ctx + a, *mb = (const adil_json_member *)ctx + b;
    const size_t n = ma->key_len < mb->key_len ? ma->key_len : mb->key_len;
    const int r = memcmp(ma->key, mb->key, n);
    return r ? r : (ma->key_len > mb->key_len) - (ma->key_len < mb->key_len);
}

/* The JSON reader keeps every member of an object; Python's keeps the last
 * of a repeated key.  A schema that repeats one is refused rather than read
 * differently.  The keys are sorted, so an object of 100,000 keys is checked
 * in n log n steps, not n^2 (about a minute: a schema is untrusted input). */
static adil_status check_unique(const compiler *c, const adil_json *s, const char *where) {
    const size_t n = s->n_members;
    if (n < 2) return ADIL_OK;
    if (n > UINT32_MAX / 2) return fail_at(c, where, ADIL_STATUS_CAPABILITY, "%zu keys: too many", n);
    uint32_t *ids = malloc(2 * n * sizeof *ids);
    if (!ids) return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_grammar_compile: out of memory");
    for (uint32_t i = 0; i < n; i++) ids[i] = i;
    grammar_sort_ids(ids, ids + n, (uint32_t)n, key_order, s->members);
    size_t twice = n;
    for (size_t i = 1; i < n && twice == n; i++)
        if (key_order(s->members, ids[i - 1], ids[i]) == 0) twice = ids[i];
    free(ids);
    if (twice == n) return ADIL_OK;
    return fail_at(c, where, ADIL_STATUS_INVALID_ARGUMENT, "the key '%s' appears twice",
                   s->members[twice].key);
}

static adil_status check_keywords(const compiler *c, const adil_json *s, bool top) {
    adil_status st = check_unique(c, s, NULL);
    if (st != ADIL_OK) return st;
    for (size_t i = 0; i < s->n_members; i++) {
        const char *key = s->members[i].key;
        bool known = top && strncmp(key, "x-adil-", 7) == 0;
        for (size_t k = 0; !known && k < sizeof KEYWORDS / sizeof *KEYWORDS; k++)
            known = strcmp(key, KEYWORDS[k]) == 0;
        if (!known)
            return fail_at(c, key, ADIL_STATUS_CAPABILITY, "'%s' is outside the supported schema subset",
                           key);
        if ((!strcmp(key, "description") || !strcmp(key, "title")) &&
            s->members[i].value.kind != ADIL_JSON_STRING)
            return fail_at(c, key, ADIL_STATUS_INVALID_ARGUMENT, "expected a string");
    }
    return ADIL_OK;
}

/* ---- nodes per type ---------------------------------------------------------------- */

static int prop_order(const void *pa, const void *pb, void *pool) {
    const gprop *a = pa, *b = pb;
    const uint8_t *bytes = pool;
    const uint32_t n = a->key.len < b->key.len ? a->key.len : b->key.len;
    const int r = memcmp(bytes + a->key.off, bytes + b->key.off, n);
    return r ? r : (a->key.len > b->key.len) - (a->key.len < b->key.len);
}

/* Sorts by key bytes (insertion sort: at most 64 properties). */
static void sort_props(gprop *p, uint32_t n, const uint8_t *pool) {
    for (uint32_t i = 1; i < n; i++)
        for (uint32_t j = i; j > 0 && prop_order(&p[j - 1], &p[j], (void *)pool) > 0; j--) {
            const gprop t = p[j];
            p[j] = p[j - 1];
            p[j - 1] = t;
        }
}

static adil_status compile_properties(compiler *c, const adil_json *props, gprop *tmp, uint32_t *n) {
    if (props->kind != ADIL_JSON_OBJECT)
        return fail_at(c, "properties", ADIL_STATUS_INVALID_ARGUMENT, "expected an object of schemas");
    adil_status unique = check_unique(c, props, "properties");
    if (unique != ADIL_OK) return unique;
    if (props->n_members > 64)
        return fail_at(c, "properties", ADIL_STATUS_CAPABILITY,
                       "%zu properties: the grammar takes at most 64", props->n_members);
    const size_t outer = ptr_push(c, "properties", 10);
    for (size_t i = 0; i < props->n_members; i++) {
        const adil_json_member *m = &props->members[i];
        const size_t old = ptr_push(c, m->key, m->key_len);
        adil_status st = compile_schema(c, &m->value, false, &tmp[i].value);
        ptr_pop(c, old);
        if (st != ADIL_OK) return st;
        if (!grammar_string_text(c->g, m->key, m->key_len, false, &tmp[i].key))
            return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_grammar_compile: out of memory");
    }
    ptr_pop(c, outer);
    *n = (uint32_t)props->n_members;
    sort_props(tmp, *n, c->g->pool);
    return ADIL_OK;
}

static adil_status read_required(compiler *c, const adil_json *s, const gprop *props, uint32_t n,
                                 uint64_t *mask) {
    const adil_json *req = adil_json_get(s, "required");
    if (!req) return ADIL_OK;
    if (req->kind != ADIL_JSON_ARRAY)
        return fail_at(c, "required", ADIL_STATUS_INVALID_ARGUMENT, "expected a list of property names");
    for (size_t i = 0; i < req->n_items; i++) {
        const adil_json *name = &req->items[i];
        gtext t;
        if (name->kind != ADIL_JSON_STRING)
            return fail_at(c, "required", ADIL_STATUS_INVALID_ARGUMENT, "expected property names (strings)");
        const uint32_t mark = c->g->pool_len;
        if (!grammar_string_text(c->g, name->str, name->str_len, false, &t))
            return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_grammar_compile: out of memory");
        uint32_t found = n;
        for (uint32_t k = 0; k < n && found == n; k++)
            if (props[k].key.len == t.len &&
                !memcmp(c->g->pool + props[k].key.off, c->g->pool + t.off, t.len))
                found = k;
        c->g->pool_len = mark;
        if (found == n)
            return fail_at(c, "required", ADIL_STATUS_CAPABILITY, "'%s' is required but not among properties",
                           name->str);
        *mask |= 1ull << found;
    }
    return ADIL_OK;
}

static adil_status compile_object(compiler *c, const adil_json *s, uint32_t *out) {
    gprop tmp[64];
    uint32_t n = 0;
    gnode node = {.kind = NODE_OBJECT, .additional = true};
    const adil_json *props = adil_json_get(s, "properties");
    adil_status st = props ? compile_properties(c, props, tmp, &n) : ADIL_OK;
    if (st == ADIL_OK) st = read_required(c, s, tmp, n, &node.required);
    const adil_json *extra = adil_json_get(s, "additionalProperties");
    if (st == ADIL_OK && extra) {
        if (extra->kind != ADIL_JSON_BOOL)
            return fail_at(c, "additionalProperties", ADIL_STATUS_CAPABILITY,
                           "only true or false (a schema there is outside the subset)");
        node.additional = extra->boolean;
    }
    if (st != ADIL_OK) return st;
    adil_grammar *g = c->g;
    node.nest = 1;
    for (uint32_t i = 0; i < n; i++)
        if (node.required >> i & 1 && g->nodes[tmp[i].value].nest + 1 > node.nest)
            node.nest = g->nodes[tmp[i].value].nest + 1;
    if (!grammar_grow((void **)&g->props, &g->cap_props, g->n_props + n, sizeof *tmp))
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_grammar_compile: out of memory");
    node.a = g->n_props;
    node.b = n;
    if (n) memcpy(g->props + g->n_props, tmp, n * sizeof *tmp);
    g->n_props += n;
    return grammar_add_node(g, &node, out);
}

static adil_status compile_array(compiler *c, const adil_json *s, uint32_t *out) {
    gnode node = {.kind = NODE_ARRAY, .a = c->g->any, .max_len = UINT32_MAX};
    adil_status st = read_count(c, s, "minItems", &node.min_len);
    if (st == ADIL_OK) st = read_count(c, s, "maxItems", &node.max_len);
    const adil_json *items = adil_json_get(s, "items");
    if (st == ADIL_OK && items) {
        if (items->kind == ADIL_JSON_ARRAY)
            return fail_at(c, "items", ADIL_STATUS_CAPABILITY,
                           "a list of schemas (tuples) is outside the subset");
        const size_t old = ptr_push(c, "items", 5);
        st = compile_schema(c, items, false, &node.a);
        ptr_pop(c, old);
    }
    if (st != ADIL_OK) return st;
    if (node.min_len > node.max_len)
        return fail_at(c, "maxItems", ADIL_STATUS_CAPABILITY, "minItems %u is above maxItems %u",
                       node.min_len, node.max_len);
    node.nest = 1 + (node.min_len > 0 ? c->g->nodes[node.a].nest : 0);
    return grammar_add_node(c->g, &node, out);
}

static adil_status compile_string(compiler *c, const adil_json *s, uint32_t *out) {
    gnode node = {.kind = NODE_STRING, .max_len = UINT32_MAX};
    adil_status st = read_count(c, s, "minLength", &node.min_len);
    if (st == ADIL_OK) st = read_count(c, s, "maxLength", &node.max_len);
    if (st != ADIL_OK) return st;
    if (node.min_len > node.max_len)
        return fail_at(c, "maxLength", ADIL_STATUS_CAPABILITY, "minLength %u is above maxLength %u",
                       node.min_len, node.max_len);
    return grammar_add_node(c->g, &node, out);
}

static int64_t clamp_int(double x) {
    if (x > (double)GRAMMAR_MAX_EXACT) return GRAMMAR_MAX_EXACT;
    if (x < -(double)GRAMMAR_MAX_EXACT) return -GRAMMAR_MAX_EXACT;
    return (int64_t)x;
}

/* Integer or number; false in *ok when no value lies within the bounds. */
static adil_status compile_numeric(compiler *c, const adil_json *s, node_kind kind, uint32_t *out, bool *ok) {
    gnode node = {.kind = kind, .min = -(double)GRAMMAR_MAX_EXACT, .max = (double)GRAMMAR_MAX_EXACT};
    adil_status st = read_bound(c, s, "minimum", &node.min);
    if (st == ADIL_OK) st = read_bound(c, s, "maximum", &node.max);
    if (st != ADIL_OK) return st;
    /* Values are within ±(2^53-1): a bound past that range on the far side
     * leaves none (clamping it would let the near edge of the range in). */
    const bool beyond = node.min > (double)GRAMMAR_MAX_EXACT || node.max < -(double)GRAMMAR_MAX_EXACT;
    if (node.min < -(double)GRAMMAR_MAX_EXACT) node.min = -(double)GRAMMAR_MAX_EXACT;
    if (node.max > (double)GRAMMAR_MAX_EXACT) node.max = (double)GRAMMAR_MAX_EXACT;
    node.imin = clamp_int(ceil(node.min));
    node.imax = clamp_int(floor(node.max));
    *ok = !beyond && (kind == NODE_NUMBER ? node.min <= node.max : node.imin <= node.imax) &&
          number_exists(&node);
    return *ok ? grammar_add_node(c->g, &node, out) : ADIL_OK;
}

static adil_status literal_node(adil_grammar *g, const char *const *texts, size_t n, uint32_t *out) {
    gnode node = {.kind = NODE_LITERALS, .a = g->n_lits, .b = (uint32_t)n};
    for (size_t i = 0; i < n; i++) {
        gtext t;
        if (!grammar_pool_add(g, texts[i], strlen(texts[i]), &t))
            return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_grammar_compile: out of memory");
        adil_status st = grammar_add_lit(g, t, 0);
        if (st != ADIL_OK) return st;
    }
    return grammar_add_node(g, &node, out);
}

/* ---- enum and const ------------------------------------------------------------------ */

/* Does `node` accept the whole text t? */
static bool accepts(const adil_grammar *g, uint32_t node, gtext t) {
    arena a = {0};
    const feeder fd = {.g = g, .a = &a, .checking_value = true};
    uint32_t top = grammar_start(&fd, node, false);
    bool ok = top != GRAMMAR_NONE;
    for (uint32_t i = 0; ok && i < t.len; i++) ok = grammar_feed(&fd, &top, g->pool[t.off + i]);
    ok = ok && grammar_position_of(&fd, top) != GRAMMAR_OPEN;
    free(a.f);
    return ok;
}

static int text_order(const adil_grammar *g, gtext a, gtext b) {
    const uint32_t n = a.len < b.len ? a.len : b.len;
    const int r = memcmp(g->pool + a.off, g->pool + b.off, n);
    return r ? r : (a.len > b.len) - (a.len < b.len);
}

typedef struct lit_run {
    const adil_grammar *g;
    const gtext *t;
} lit_run;

static int lit_order(const void *ctx, uint32_t a, uint32_t b) {
    const lit_run *r = ctx;
    return text_order(r->g, r->t[a], r->t[b]);
}

/* Sorts and dedups lits[from ..) with their kids (by merge sort: an enum may
 * hold many values). */
uint32_t grammar_sort_lits(adil_grammar *g, uint32_t from) {
    const uint32_t n = g->n_lits - from;
    gtext *t = g->lits + from;
    uint32_t *k = g->lit_kids + from;
    uint32_t *perm = malloc((n + 1) * sizeof *perm), *tmp = malloc((n + 1) * sizeof *tmp);
    gtext *tt = malloc((n + 1) * sizeof *tt);
    uint32_t *kk = malloc((n + 1) * sizeof *kk);
    if (!perm || !tmp || !tt || !kk) {
        free(perm);
        free(tmp);
        free(tt);
        free(kk);
        return 0; /* out of memory: the caller reports no literal */
    }
    for (uint32_t i = 0; i < n; i++) perm[i] = i;
    const lit_run run = {g, t};
    grammar_sort_ids(perm, tmp, n, lit_order, &run);
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (m == 0 || text_order(g, tt[m - 1], t[perm[i]]) != 0) {
            tt[m] = t[perm[i]];
            kk[m++] = k[perm[i]];
        }
    memcpy(t, tt, m * sizeof *t);
    memcpy(k, kk, m * sizeof *k);
    free(perm);
    free(tmp);
    free(tt);
    free(kk);
    g->n_lits = from + m;
    return m;
}

/* Adds the canonical text of v (and, for an integral float, its integer
 * spelling: json_equal(1, 1.0)) when `type_node` accepts it. */
static adil_status add_value(compiler *c, const adil_json *v, uint32_t type_node) {
    adil_grammar *g = c->g;
    gtext t;
    if (!grammar_canonical(g, c->src, v, &t)) return ADIL_OK; /* no exact text: never written */
    adil_status st = accepts(g, type_node, t) ? grammar_add_lit(g, t, 0) : ADIL_OK;
    if (st != ADIL_OK || v->kind != ADIL_JSON_NUMBER || v->is_integer) return st;
    const double x = strtod(c->src + v->start, NULL);
    if (x != floor(x) || fabs(x) > (double)GRAMMAR_MAX_EXACT) return ADIL_OK;
    char text[32];
    const int n = snprintf(text, sizeof text, "%lld", (long long)x);
    if (!grammar_pool_add(g, text, (size_t)n, &t))
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_grammar_compile: out of memory");
    return accepts(g, type_node, t) ? grammar_add_lit(g, t, 0) : ADIL_OK;
}

static bool in_enum(const compiler *c, const adil_json *value, const adil_json *e) {
    gtext a, b;
    adil_grammar *g = c->g;
    const uint32_t mark = g->pool_len;
    bool found = false;
    if (grammar_canonical(g, c->src, value, &a))
        for (size_t i = 0; !found && i < e->n_items; i++) {
            if (value->kind == ADIL_JSON_NUMBER && e->items[i].kind == ADIL_JSON_NUMBER)
                found = strtod(c->src + value->start, NULL) == strtod(c->src + e->items[i].start, NULL);
            else if (grammar_canonical(g, c->src, &e->items[i], &b))
                found = text_order(g, a, b) == 0;
        }
    g->pool_len = mark;
    return found;
}

static adil_status compile_literals(compiler *c, const adil_json *s, uint32_t type_node, uint32_t *out) {
    const adil_json *e = adil_json_get(s, "enum"), *k = adil_json_get(s, "const");
    if (e && (e->kind != ADIL_JSON_ARRAY || e->n_items == 0))
        return fail_at(c, "enum", ADIL_STATUS_INVALID_ARGUMENT, "expected a non-empty list of values");
    const uint32_t from = c->g->n_lits;
    adil_status st = ADIL_OK;
    if (k && (!e || in_enum(c, k, e))) st = add_value(c, k, type_node);
    for (size_t i = 0; !k && e && st == ADIL_OK && i < e->n_items; i++)
        st = add_value(c, &e->items[i], type_node);
    if (st != ADIL_OK) return st;
    const uint32_t n = grammar_sort_lits(c->g, from);
    if (n == 0)
        return fail_at(c, k ? "const" : "enum", ADIL_STATUS_CAPABILITY,
                       "no value here satisfies the rest of the schema with an exact JSON text");
    const gnode node = {.kind = NODE_LITERALS, .a = from, .b = n};
    return grammar_add_node(c->g, &node, out);
}

/* ---- a schema ------------------------------------------------------------------------ */

static adil_status type_kid(compiler *c, const adil_json *s, unsigned bit, uint32_t *kid, bool *ok) {
    static const char *const bools[] = {"false", "true"}, *const nul[] = {"null"};
    *ok = true;
    switch (bit) {
    case T_OBJECT:
        return compile_object(c, s, kid);
    case T_ARRAY:
        return compile_array(c, s, kid);
    case T_STRING:
        return compile_string(c, s, kid);
    case T_INTEGER:
        return compile_numeric(c, s, NODE_INTEGER, kid, ok);
    case T_NUMBER:
        return compile_numeric(c, s, NODE_NUMBER, kid, ok);
    case T_BOOLEAN:
        return literal_node(c->g, bools, 2, kid);
    default:
        return literal_node(c->g, nul, 1, kid);
    }
}

/* The node of a type list: one kid per type (booleans and null share one
 * literal node so that no two kids start with the same byte). */
static adil_status compile_types(compiler *c, const adil_json *s, unsigned types, uint32_t *out) {
    static const char *const lits[] = {"false", "null", "true"};
    if (types & T_NUMBER) types &= ~(unsigned)T_INTEGER; /* a number may be an integer */
    uint32_t kids[7];
    uint32_t n = 0;
    adil_status st = ADIL_OK;
    for (unsigned t = 0; st == ADIL_OK && t < 5; t++) {
        bool ok;
        if (types & (1u << t)) st = type_kid(c, s, 1u << t, &kids[n], &ok);
        if (st == ADIL_OK && (types & (1u << t)) && ok) n++;
    }
    const unsigned lit = types & (T_BOOLEAN | T_NULL);
    if (st == ADIL_OK && lit == (T_BOOLEAN | T_NULL))
        st = literal_node(c->g, lits, 3, &kids[n++]);
    else if (st == ADIL_OK && lit)
        st = type_kid(c, s, lit, &kids[n], &(bool){0}), n++;
    if (st != ADIL_OK) return st;
    if (n == 0)
        return fail_at(c, adil_json_get(s, "maximum") ? "maximum" : "minimum", ADIL_STATUS_CAPABILITY,
                       "no %s within ±(2^53-1) lies between minimum and maximum%s",
                       types & T_NUMBER ? "number" : "integer",
                       types & T_NUMBER ? " (a decimal has at most 15 significant digits)" : "");
    if (n == 1) {
        *out = kids[0];
        return ADIL_OK;
    }
    adil_grammar *g = c->g;
    if (!grammar_grow((void **)&g->kids, &g->cap_kids, g->n_kids + n, sizeof *kids))
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_grammar_compile: out of memory");
    gnode node = {.kind = NODE_UNION, .a = g->n_kids, .b = n, .nest = UINT32_MAX};
    for (uint32_t i = 0; i < n; i++)
        if (g->nodes[kids[i]].nest < node.nest) node.nest = g->nodes[kids[i]].nest;
    memcpy(g->kids + g->n_kids, kids, n * sizeof *kids);
    g->n_kids += n;
    return grammar_add_node(g, &node, out);
}

adil_status compile_schema(compiler *c, const adil_json *s, bool top, uint32_t *out) {
    if (s->kind != ADIL_JSON_OBJECT)
        return fail_at(c, NULL, ADIL_STATUS_INVALID_ARGUMENT, "a schema must be a JSON object, got %s",
                       adil_json_kind_name(s->kind));
    unsigned types;
    adil_status st = check_keywords(c, s, top);
    if (st == ADIL_OK) st = read_types(c, s, &types);
    uint32_t node = 0;
    if (st == ADIL_OK) st = compile_types(c, s, types, &node);
    if (st == ADIL_OK && (adil_json_get(s, "enum") || adil_json_get(s, "const")))
        st = compile_literals(c, s, node, &node);
    *out = node;
    return st;
}
