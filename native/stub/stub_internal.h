/*
 * stub_internal.h — the handles of the reference stub engine.
 *
 * Build-time variants (test-only, see CMakeLists.txt) change only what the
 * version handshake reports:
 *   STUB_ABI_MAJOR / STUB_ABI_MINOR   the ABI version reported (default adil.h's);
 *                                     a minor before 2.6, 2.5, 2.3, 2.2 or 2.1 also reports the
 *                                     sizes and capabilities an engine of that
 *                                     minor has (no fields or capabilities of a
 *                                     later one) and reads no later field
 *   STUB_HOST_MAJOR_ACCEPTED          the host major accepted (default 2)
 *   STUB_SIZE_APPENDED                bytes added to every reported struct size,
 *                                     as a later minor that appended fields
 *                                     reports them (its calls stay the 2.0 stub's)
 *   STUB_SIZE_SHORT                   bytes taken from the 2.0 size_run_params
 *                                     reported (a struct smaller than 2.0)
 * The missing-symbol variant is the plain stub linked with a version script
 * (missing_symbol.map) that hides adil_run_step; the 2.0 and 2.1 variants
 * with one (before_2_2.map) that hides the functions 2.2 appended.
 */
#ifndef STUB_INTERNAL_H
#define STUB_INTERNAL_H

#include "adil_common.h"
#include "grammar.h"
#include "stub_script.h"

#ifndef STUB_ABI_MAJOR
#    define STUB_ABI_MAJOR ADIL_ABI_MAJOR
#endif
#ifndef STUB_ABI_MINOR
#    define STUB_ABI_MINOR ADIL_ABI_MINOR
#endif
#ifndef STUB_HOST_MAJOR_ACCEPTED
#    define STUB_HOST_MAJOR_ACCEPTED ADIL_HOST_MAJOR
#endif
#ifndef STUB_SIZE_APPENDED
#    define STUB_SIZE_APPENDED 0
#endif
#ifndef STUB_SIZE_SHORT
#    define STUB_SIZE_SHORT 0
#endif

/* The sizes of the structs that 2.1, 2.2, 2.3, 2.5 and 2.6 appended to, and the
 * capabilities, as the reported minor has them. */
#if STUB_ABI_MINOR == 0
#    define STUB_SIZEOF_COMPONENT_INFO ADIL_SIZE_2_0_COMPONENT_INFO
#    define STUB_SIZEOF_RUN_STATS      ADIL_SIZE_2_0_RUN_STATS
#elif STUB_ABI_MINOR < 3
#    define STUB_SIZEOF_COMPONENT_INFO sizeof(adil_component_info)
#    define STUB_SIZEOF_RUN_STATS      ADIL_SIZE_2_1_RUN_STATS
#else
#    define STUB_SIZEOF_COMPONENT_INFO sizeof(adil_component_info)
#    define STUB_SIZEOF_RUN_STATS      sizeof(adil_run_stats)
#endif
#if STUB_ABI_MINOR < 2
#    define STUB_SIZEOF_RUN_PARAMS ADIL_SIZE_2_0_RUN_PARAMS
#    define STUB_CAPABILITIES      "grammar"
#elif STUB_ABI_MINOR == 2
#    define STUB_SIZEOF_RUN_PARAMS ADIL_SIZE_2_2_RUN_PARAMS
#    define STUB_CAPABILITIES      "grammar,logprobs"
#else
#    define STUB_SIZEOF_RUN_PARAMS sizeof(adil_run_params)
#    define STUB_CAPABILITIES      "grammar,logprobs,lookup"
#endif

#if STUB_ABI_MINOR < 5
#    define STUB_SIZEOF_MODEL_INFO ADIL_SIZE_2_0_MODEL_INFO
#else
#    define STUB_SIZEOF_MODEL_INFO sizeof(adil_model_info)
#endif
#if STUB_ABI_MINOR < 6
#    define STUB_SIZEOF_CONTEXT_PARAMS ADIL_SIZE_2_0_CONTEXT_PARAMS
#else
#    define STUB_SIZEOF_CONTEXT_PARAMS sizeof(adil_context_params)
#endif

/* The byte-level vocabulary: ids 0..255 are bytes, then two specials. */
#define STUB_TOKEN_BOS 256
#define STUB_TOKEN_EOS 257
#define STUB_N_VOCAB   258

/* How a run's scripted output broke its grammar (stub_step.c). */
typedef enum stub_violation {
    STUB_VIOLATION_NONE = 0,
    STUB_VIOLATION_BYTE,     /* a byte the grammar refuses */
    STUB_VIOLATION_ENDED,    /* the script ended inside the document */
    STUB_VIOLATION_TRUNCATED /* max_tokens reached inside the document */
} stub_violation;

struct adil_engine {
    uint32_t n_threads; /* 0 = number of cores */
};

struct adil_model {
    stub_script script;
    char *name; /* the script's file name */
    uint32_t n_threads;
    double loaded_ms;             /* adil_now_ms() at load; starts the not-ready window */
    grammar_vocab *grammar_vocab; /* the byte vocabulary as grammars see it (stub_grammar.c) */
    atomic_int run_live;          /* 1 while a run of this model is not freed */
    /* Guarded by run_live: only the thread that set it touches these. */
    uint32_t n_calls; /* run starts counted so far (faults' on_call) */
    size_t next_turn; /* the turn the next call answers with */
};

struct adil_context {
    adil_model *model;
    uint32_t n_ctx;
    uint32_t n_batch;
    uint32_t n_threads;
};

struct adil_run {
    adil_model *model;
    atomic_int cancelled;          /* the run's own flag (adil_run_cancel) */
    adil_cancel_flag *cancel_flag; /* the caller's shared flag, or NULL */
    /* What the run writes: the turn's bytes, then EOS. */
    const unsigned char *output; /* owned by the model's script */
    size_t output_len;
    size_t output_pos;
    int32_t *stop_tokens; /* a copy of params->stop_tokens */
    size_t n_stop_tokens;
    bool late_answer; /* acknowledge a cancel but keep answering */
    uint32_t token_delay_ms;
    uint32_t max_tokens; /* already resolved: never 0 */
    uint32_t total_timeout_ms;
    uint32_t read_timeout_ms;
    uint32_t step_budget_ms;
    uint32_t n_logprobs; /* 0 = off (adil_run_token_logprobs) */
    double start_ms;     /* adil_run_start; the total deadline counts from here */
    bool stopped;
    adil_run_stats stats;
    grammar_matcher *grammar; /* checks the output when the run has a grammar, else NULL */
    stub_violation violation; /* why the output broke the grammar, when it did */
};

/* Builds the stub's byte vocabulary for the grammar library (stub_grammar.c). */
adil_status stub_vocab_new(grammar_vocab **out);

/* ADIL_OK, or ADIL_STATUS_MODEL_NOT_READY (message naming `what`) while the
 * script's not_ready_ms window since load is still open.  Any thread. */
adil_status stub_model_check_ready(const adil_model *model, const char *what);

/* True when the run's own flag or its shared cancel flag is set. */
bool stub_run_is_cancelled(const adil_run *run);

#endif /* STUB_INTERNAL_H */
