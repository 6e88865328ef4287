/*
 * stub_script.c — validates a parsed JSON script and compiles each turn into
 * the bytes a run writes.  Every error names the script, the place in it
 * (e.g. "turns[1].tool_call.name"), what was expected, what was found and
 * the byte offset.
 */
#define _POSIX_C_SOURCE 200809L

#include "stub_script.h"

#include "adil_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct validator {
    const char *src;  /* the script text, for verbatim copies and messages */
    const char *what; /* "stub script '<path>'" */
} validator;

/* ---- error messages ---------------------------------------------------- */

static adil_status bad_value(const validator *v, const char *where, const adil_json *value,
                             const char *expected) {
    /* Quote a short prefix of the offending value so the reader sees it. */
    size_t n = value->end - value->start;
    int shown = (int)(n > 24 ? 24 : n);
    return adil_fail(ADIL_STATUS_MODEL_FORMAT, "%s: %s: expected %s, got %s %.*s%s at offset %zu", v->what,
                     where, expected, adil_json_kind_name(value->kind), shown, v->src + value->start,
                     n > 24 ? "..." : "", value->start);
}

static adil_status missing_key(const validator *v, const char *where, const adil_json *object,
                               const char *key, const char *expected) {
    return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                     "%s: %s: expected a key \"%s\" (%s), got none in the object at offset %zu", v->what,
                     where, key, expected, object->start);
}

/* Refuses keys outside `known` and keys given twice. */
static adil_status check_keys(const validator *v, const char *where, const adil_json *object,
                              const char *const known[], size_t n_known, const char *listing) {
    uint32_t seen = 0;
    for (size_t i = 0; i < object->n_members; i++) {
        const adil_json_member *m = &object->members[i];
        size_t k = 0;
        while (k < n_known && !(strlen(known[k]) == m->key_len && memcmp(known[k], m->key, m->key_len) == 0))
            k++;
        if (k == n_known)
            return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                             "%s: %s: expected one of the keys %s, got unknown key \"%s\" at offset %zu",
                             v->what, where, listing, m->key, m->key_offset);
        if (seen & (1u << k))
            return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                             "%s: %s: expected each key once, got \"%s\" again at offset %zu", v->what, where,
                             m->key, m->key_offset);
        seen |= 1u << k;
    }
    return ADIL_OK;
}

static adil_status read_uint(const validator *v, const char *where, const adil_json *value, uint32_t min,
                             uint32_t max, uint32_t *out) {
    if (value->kind != ADIL_JSON_NUMBER || !value->is_integer || value->integer < (int64_t)min ||
        value->integer > (int64_t)max) {
        char expected[80];
        snprintf(expected, sizeof expected, "an integer from %u to %u", min, max);
        return bad_value(v, where, value, expected);
    }
    *out = (uint32_t)value->integer;
    return ADIL_OK;
}

/* ---- turns ------------------------------------------------------------- */

/* The pieces of one turn's output, in order; compiled into one buffer. */
typedef struct turn_parts {
    const char *text;
    size_t text_len;
    const char *name; /* the name's JSON literal, quotes included */
    size_t name_len;
    const char *args; /* the arguments text */
    size_t args_len;
    bool has_call;
} turn_parts;

static const char CALL_OPEN[] = "<tool_call>{\"name\": ";
static const char CALL_ARGS[] = ", \"arguments\": ";
static const char CALL_CLOSE[] = "}</tool_call>";

static adil_status compile_turn(const turn_parts *parts, stub_turn *out) {
    size_t len = parts->text_len;
    if (parts->has_call)
        len += strlen(CALL_OPEN) + parts->name_len + strlen(CALL_ARGS) + parts->args_len + strlen(CALL_CLOSE);
    out->bytes = malloc(len ? len : 1);
    if (out->bytes == NULL)
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "stub script: could not allocate %zu bytes for a turn",
                         len);
    unsigned char *w = out->bytes;
    const char *pieces[5] = {parts->text, CALL_OPEN, parts->name, CALL_ARGS, parts->args};
    size_t lens[5] = {parts->text_len, strlen(CALL_OPEN), parts->name_len, strlen(CALL_ARGS),
                      parts->args_len};
    for (size_t i = 0; i < (parts->has_call ? 5u : 1u); i++) {
        if (lens[i] > 0) memcpy(w, pieces[i], lens[i]);
        w += lens[i];
    }
    if (parts->has_call) memcpy(w, CALL_CLOSE, strlen(CALL_CLOSE));
    out->len = len;
    return ADIL_OK;
}

static adil_status read_tool_call(const validator *v, size_t turn, const adil_json *call, turn_parts *parts) {
    static const char *const keys[] = {"name", "arguments", "arguments_json"};
    char where[96];
    snprintf(where, sizeof where, "turns[%zu].tool_call", turn);
    if (call->kind != ADIL_JSON_OBJECT)
        return bad_value(v, where, call, "an object {\"name\": ..., \"arguments\": ...}");
    adil_status st = check_keys(v, where, call, keys, 3, "name, arguments, arguments_json");
    if (st != ADIL_OK) return st;
    const adil_json *name = adil_json_get(call, "name");
    const adil_json *args = adil_json_get(call, "arguments");
    const adil_json *args_json = adil_json_get(call, "arguments_json");
    if (name == NULL) return missing_key(v, where, call, "name", "the tool's name");
    if (name->kind != ADIL_JSON_STRING || name->str_len == 0) {
        snprintf(where, sizeof where, "turns[%zu].tool_call.name", turn);
        return bad_value(v, where, name, "a non-empty string");
    }
    if ((args == NULL) == (args_json == NULL))
        return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                         "%s: %s: expected exactly one of \"arguments\" and \"arguments_json\", got %s "
                         "in the object at offset %zu",
                         v->what, where, args == NULL ? "neither" : "both", call->start);
    if (args_json != NULL && args_json->kind != ADIL_JSON_STRING) {
        snprintf(where, sizeof where, "turns[%zu].tool_call.arguments_json", turn);
        return bad_value(v, where, args_json, "a string holding the raw arguments text");
    }
    parts->has_call = true;
    parts->name = v->src + name->start;
    parts->name_len = name->end - name->start;
    if (args != NULL) {
        parts->args = v->src + args->start; /* verbatim, as the script spells it */
        parts->args_len = args->end - args->start;
    } else {
        parts->args = args_json->str;
        parts->args_len = args_json->str_len;
    }
    return ADIL_OK;
}

static adil_status read_turn(const validator *v, size_t index, const adil_json *turn, stub_turn *out) {
    static const char *const keys[] = {"text", "tool_call"};
    char where[96];
    snprintf(where, sizeof where, "turns[%zu]", index);
    if (turn->kind != ADIL_JSON_OBJECT)
        return bad_value(v, where, turn, "an object {\"text\": ..., \"tool_call\": ...}");
    adil_status st = check_keys(v, where, turn, keys, 2, "text, tool_call");
    if (st != ADIL_OK) return st;
    turn_parts parts = {0};
    const adil_json *text = adil_json_get(turn, "text");
    if (text != NULL) {
        if (text->kind != ADIL_JSON_STRING) {
            snprintf(where, sizeof where, "turns[%zu].text", index);
            return bad_value(v, where, text, "a string");
        }
        parts.text = text->str;
        parts.text_len = text->str_len;
    }
    const adil_json *call = adil_json_get(turn, "tool_call");
    if (call != NULL && (st = read_tool_call(v, index, call, &parts)) != ADIL_OK) return st;
    return compile_turn(&parts, out);
}

static adil_status read_turns(const validator *v, const adil_json *turns, stub_script *out) {
    if (turns->kind != ADIL_JSON_ARRAY) return bad_value(v, "turns", turns, "an array of turns");
    if (turns->n_items == 0) return ADIL_OK;
    out->turns = calloc(turns->n_items, sizeof *out->turns);
    if (out->turns == NULL)
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "%s: could not allocate %zu turns", v->what,
                         turns->n_items);
    for (size_t i = 0; i < turns->n_items; i++) {
        adil_status st = read_turn(v, i, &turns->items[i], &out->turns[i]);
        if (st != ADIL_OK) return st;
        out->n_turns++;
    }
    return ADIL_OK;
}

/* ---- faults ------------------------------------------------------------ */

static adil_status read_status_name(const validator *v, const char *where, const adil_json *value,
                                    adil_status *out) {
    static const struct {
        const char *name;
        adil_status status;
    } names[] = {
        {"busy", ADIL_STATUS_BUSY},
        {"model_not_ready", ADIL_STATUS_MODEL_NOT_READY},
        {"context_length", ADIL_STATUS_CONTEXT_LENGTH},
        {"capability", ADIL_STATUS_CAPABILITY},
    };
    for (size_t i = 0; value->kind == ADIL_JSON_STRING && i < sizeof names / sizeof names[0]; i++) {
        if (strlen(names[i].name) == value->str_len &&
            memcmp(names[i].name, value->str, value->str_len) == 0) {
            *out = names[i].status;
            return ADIL_OK;
        }
    }
    return bad_value(v, where, value, "\"busy\", \"model_not_ready\", \"context_length\" or \"capability\"");
}

static adil_status read_not_ready(const validator *v, size_t index, const adil_json *fault,
                                  bool *have_not_ready, stub_script *out) {
    char where[32], field[96];
    snprintf(where, sizeof where, "faults[%zu]", index);
    if (fault->n_members != 1)
        return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                         "%s: %s: expected \"not_ready_ms\" alone (it is not tied to a call), got %zu keys "
                         "in the object at offset %zu",
                         v->what, where, fault->n_members, fault->start);
    if (*have_not_ready)
        return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                         "%s: %s: expected at most one not_ready_ms fault, got a second at offset %zu",
                         v->what, where, fault->start);
    *have_not_ready = true;
    snprintf(field, sizeof field, "faults[%zu].not_ready_ms", index);
    return read_uint(v, field, adil_json_get(fault, "not_ready_ms"), 0, STUB_MAX_NOT_READY_MS,
                     &out->not_ready_ms);
}

static adil_status read_call_fault(const validator *v, size_t index, const adil_json *fault,
                                   const stub_script *script, stub_fault *out) {
    char where[32], field[96];
    snprintf(where, sizeof where, "faults[%zu]", index);
    const adil_json *on_call = adil_json_get(fault, "on_call");
    const adil_json *status = adil_json_get(fault, "status");
    const adil_json *late = adil_json_get(fault, "late_answer");
    if (on_call == NULL)
        return missing_key(v, where, fault, "on_call", "the 1-based call the fault applies to");
    snprintf(field, sizeof field, "faults[%zu].on_call", index);
    adil_status st = read_uint(v, field, on_call, 1, UINT32_MAX, &out->on_call);
    if (st != ADIL_OK) return st;
    if (stub_script_fault(script, out->on_call) != NULL)
        return adil_fail(
            ADIL_STATUS_MODEL_FORMAT,
            "%s: %s: expected at most one fault per call, got a second for call %u at offset %zu", v->what,
            field, out->on_call, on_call->start);
    if ((status == NULL) == (late == NULL))
        return adil_fail(ADIL_STATUS_MODEL_FORMAT,
                         "%s: %s: expected exactly one of \"status\" and \"late_answer\", got %s in the "
                         "object at offset %zu",
                         v->what, where, status == NULL ? "neither" : "both", fault->start);
    if (status != NULL) {
        snprintf(field, sizeof field, "faults[%zu].status", index);
        return read_status_name(v, field, status, &out->status);
    }
    snprintf(field, sizeof field, "faults[%zu].late_answer", index);
    if (late->kind != ADIL_JSON_BOOL || !late->boolean) return bad_value(v, field, late, "true");
    out->late_answer = true;
    out->status = ADIL_OK;
    return ADIL_OK;
}

static adil_status read_faults(const validator *v, const adil_json *faults, stub_script *out) {
    static const char *const keys[] = {"on_call", "status", "late_answer", "not_ready_ms"};
    if (faults->kind != ADIL_JSON_ARRAY) return bad_value(v, "faults", faults, "an array of faults");
    if (faults->n_items == 0) return ADIL_OK;
    out->faults = calloc(faults->n_items, sizeof *out->faults);
    if (out->faults == NULL)
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "%s: could not allocate %zu faults", v->what,
                         faults->n_items);
    bool have_not_ready = false;
    for (size_t i = 0; i < faults->n_items; i++) {
        const adil_json *fault = &faults->items[i];
        char where[96];
        snprintf(where, sizeof where, "faults[%zu]", i);
        if (fault->kind != ADIL_JSON_OBJECT)
            return bad_value(v, where, fault, "an object {\"on_call\": N, \"status\": ...}");
        adil_status st = check_keys(v, where, fault, keys, 4, "on_call, status, late_answer, not_ready_ms");
        if (st != ADIL_OK) return st;
        if (adil_json_get(fault, "not_ready_ms") != NULL) {
            st = read_not_ready(v, i, fault, &have_not_ready, out);
        } else {
            st = read_call_fault(v, i, fault, out, &out->faults[out->n_faults]);
            if (st == ADIL_OK) out->n_faults++;
        }
        if (st != ADIL_OK) return st;
    }
    return ADIL_OK;
}

/* ---- the chat template ----------------------------------------------- */

static adil_status read_chat_template(const validator *v, const adil_json *value, stub_script *out) {
    free(out->chat_template); /* the default */
    out->chat_template = NULL;
    if (value->kind == ADIL_JSON_NULL) return ADIL_OK;
    if (value->kind != ADIL_JSON_STRING || memchr(value->str, '\0', value->str_len) != NULL)
        return bad_value(v, "chat_template", value, "a string without NUL bytes, or null");
    out->chat_template = strdup(value->str);
    if (out->chat_template == NULL)
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "%s: could not copy the chat template", v->what);
    return ADIL_OK;
}

/* ---- the whole script -------------------------------------------------- */

static adil_status read_script(const validator *v, const adil_json *root, stub_script *out) {
    static const char *const keys[] = {"turns", "token_delay_ms", "context_length", "faults",
                                       "chat_template"};
    if (root->kind != ADIL_JSON_OBJECT)
        return bad_value(v, "top level", root, "an object {\"turns\": [...], ...}");
    adil_status st = check_keys(v, "top level", root, keys, 5,
                                "turns, token_delay_ms, context_length, faults, chat_template");
    if (st != ADIL_OK) return st;
    const adil_json *turns = adil_json_get(root, "turns");
    const adil_json *delay = adil_json_get(root, "token_delay_ms");
    const adil_json *context = adil_json_get(root, "context_length");
    const adil_json *faults = adil_json_get(root, "faults");
    const adil_json *chat_template = adil_json_get(root, "chat_template");
    if (turns == NULL) return missing_key(v, "top level", root, "turns", "an array of turns");
    if ((st = read_turns(v, turns, out)) != ADIL_OK) return st;
    if (delay != NULL && (st = read_uint(v, "token_delay_ms", delay, 0, STUB_MAX_TOKEN_DELAY_MS,
                                         &out->token_delay_ms)) != ADIL_OK)
        return st;
    if (context != NULL && (st = read_uint(v, "context_length", context, 1, STUB_MAX_CONTEXT_LENGTH,
                                           &out->context_length)) != ADIL_OK)
        return st;
    if (faults != NULL && (st = read_faults(v, faults, out)) != ADIL_OK) return st;
    if (chat_template != NULL && (st = read_chat_template(v, chat_template, out)) != ADIL_OK) return st;
    return ADIL_OK;
}

adil_status stub_script_parse(const char *src, size_t len, const char *what, stub_script *out) {
    memset(out, 0, sizeof *out);
    out->context_length = STUB_DEFAULT_CONTEXT_LENGTH;
    out->chat_template = strdup(STUB_DEFAULT_CHAT_TEMPLATE);
    if (out->chat_template == NULL)
        return adil_fail(ADIL_STATUS_OUT_OF_MEMORY, "%s: could not copy the chat template", what);
    adil_json root;
    adil_status st = adil_json_parse(src, len, ADIL_STATUS_MODEL_FORMAT, what, &root);
    if (st != ADIL_OK) {
        stub_script_free(out);
        return st;
    }
    validator v = {src, what};
    st = read_script(&v, &root, out);
    adil_json_free(&root);
    if (st != ADIL_OK) stub_script_free(out);
    return st;
}

void stub_script_free(stub_script *script) {
    if (script == NULL) return;
    for (size_t i = 0; i < script->n_turns; i++) free(script->turns[i].bytes);
    free(script->turns);
    free(script->faults);
    free(script->chat_template);
    memset(script, 0, sizeof *script);
}

const stub_fault *stub_script_fault(const stub_script *script, uint32_t call) {
    for (size_t i = 0; i < script->n_faults; i++)
        if (script->faults[i].on_call == call) return &script->faults[i];
    return NULL;
}
