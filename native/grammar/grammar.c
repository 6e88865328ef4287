/*
 * grammar.c — compiling the input document of grammar.h: the shared nodes of
 * "any value", a schema or a tool-call envelope, and the lazy mode's trigger.
 */
#include "compiler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OOM() adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "adil_grammar_compile: out of memory")

/* JSON levels of a schema text: 64 levels of schema (the SDK's limit), two
 * JSON levels each ({"properties": {"a": ...}}), the tool-call envelope. */
#define GRAMMAR_SCHEMA_JSON_DEPTH (2 * 64 + 4)

/* "Any value": a union of an open object, an array of any values, a string,
 * a number, and true/false/null. */
static adil_status add_any(adil_grammar *g) {
    static const char *const lits[] = {"false", "null", "true"};
    /* Every array exists (pointer arithmetic on NULL is undefined even for 0 items). */
    if (!grammar_grow((void **)&g->props, &g->cap_props, 1, sizeof *g->props)) return OOM();
    const gnode any = {.kind = NODE_ANY};
    adil_status st = grammar_add_node(g, &any, &g->any);
    uint32_t kids[5];
    const gnode object = {.kind = NODE_OBJECT, .additional = true, .nest = 1};
    const gnode array = {.kind = NODE_ARRAY, .a = g->any, .max_len = UINT32_MAX, .nest = 1};
    const gnode string = {.kind = NODE_STRING, .max_len = UINT32_MAX};
    const gnode number = {.kind = NODE_NUMBER,
                          .min = -(double)GRAMMAR_MAX_EXACT,
                          .max = (double)GRAMMAR_MAX_EXACT,
                          .imin = -GRAMMAR_MAX_EXACT,
                          .imax = GRAMMAR_MAX_EXACT};
    gnode literal = {.kind = NODE_LITERALS, .a = g->n_lits, .b = 3};
    if (st == ADIL_OK) st = grammar_add_node(g, &object, &kids[0]);
    if (st == ADIL_OK) st = grammar_add_node(g, &array, &kids[1]);
    if (st == ADIL_OK) st = grammar_add_node(g, &string, &kids[2]);
    if (st == ADIL_OK) st = grammar_add_node(g, &number, &kids[3]);
    for (int i = 0; st == ADIL_OK && i < 3; i++) {
        gtext t;
        st = grammar_pool_add(g, lits[i], strlen(lits[i]), &t) ? grammar_add_lit(g, t, 0) : OOM();
    }
    if (st == ADIL_OK) st = grammar_add_node(g, &literal, &kids[4]);
    if (st != ADIL_OK) return st;
    if (!grammar_grow((void **)&g->kids, &g->cap_kids, g->n_kids + 5, sizeof *kids)) return OOM();
    memcpy(g->kids + g->n_kids, kids, sizeof kids);
    g->nodes[g->any].a = g->n_kids;
    g->nodes[g->any].b = 5;
    g->n_kids += 5;
    return ADIL_OK;
}

/* ---- tool calls ------------------------------------------------------------------ */

typedef struct tool_entry {
    gtext name; /* "name" with its quotes */
    uint32_t node;
} tool_entry;

static adil_status add_tool(compiler *c, const adil_json *tool, size_t i, tool_entry *out) {
    char index[24];
    const size_t old = ptr_push(c, index, (size_t)snprintf(index, sizeof index, "%zu", i));
    const adil_json *name = adil_json_get(tool, "name"), *params = adil_json_get(tool, "parameters");
    adil_status st = ADIL_OK;
    if (tool->kind != ADIL_JSON_OBJECT || !name || name->kind != ADIL_JSON_STRING || !params)
        st = fail_at(c, NULL, ADIL_STATUS_INVALID_ARGUMENT,
                     "expected {\"name\": string, \"parameters\": schema}");
    if (st == ADIL_OK) {
        const size_t inner = ptr_push(c, "parameters", 10);
        st = compile_schema(c, params, false, &out->node);
        if (st == ADIL_OK && c->g->nodes[out->node].nest >= GRAMMAR_MAX_DEPTH) /* inside the envelope */
            st = fail_at(c, NULL, ADIL_STATUS_CAPABILITY,
                         "its arguments nest at least %u containers inside the tool call; documents nest "
                         "at most %d",
                         c->g->nodes[out->node].nest, GRAMMAR_MAX_DEPTH);
        ptr_pop(c, inner);
    }
    if (st == ADIL_OK && !grammar_string_text(c->g, name->str, name->str_len, true, &out->name)) st = OOM();
    ptr_pop(c, old);
    return st;
}

/* The names go into lits as one run (with their argument nodes in
 * lit_kids) only after every parameter schema is compiled: those schemas add
 * literals of their own. */
static adil_status compile_tools(compiler *c, const adil_json *doc, const adil_json *tools, uint32_t *out) {
    for (size_t i = 0; i < doc->n_members; i++)
        if (strncmp(doc->members[i].key, "x-adil-", 7) != 0)
            return fail_at(c, doc->members[i].key, ADIL_STATUS_INVALID_ARGUMENT,
                           "a tool-call grammar takes no schema keyword besides x-adil-tools");
    const size_t old = ptr_push(c, "x-adil-tools", 12);
    adil_status st = ADIL_OK;
    if (tools->kind != ADIL_JSON_ARRAY || tools->n_items == 0 || tools->n_items > (1u << 16))
        st = fail_at(c, NULL, ADIL_STATUS_INVALID_ARGUMENT, "expected a non-empty list of tools");
    tool_entry *entries = st == ADIL_OK ? calloc(tools->n_items, sizeof *entries) : NULL;
    if (st == ADIL_OK && !entries) st = OOM();
    for (size_t i = 0; st == ADIL_OK && i < tools->n_items; i++)
        st = add_tool(c, &tools->items[i], i, &entries[i]);
    const uint32_t from = c->g->n_lits;
    for (size_t i = 0; st == ADIL_OK && i < tools->n_items; i++)
        st = grammar_add_lit(c->g, entries[i].name, entries[i].node);
    free(entries);
    if (st == ADIL_OK && grammar_sort_lits(c->g, from) != tools->n_items)
        st = fail_at(c, NULL, ADIL_STATUS_INVALID_ARGUMENT, "two tools have the same name");
    ptr_pop(c, old);
    if (st != ADIL_OK) return st;
    const gnode node = {.kind = NODE_TOOLCALL, .a = from, .b = (uint32_t)tools->n_items, .nest = 1};
    return grammar_add_node(c->g, &node, out);
}

/* ---- lazy mode ------------------------------------------------------------------------ */

static adil_status read_marker(compiler *c, const adil_json *doc, const char *key, gtext *out) {
    const adil_json *v = adil_json_get(doc, key);
    if (v->kind != ADIL_JSON_STRING || v->str_len == 0 || v->str_len > 64)
        return fail_at(c, key, ADIL_STATUS_INVALID_ARGUMENT, "expected a string of 1 to 64 bytes");
    return grammar_pool_add(c->g, v->str, v->str_len, out) ? ADIL_OK : OOM();
}

static void build_kmp(adil_grammar *g) {
    const uint8_t *t = g->pool + g->trigger.off;
    g->kmp[0] = 0;
    for (uint32_t i = 1, k = 0; i < g->trigger.len; i++) {
        while (k > 0 && t[i] != t[k]) k = g->kmp[k - 1];
        if (t[i] == t[k]) k++;
        g->kmp[i] = (uint8_t)k;
    }
}

/* Per KMP state, the TEXT tokens that complete the trigger from it: only
 * these can leave free text, so only these need a check in a mask.  A token
 * that completes it holds its last byte, which narrows the scan. */
static adil_status trigger_tokens(adil_grammar *g) {
    const grammar_vocab *v = g->vocab;
    const uint32_t L = g->trigger.len;
    const uint8_t last = g->pool[g->trigger.off + L - 1];
    for (uint32_t j = 0; j < L; j++) {
        g->trig_tokens[j] = malloc(sizeof(uint32_t) * 64);
        if (!g->trig_tokens[j]) return OOM();
    }
    uint32_t cap[64];
    for (uint32_t j = 0; j < L; j++) cap[j] = 64;
    for (uint32_t id = 0; id < v->n; id++) {
        if (v->kind[id] != GRAMMAR_TOKEN_TEXT || !memchr(v->bytes + v->off[id], last, v->len[id])) continue;
        for (uint32_t j = 0; j < L; j++) {
            uint32_t s = j;
            bool hit = false;
            for (uint32_t i = 0; i < v->len[id] && !hit; i++)
                hit = (s = kmp_next(g, s, v->bytes[v->off[id] + i])) == L;
            if (!hit) continue;
            if (g->n_trig_tokens[j] == cap[j] &&
                !grammar_grow((void **)&g->trig_tokens[j], &cap[j], cap[j] + 1, sizeof(uint32_t)))
                return OOM();
            g->trig_tokens[j][g->n_trig_tokens[j]++] = id;
        }
    }
    return ADIL_OK;
}

static adil_status compile_lazy(compiler *c, const adil_json *doc) {
    const bool has_trigger = adil_json_get(doc, "x-adil-trigger") != NULL;
    if (has_trigger != (adil_json_get(doc, "x-adil-end") != NULL))
        return fail_at(c, has_trigger ? "x-adil-end" : "x-adil-trigger", ADIL_STATUS_INVALID_ARGUMENT,
                       "x-adil-trigger and x-adil-end come together");
    if (!has_trigger) return ADIL_OK;
    adil_grammar *g = c->g;
    adil_status st = read_marker(c, doc, "x-adil-trigger", &g->trigger);
    if (st == ADIL_OK) st = read_marker(c, doc, "x-adil-end", &g->end);
    if (st != ADIL_OK) return st;
    g->lazy = true;
    build_kmp(g);
    return trigger_tokens(g);
}

static adil_status compile_document(compiler *c, const adil_json *doc) {
    for (size_t i = 0; i < doc->n_members; i++) {
        const char *key = doc->members[i].key;
        if (strncmp(key, "x-adil-", 7) == 0 && strcmp(key, "x-adil-tools") && strcmp(key, "x-adil-trigger") &&
            strcmp(key, "x-adil-end"))
            return fail_at(c, key, ADIL_STATUS_CAPABILITY, "unknown extension '%s'", key);
    }
    adil_status st = add_any(c->g);
    const adil_json *tools = adil_json_get(doc, "x-adil-tools");
    if (st == ADIL_OK)
        st = tools ? compile_tools(c, doc, tools, &c->g->root) : compile_schema(c, doc, true, &c->g->root);
    if (st == ADIL_OK && c->g->nodes[c->g->root].nest > GRAMMAR_MAX_DEPTH)
        st = fail_at(c, NULL, ADIL_STATUS_CAPABILITY,
                     "every document of this schema nests at least %u containers; documents nest at most %d",
                     c->g->nodes[c->g->root].nest, GRAMMAR_MAX_DEPTH);
    return st == ADIL_OK ? compile_lazy(c, doc) : st;
}

adil_status grammar_compile(const grammar_vocab *vocab, const char *json, size_t len, adil_grammar **out) {
    if (out) *out = NULL;
    if (!vocab || !out || (!json && len))
        return adil_fail(ADIL_STATUS_INVALID_ARGUMENT,
                         "adil_grammar_compile: model, schema and out are required");
    adil_json doc;
    adil_status st = adil_json_parse_deep(json ? json : "", len, ADIL_STATUS_INVALID_ARGUMENT,
                                          "adil_grammar_compile: schema", GRAMMAR_SCHEMA_JSON_DEPTH, &doc);
    if (st != ADIL_OK) return st;
    adil_grammar *g = calloc(1, sizeof *g);
    if (!g) {
        adil_json_free(&doc);
        return OOM();
    }
    g->vocab = vocab;
    compiler c = {.g = g, .src = json};
    if (doc.kind != ADIL_JSON_OBJECT)
        st = fail_at(&c, NULL, ADIL_STATUS_INVALID_ARGUMENT, "a schema must be a JSON object, got %s",
                     adil_json_kind_name(doc.kind));
    if (st == ADIL_OK) st = compile_document(&c, &doc);
    adil_json_free(&doc);
    if (st != ADIL_OK) {
        grammar_free(g);
        return st;
    }
    *out = g;
    adil_clear_error();
    return ADIL_OK;
}

void grammar_free(adil_grammar *g) {
    if (!g) return;
    for (int j = 0; j < 64; j++) free(g->trig_tokens[j]);
    free(g->nodes);
    free(g->props);
    free(g->lits);
    free(g->lit_kids);
    free(g->kids);
    free(g->pool);
    free(g);
}

const grammar_vocab *grammar_vocab_of(const adil_grammar *g) { return g ? g->vocab : NULL; }
