/*
 * stub_script.h — the stub engine's "model file": a JSON script, specified here.
 *
 *   {"turns": [{"text": "Checking.",
 *               "tool_call": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
 *              {"text": "It is sunny in Oslo."}],
 *    "token_delay_ms": 0,
 *    "context_length": 4096,
 *    "chat_template": "{% for message in messages %}...",
 *    "faults": [{"on_call": 1, "status": "busy"},
 *               {"on_call": 3, "late_answer": true},
 *               {"not_ready_ms": 200}]}
 *
 * Keys (all others are refused):
 *   turns            required array of turns; a turn has an optional "text"
 *                    (string) and an optional "tool_call" {"name": non-empty
 *                    string, and exactly one of "arguments" (any JSON value,
 *                    copied verbatim) or "arguments_json" (a string whose
 *                    contents are copied, valid JSON or not)}.
 *   token_delay_ms   0..60000, default 0: pause before every output token.
 *   context_length   1..16777216, default 4096: the model's n_ctx_train.
 *   chat_template    a string (no NUL byte) or null, default
 *                    STUB_DEFAULT_CHAT_TEMPLATE: the model's chat template
 *                    (adil_model_info.chat_template); null: the model has none.
 *   faults           array of {"on_call": N >= 1, "status": "busy" |
 *                    "model_not_ready" | "context_length" | "capability"},
 *                    {"on_call": N, "late_answer": true} or {"not_ready_ms":
 *                    0..3600000} (at most one).  At most one fault per call.
 *
 * A turn's output is compiled at load time into the exact bytes the run
 * writes: text, then `<tool_call>{"name": NAME, "arguments": ARGS}</tool_call>`
 * where NAME is the name's JSON string literal as written in the script.
 * Each run the model admits takes the next turn, unless a scripted fault
 * fails its call (stub_run.c); once none is left, a run's answer is empty
 * and stops at once.  A run started with a grammar writes the same bytes but
 * checks each against it first, and stops with output-validation status
 * where they break it (stub_step.c): scripts test a host's handling of
 * invalid, cut and truncated structured output.  The tool-call form above
 * (with its ", " and ": " spacing) is valid under a tool-call grammar, whose
 * bounded whitespace allows it.
 */
#ifndef STUB_SCRIPT_H
#define STUB_SCRIPT_H

#include "adil_common.h"

#define STUB_MAX_SCRIPT_BYTES       (16u << 20)
#define STUB_MAX_TOKEN_DELAY_MS     60000u
#define STUB_MAX_NOT_READY_MS       3600000u
#define STUB_MAX_CONTEXT_LENGTH     (16u << 20)
#define STUB_DEFAULT_CONTEXT_LENGTH 4096u

/* The chat template of a stub model whose script names none: per message
 * "<|ROLE|>\nCONTENT\n" (no content, or null: empty), then "<|assistant|>\n"
 * when add_generation_prompt.  Written for Jinja with trim_blocks and
 * lstrip_blocks (the SDK's settings) and without either: no block tag is
 * followed by a newline or preceded by blanks on its line. */
#define STUB_DEFAULT_CHAT_TEMPLATE                                                                         \
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] or '' }}\n{% endfor %}" \
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"

typedef struct stub_turn {
    unsigned char *bytes; /* the output bytes of the turn (each one token) */
    size_t len;
} stub_turn;

typedef struct stub_fault {
    uint32_t on_call;   /* 1-based call number */
    adil_status status; /* the status the call fails with; ADIL_OK for late_answer */
    bool late_answer;   /* the run acknowledges a cancel but still answers */
} stub_fault;

typedef struct stub_script {
    stub_turn *turns;
    size_t n_turns;
    stub_fault *faults; /* the on_call faults */
    size_t n_faults;
    uint32_t token_delay_ms;
    uint32_t not_ready_ms; /* 0 = ready at once */
    uint32_t context_length;
    char *chat_template; /* NULL = none (the script's null); else owned */
} stub_script;

/* Validates the JSON script src[0 .. len) and compiles it into *out.
 * ADIL_STATUS_MODEL_FORMAT with "<what>: <where>: expected X, got Y at offset
 * N" when it is not a valid script; ADIL_STATUS_OUT_OF_MEMORY.  On failure
 * *out holds nothing to free. */
adil_status stub_script_parse(const char *src, size_t len, const char *what, stub_script *out);

/* Reads and parses the script file at `path`: ADIL_STATUS_IO when it cannot
 * be read, ADIL_STATUS_MODEL_FORMAT when it is larger than
 * STUB_MAX_SCRIPT_BYTES or invalid. */
adil_status stub_script_load(const char *path, stub_script *out);

void stub_script_free(stub_script *script);

/* The fault scripted for call number `call`, or NULL. */
const stub_fault *stub_script_fault(const stub_script *script, uint32_t call);

#endif /* STUB_SCRIPT_H */
