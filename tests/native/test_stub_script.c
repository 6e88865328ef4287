/*
 * test_stub_script.c — the stub's handshake, its script reader and its
 * tokenizer, through the ABI: every malformed script is refused with
 * ADIL_STATUS_MODEL_FORMAT naming the problem and the byte offset; a missing
 * file is ADIL_STATUS_IO.
 */
#include "test_stub_api.h"

#include <sys/stat.h>

/* The default chat template of a stub model (stub_script.h). */
#define STUB_TEMPLATE                                                                                      \
    "{% for message in messages %}<|{{ message['role'] }}|>\n{{ message['content'] or '' }}\n{% endfor %}" \
    "{% if add_generation_prompt %}<|assistant|>\n{% endif %}"

static void test_handshake(const stub_api *api) {
    CHECK(api->abi_version() == ADIL_MAKE_VERSION(2, 6));
    CHECK(api->model_kv_bytes != NULL);
    CHECK(api->engine_int8_peak != NULL);
    const adil_component_info *info = api->component();
    CHECK(info != NULL);
    CHECK(info->struct_size == sizeof *info);
    CHECK(info->abi_major == 2 && info->abi_minor == 6 && info->host_major_accepted == 2);
    CHECK(strcmp(info->engine_name, "adil-stub") == 0);
    CHECK(strcmp(info->engine_version, "0.1.0") == 0);
    CHECK(strcmp(info->backends, "stub") == 0);
    CHECK(strcmp(info->cpu_features, "") == 0);
    CHECK(strcmp(info->capabilities, "grammar,logprobs,lookup") == 0);
    CHECK(info->size_host_info == sizeof(adil_host_info));
    CHECK(info->size_engine_params == sizeof(adil_engine_params));
    CHECK(info->size_model_params == sizeof(adil_model_params));
    CHECK(info->size_model_info == sizeof(adil_model_info));
    CHECK(info->size_context_params == sizeof(adil_context_params));
    CHECK(info->size_sampling_params == sizeof(adil_sampling_params));
    CHECK(info->size_run_params == sizeof(adil_run_params));
    CHECK(info->size_run_stats == sizeof(adil_run_stats));

    adil_host_info host = {sizeof host, 3, 1, "future-host", "9.9"};
    adil_engine *engine = (adil_engine *)1;
    CHECK_STATUS(api, api->engine_open(&host, NULL, &engine), ADIL_STATUS_HOST_REFUSED);
    CHECK(engine == NULL);
    CHECK_ERROR_HAS(api, "accepts host major 2, got host major 3");
    CHECK_STATUS(api, api->engine_open(NULL, NULL, &engine), ADIL_STATUS_INVALID_ARGUMENT);
    host.host_major = 2;
    host.struct_size = 4;
    CHECK_STATUS(api, api->engine_open(&host, NULL, &engine), ADIL_STATUS_INVALID_ARGUMENT);
    host.struct_size = sizeof host;
    adil_engine_params params;
    api->engine_default_params(&params);
    params.backend = "cuda";
    CHECK_STATUS(api, api->engine_open(&host, &params, &engine), ADIL_STATUS_CAPABILITY);
    params.backend = "cpu";
    CHECK_STATUS(api, api->engine_open(&host, &params, &engine), ADIL_OK);
    CHECK(strcmp(api->last_error(), "") == 0); /* success clears the message */
    api->engine_close(engine);
}

static void test_status_strings(const stub_api *api) {
    static const char *const names[] = {"ok",
                                        "cancelled",
                                        "deadline",
                                        "busy",
                                        "model_not_ready",
                                        "context_length",
                                        "capability",
                                        "output_validation",
                                        "model_format",
                                        "host_refused",
                                        "invalid_argument",
                                        "io",
                                        "out_of_memory",
                                        "internal"};
    CHECK(sizeof names / sizeof names[0] == ADIL_STATUS_LAST + 1);
    for (int s = 0; s <= ADIL_STATUS_LAST; s++)
        CHECK(strcmp(api->status_string((adil_status)s), names[s]) == 0);
    CHECK(strcmp(api->status_string((adil_status)99), "unknown") == 0);
}

static void test_default_params(const stub_api *api) {
    adil_sampling_params s;
    api->sampling_default_params(&s);
    CHECK(s.struct_size == sizeof s && s.temperature == 0.8f && s.top_k == 40 && s.top_p == 0.95f);
    CHECK(s.min_p == 0.05f && s.repeat_penalty == 1.0f && s.repeat_last_n == 64 && s.seed == 0);
    adil_run_params r;
    api->run_default_params(&r);
    CHECK(r.struct_size == sizeof r && r.max_tokens == 0 && r.sampling == NULL && r.cancel_flag == NULL);
    CHECK(r.total_timeout_ms == 0 && r.read_timeout_ms == 0 && r.step_budget_ms == 20);
    adil_model_params m;
    api->model_default_params(&m);
    CHECK(m.struct_size == sizeof m && m.use_mmap == 1 && m.n_threads == 0);
    adil_context_params c;
    api->context_default_params(&c);
    CHECK(c.struct_size == sizeof c && c.n_ctx == 0 && c.n_batch == 512);
    adil_engine_params e;
    api->engine_default_params(&e);
    CHECK(e.struct_size == sizeof e && e.backend == NULL && e.n_threads == 0);
}

/* A malformed script and a piece of the message it must produce. */
typedef struct bad_script {
    const char *json;
    const char *message;
} bad_script;

static const bad_script BAD_SCRIPTS[] = {
    {"", "invalid JSON: expected a value, got end of input at offset 0"},
    {"[]", "top level: expected an object"},
    {"{}", "expected a key \"turns\""},
    {"{\"turns\": [], \"bogus\": 1}", "unknown key \"bogus\" at offset 14"},
    {"{\"turns\": [], \"turns\": []}", "got \"turns\" again at offset 14"},
    {"{\"turns\": {}}", "turns: expected an array of turns, got object"},
    {"{\"turns\": [7]}", "turns[0]: expected an object"},
    {"{\"turns\": [{\"text\": 5}]}", "turns[0].text: expected a string, got number 5 at offset 20"},
    {"{\"turns\": [{\"txt\": \"a\"}]}",
     "turns[0]: expected one of the keys text, tool_call, got unknown key \"txt\""},
    {"{\"turns\": [{\"tool_call\": {\"name\": \"\", \"arguments\": {}}}]}",
     "turns[0].tool_call.name: expected a non-empty string"},
    {"{\"turns\": [{\"tool_call\": {\"arguments\": {}}}]}", "turns[0].tool_call: expected a key \"name\""},
    {"{\"turns\": [{\"tool_call\": {\"name\": \"x\"}}]}",
     "exactly one of \"arguments\" and \"arguments_json\", got neither"},
    {"{\"turns\": [{\"tool_call\": {\"name\": \"x\", \"arguments\": {}, \"arguments_json\": \"{}\"}}]}",
     "got both"},
    {"{\"turns\": [{\"tool_call\": {\"name\": \"x\", \"arguments_json\": {}}}]}",
     "turns[0].tool_call.arguments_json: expected a string"},
    {"{\"turns\": [], \"token_delay_ms\": -1}",
     "token_delay_ms: expected an integer from 0 to 60000, got number -1"},
    {"{\"turns\": [], \"token_delay_ms\": 1.5}", "token_delay_ms: expected an integer from 0 to 60000"},
    {"{\"turns\": [], \"token_delay_ms\": 60001}", "expected an integer from 0 to 60000, got number 60001"},
    {"{\"turns\": [], \"context_length\": 0}", "context_length: expected an integer from 1 to 16777216"},
    {"{\"turns\": [], \"faults\": {}}", "faults: expected an array of faults"},
    {"{\"turns\": [], \"faults\": [{\"on_call\": 1, \"status\": \"exploded\"}]}",
     "faults[0].status: expected \"busy\", \"model_not_ready\", \"context_length\" or \"capability\", got "
     "string \"exploded\""},
    {"{\"turns\": [], \"faults\": [{\"on_call\": 0, \"status\": \"busy\"}]}",
     "faults[0].on_call: expected an integer from 1"},
    {"{\"turns\": [], \"faults\": [{\"status\": \"busy\"}]}", "faults[0]: expected a key \"on_call\""},
    {"{\"turns\": [], \"faults\": [{\"on_call\": 1}]}",
     "expected exactly one of \"status\" and \"late_answer\", got neither"},
    {"{\"turns\": [], \"faults\": [{\"on_call\": 1, \"status\": \"busy\", \"late_answer\": true}]}",
     "got both"},
    {"{\"turns\": [], \"faults\": [{\"on_call\": 1, \"late_answer\": false}]}",
     "faults[0].late_answer: expected true, got boolean false"},
    {"{\"turns\": [], \"faults\": [{\"on_call\": 2, \"status\": \"busy\"}, {\"on_call\": 2, \"late_answer\": "
     "true}]}",
     "faults[1].on_call: expected at most one fault per call, got a second for call 2"},
    {"{\"turns\": [], \"faults\": [{\"not_ready_ms\": 5, \"on_call\": 1}]}",
     "expected \"not_ready_ms\" alone"},
    {"{\"turns\": [], \"faults\": [{\"not_ready_ms\": 5}, {\"not_ready_ms\": 6}]}",
     "at most one not_ready_ms fault"},
    {"{\"turns\": [], \"faults\": [{\"not_ready_ms\": \"5\"}]}",
     "faults[0].not_ready_ms: expected an integer"},
    {"{\"turns\": [], \"faults\": [{\"on_call\": 1, \"explode\": true}]}", "unknown key \"explode\""},
    {"{\"turns\": [1,]}",
     "expected a value (true, false, null, a number, a string, [ or {), got ']' at offset 13"},
    {"{\"turns\": []} x", "expected the end of the input after the top-level value, got 'x' at offset 14"},
    {"{\"turns\": [{\"text\": \"\xff\"}]}", "expected valid UTF-8, got byte 0xff at offset 21"},
    {"{\"turns\": [{\"text\": \"\xc0\x80\"}]}", "expected valid UTF-8, got byte 0xc0"},
    {"{\"turns\": [{\"text\": \"a\nb\"}]}", "control characters must be escaped"},
    {"{\"turns\": [{\"text\": \"\\ud800\"}]}", "a \\u low surrogate after a high surrogate"},
    {"{\"turns\": [{\"text\": \"\\udc00\"}]}", "lone \\u surrogate"},
    {"{\"turns\": [{\"text\": \"\\x\"}]}", "after a backslash, got 'x' at offset 22"},
    {"{\"turns\": [], \"token_delay_ms\": 01}", "got '1' at offset 33"},
    {"{\"turns\": [], \"token_delay_ms\": 1.}", "a digit after '.'"},
    {"{\"turns\" []}", "':' after an object key, got '[' at offset 9"},
    {"{\"turns\": [], }", "a '\"' starting an object key"},
    {"{\"turns\": [tru]}", "got 't' at offset 11"},
};

static void test_bad_scripts(const stub_api *api, adil_engine *engine) {
    for (size_t i = 0; i < sizeof BAD_SCRIPTS / sizeof BAD_SCRIPTS[0]; i++) {
        adil_model *model = NULL;
        adil_status st = test_load_text(api, engine, BAD_SCRIPTS[i].json, &model);
        if (st != ADIL_STATUS_MODEL_FORMAT || strstr(api->last_error(), BAD_SCRIPTS[i].message) == NULL) {
            fprintf(stderr, "bad script %zu (%s): status %s, message \"%s\", expected \"%s\"\n", i,
                    BAD_SCRIPTS[i].json, api->status_string(st), api->last_error(), BAD_SCRIPTS[i].message);
            test_failures++;
        }
        CHECK(model == NULL);
        api->model_free(model);
    }
}

static void test_deep_nesting(const stub_api *api, adil_engine *engine) {
    char json[400];
    size_t n =
        (size_t)snprintf(json, sizeof json, "{\"turns\": [{\"tool_call\": {\"name\": \"x\", \"arguments\": ");
    for (int i = 0; i < 100; i++) json[n++] = '[';
    json[n] = '\0';
    adil_model *model = NULL;
    CHECK_STATUS(api, test_load_text(api, engine, json, &model), ADIL_STATUS_MODEL_FORMAT);
    CHECK_ERROR_HAS(api, "nesting deeper than 64 levels");
}

static void test_bad_files(const stub_api *api, adil_engine *engine) {
    adil_model *model = NULL;
    CHECK_STATUS(api, api->model_load(engine, "/nonexistent/script.json", NULL, &model), ADIL_STATUS_IO);
    CHECK_ERROR_HAS(api, "/nonexistent/script.json");
    CHECK(model == NULL);
    CHECK_STATUS(api, api->model_load(engine, "/tmp", NULL, &model), ADIL_STATUS_IO);
    CHECK_ERROR_HAS(api, "expected a regular file, got a directory");
    CHECK_STATUS(api, api->model_load(engine, "/dev/null", NULL, &model), ADIL_STATUS_IO);
    CHECK_ERROR_HAS(api, "expected a regular file, got a character device");
    /* a FIFO without a writer: refused at once (open() used to block for ever) */
    char fifo[] = "/tmp/adil_stub_fifo_XXXXXX";
    int fd = mkstemp(fifo);
    CHECK(fd >= 0 && close(fd) == 0 && unlink(fifo) == 0 && mkfifo(fifo, 0600) == 0);
    alarm(60);
    CHECK_STATUS(api, api->model_load(engine, fifo, NULL, &model), ADIL_STATUS_IO);
    alarm(0);
    CHECK_ERROR_HAS(api, "expected a regular file, got a named pipe (FIFO)");
    unlink(fifo);
    CHECK_STATUS(api, test_load_data(api, engine, "stub_bad_unknown_fault.json", &model),
                 ADIL_STATUS_MODEL_FORMAT);
    CHECK_ERROR_HAS(api, "stub_bad_unknown_fault.json': faults[0]: expected one of the keys on_call, status, "
                         "late_answer, not_ready_ms, got unknown key \"slow_tool_ms\" at offset 54");
    CHECK_STATUS(api, test_load_data(api, engine, "stub_bad_truncated.json", &model),
                 ADIL_STATUS_MODEL_FORMAT);
    CHECK_ERROR_HAS(api, "expected ',' or ']' in an array, got end of input at offset 36");
    CHECK_STATUS(api, api->model_load(NULL, "x", NULL, &model), ADIL_STATUS_INVALID_ARGUMENT);
    adil_model_params small = {.struct_size = 4};
    CHECK_STATUS(api, api->model_load(engine, "x", &small, &model), ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_HAS(api, "struct_size expected at least");
}

static void test_model_info(const stub_api *api, adil_engine *engine) {
    adil_model *model = NULL;
    CHECK_STATUS(api, test_load_data(api, engine, "stub_basic.json", &model), ADIL_OK);
    if (model == NULL) return;
    adil_model_info info;
    memset(&info, 0xAB, sizeof info);
    info.struct_size = sizeof info;
    CHECK_STATUS(api, api->model_get_info(model, &info), ADIL_OK);
    CHECK(info.struct_size == sizeof info);
    CHECK(strcmp(info.architecture, "stub") == 0);
    CHECK(strcmp(info.name, "stub_basic.json") == 0);
    CHECK(info.chat_template != NULL && strcmp(info.chat_template, STUB_TEMPLATE) == 0);
    CHECK(info.n_vocab == 258 && info.n_ctx_train == 512);
    CHECK(info.bos_token == 256 && info.eos_token == 257 && info.eot_token == -1 && info.add_bos == 0);
    CHECK(info.n_threads >= 1);
    info.struct_size = 8;
    CHECK_STATUS(api, api->model_get_info(model, &info), ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(api, api->model_ready(model), ADIL_OK);
    api->model_free(model);

    /* Without "context_length" the model says 4096. */
    CHECK_STATUS(api, test_load_text(api, engine, "{\"turns\": []}", &model), ADIL_OK);
    info.struct_size = sizeof info;
    CHECK_STATUS(api, api->model_get_info(model, &info), ADIL_OK);
    CHECK(info.n_ctx_train == 4096);
    adil_context *ctx = test_new_context(api, model, 0);
    CHECK(api->context_size(ctx) == 4096);
    api->context_free(ctx);
    api->model_free(model);
}

/* The chat template a script gives its model: the default, its own, or none. */
static const char *template_of(const stub_api *api, adil_engine *engine, const char *script,
                               adil_model **model) {
    *model = NULL;
    CHECK_STATUS(api, test_load_text(api, engine, script, model), ADIL_OK);
    if (*model == NULL) return "(not loaded)";
    adil_model_info info = {.struct_size = sizeof info};
    CHECK_STATUS(api, api->model_get_info(*model, &info), ADIL_OK);
    return info.chat_template;
}

static void test_chat_template(const stub_api *api, adil_engine *engine) {
    adil_model *model = NULL;
    const char *got = template_of(api, engine, "{\"turns\": [], \"chat_template\": \"{{ x }}\\n\"}", &model);
    CHECK(got != NULL && strcmp(got, "{{ x }}\n") == 0);
    api->model_free(model);
    got = template_of(api, engine, "{\"turns\": [], \"chat_template\": null}", &model);
    CHECK(got == NULL);
    api->model_free(model);
    CHECK_STATUS(api, test_load_text(api, engine, "{\"turns\": [], \"chat_template\": 3}", &model),
                 ADIL_STATUS_MODEL_FORMAT);
    CHECK_ERROR_HAS(api, "chat_template: expected a string without NUL bytes, or null, got number 3");
    CHECK_STATUS(api,
                 test_load_text(api, engine, "{\"turns\": [], \"chat_template\": \"a\\u0000b\"}", &model),
                 ADIL_STATUS_MODEL_FORMAT);
    CHECK_ERROR_HAS(api, "chat_template: expected a string without NUL bytes");
    CHECK(model == NULL);
}

static void test_tokenizer(const stub_api *api, adil_engine *engine) {
    adil_model *model = NULL;
    CHECK_STATUS(api, test_load_text(api, engine, "{\"turns\": []}", &model), ADIL_OK);
    if (model == NULL) return;
    int32_t tokens[16];
    size_t n = 0;
    CHECK_STATUS(api, api->tokenize(model, "a<bos>b<eos>", 12, -1, 1, tokens, 16, &n), ADIL_OK);
    CHECK(n == 4 && tokens[0] == 'a' && tokens[1] == 256 && tokens[2] == 'b' && tokens[3] == 257);
    CHECK_STATUS(api, api->tokenize(model, "a<bos>", 6, 1, 0, tokens, 16, &n), ADIL_OK);
    CHECK(n == 7 && tokens[0] == 256 && tokens[1] == 'a' && tokens[2] == '<' && tokens[6] == '>');
    /* Too little room: the needed count comes back, only `capacity` ids are written. */
    tokens[2] = -7;
    CHECK_STATUS(api, api->tokenize(model, "hello", 5, 0, 0, tokens, 2, &n), ADIL_OK);
    CHECK(n == 5 && tokens[0] == 'h' && tokens[1] == 'e' && tokens[2] == -7);
    CHECK_STATUS(api, api->tokenize(model, "hello", 5, 0, 0, NULL, 0, &n), ADIL_OK);
    CHECK(n == 5);
    CHECK_STATUS(api, api->tokenize(model, "\xff\x00", 2, 0, 0, tokens, 16, &n), ADIL_OK);
    CHECK(n == 2 && tokens[0] == 255 && tokens[1] == 0);
    CHECK_STATUS(api, api->tokenize(model, "", 0, 0, 1, tokens, 16, &n), ADIL_OK);
    CHECK(n == 0);
    CHECK_STATUS(api, api->tokenize(model, NULL, 3, 0, 0, tokens, 16, &n), ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(api, api->tokenize(model, "x", 1, 2, 0, tokens, 16, &n), ADIL_STATUS_INVALID_ARGUMENT);

    char piece[8];
    size_t len = 0;
    CHECK_STATUS(api, api->token_to_piece(model, 'A', 0, piece, sizeof piece, &len), ADIL_OK);
    CHECK(len == 1 && piece[0] == 'A');
    CHECK_STATUS(api, api->token_to_piece(model, 256, 0, piece, sizeof piece, &len), ADIL_OK);
    CHECK(len == 0);
    CHECK_STATUS(api, api->token_to_piece(model, 257, 1, piece, sizeof piece, &len), ADIL_OK);
    CHECK(len == 5 && memcmp(piece, "<eos>", 5) == 0);
    CHECK_STATUS(api, api->token_to_piece(model, 256, 1, piece, 2, &len), ADIL_OK);
    CHECK(len == 5 && memcmp(piece, "<b", 2) == 0);
    CHECK_STATUS(api, api->token_to_piece(model, 258, 0, piece, sizeof piece, &len),
                 ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_ERROR_HAS(api, "token expected in [0, 258), got 258");
    CHECK_STATUS(api, api->token_to_piece(model, -1, 0, piece, sizeof piece, &len),
                 ADIL_STATUS_INVALID_ARGUMENT);
    api->model_free(model);
}

static void test_capabilities(const stub_api *api, adil_engine *engine) {
    adil_model *model = NULL;
    CHECK_STATUS(api, test_load_text(api, engine, "{\"turns\": []}", &model), ADIL_OK);
    if (model == NULL) return;
    adil_context *ctx = test_new_context(api, model, 0);
    int32_t tokens[2] = {1, 2};
    float logits[600];
    CHECK_STATUS(api, api->context_logits(ctx, tokens, 2, logits, 600), ADIL_STATUS_CAPABILITY);
    CHECK_ERROR_HAS(api, "the stub engine has no logits");
    adil_grammar *grammar = NULL; /* grammars: test_stub_grammar.c */
    CHECK_STATUS(api, api->grammar_compile(model, "{}", 2, &grammar), ADIL_OK);
    CHECK(grammar != NULL);
    api->grammar_free(grammar);
    api->grammar_free(NULL);
    api->context_free(ctx);
    api->model_free(model);
    double macs = -1.0;
    CHECK_STATUS(api, api->engine_int8_peak(engine, 0, &macs), ADIL_STATUS_CAPABILITY);
    CHECK_ERROR_HAS(api, "the stub has no kernels");
    CHECK(macs == -1.0);
    CHECK_STATUS(api, api->engine_int8_peak(NULL, 0, &macs), ADIL_STATUS_INVALID_ARGUMENT);
}

int main(void) {
    stub_api api;
    if (!stub_api_open(&api, ADIL_STUB_LIBRARY)) return 1;
    test_handshake(&api);
    test_status_strings(&api);
    test_default_params(&api);
    adil_engine *engine = test_open_engine(&api);
    test_bad_scripts(&api, engine);
    test_deep_nesting(&api, engine);
    test_bad_files(&api, engine);
    test_model_info(&api, engine);
    test_chat_template(&api, engine);
    test_tokenizer(&api, engine);
    test_capabilities(&api, engine);
    api.engine_close(engine);
    stub_api_close(&api);
    return test_report("test_stub_script");
}
