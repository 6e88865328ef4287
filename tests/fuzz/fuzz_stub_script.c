/*
 * fuzz_stub_script.c — any bytes as a stub engine script (adil_json.h,
 * stub_script.h).
 *
 * Per input:
 *  1. adil_json_parse: a success is a tree whose every value lies inside the
 *     input and inside its parent, whose strings end in NUL at str_len, whose
 *     object members are found by adil_json_get, and whose every value, cut
 *     out of the input by its byte range, parses again as the same kind (a
 *     JSON value is a JSON text by itself);
 *  2. stub_script_parse: a success implies (1) succeeded, and the script keeps
 *     the limits stub_script.h promises (delays, context length, one fault per
 *     call, faults found by stub_script_fault).
 * A failure must carry a message and one of the documented statuses.
 */
#include "adil_json.h"
#include "stub_script.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_require.h"

static void require_failure(adil_status st) {
    REQUIRE(st == ADIL_STATUS_MODEL_FORMAT || st == ADIL_STATUS_OUT_OF_MEMORY);
    REQUIRE(adil_last_error()[0] != '\0');
}

/* ---- 1. the JSON tree --------------------------------------------------- */

static void check_value(const char *src, size_t len, const adil_json *v, size_t lo, size_t hi, int depth);

/* The value's own bytes parse again, to the same kind. */
static void check_reparse(const char *src, const adil_json *v) {
    adil_json again;
    adil_status st =
        adil_json_parse(src + v->start, v->end - v->start, ADIL_STATUS_MODEL_FORMAT, "fuzz", &again);
    if (st == ADIL_STATUS_OUT_OF_MEMORY) return;
    REQUIRE(st == ADIL_OK);
    REQUIRE(again.kind == v->kind);
    REQUIRE(again.end - again.start == v->end - v->start);
    if (v->kind == ADIL_JSON_STRING)
        REQUIRE(again.str_len == v->str_len && memcmp(again.str, v->str, v->str_len) == 0);
    if (v->kind == ADIL_JSON_NUMBER && v->is_integer)
        REQUIRE(again.is_integer && again.integer == v->integer);
    adil_json_free(&again);
}

static void check_children(const char *src, size_t len, const adil_json *v, int depth) {
    for (size_t i = 0; i < v->n_items; i++) check_value(src, len, &v->items[i], v->start, v->end, depth + 1);
    for (size_t i = 0; i < v->n_members; i++) {
        const adil_json_member *m = &v->members[i];
        REQUIRE(m->key != NULL && m->key[m->key_len] == '\0');
        REQUIRE(m->key_offset >= v->start && m->key_offset < m->value.start);
        check_value(src, len, &m->value, v->start, v->end, depth + 1);
        /* A key without NUL bytes finds the first member of that name. */
        if (strlen(m->key) == m->key_len) {
            size_t first = 0;
            while (v->members[first].key_len != m->key_len ||
                   memcmp(v->members[first].key, m->key, m->key_len) != 0)
                first++;
            REQUIRE(adil_json_get(v, m->key) == &v->members[first].value);
        }
    }
}

static void check_value(const char *src, size_t len, const adil_json *v, size_t lo, size_t hi, int depth) {
    REQUIRE(depth < ADIL_JSON_MAX_DEPTH);
    REQUIRE(v->start < v->end && v->start >= lo && v->end <= hi && v->end <= len);
    REQUIRE(strcmp(adil_json_kind_name(v->kind), "unknown") != 0);
    if (v->kind == ADIL_JSON_STRING) REQUIRE(v->str != NULL && v->str[v->str_len] == '\0');
    REQUIRE(v->kind == ADIL_JSON_ARRAY || v->n_items == 0);
    REQUIRE(v->kind == ADIL_JSON_OBJECT || v->n_members == 0);
    check_children(src, len, v, depth);
    /* Reparse only near the top: deeper values are inside these already. */
    if (depth <= 2) check_reparse(src, v);
}

static bool check_json(const char *src, size_t len) {
    adil_json root;
    adil_status st = adil_json_parse(src, len, ADIL_STATUS_MODEL_FORMAT, "fuzz", &root);
    if (st != ADIL_OK) {
        require_failure(st);
        return false;
    }
    check_value(src, len, &root, 0, len, 0);
    adil_json_free(&root);
    adil_json_free(&root); /* idempotent */
    return true;
}

/* ---- 2. the script ------------------------------------------------------ */

static void check_script(const char *src, size_t len, bool json_ok) {
    stub_script s;
    adil_status st = stub_script_parse(src, len, "fuzz", &s);
    if (st != ADIL_OK) {
        require_failure(st);
        return;
    }
    REQUIRE(json_ok);
    REQUIRE(s.token_delay_ms <= STUB_MAX_TOKEN_DELAY_MS);
    REQUIRE(s.not_ready_ms <= STUB_MAX_NOT_READY_MS);
    REQUIRE(s.context_length >= 1 && s.context_length <= STUB_MAX_CONTEXT_LENGTH);
    size_t total = 0;
    for (size_t i = 0; i < s.n_turns; i++) {
        REQUIRE(s.turns[i].len == 0 || s.turns[i].bytes != NULL);
        for (size_t k = 0; k < s.turns[i].len; k++) total += s.turns[i].bytes[k];
    }
    for (size_t i = 0; i < s.n_faults; i++) {
        const stub_fault *f = &s.faults[i];
        REQUIRE(f->on_call >= 1);
        REQUIRE(stub_script_fault(&s, f->on_call) == f); /* at most one fault per call */
        REQUIRE(f->late_answer ? f->status == ADIL_OK : f->status != ADIL_OK);
    }
    REQUIRE(stub_script_fault(&s, 0) == NULL);
    stub_script_free(&s);
    stub_script_free(&s); /* idempotent */
    (void)total;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *src = (const char *)data;
    bool json_ok = check_json(src, size);
    check_script(src, size, json_ok);
    return 0;
}
