/*
 * token_fixups.c — the token attributes llama.cpp decides by text.
 *
 * GGUF files carry token types, but llama.cpp overrides some of them by the
 * token's text, and these overrides change tokenization: a control token is
 * only cut out of text when parse_special is set, so gemma's user-defined
 * "</s>" (listed below as an end-of-generation text) is left as plain text
 * when parse_special is 0.  We apply the same rules, table-driven:
 *  - the end-of-turn id, when the file names none, is the first token found
 *    of k_eot (and becomes a control token); likewise one token of each FIM
 *    list becomes a control token, and the FIM pad/repo/separator tokens end
 *    generation;
 *  - every token whose text is in k_eog ends generation and becomes control;
 *  - gpt-oss's channel markers become user-defined (always printed);
 *  - two vocabularies keep a normal "</s>" or "<|end|>" (see below).
 */
#include "text/tokenizer_internal.h"

#include <string.h>

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define FW_BAR  "\xef\xbd\x9c" /* U+FF5C fullwidth vertical line */
#define LOWER_8 "\xe2\x96\x81" /* U+2581 */

static const char *const k_eot[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "<" FW_BAR "end" LOWER_8 "of" LOWER_8 "sentence" FW_BAR ">",
    "<end_of_utterance>",
};
static const char *const k_eom[] = {"<|eom_id|>"};
static const char *const k_fim_pre[] = {
    "<|fim_prefix|>", "<fim-prefix>",  "<fim_prefix>",    "<" FW_BAR "fim" LOWER_8 "begin" FW_BAR ">",
    "<PRE>",          LOWER_8 "<PRE>", "<|code_prefix|>", "<|prefix|>",
};
static const char *const k_fim_suf[] = {
    "<|fim_suffix|>", "<fim-suffix>",  "<fim_suffix>",    "<" FW_BAR "fim" LOWER_8 "hole" FW_BAR ">",
    "<SUF>",          LOWER_8 "<SUF>", "<|code_suffix|>", "<|suffix|>",
};
static const char *const k_fim_mid[] = {
    "<|fim_middle|>", "<fim-middle>",  "<fim_middle>",    "<" FW_BAR "fim" LOWER_8 "end" FW_BAR ">",
    "<MID>",          LOWER_8 "<MID>", "<|code_middle|>", "<|middle|>",
};
static const char *const k_fim_pad[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
static const char *const k_fim_rep[] = {
    "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>",
};
static const char *const k_fim_sep[] = {"<|file_sep|>"};
static const char *const k_eog[] = {
    "<|eot_id|>",
    "<|im_end|>",
    "<|end|>",
    "<|return|>",
    "<|call|>",
    "<|flush|>",
    "<|calls|>",
    "<end_of_turn>",
    "<|endoftext|>",
    "</s>",
    "<|eom_id|>",
    "<EOT>",
    "_<EOT>",
    "[EOT]",
    "[EOS]",
    "<|end_of_text|>",
    "<end_of_utterance>",
    "<eos>",
    "<turn|>",
    "<|tool_response>",
    "<" FW_BAR "end" LOWER_8 "of" LOWER_8 "sentence" FW_BAR ">",
    "[e~[",
};
static const char *const k_user_defined[] = {
    "<|channel|>",
    "<|message|>",
    "<|start|>",
    "<|constrain|>",
};

static int32_t find(const adil_tokenizer *tok, const char *text) {
    return adil_vocab_find(tok, text, strlen(text));
}

/* The first token of `list` present in the vocabulary, made control. */
static int32_t first_made_control(adil_tokenizer *tok, const char *const *list, size_t n) {
    for (size_t i = 0; i < n; i++) {
        int32_t id = find(tok, list[i]);
        if (id >= 0) {
            tok->vocab[id].attr |= ADIL_ATTR_CONTROL;
            return id;
        }
    }
    return -1;
}

static void mark(adil_tokenizer *tok, int32_t id, uint8_t bits) {
    if (id >= 0) {
        tok->vocab[id].attr |= bits;
    }
}

/* A vocabulary with "<|return|>" and "<|call|>" (or "<|calls|>" and
 * "<|flush|>") uses "<|end|>" inside a turn: it does not end generation
 * and is always printed.  One with "<|tool_response>" or "<|plamo:eos|>"
 * has a normal "</s>". */
static void apply_exceptions(adil_tokenizer *tok) {
    int32_t end = find(tok, "<|end|>");
    bool has_return = find(tok, "<|return|>") >= 0;
    bool has_call = find(tok, "<|call|>") >= 0 || find(tok, "<|calls|>") >= 0;
    bool has_flush = find(tok, "<|flush|>") >= 0;
    if (end >= 0 && has_call && (has_return || has_flush)) {
        tok->vocab[end].attr = ADIL_ATTR_USER_DEFINED;
    }
    int32_t s = find(tok, "</s>");
    int32_t marker = find(tok, "<|tool_response>");
    if (marker < 0) {
        marker = find(tok, "<|plamo:eos|>");
    }
    if (s >= 0 && marker >= 0 && (tok->vocab[marker].attr & ADIL_ATTR_EOG)) {
        tok->vocab[s].attr = ADIL_ATTR_NORMAL;
    }
}

void adil_token_fixups(adil_tokenizer *tok) {
    if (tok->eot_id < 0) {
        tok->eot_id = first_made_control(tok, k_eot, N_OF(k_eot));
    }
    int32_t eom = first_made_control(tok, k_eom, N_OF(k_eom));
    first_made_control(tok, k_fim_pre, N_OF(k_fim_pre));
    first_made_control(tok, k_fim_suf, N_OF(k_fim_suf));
    first_made_control(tok, k_fim_mid, N_OF(k_fim_mid));
    mark(tok, first_made_control(tok, k_fim_pad, N_OF(k_fim_pad)), ADIL_ATTR_EOG);
    mark(tok, first_made_control(tok, k_fim_rep, N_OF(k_fim_rep)), ADIL_ATTR_EOG);
    mark(tok, first_made_control(tok, k_fim_sep, N_OF(k_fim_sep)), ADIL_ATTR_EOG);
    for (size_t i = 0; i < N_OF(k_eog); i++) {
        mark(tok, find(tok, k_eog[i]), ADIL_ATTR_EOG | ADIL_ATTR_CONTROL);
    }
    for (size_t i = 0; i < N_OF(k_user_defined); i++) {
        int32_t id = find(tok, k_user_defined[i]);
        if (id >= 0) {
            tok->vocab[id].attr = ADIL_ATTR_USER_DEFINED | (tok->vocab[id].attr & ADIL_ATTR_EOG);
        }
    }
    mark(tok, tok->eos_id, ADIL_ATTR_EOG);
    mark(tok, tok->eot_id, ADIL_ATTR_EOG);
    mark(tok, eom, ADIL_ATTR_EOG);
    apply_exceptions(tok);
}
