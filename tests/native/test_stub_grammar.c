/*
 * test_stub_grammar.c — grammars in the stub engine, through the ABI loaded
 * with dlopen:
 *   - adil_grammar_compile refuses what it cannot take with a message naming
 *     the JSON Pointer (text that is not JSON, a keyword outside the subset,
 *     a keyword of the wrong type, a schema no document satisfies) and never
 *     crashes (huge, deeply nested and mutated inputs);
 *   - a run with a grammar checks every scripted byte: a script that
 *     satisfies the schema runs to its end; one that breaks it stops with
 *     ADIL_STATUS_OUTPUT_VALIDATION at the offending byte, which is not
 *     output; one that ends inside the document, or is cut by max_tokens,
 *     likewise ("ended inside", "truncated");
 *   - the lazy form (x-adil-trigger / x-adil-end) lets free text through and
 *     checks the stub's tool call, written as <tool_call>{"name": ...,
 *     "arguments": ...}</tool_call>;
 *   - a grammar compiled for another model is refused at start.
 */
#include "test_stub_api.h"

#include <stdlib.h>

static const char PERSON[] = "{\"type\": \"object\", \"properties\": {\"name\": {\"type\": \"string\"}, "
                             "\"age\": {\"type\": \"integer\", \"minimum\": 0}}, \"required\": [\"name\", "
                             "\"age\"], \"additionalProperties\": false}";

static const char WEATHER_TOOLS[] =
    "{\"x-adil-tools\": [{\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\", \"properties\": "
    "{\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"], \"additionalProperties\": false}}], "
    "\"x-adil-trigger\": \"<tool_call>\", \"x-adil-end\": \"</tool_call>\"}";

/* ---- helpers ------------------------------------------------------------ */

/* A script of one turn whose text is `text` (escaped into a JSON string). */
static char *script_of(const char *text) {
    size_t n = strlen(text);
    char *out = malloc(n * 6 + 64);
    if (out == NULL) abort();
    size_t k = (size_t)sprintf(out, "{\"turns\": [{\"text\": \"");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '"' || c == '\\')
            k += (size_t)sprintf(out + k, "\\%c", c);
        else if (c < 0x20)
            k += (size_t)sprintf(out + k, "\\u%04x", c);
        else
            out[k++] = (char)c;
    }
    sprintf(out + k, "\"}]}");
    return out;
}

static adil_model *load_script(const stub_api *api, adil_engine *engine, const char *script) {
    adil_model *model = NULL;
    CHECK_STATUS(api, test_load_text(api, engine, script, &model), ADIL_OK);
    return model;
}

static adil_model *load_turn(const stub_api *api, adil_engine *engine, const char *text) {
    char *script = script_of(text);
    adil_model *model = load_script(api, engine, script);
    free(script);
    return model;
}

static adil_grammar *compile(const stub_api *api, adil_model *model, const char *schema) {
    adil_grammar *grammar = NULL;
    CHECK_STATUS(api, api->grammar_compile(model, schema, strlen(schema), &grammar), ADIL_OK);
    return grammar;
}

/* One call of `model` under `grammar` (max_tokens 0 = the window). */
static void run_under(const stub_api *api, adil_model *model, const adil_grammar *grammar,
                      uint32_t max_tokens, test_output *out) {
    memset(out, 0, sizeof *out);
    adil_context *ctx = test_new_context(api, model, 0);
    adil_run_params params;
    api->run_default_params(&params);
    params.grammar = grammar;
    params.max_tokens = max_tokens;
    adil_run *run = NULL;
    CHECK_STATUS(api, test_start(api, ctx, &params, &run), ADIL_OK);
    if (run != NULL) test_drain(api, run, 7, out);
    api->run_free(run);
    api->context_free(ctx);
}

static bool output_is(const test_output *out, const char *expected, size_t n) {
    if (out->len == n && memcmp(out->text, expected, n) == 0) return true;
    fprintf(stderr, "output \"%.*s\", expected \"%.*s\"\n", (int)out->len, out->text, (int)n, expected);
    return false;
}

/* Runs `text` under `schema`: expects ADIL_OK and the whole text. */
static void expect_valid(const stub_api *api, adil_engine *engine, const char *schema, const char *text) {
    adil_model *model = load_turn(api, engine, text);
    adil_grammar *grammar = model != NULL ? compile(api, model, schema) : NULL;
    if (grammar != NULL) {
        test_output out;
        run_under(api, model, grammar, 0, &out);
        CHECK_STATUS(api, out.status, ADIL_OK);
        if (out.status != ADIL_OK) fprintf(stderr, "  text %s: %s\n", text, out.error);
        CHECK(output_is(&out, text, strlen(text)));
        CHECK(out.stats.stop_reason == ADIL_STOP_END_OF_TEXT);
        CHECK(out.stats.n_forced_tokens == 0 && out.stats.grammar_ms >= 0.0);
    }
    api->grammar_free(grammar);
    api->model_free(model);
}

/* Runs `text` under `schema`: expects the byte at `at` refused, named in
 * the message as `shown`, and only the bytes before it output. */
static void expect_refused_at(const stub_api *api, adil_engine *engine, const char *schema, const char *text,
                              size_t at, const char *shown) {
    adil_model *model = load_turn(api, engine, text);
    adil_grammar *grammar = model != NULL ? compile(api, model, schema) : NULL;
    if (grammar != NULL) {
        test_output out;
        run_under(api, model, grammar, 0, &out);
        CHECK_STATUS(api, out.status, ADIL_STATUS_OUTPUT_VALIDATION);
        char want[96];
        snprintf(want, sizeof want, "breaks the grammar at byte %zu (%s)", at, shown);
        CHECK_HAS(out.error, want);
        CHECK(output_is(&out, text, at));
        CHECK(out.stats.stop_reason == ADIL_STOP_ERROR && out.stats.n_generated == at);
    }
    api->grammar_free(grammar);
    api->model_free(model);
}

/* ---- compiling -------------------------------------------------------------- */

/* Compiles `schema` (len bytes): expects `status` and, on failure, a NULL
 * grammar and a message containing `needle` (may be NULL). */
static void expect_compile(const stub_api *api, adil_model *model, const char *schema, size_t len,
                           adil_status status, const char *needle) {
    adil_grammar *grammar = (adil_grammar *)&grammar; /* must be overwritten */
    CHECK_STATUS(api, api->grammar_compile(model, schema, len, &grammar), status);
    if (status != ADIL_OK) {
        CHECK(grammar == NULL);
        CHECK(strlen(api->last_error()) > 0);
        if (needle != NULL) CHECK_ERROR_HAS(api, needle);
    }
    if (grammar != (adil_grammar *)&grammar) api->grammar_free(grammar);
}

static void test_compile_errors(const stub_api *api, adil_engine *engine) {
    adil_model *model = load_turn(api, engine, "");
    if (model == NULL) return;
#define EXPECT(schema, status, needle) expect_compile(api, model, schema, strlen(schema), status, needle)
    EXPECT("{}", ADIL_OK, NULL);
    EXPECT(PERSON, ADIL_OK, NULL);
    EXPECT(WEATHER_TOOLS, ADIL_OK, NULL);
    EXPECT("{", ADIL_STATUS_INVALID_ARGUMENT, NULL);
    EXPECT("", ADIL_STATUS_INVALID_ARGUMENT, NULL);
    EXPECT("{\"type\": \"string\"} trailing", ADIL_STATUS_INVALID_ARGUMENT, NULL);
    EXPECT("{\"type\": \"string\", \"pattern\": \"a+\"}", ADIL_STATUS_CAPABILITY, "/pattern");
    EXPECT("{\"type\": \"object\", \"properties\": {\"a\": {\"type\": \"string\", \"format\": \"date\"}}}",
           ADIL_STATUS_CAPABILITY, "/properties/a/format");
    EXPECT("{\"properties\": {\"a/b~c\": {\"oneOf\": []}}}", ADIL_STATUS_CAPABILITY,
           "/properties/a~1b~0c/oneOf");
    EXPECT("{\"type\": \"array\", \"items\": {\"type\": \"string\", \"minLength\": \"3\"}}",
           ADIL_STATUS_INVALID_ARGUMENT, "/items/minLength");
    EXPECT("{\"type\": 3}", ADIL_STATUS_INVALID_ARGUMENT, "/type");
    EXPECT("{\"type\": \"object\", \"properties\": []}", ADIL_STATUS_INVALID_ARGUMENT, "/properties");
    EXPECT("{\"type\": \"object\", \"required\": \"a\"}", ADIL_STATUS_INVALID_ARGUMENT, "/required");
    EXPECT("{\"type\": \"integer\", \"minimum\": 5, \"maximum\": 1}", ADIL_STATUS_CAPABILITY, NULL);
#undef EXPECT
    /* NULL arguments */
    adil_grammar *grammar = NULL;
    CHECK_STATUS(api, api->grammar_compile(NULL, "{}", 2, &grammar), ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(api, api->grammar_compile(model, NULL, 2, &grammar), ADIL_STATUS_INVALID_ARGUMENT);
    CHECK_STATUS(api, api->grammar_compile(model, "{}", 2, NULL), ADIL_STATUS_INVALID_ARGUMENT);
    CHECK(grammar == NULL);
    api->grammar_free(NULL);
    api->model_free(model);
}

/* Whatever the status, a compile of hostile input returns and leaves a
 * grammar exactly when it succeeds. */
static void compile_survives(const stub_api *api, adil_model *model, const char *schema, size_t len) {
    adil_grammar *grammar = NULL;
    adil_status st = api->grammar_compile(model, schema, len, &grammar);
    CHECK((st == ADIL_OK) == (grammar != NULL));
    if (st != ADIL_OK) CHECK(strlen(api->last_error()) > 0);
    api->grammar_free(grammar);
}

static char *repeat(const char *head, const char *unit, size_t times, const char *tail, size_t *len) {
    size_t h = strlen(head), u = strlen(unit), t = strlen(tail);
    char *out = malloc(h + u * times + t + 1);
    if (out == NULL) abort();
    memcpy(out, head, h);
    for (size_t i = 0; i < times; i++) memcpy(out + h + i * u, unit, u);
    memcpy(out + h + u * times, tail, t + 1);
    *len = h + u * times + t;
    return out;
}

static void test_compile_hostile_inputs(const stub_api *api, adil_engine *engine) {
    adil_model *model = load_turn(api, engine, "");
    if (model == NULL) return;
    size_t len = 0;
    char *s = repeat("", "[", 200000, "", &len); /* deeper than any reader allows */
    compile_survives(api, model, s, len);
    free(s);
    s = repeat("", "{\"items\": ", 100000, "{}", &len); /* unbalanced and deep */
    compile_survives(api, model, s, len);
    free(s);
    char *nested = repeat("", "{\"type\": \"array\", \"items\": ", 40, "{}", &len);
    s = malloc(len + 41);
    memcpy(s, nested, len);
    memset(s + len, '}', 40);
    s[len + 40] = '\0';
    compile_survives(api, model, s, len + 40); /* valid JSON, 41 levels of schema */
    free(s);
    free(nested);
    s = repeat("{\"type\": \"object\", \"properties\": {", "\"k\": {}, ", 20000, "\"z\": {}}}", &len);
    compile_survives(api, model, s, len); /* one key 20000 times */
    free(s);
    s = repeat("{\"enum\": [", "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", ", 30000, "1]}", &len);
    compile_survives(api, model, s, len); /* a 1 MB enum */
    free(s);
    s = repeat("", " ", 4u << 20, "{}", &len); /* 4 MB of whitespace */
    compile_survives(api, model, s, len);
    free(s);
    compile_survives(api, model, "{\"type\": \"string\", \"maxLength\": 1e308}", 39);
    compile_survives(api, model, "{\"type\": \"integer\", \"minimum\": -1e400}", 38);
    compile_survives(api, model, "{\"type\": \"string\", \"maxLength\": 18446744073709551617}", 53);
    compile_survives(api, model, "{\"type\": \"string\", \"minLength\": -1}", 34);
    compile_survives(api, model, "{\"enum\": []}", 12);
    compile_survives(api, model, "{\"x-adil-tools\": []}", 20);
    compile_survives(api, model, "{\"x-adil-trigger\": \"\", \"x-adil-end\": \"x\"}", 40);
    compile_survives(api, model, "{\"type\": \"string\"}\0", 19); /* a NUL byte after the text */
    /* Every byte of a valid schema replaced by a few others. */
    const char *base = WEATHER_TOOLS;
    const size_t n = strlen(base);
    char *mutated = malloc(n + 1);
    static const char swaps[] = {'"', '{', '}', '[', ']', ':', ',', '0', 'x', '\\', '\x80', '\0'};
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < sizeof swaps; k++) {
            memcpy(mutated, base, n + 1);
            mutated[i] = swaps[k];
            compile_survives(api, model, mutated, n);
            compile_survives(api, model, mutated, i); /* cut there */
        }
    free(mutated);
    api->model_free(model);
}

/* ---- runs ---------------------------------------------------------------------- */

static void test_valid_scripts(const stub_api *api, adil_engine *engine) {
    expect_valid(api, engine, PERSON, "{\"name\":\"Ann\",\"age\":31}");
    expect_valid(api, engine, PERSON, "{\"age\":0,\"name\":\"\\u00e9\\n\"}");
    expect_valid(api, engine, PERSON, "{\"name\": \"Ann\", \"age\": 31}"); /* json.dumps's default spacing */
    expect_valid(api, engine, "{}", "[1,{\"a\":null},\"x\",true,-0.5]");
    expect_valid(api, engine, "{\"enum\": [\"red\", \"green\"]}", "\"green\"");
    expect_valid(api, engine, "{\"type\": \"string\", \"maxLength\": 2}", "\"\xc3\xa6\xf0\x9f\x98\x80\"");
}

static void test_scripts_that_break_the_grammar(const stub_api *api, adil_engine *engine) {
    expect_refused_at(api, engine, PERSON, "{\"name\":\"Ann\",\"age\":\"x\"}", 20, "'\"'");
    expect_refused_at(api, engine, PERSON, "{\"name\":\"Ann\"}", 13, "'}'"); /* age is required */
    expect_refused_at(api, engine, PERSON, "{\"name\":\"Ann\",\"age\":31}x", 23, "'x'");
    expect_refused_at(api, engine, PERSON, "{\"name\":\"Ann\",\"age\":-1}", 20, "'-'"); /* minimum 0 */
    expect_refused_at(api, engine, PERSON, "{\"name\":\"Ann\",\"age\":\xc3\xa9}", 20, "0xc3");
    expect_refused_at(api, engine, PERSON, "{\"name\":\"Ann\",\"nick\":\"A\"}", 15, "'n'");
    expect_refused_at(api, engine, "{\"type\": \"integer\"}", "12345678901234567", 16, "'7'"); /* > 2^53-1 */
    expect_refused_at(api, engine, "{\"type\": \"string\", \"maxLength\": 2}", "\"abc\"", 3, "'c'");
    expect_refused_at(api, engine, "{\"enum\": [\"red\", \"green\"]}", "\"blue\"", 1, "'b'");
}

static void test_script_ends_inside_the_document(const stub_api *api, adil_engine *engine) {
    static const char text[] = "{\"name\":\"Ann\"";
    adil_model *model = load_turn(api, engine, text);
    adil_grammar *grammar = model != NULL ? compile(api, model, PERSON) : NULL;
    if (grammar != NULL) {
        test_output out;
        run_under(api, model, grammar, 0, &out);
        CHECK_STATUS(api, out.status, ADIL_STATUS_OUTPUT_VALIDATION);
        CHECK_HAS(out.error, "ended inside the document");
        CHECK(output_is(&out, text, strlen(text)));
        CHECK(out.stats.stop_reason == ADIL_STOP_END_OF_TEXT);
        /* Turns ran out: an empty answer ends inside the document too. */
        run_under(api, model, grammar, 0, &out);
        CHECK_STATUS(api, out.status, ADIL_STATUS_OUTPUT_VALIDATION);
        CHECK(out.len == 0);
    }
    api->grammar_free(grammar);
    api->model_free(model);
}

static void test_truncated_by_max_tokens(const stub_api *api, adil_engine *engine) {
    static const char text[] = "{\"name\":\"Ann\",\"age\":31}";
    adil_model *model = load_script(api, engine,
                                    "{\"turns\": [{\"text\": \"{\\\"name\\\":\\\"Ann\\\",\\\"age\\\":31}\"}, "
                                    "{\"text\": \"{\\\"name\\\":\\\"Ann\\\",\\\"age\\\":31}\"}]}");
    adil_grammar *grammar = model != NULL ? compile(api, model, PERSON) : NULL;
    if (grammar != NULL) {
        test_output out;
        run_under(api, model, grammar, 5, &out);
        CHECK_STATUS(api, out.status, ADIL_STATUS_OUTPUT_VALIDATION);
        CHECK_HAS(out.error, "truncated inside the document after 5 tokens");
        CHECK(output_is(&out, text, 5)); /* the tokens are still delivered */
        CHECK(out.stats.stop_reason == ADIL_STOP_MAX_TOKENS && out.stats.n_generated == 5);
        /* Room for the whole document: valid. */
        run_under(api, model, grammar, (uint32_t)strlen(text) + 1, &out);
        CHECK_STATUS(api, out.status, ADIL_OK);
        CHECK(output_is(&out, text, strlen(text)));
    }
    api->grammar_free(grammar);
    api->model_free(model);
}

/* The refused byte is the first of `word` in `written` (what the script
 * writes up to it): the message names its offset, the bytes before it are
 * the output. */
static void expect_byte_named(const test_output *out, const char *written, const char *word) {
    const size_t at = (size_t)(strstr(written, word) - written);
    char want[64];
    snprintf(want, sizeof want, "at byte %zu ('%c')", at, word[0]);
    CHECK_HAS(out->error, want);
    CHECK(output_is(out, written, at));
}

static void test_lazy_tool_call(const stub_api *api, adil_engine *engine) {
    adil_model *model = load_script(
        api, engine,
        "{\"turns\": [{\"text\": \"Checking.\", \"tool_call\": {\"name\": \"get_weather\", \"arguments\": "
        "{\"city\": \"Oslo\"}}}, {\"text\": \"It is sunny.\"}, {\"tool_call\": {\"name\": \"get_time\", "
        "\"arguments\": {}}}, {\"tool_call\": {\"name\": \"get_weather\", \"arguments\": {\"town\": "
        "\"Oslo\"}}}, {\"text\": \"<tool_call>{\\\"name\\\": \\\"get_weather\\\"\"}]}");
    adil_grammar *grammar = model != NULL ? compile(api, model, WEATHER_TOOLS) : NULL;
    if (grammar != NULL) {
        static const char call[] = "Checking.<tool_call>{\"name\": \"get_weather\", \"arguments\": "
                                   "{\"city\": \"Oslo\"}}</tool_call>";
        test_output out;
        run_under(api, model, grammar, 0, &out); /* a valid call after free text */
        CHECK_STATUS(api, out.status, ADIL_OK);
        if (out.status != ADIL_OK) fprintf(stderr, "  %s\n", out.error);
        CHECK(output_is(&out, call, strlen(call)));
        run_under(api, model, grammar, 0, &out); /* free text only */
        CHECK_STATUS(api, out.status, ADIL_OK);
        CHECK(output_is(&out, "It is sunny.", 12));
        run_under(api, model, grammar, 0, &out); /* a tool that is not offered */
        CHECK_STATUS(api, out.status, ADIL_STATUS_OUTPUT_VALIDATION);
        expect_byte_named(&out, "<tool_call>{\"name\": \"get_time", "time");
        run_under(api, model, grammar, 0, &out); /* arguments that break its schema */
        CHECK_STATUS(api, out.status, ADIL_STATUS_OUTPUT_VALIDATION);
        expect_byte_named(&out, "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"town", "town");
        run_under(api, model, grammar, 0, &out); /* a call cut short */
        CHECK_STATUS(api, out.status, ADIL_STATUS_OUTPUT_VALIDATION);
        CHECK_HAS(out.error, "ended inside the document");
    }
    api->grammar_free(grammar);
    api->model_free(model);
}

/* Tools whose parameters hold literals of their own (an enum, a const, any
 * value): the tool names are told apart from them. */
static void test_tools_with_literal_parameters(const stub_api *api, adil_engine *engine) {
    static const char schema[] =
        "{\"x-adil-tools\": [{\"name\": \"get_weather\", \"parameters\": {\"type\": \"object\", "
        "\"properties\": {\"unit\": {\"enum\": [\"celsius\", \"fahrenheit\"]}, \"extra\": {}}, "
        "\"required\": [\"unit\"]}}, {\"name\": \"get_time\", \"parameters\": {\"const\": {}}}]}";
    expect_valid(api, engine, schema, "{\"name\":\"get_weather\",\"arguments\":{\"unit\":\"celsius\"}}");
    expect_valid(api, engine, schema, "{\"name\":\"get_time\",\"arguments\":{}}");
    expect_refused_at(api, engine, schema, "{\"name\":\"get_weather\",\"arguments\":{\"unit\":\"kelvin\"}}",
                      43, "'k'");
}

static void test_grammar_of_another_model(const stub_api *api, adil_engine *engine) {
    adil_model *mine = load_turn(api, engine, "{}");
    adil_model *other = load_turn(api, engine, "{}");
    adil_grammar *grammar = other != NULL ? compile(api, other, "{}") : NULL;
    if (mine != NULL && grammar != NULL) {
        adil_context *ctx = test_new_context(api, mine, 0);
        adil_run_params params;
        api->run_default_params(&params);
        params.grammar = grammar;
        adil_run *run = NULL;
        CHECK_STATUS(api, test_start(api, ctx, &params, &run), ADIL_STATUS_INVALID_ARGUMENT);
        CHECK_ERROR_HAS(api, "compiled for another model");
        CHECK(run == NULL);
        api->context_free(ctx);
        /* The refused start took no turn: the model's own grammar gets it. */
        adil_grammar *own = compile(api, mine, "{}");
        test_output out = {.status = ADIL_STATUS_INTERNAL};
        if (own != NULL) run_under(api, mine, own, 0, &out);
        CHECK_STATUS(api, out.status, ADIL_OK);
        CHECK(output_is(&out, "{}", 2));
        api->grammar_free(own);
    }
    api->grammar_free(grammar);
    api->model_free(other);
    api->model_free(mine);
}

int main(void) {
    static const test_engine_case cases[] = {
        test_compile_errors,
        test_compile_hostile_inputs,
        test_valid_scripts,
        test_scripts_that_break_the_grammar,
        test_script_ends_inside_the_document,
        test_truncated_by_max_tokens,
        test_lazy_tool_call,
        test_tools_with_literal_parameters,
        test_grammar_of_another_model,
    };
    return test_stub_main("test_stub_grammar", cases, sizeof cases / sizeof cases[0]);
}
