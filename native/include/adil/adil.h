/*
 * adil.h — the ADIL engine ABI, version 2.
 *
 * This header is the whole contract between an ADIL *engine* (a shared library
 * that exports these symbols) and a *host* that loads it (the Python binding,
 * the `adil serve` process, or any C program).  Every function of the ABI is
 * declared here, and the shipped CPU engine exports exactly these
 * (tests/test_exports.py).  An engine may add functions under a prefix of
 * its own, declared in its own header and not part of the ABI: the stub
 * exports adil_stub_sleep_tool (native/stub/adil_stub.h), a native tool for
 * the cancellation tests.
 *
 * Rules of the ABI
 *  - adil_abi_version() never changes its signature.  A host calls it before
 *    resolving any other symbol and refuses an engine whose major differs.
 *  - Every public struct starts with `struct_size`.  The caller fills it with
 *    sizeof(the struct it was compiled with); the `*_default_params(&p)`
 *    functions fill in the defaults and struct_size.  Minor versions only
 *    append fields, so every 2.x struct starts with the fields of 2.0; their
 *    size, ADIL_SIZE_2_0_<STRUCT>, is defined once below each struct (the
 *    offset of its last 2.0 field plus that field's size).  One rule follows,
 *    for engines and hosts alike:
 *      - an engine refuses a struct_size smaller than the 2.0 size with
 *        ADIL_STATUS_INVALID_ARGUMENT and accepts any larger one.  Of a
 *        params struct it reads only the first struct_size bytes (fields it
 *        knows past them keep their defaults); into an out struct it writes at
 *        most struct_size bytes and leaves struct_size as the caller set it.
 *      - a host refuses an engine whose adil_component_info reports a struct
 *        smaller than its 2.0 size, and accepts a larger one (a later minor
 *        that appended fields).  The engine's minor (adil_abi_version()) says
 *        which appended fields it knows.
 *    A field appended in minor N has its own ADIL_SIZE_2_N_<STRUCT> (the size
 *    through it).  A host reads an appended field of an engine-filled struct
 *    only when the engine's minor is >= N and the struct_size (or size_*) the
 *    engine reports covers that field; otherwise it treats the field as absent.
 *
 * Minor versions
 *  - 2.0: the base ABI.
 *  - 2.1: adil_component_info.capabilities (ADIL_SIZE_2_1_COMPONENT_INFO);
 *    adil_run_stats.n_forced_tokens and .grammar_ms (ADIL_SIZE_2_1_RUN_STATS).
 *  - 2.2: adil_run_params.n_logprobs (ADIL_SIZE_2_2_RUN_PARAMS) and the
 *    function adil_run_token_logprobs (capability "logprobs").
 *  - 2.3: adil_run_params.speculative (ADIL_SIZE_2_3_RUN_PARAMS): lookup
 *    (prompt n-gram) decoding (capability "lookup"); adil_run_stats.n_drafted
 *    and .n_draft_accepted (ADIL_SIZE_2_3_RUN_STATS).
 *  - 2.4: the function adil_model_kv_bytes (no struct changed).
 *  - 2.5: adil_model_info.decode_bytes, .decode_params and .n_embd
 *    (ADIL_SIZE_2_5_MODEL_INFO); the function adil_engine_int8_peak.
 *    A function appended in minor N is marked, as appended fields are, by a
 *    comment of its own, 2.N, before its description.  A host resolves it
 *    only from an engine whose minor is >= N (an engine of an earlier minor
 *    does not export it); an engine of minor >= N exports all of them.
 *  - 2.6: adil_context_params.kv_type (ADIL_SIZE_2_6_CONTEXT_PARAMS): the
 *    KV cache's element type (adil_kv_cache_type).
 *  - Params are passed by pointer, never by value.
 *  - Every function returns an adil_status (ADIL_OK == 0) unless stated
 *    otherwise.  On failure a message for the calling thread is available from
 *    adil_last_error(); it names what was expected and what was found.
 *  - An engine never calls exit() or abort() on bad input or bad files.
 *  - No hidden mutable state: everything a call changes lives in the handles
 *    below.  The per-thread last-error message is the only thread-local
 *    storage.  Process-wide, set once by the first call that needs it and
 *    read-only afterwards: the CPU engine's kernel level (the best the CPU
 *    supports, or the one the environment variable ADIL_CPU=scalar|avx2|avx512
 *    asks for, read that once; later changes to ADIL_CPU have no effect), the
 *    kernel dispatch table built for it, and the component info.
 *
 * Thread safety (unless a function says otherwise)
 *  - Different handles may be used from different threads at the same time.
 *  - One handle must not be used from two threads at once, except for the
 *    functions marked "any thread" (cancellation, flags, info getters).
 *  - A model serves one run at a time: starting a second run on a model whose
 *    run is still alive returns ADIL_STATUS_BUSY.
 */
#ifndef ADIL_H
#define ADIL_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#    define ADIL_API __declspec(dllexport)
#elif defined(__GNUC__)
#    define ADIL_API __attribute__((visibility("default")))
#else
#    define ADIL_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ===================================================================== *
 * Versions
 * ===================================================================== */

/* The size of `type` up to and including `field`: a struct's size in the
 * minor whose last field `field` was (ADIL_SIZE_2_<minor>_* below each struct). */
#define ADIL_SIZE_THROUGH(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

#define ADIL_ABI_MAJOR 2
#define ADIL_ABI_MINOR 6
/* Packs and unpacks the (major << 16) | minor form of adil_abi_version(). */
#define ADIL_MAKE_VERSION(major, minor) ((((uint32_t)(major)) << 16) | ((uint32_t)(minor) & 0xFFFFu))
#define ADIL_VERSION_MAJOR(v)           (((uint32_t)(v)) >> 16)
#define ADIL_VERSION_MINOR(v)           (((uint32_t)(v)) & 0xFFFFu)
#define ADIL_ABI_VERSION                ADIL_MAKE_VERSION(ADIL_ABI_MAJOR, ADIL_ABI_MINOR)
/* The host major this ABI is for; engines refuse hosts of another major. */
#define ADIL_HOST_MAJOR 2

/* ===================================================================== *
 * Opaque handles
 * ===================================================================== */

typedef struct adil_engine adil_engine;           /* a loaded engine instance, owns backends */
typedef struct adil_model adil_model;             /* weights + tokenizer, read-only once loaded */
typedef struct adil_context adil_context;         /* KV cache and sampler state of one sequence */
typedef struct adil_run adil_run;                 /* one generation; owns its cancelled flag */
typedef struct adil_grammar adil_grammar;         /* a compiled output constraint */
typedef struct adil_cancel_flag adil_cancel_flag; /* a flag shared by a run and the tools it leads to */

/* ===================================================================== *
 * Status codes.  Explicit values; never renumbered.  Each error status maps
 * onto exactly one error class of the Python SDK (src/adil/errors.py).
 * ===================================================================== */

typedef enum adil_status {
    ADIL_OK = 0,
    ADIL_STATUS_CANCELLED = 1,         /* stopped because a cancelled flag was set */
    ADIL_STATUS_DEADLINE = 2,          /* a total or read deadline expired */
    ADIL_STATUS_BUSY = 3,              /* the model already serves a run */
    ADIL_STATUS_MODEL_NOT_READY = 4,   /* still loading, or failed */
    ADIL_STATUS_CONTEXT_LENGTH = 5,    /* prompt + output exceed the context window */
    ADIL_STATUS_CAPABILITY = 6,        /* the engine or model cannot do this */
    ADIL_STATUS_OUTPUT_VALIDATION = 7, /* output does not satisfy its constraint */
    ADIL_STATUS_MODEL_FORMAT = 8,      /* the model file is malformed */
    ADIL_STATUS_HOST_REFUSED = 9,      /* the host is not of a major this engine accepts */
    ADIL_STATUS_INVALID_ARGUMENT = 10, /* NULL where not allowed, bad size, out of range */
    ADIL_STATUS_IO = 11,               /* a file could not be opened or read */
    ADIL_STATUS_OUT_OF_MEMORY = 12,    /* an allocation failed */
    ADIL_STATUS_INTERNAL = 13          /* a bug in the engine */
} adil_status;

/* The last status value; hosts use it to check that they map every status. */
#define ADIL_STATUS_LAST ADIL_STATUS_INTERNAL

/* Why a run stopped (adil_run_stats.stop_reason). */
typedef enum adil_stop_reason {
    ADIL_STOP_NONE = 0,           /* still running */
    ADIL_STOP_END_OF_TEXT = 1,    /* the model wrote an end-of-generation or stop token */
    ADIL_STOP_MAX_TOKENS = 2,     /* max_tokens reached */
    ADIL_STOP_CANCELLED = 3,      /* a cancelled flag was seen */
    ADIL_STOP_DEADLINE_TOTAL = 4, /* total_timeout_ms expired */
    ADIL_STOP_DEADLINE_READ = 5,  /* read_timeout_ms passed without a token */
    ADIL_STOP_ERROR = 6           /* a step failed; see its status */
} adil_stop_reason;

/* ===================================================================== *
 * Cancellation
 *
 * A C-style cancelled-flag function: returns non-zero once the work that
 * `token` stands for has been cancelled.  Safe to call from any thread, any
 * number of times, and cheap (one atomic load).  The generation loop polls it
 * before every token (and between layers of a long prefill); native tools
 * receive it with its token and should poll it before each side effect.
 * ===================================================================== */

typedef int (*adil_cancelled_fn)(void *token);

/* The callback type of a native (C) tool.  The host calls it with the JSON
 * arguments it validated, and with the engine's cancelled-flag function and
 * the token it is bound to.  The tool writes its JSON result (not NUL
 * terminated) into result[0 .. result_capacity) and its length to
 * *result_len; if the result does not fit it writes the needed length and
 * returns ADIL_STATUS_INVALID_ARGUMENT so the host can call again with more
 * room.  A tool that notices cancellation returns ADIL_STATUS_CANCELLED. */
typedef adil_status (*adil_native_tool_fn)(void *user_data, const char *arguments_json, size_t arguments_len,
                                           adil_cancelled_fn cancelled, void *cancel_token, char *result,
                                           size_t result_capacity, size_t *result_len);

/* ===================================================================== *
 * Component set: what the engine is, and what the host is.
 * ===================================================================== */

typedef struct adil_component_info {
    uint32_t struct_size;
    uint32_t abi_major; /* == ADIL_VERSION_MAJOR(adil_abi_version()) */
    uint32_t abi_minor;
    uint32_t host_major_accepted; /* hosts of another major are refused */
    const char *engine_name;      /* e.g. "adil-cpu", "adil-stub" */
    const char *engine_version;   /* the engine's own version string */
    const char *backends;         /* comma-separated backends built in, e.g. "cpu" */
    const char *cpu_features;     /* comma-separated CPU features in use, e.g. "avx2,fma";
                                      an entry "kernels=NAME" names the kernel set that runs */
    /* sizeof() each public struct as the engine was compiled: at least its
     * 2.0 size (ADIL_SIZE_2_0_*), larger when the engine is of a later minor
     * that appended fields.  Hosts refuse an engine that reports less. */
    uint32_t size_host_info;
    uint32_t size_engine_params;
    uint32_t size_model_params;
    uint32_t size_model_info;
    uint32_t size_context_params;
    uint32_t size_sampling_params;
    uint32_t size_run_params;
    uint32_t size_run_stats;
    /* 2.1 */
    const char *capabilities; /* comma-separated optional features this engine has, e.g. "grammar,logits" */
} adil_component_info;

#define ADIL_SIZE_2_0_COMPONENT_INFO ADIL_SIZE_THROUGH(adil_component_info, size_run_stats)
#define ADIL_SIZE_2_1_COMPONENT_INFO ADIL_SIZE_THROUGH(adil_component_info, capabilities)

typedef struct adil_host_info {
    uint32_t struct_size;
    uint32_t host_major; /* must be ADIL_HOST_MAJOR */
    uint32_t host_minor;
    const char *host_name;    /* e.g. "adil-python" */
    const char *host_version; /* e.g. "0.1.0" */
} adil_host_info;

#define ADIL_SIZE_2_0_HOST_INFO ADIL_SIZE_THROUGH(adil_host_info, host_version)

/* The one function that never changes: (major << 16) | minor.  Any thread. */
ADIL_API uint32_t adil_abi_version(void);

/* Static information about this engine library.  Returns a pointer owned by
 * the library, valid until it is unloaded; never NULL.  Any thread. */
ADIL_API const adil_component_info *adil_component(void);

/* ===================================================================== *
 * Errors
 * ===================================================================== */

/* A constant English name for a status ("busy", "model_not_ready", ...).
 * Unknown values give "unknown".  Never NULL.  Any thread. */
ADIL_API const char *adil_status_string(adil_status status);

/* The message of the last failure on the calling thread, or "" if none.
 * Owned by the library; valid until the next ADIL call on this thread. */
ADIL_API const char *adil_last_error(void);

/* ===================================================================== *
 * Engine
 * ===================================================================== */

typedef struct adil_engine_params {
    uint32_t struct_size;
    uint32_t n_threads;  /* default thread count for models; 0 = number of cores */
    const char *backend; /* "cpu", "cuda" or "auto"; NULL = "auto" */
} adil_engine_params;

#define ADIL_SIZE_2_0_ENGINE_PARAMS ADIL_SIZE_THROUGH(adil_engine_params, backend)

ADIL_API void adil_engine_default_params(adil_engine_params *out);

/* Opens an engine for `host`.  `params` may be NULL (defaults).
 * Returns ADIL_STATUS_HOST_REFUSED if host->host_major is not accepted,
 * ADIL_STATUS_INVALID_ARGUMENT for NULL host/out or a struct_size (of host or
 * params) smaller than the 2.0 size.  On success *out owns the engine; free
 * it with adil_engine_close. */
ADIL_API adil_status adil_engine_open(const adil_host_info *host, const adil_engine_params *params,
                                      adil_engine **out);

/* Closes an engine.  All its models must be freed first.  NULL is a no-op. */
ADIL_API void adil_engine_close(adil_engine *engine);

/* 2.5 */
/* Measures the int8 multiply-accumulate peak of this CPU, the ceiling of
 * quantized matrix products: a micro-kernel that keeps everything in
 * registers (no memory traffic; enough independent accumulators to cover
 * the instruction's latency) runs on n_threads threads (0 = the engine's
 * default, adil_engine_params.n_threads) for about 60 ms (10 ms of warm-up,
 * 50 measured), and *macs_per_s gets the int8 x int8 products per second
 * of all threads together.  The
 * kernel is the best of the engine's CPU level (ADIL_CPU): AVX-512 VNNI
 * vpdpbusd on zmm (64 products an instruction), else AVX-VNNI vpdpbusd on
 * ymm (32), else AVX2 vpmaddubsw + vpmaddwd + vpaddd (32).  The figure is
 * a measurement, so it moves with what else the cores run.
 * ADIL_STATUS_CAPABILITY when the engine has no int8 kernel to measure (the
 * CPU engine at the scalar level, the stub), ADIL_STATUS_INVALID_ARGUMENT
 * for a NULL engine or macs_per_s.  Blocks its caller for the measurement;
 * any thread. */
ADIL_API adil_status adil_engine_int8_peak(adil_engine *engine, uint32_t n_threads, double *macs_per_s);

/* ===================================================================== *
 * Models
 * ===================================================================== */

typedef struct adil_model_params {
    uint32_t struct_size;
    uint32_t n_threads; /* 0 = the engine's default */
    uint32_t use_mmap;  /* non-zero: map the file (default 1); 0: copy it into memory.
                                      A mapped model reads its weights from the file while it
                                      runs: adil_run_start, adil_run_step and adil_context_logits
                                      check first (one fstat) that the file kept its size and
                                      modification time, and refuse with ADIL_STATUS_IO when it
                                      changed.  A file truncated in place while a step is
                                      computing still kills the process with SIGBUS; load files
                                      that may be rewritten in place with use_mmap = 0 (replacing
                                      a file by rename is safe either way). */
} adil_model_params;

#define ADIL_SIZE_2_0_MODEL_PARAMS ADIL_SIZE_THROUGH(adil_model_params, use_mmap)

ADIL_API void adil_model_default_params(adil_model_params *out);

typedef struct adil_model_info {
    uint32_t struct_size;
    const char *architecture;  /* "gemma3", "llama", "stub", ...; owned by the model */
    const char *name;          /* general.name or the file name; owned by the model */
    const char *chat_template; /* Jinja source, or NULL when the file has none */
    uint32_t n_vocab;
    uint32_t n_ctx_train; /* context length the model was trained for */
    int32_t bos_token;    /* -1 when none */
    int32_t eos_token;    /* -1 when none */
    int32_t eot_token;    /* end of turn, -1 when none */
    uint32_t add_bos;     /* non-zero: the tokenizer adds BOS by default */
    uint64_t n_params;
    uint64_t size_bytes; /* bytes of weights */
    uint32_t n_threads;
    /* 2.5 */
    uint64_t decode_bytes;  /* bytes of weights one decoded token reads: size_bytes, less the
                              experts a token is not routed through (of a mixture of experts'
                              expert tensors, n_expert_used / n_expert counts) and all but one
                              row of a token embedding that is not also the output head, plus
                              what the engine's in-memory layout of a weight adds (the CPU
                              engine's 8-row Q4_K layout: 148 bytes per row and super-block for
                              the file's 144); what bounds decode speed by memory bandwidth */
    uint64_t decode_params; /* weights (elements) one decoded token multiplies by, counted as
                               decode_bytes counts bytes: the multiply-adds of a token's matrix
                               products, before attention */
    uint32_t n_embd;        /* the width of the residual stream (0: the engine has none, the stub) */
} adil_model_info;

#define ADIL_SIZE_2_0_MODEL_INFO ADIL_SIZE_THROUGH(adil_model_info, n_threads)
#define ADIL_SIZE_2_5_MODEL_INFO ADIL_SIZE_THROUGH(adil_model_info, n_embd)

/* Loads a model file.  `params` may be NULL.  Returns ADIL_STATUS_IO when the
 * file cannot be read or is not a regular file (a directory, a named pipe, a
 * device: refused at once, without waiting on a pipe), ADIL_STATUS_MODEL_FORMAT (message naming the field and
 * offset) when it is malformed, ADIL_STATUS_CAPABILITY for an architecture or
 * weight type this engine cannot run.  The CPU engine copies Q4_K matrices
 * (and, on AVX-512 VNNI CPUs, Q8_0 ones) into a layout of 8 interleaved rows
 * that its SIMD kernels read fastest (about the weights' size in anonymous
 * memory; the mapped file's pages under them are released), unless the environment variable ADIL_REPACK=0, read at
 * each load, keeps the file's layout (the reference tests compare with).
 * *out must be freed with adil_model_free before its engine is closed. */
ADIL_API adil_status adil_model_load(adil_engine *engine, const char *path, const adil_model_params *params,
                                     adil_model **out);

ADIL_API void adil_model_free(adil_model *model);

/* Fills `out` (whose struct_size the caller sets, at least
 * ADIL_SIZE_2_0_MODEL_INFO) with what the model is.  Strings stay owned by
 * the model. */
ADIL_API adil_status adil_model_get_info(const adil_model *model, adil_model_info *out);

/* ADIL_OK when the model can serve runs; ADIL_STATUS_MODEL_NOT_READY while it
 * is still loading or after it failed.  Any thread. */
ADIL_API adil_status adil_model_ready(const adil_model *model);

/* ===================================================================== *
 * Tokens
 * ===================================================================== */

/* add_bos: -1 = as the model asks (adil_model_info.add_bos), 0 = no, 1 = yes.
 * parse_special: non-zero = text such as "<start_of_turn>" becomes its special
 * token.  Writes at most `capacity` ids into `tokens` and the number the text
 * needs into *n_tokens; the caller calls again with more room when
 * *n_tokens > capacity.  `tokens` may be NULL when capacity is 0. */
ADIL_API adil_status adil_tokenize(const adil_model *model, const char *text, size_t text_len,
                                   int32_t add_bos, int32_t parse_special, int32_t *tokens, size_t capacity,
                                   size_t *n_tokens);

/* The bytes of one token (not NUL terminated; may be part of a UTF-8
 * character).  Writes at most `capacity` bytes and the needed length into
 * *n_bytes.  Control tokens give their text only when `special` is non-zero.
 * ADIL_STATUS_INVALID_ARGUMENT for an id outside [0, n_vocab). */
ADIL_API adil_status adil_token_to_piece(const adil_model *model, int32_t token, int32_t special, char *buf,
                                         size_t capacity, size_t *n_bytes);

/* ===================================================================== *
 * Grammar: a JSON-schema subset compiled into a token-level constraint.
 * ===================================================================== */

/* Compiles `schema_json` (UTF-8 JSON text) for `model`'s vocabulary.  A run
 * started with the grammar (adil_run_params.grammar) samples only tokens that
 * keep its output a prefix of a valid document, appends the text that is the
 * only possible continuation without sampling (evaluated as one batch; counted
 * in adil_run_stats.n_forced_tokens), and stops once the document is complete.
 * A run cut by max_tokens inside a document ends with
 * ADIL_STATUS_OUTPUT_VALIDATION ("truncated").
 *
 * The input is a JSON schema of this subset: type (a name or a list),
 * properties, required, additionalProperties (true or false), items, enum,
 * const, minimum, maximum, minLength, maxLength (code points), minItems,
 * maxItems, description, title; a schema without type, enum or const stands
 * for any JSON value.  What the grammar lets a model write:
 *  - every document of the schema in compact canonical form (Python's
 *    json.dumps(v, separators=(",", ":"), ensure_ascii=False)), plus one
 *    space wherever JSON allows whitespace (", " and ": " are valid; blank
 *    lines and indentation are not);
 *  - numbers under the exact-number rule: integers within ±(2^53-1) (never
 *    -0) and, for "number", decimals without exponent of at most 15
 *    significant digits (from the first non-zero digit to the last digit
 *    written), within minimum/maximum;
 *  - object keys in any order, each once; other keys than the declared ones
 *    only when additionalProperties is not false (written without escapes);
 *  - at most 64 nested containers, at most 64 properties per object.
 * Two extensions, at the top level of the input only:
 *  - "x-adil-tools": [{"name": N, "parameters": S}, ...]: the document is a
 *    tool call {"name":N,"arguments":<S>}, name first, S chosen by N;
 *  - "x-adil-trigger": T, "x-adil-end": E (1 to 64 bytes each): lazy mode,
 *    free text (any token) until T is written, then one document, then E,
 *    then free text again; up to 2 whitespace bytes may follow T and come
 *    before E.
 * Returns ADIL_STATUS_INVALID_ARGUMENT for text that is not JSON or a keyword
 * with a value of the wrong type, ADIL_STATUS_CAPABILITY for a keyword outside
 * the subset, a schema no document satisfies, or an engine without grammar
 * support (adil_component_info.capabilities lacks "grammar"); the message
 * names the JSON Pointer.  The grammar belongs to `model` (a run on another
 * model's context refuses it) and must outlive the runs that use it.  Free
 * it with adil_grammar_free before its model.  Any thread (the model's
 * vocabulary is indexed once, on the first call, under a lock). */
ADIL_API adil_status adil_grammar_compile(const adil_model *model, const char *schema_json, size_t schema_len,
                                          adil_grammar **out);

ADIL_API void adil_grammar_free(adil_grammar *grammar);

/* ===================================================================== *
 * Contexts: one sequence's KV cache and sampler state.
 * ===================================================================== */

typedef struct adil_context_params {
    uint32_t struct_size;
    uint32_t n_ctx;     /* context window in tokens; 0 = the model's n_ctx_train,
                                      at most ADIL_DEFAULT_N_CTX_CAP */
    uint32_t n_batch;   /* prompt tokens per prefill batch; 0 = ADIL_DEFAULT_N_BATCH */
    uint32_t n_threads; /* 0 = the model's */
    /* 2.6 */
    uint32_t kv_type; /* adil_kv_cache_type; ADIL_KV_CACHE_DEFAULT (0) = the engine's */
} adil_context_params;

#define ADIL_SIZE_2_0_CONTEXT_PARAMS ADIL_SIZE_THROUGH(adil_context_params, n_threads)
#define ADIL_SIZE_2_6_CONTEXT_PARAMS ADIL_SIZE_THROUGH(adil_context_params, kv_type)

/* How a context stores cached keys and values (adil_context_params.kv_type).
 *   ADIL_KV_CACHE_DEFAULT  the engine's choice: the CPU engine's is F16 (or
 *                          what the environment variable ADIL_KV_TYPE asks
 *                          for: f32, q8_0, f16)
 *   ADIL_KV_CACHE_F16      IEEE half, 2 bytes an element (what llama.cpp keeps)
 *   ADIL_KV_CACHE_F32      4 bytes an element: the exact reference
 *   ADIL_KV_CACHE_Q8_0     ggml's Q8_0 blocks: 32 int8 and a half scale, 34
 *                          bytes per 32 elements; the CPU engine needs the
 *                          models' head widths (key and value) to be
 *                          multiples of 32 (else ADIL_STATUS_CAPABILITY)
 * An engine without a KV cache (the stub) checks the value and ignores it. */
typedef enum adil_kv_cache_type {
    ADIL_KV_CACHE_DEFAULT = 0,
    ADIL_KV_CACHE_F16 = 1,
    ADIL_KV_CACHE_F32 = 2,
    ADIL_KV_CACHE_Q8_0 = 3
} adil_kv_cache_type;

/* The last adil_kv_cache_type value. */
#define ADIL_KV_CACHE_LAST ADIL_KV_CACHE_Q8_0

/* What 0 in n_ctx and n_batch stands for. */
#define ADIL_DEFAULT_N_CTX_CAP 4096
#define ADIL_DEFAULT_N_BATCH   512

/* Fills `out` with struct_size, n_ctx = 0, n_batch = ADIL_DEFAULT_N_BATCH,
 * n_threads = 0 and kv_type = ADIL_KV_CACHE_DEFAULT. */
ADIL_API void adil_context_default_params(adil_context_params *out);

/* Makes a context for `model`; `params` may be NULL.  The CPU engine
 * allocates the KV cache and activations here: ADIL_STATUS_INVALID_ARGUMENT
 * for an n_ctx over 2^20, ADIL_STATUS_OUT_OF_MEMORY (message with the bytes)
 * when they need more memory than the machine has or cannot be allocated.
 * The CPU engine stores keys and values as kv_type says (by default IEEE
 * half, what llama.cpp does), and a sliding-window layer keeps only its
 * window + n_batch positions, in a ring.  The environment variables
 * ADIL_KV_TYPE=f32|q8_0 (the element type of a kv_type of
 * ADIL_KV_CACHE_DEFAULT) and ADIL_KV_RING=0 (every layer keeps n_ctx
 * positions), read here at each call, make this context keep its cache the
 * reference way, for tests.  ADIL_STATUS_INVALID_ARGUMENT for a kv_type
 * that is not an adil_kv_cache_type, ADIL_STATUS_CAPABILITY for one the
 * model cannot keep (Q8_0 with head widths not multiples of 32).  A
 * prompt that shares a prefix with the cached tokens reuses it unless a ring
 * has since overwritten rows that prefix's window needs (then the prompt is
 * evaluated from the start; adil_run_stats.n_cached_tokens says which).
 * Free *out with adil_context_free before its model. */
ADIL_API adil_status adil_context_new(adil_model *model, const adil_context_params *params,
                                      adil_context **out);

/* Frees a context.  Its runs must be freed first.  NULL is a no-op. */
ADIL_API void adil_context_free(adil_context *ctx);

/* The context window in tokens. */
ADIL_API uint32_t adil_context_size(const adil_context *ctx);

/* 2.4 */
/* The bytes of KV cache (keys and values of every layer) that a context made
 * now with adil_context_new(model, params) would allocate, into *out, without
 * allocating it; `params` may be NULL (the defaults).  0 for an engine that
 * keeps no KV cache (the stub).  ADIL_STATUS_INVALID_ARGUMENT for a NULL
 * model or out, or params adil_context_new refuses (with its status: also
 * ADIL_STATUS_CAPABILITY for a kv_type the model cannot keep).  Any thread. */
ADIL_API adil_status adil_model_kv_bytes(const adil_model *model, const adil_context_params *params,
                                         uint64_t *out);

/* Teacher-forced logits: evaluates `tokens` from an empty cache and writes
 * n_tokens * n_vocab floats (row i = the distribution after tokens[0..i])
 * into `logits`, whose capacity in floats is `capacity`.
 * ADIL_STATUS_CONTEXT_LENGTH when n_tokens exceeds the window,
 * ADIL_STATUS_INVALID_ARGUMENT when capacity is too small,
 * ADIL_STATUS_CAPABILITY for an engine without logits (the stub),
 * ADIL_STATUS_IO when a mapped model's file changed since load (use_mmap). */
ADIL_API adil_status adil_context_logits(adil_context *ctx, const int32_t *tokens, size_t n_tokens,
                                         float *logits, size_t capacity);

/* ===================================================================== *
 * Runs: one generation, stepped in batches.
 * ===================================================================== */

typedef struct adil_sampling_params {
    uint32_t struct_size;
    float temperature;     /* 0 = greedy */
    int32_t top_k;         /* <= 0: off */
    float top_p;           /* 1 = off */
    float min_p;           /* 0 = off */
    float repeat_penalty;  /* 1 = off */
    int32_t repeat_last_n; /* window of the penalty */
    uint64_t seed;         /* same seed, same tokens (default 0) */
} adil_sampling_params;

#define ADIL_SIZE_2_0_SAMPLING_PARAMS ADIL_SIZE_THROUGH(adil_sampling_params, seed)

/* The sampling defaults (llama.cpp's), one per field. */
#define ADIL_DEFAULT_TEMPERATURE    0.8f
#define ADIL_DEFAULT_TOP_K          40
#define ADIL_DEFAULT_TOP_P          0.95f
#define ADIL_DEFAULT_MIN_P          0.05f
#define ADIL_DEFAULT_REPEAT_PENALTY 1.0f
#define ADIL_DEFAULT_REPEAT_LAST_N  64

/* Fills `out` with struct_size, the ADIL_DEFAULT_* values above and seed 0. */
ADIL_API void adil_sampling_default_params(adil_sampling_params *out);

typedef struct adil_run_params {
    uint32_t struct_size;
    uint32_t max_tokens;                  /* 0 = up to the end of the context */
    const adil_sampling_params *sampling; /* NULL = defaults */
    const adil_grammar *grammar;          /* NULL = unconstrained; must outlive the run */
    adil_cancel_flag *cancel_flag;        /* NULL = only the run's own flag */
    const int32_t *stop_tokens;           /* extra stop tokens besides EOS/EOT; may be NULL */
    size_t n_stop_tokens;
    uint32_t total_timeout_ms; /* 0 = none; counted from adil_run_start */
    uint32_t read_timeout_ms;  /* 0 = none; longest wait for one token */
    uint32_t step_budget_ms;   /* a step returns once it has a token and this
                                              much time passed;
                                              0 = ADIL_DEFAULT_STEP_BUDGET_MS */
    uint32_t ignore_eos;       /* non-zero: EOS/EOT do not stop the run (benchmarks);
                                              engines without a model (the stub) ignore it */
    /* 2.2 */
    uint32_t n_logprobs; /* 0 = off; 1..ADIL_MAX_LOGPROBS: keep each generated token's
                            log-probability and this many most likely alternatives
                            (adil_run_token_logprobs).  Needs the "logprobs" capability */
    /* 2.3 */
    uint32_t speculative; /* adil_speculative; ADIL_SPECULATIVE_NONE (0) = off.  Needs the
                             "lookup" capability for ADIL_SPECULATIVE_LOOKUP */
} adil_run_params;

#define ADIL_SIZE_2_0_RUN_PARAMS ADIL_SIZE_THROUGH(adil_run_params, ignore_eos)
#define ADIL_SIZE_2_2_RUN_PARAMS ADIL_SIZE_THROUGH(adil_run_params, n_logprobs)
#define ADIL_SIZE_2_3_RUN_PARAMS ADIL_SIZE_THROUGH(adil_run_params, speculative)

/* How a run may guess tokens ahead and verify them (adil_run_params.speculative).
 * Speculation never changes what a run produces: the sampler draws every token
 * from the model's own distribution at its position exactly as without it
 * (at temperature 0 the same tokens; with the same seed the same draws), and
 * every token goes through the same stop, grammar, max_tokens, logprobs,
 * cancellation and deadline checks; only the time per token changes.
 *   ADIL_SPECULATIVE_LOOKUP  prompt n-gram lookup: the engine finds the latest
 *     earlier occurrence of the last few tokens in prompt + output, proposes the
 *     tokens that followed it there, and evaluates them in one batch with the
 *     last token; the run keeps the drafted tokens the sampler agrees with.
 *     Fast where the output copies from the prompt (extraction, edits, code).
 *     A run with a grammar does not draft (its forced text is evaluated as a
 *     batch anyway). */
typedef enum adil_speculative { ADIL_SPECULATIVE_NONE = 0, ADIL_SPECULATIVE_LOOKUP = 1 } adil_speculative;

/* The largest adil_run_params.n_logprobs. */
#define ADIL_MAX_LOGPROBS 20

/* What 0 in step_budget_ms stands for, in milliseconds. */
#define ADIL_DEFAULT_STEP_BUDGET_MS 20

/* Fills `out` with struct_size, step_budget_ms = ADIL_DEFAULT_STEP_BUDGET_MS
 * and 0 or NULL everywhere else. */
ADIL_API void adil_run_default_params(adil_run_params *out);

typedef struct adil_run_stats {
    uint32_t struct_size;
    uint32_t stop_reason; /* adil_stop_reason */
    uint32_t n_prompt_tokens;
    uint32_t n_cached_tokens; /* prompt tokens reused from the KV cache */
    uint32_t n_generated;
    uint32_t cancel_acknowledged; /* non-zero: a cancel was seen, even if the answer was still returned */
    double prefill_ms;            /* evaluating the prompt and choosing the first token */
    double decode_ms;             /* the steps that made the other n_generated - 1 tokens */
    /* 2.1 */
    uint32_t n_forced_tokens; /* output tokens the grammar forced (appended without sampling,
                                 evaluated as a batch) */
    double grammar_ms;        /* time spent computing token masks and advancing the grammar */
    /* 2.3 */
    uint32_t n_drafted;        /* tokens a speculative run drafted and evaluated to verify them */
    uint32_t n_draft_accepted; /* of those, the ones the sampler drew too (output tokens) */
} adil_run_stats;

#define ADIL_SIZE_2_0_RUN_STATS ADIL_SIZE_THROUGH(adil_run_stats, decode_ms)
#define ADIL_SIZE_2_1_RUN_STATS ADIL_SIZE_THROUGH(adil_run_stats, grammar_ms)
#define ADIL_SIZE_2_3_RUN_STATS ADIL_SIZE_THROUGH(adil_run_stats, n_draft_accepted)

/* Starts a generation that continues `prompt` on `ctx`.  The context keeps
 * the longest common prefix of its cache and evaluates the rest (prefill
 * happens in the first step).
 * Returns ADIL_STATUS_BUSY when the model already has a live run,
 * ADIL_STATUS_MODEL_NOT_READY, ADIL_STATUS_CONTEXT_LENGTH (message with both
 * numbers) when n_prompt + max_tokens exceeds the window,
 * ADIL_STATUS_INVALID_ARGUMENT for an empty prompt, an id out of range or
 * n_logprobs over ADIL_MAX_LOGPROBS or a speculative value that is not an
 * adil_speculative, ADIL_STATUS_CAPABILITY for n_logprobs > 0 on an engine
 * without "logprobs" or speculative = ADIL_SPECULATIVE_LOOKUP on one without
 * "lookup" (one of an earlier minor ignores the field: a host checks the
 * capability first),
 * ADIL_STATUS_IO when a mapped model's file changed since load (use_mmap).
 * The prompt is copied.  Free *out with adil_run_free. */
ADIL_API adil_status adil_run_start(adil_context *ctx, const int32_t *prompt, size_t n_prompt,
                                    const adil_run_params *params, adil_run **out);

/* Produces up to `capacity` tokens into `tokens` and their count into
 * *n_tokens.  Returns once it has `capacity` tokens, or at least one token
 * and step_budget_ms passed, or the run stopped.  A step returns zero tokens
 * only when the run has stopped (see adil_run_get_stats).
 * Returns ADIL_OK, or the status that stopped the run: ADIL_STATUS_CANCELLED,
 * ADIL_STATUS_DEADLINE, or an error (ADIL_STATUS_IO when a mapped model's file
 * changed since load).  Tokens written before the stop are
 * still counted in *n_tokens and belong to the output.  Stepping a stopped
 * run returns ADIL_OK with zero tokens. */
ADIL_API adil_status adil_run_step(adil_run *run, int32_t *tokens, size_t capacity, size_t *n_tokens);

/* Sets the run's own cancelled flag.  Any thread, any time, idempotent; the
 * run stops before its next token. */
ADIL_API void adil_run_cancel(adil_run *run);

/* The engine's cancelled-flag function bound to a run: pass (adil_run_cancelled,
 * run) as (adil_cancelled_fn, token).  Non-zero when the run's own flag or its
 * cancel_flag is set.  Any thread. */
ADIL_API int adil_run_cancelled(void *run);

/* Fills `out` (whose struct_size the caller sets, at least
 * ADIL_SIZE_2_0_RUN_STATS) with the run's counts so far. */
ADIL_API adil_status adil_run_get_stats(const adil_run *run, adil_run_stats *out);

/* Frees a run (cancelling it first if it is still going) and lets the model
 * take the next run.  NULL is a no-op. */
ADIL_API void adil_run_free(adil_run *run);

/* 2.2 */
/* The log-probabilities of the index-th token the run generated (0-based, in
 * the order adil_run_step returned them; every token a step returned has
 * one) in a run started with n_logprobs = k > 0.  Every value is a
 * log-softmax of the model's raw logits at that position: before the
 * repetition penalty, temperature, top-k/p, min-p and a grammar's mask, so
 * they do not depend on the sampling settings.
 *   *logprob         the log-probability of the token generated there;
 *   top_tokens[i],   the min(k, n_vocab) most likely tokens there and theirs,
 *   top_logprobs[i]  most likely first (the lower id first on ties); the token
 *                    generated is among them only when it ranks within them.
 * Writes at most `capacity` entries into top_tokens and top_logprobs (both
 * may be NULL when capacity is 0) and the number there are into *n_top; the
 * caller calls again with more room when *n_top > capacity.
 * A token whose logits an engine did not compute (one may evaluate the tokens
 * a grammar forced as a batch) gives *logprob = NAN and *n_top = 0, with
 * ADIL_OK.  The CPU engine computes every token's, forced ones included (with
 * n_logprobs > 0 it evaluates forced text one token at a time).  The stub has
 * no model: *logprob = 0, and its token is the only alternative, with 0.
 * Returns ADIL_STATUS_INVALID_ARGUMENT for NULL run, logprob or n_top, NULL
 * arrays with capacity > 0, a run started with n_logprobs = 0, or an index not
 * yet generated (message with the count); ADIL_STATUS_CAPABILITY for an
 * engine without "logprobs".  Valid until adil_run_free; not while another
 * thread steps the run. */
ADIL_API adil_status adil_run_token_logprobs(const adil_run *run, size_t index, float *logprob,
                                             int32_t *top_tokens, float *top_logprobs, size_t capacity,
                                             size_t *n_top);

/* ===================================================================== *
 * Cancel flags: one flag for a whole piece of work (a generation and the
 * tools it leads to), settable from any thread.
 * ===================================================================== */

ADIL_API adil_status adil_cancel_flag_new(adil_cancel_flag **out);

/* Sets the flag.  Any thread; idempotent; async-signal-safe. */
ADIL_API void adil_cancel_flag_set(adil_cancel_flag *flag);

/* The cancelled-flag function for a flag: pass (adil_cancel_flag_is_set, flag)
 * as (adil_cancelled_fn, token).  Any thread. */
ADIL_API int adil_cancel_flag_is_set(void *flag);

ADIL_API void adil_cancel_flag_free(adil_cancel_flag *flag);

#ifdef __cplusplus
}
#endif

#endif /* ADIL_H */
