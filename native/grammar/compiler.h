/*
 * compiler.h — what compile.c (schemas) and grammar.c (the input document,
 * tool calls, lazy mode) share while a grammar is being compiled.
 */
#ifndef ADIL_GRAMMAR_COMPILER_H
#define ADIL_GRAMMAR_COMPILER_H

#include "adil_json.h"
#include "grammar_internal.h"

typedef struct compiler {
    adil_grammar *g;
    const char *src;
    char ptr[256]; /* the JSON Pointer of the schema being compiled */
    size_t ptr_len;
} compiler;

/* Compiles schema `s` (at c->ptr) into *out; `top`: x-adil-* keys are
 * allowed (the input's top level). */
adil_status compile_schema(compiler *c, const adil_json *s, bool top, uint32_t *out);

/* Fails with "adil_grammar_compile: at "<ptr>/<key>": <message>". */
adil_status fail_at(const compiler *c, const char *key, adil_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

size_t ptr_push(compiler *c, const char *segment, size_t len);
void ptr_pop(compiler *c, size_t old);

bool grammar_grow(void **items, uint32_t *cap, uint32_t need, size_t size);
adil_status grammar_add_node(adil_grammar *g, const gnode *n, uint32_t *out);
adil_status grammar_add_lit(adil_grammar *g, gtext t, uint32_t kid);
/* Sorts and dedups lits[from ..) with their kids; returns how many remain. */
uint32_t grammar_sort_lits(adil_grammar *g, uint32_t from);

#endif /* ADIL_GRAMMAR_COMPILER_H */
