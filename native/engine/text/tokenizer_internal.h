/*
 * tokenizer_internal.h — the tokenizer's insides, shared by tokenizer.c (the
 * public functions), vocab.c (string -> id tables), special_split.c (cutting
 * text at special tokens), spm.c, bpe.c, merge.c (their shared merge loop)
 * and pretokenize.c.  Not for other
 * modules: they use tokenizer.h.
 */
#ifndef ADIL_TEXT_TOKENIZER_INTERNAL_H
#define ADIL_TEXT_TOKENIZER_INTERNAL_H

#include "adil_containers.h"
#include "text/tokenizer.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Token attributes (llama.cpp's, as bits; a token has one type bit, the
 * UNUSED bit may be added to a control token). */
enum {
    ADIL_ATTR_UNDEFINED = 0,
    ADIL_ATTR_UNKNOWN = 1u << 0,
    ADIL_ATTR_UNUSED = 1u << 1,
    ADIL_ATTR_NORMAL = 1u << 2,
    ADIL_ATTR_CONTROL = 1u << 3,
    ADIL_ATTR_USER_DEFINED = 1u << 4,
    ADIL_ATTR_BYTE = 1u << 5,
    ADIL_ATTR_EOG = 1u << 6 /* ours: generation stops here */
};

/* Pre-tokenizers of the gpt2 model (pretokenize.c has their patterns;
 * tokenizer.c the tokenizer.ggml.pre names of each). */
typedef enum adil_pretok {
    ADIL_PRETOK_NONE = 0,           /* the llama (SentencePiece) model has none */
    ADIL_PRETOK_LLAMA3 = 1,         /* ...|\p{N}{1,3}|... */
    ADIL_PRETOK_QWEN2 = 2,          /* ...|\p{N}|... */
    ADIL_PRETOK_SMOLLM = 3,         /* digits one by one, then GPT-2's pattern between them */
    ADIL_PRETOK_GPT2 = 4,           /* GPT-2's pattern (gpt-2, phi-2, ...) */
    ADIL_PRETOK_GPT4O = 5,          /* o200k: words split at case changes, \p{N}{1,3} */
    ADIL_PRETOK_TEKKEN = 6,         /* the same without contractions, \p{N} */
    ADIL_PRETOK_DEEPSEEK_LLM = 7,   /* six patterns (pretok_deepseek.c) */
    ADIL_PRETOK_DEEPSEEK_CODER = 8, /* five patterns */
    ADIL_PRETOK_DEEPSEEK_V3 = 9,    /* three patterns */
    ADIL_PRETOK_QWEN35 = 10,        /* qwen2's with combining marks in words */
    ADIL_PRETOK_DEFAULT = 11        /* llama.cpp's for a file without a pre-tokenizer name */
} adil_pretok;

typedef struct adil_vocab_entry {
    uint32_t offset; /* into adil_tokenizer.text */
    uint32_t len;
    float score;
    uint8_t attr; /* ADIL_ATTR_* */
} adil_vocab_entry;

/* A node of the byte trie of special-token texts (first-child /
 * next-sibling lists). */
typedef struct adil_trie_node {
    uint32_t child;   /* first child, 0 = none (node 0 is the root) */
    uint32_t sibling; /* next sibling, 0 = none */
    int32_t special;  /* index into specials[] of the token ending here, or -1 */
    uint8_t byte;
} adil_trie_node;

struct adil_tokenizer {
    bool is_spm;
    adil_pretok pretok;
    bool ignore_merges;   /* gpt2: a whole word that is a token is taken as is */
    bool default_add_bos; /* gpt2: the pre-tokenizer adds BOS unless the file says */
    uint32_t n_vocab;
    char *text;              /* all vocabulary strings, back to back */
    adil_vocab_entry *vocab; /* [n_vocab] */
    adil_hash_index by_text; /* vocabulary string -> id */

    /* gpt2 merges: "left right" strings; merge_split[i] = length of left. */
    uint32_t n_merges;
    char *merge_text;
    uint64_t *merge_offset;   /* [n_merges] */
    uint32_t *merge_len;      /* [n_merges] */
    uint32_t *merge_split;    /* [n_merges]; UINT32_MAX = no separator (never matches) */
    adil_hash_index by_merge; /* pair -> rank */

    /* Special tokens (control, user-defined, unknown) in the order they are
     * cut out of text: longer first, then lower id. */
    uint32_t n_special;
    int32_t *specials;    /* ids */
    adil_trie_node *trie; /* their texts */
    uint32_t n_trie;

    int32_t byte_token[256];  /* llama: <0xXX> token of each byte, -1 = none */
    uint32_t byte_to_cp[256]; /* gpt2: GPT-2's printable code point of each byte */

    int32_t bos_id, eos_id, eot_id, unk_id, pad_id;
    bool add_bos, add_eos, add_space_prefix;
};

/* ---- growable id list --------------------------------------------------- */

typedef struct adil_ids {
    int32_t *data;
    size_t n;
    size_t cap;
} adil_ids;

adil_status adil_ids_push(adil_ids *ids, int32_t id);
void adil_ids_free(adil_ids *ids);

/* ---- vocab.c ------------------------------------------------------------- */

/* Builds tok->by_text from tok->vocab (later duplicates win). */
adil_status adil_vocab_index(adil_tokenizer *tok);
/* Builds tok->by_merge from the merge arrays (earlier duplicates win). */
adil_status adil_merges_index(adil_tokenizer *tok);

/* The id of text[0..len), or -1. */
int32_t adil_vocab_find(const adil_tokenizer *tok, const char *text, size_t len);
/* The rank of merging `left` with `right`, or -1. */
int32_t adil_merge_rank(const adil_tokenizer *tok, const char *left, size_t left_len, const char *right,
                        size_t right_len);

static inline const char *adil_vocab_text(const adil_tokenizer *tok, int32_t id) {
    return tok->text + tok->vocab[id].offset;
}

/* ---- token_fixups.c ---------------------------------------------------- */

/* Applies llama.cpp's by-text attribute rules (EOT/EOG/FIM texts, ...);
 * needs by_text and the special ids. */
void adil_token_fixups(adil_tokenizer *tok);

/* ---- special_split.c ----------------------------------------------------- */

/* A piece of the input: raw text [start, start + len) or one special token. */
typedef struct adil_fragment {
    size_t start;
    size_t len;
    int32_t token; /* -1 for raw text */
} adil_fragment;

typedef struct adil_fragments {
    adil_fragment *data;
    size_t n;
    size_t cap;
} adil_fragments;

/* Builds tok->specials and tok->trie from the attributes in tok->vocab. */
adil_status adil_special_index(adil_tokenizer *tok);

/* Cuts text[0..len) at special tokens the way llama.cpp does: each special
 * token in order (longer first) is cut out of every raw fragment, leftmost
 * occurrences first.  Control and unknown tokens count only when
 * parse_special.  *out must be zeroed; free its data with free(). */
adil_status adil_special_split(const adil_tokenizer *tok, const char *text, size_t len, bool parse_special,
                               adil_fragments *out);

/* ---- merge.c: the merge loop of spm.c and bpe.c ---------------------------- */

/* A symbol of the text being merged, in a doubly linked list. */
typedef struct adil_merge_symbol {
    int32_t prev;   /* -1 = none */
    int32_t next;   /* -1 = none */
    uint32_t start; /* byte offset in the text */
    uint32_t n;     /* bytes; 0 once merged into its left neighbour */
} adil_merge_symbol;

/* A proposed merge of two adjacent symbols. */
typedef struct adil_merge_cand {
    double cost; /* lower merges first */
    int32_t left;
    int32_t right;
    uint32_t size; /* bytes of left + right when proposed */
} adil_merge_cand;

/* Scratch for adil_merge_symbols, reusable across calls; free data with
 * free().  `what` names the candidates in the out-of-memory message. */
typedef struct adil_merge_heap {
    adil_merge_cand *data;
    size_t n;
    size_t cap;
    const char *what;
} adil_merge_heap;

/* The model's cost of merging symbols l and r of text (lower merges first);
 * false when they do not merge. */
typedef bool (*adil_merge_cost_fn)(const adil_tokenizer *tok, const char *text, const adil_merge_symbol *l,
                                   const adil_merge_symbol *r, double *cost);

/* Splits text[0..len) into one linked symbol per UTF-8 character (a
 * truncated character at the end keeps the bytes that remain); syms has
 * room for len entries.  Returns the number of symbols. */
size_t adil_merge_split_chars(const char *text, size_t len, adil_merge_symbol *syms);

/* Merges syms[0..n) (linked in order, as split) cheapest candidate first,
 * ties leftmost, until no adjacent pair has a cost.  Merged-away symbols
 * are left with n = 0 and unlinked; the survivors stay linked from syms[0]. */
adil_status adil_merge_symbols(const adil_tokenizer *tok, const char *text, adil_merge_symbol *syms, size_t n,
                               adil_merge_cost_fn cost_of, adil_merge_heap *heap);

/* ---- spm.c / bpe.c ------------------------------------------------------- */

/* SentencePiece merge of text (spaces already escaped to U+2581). */
adil_status adil_spm_tokenize(const adil_tokenizer *tok, const char *text, size_t len, adil_ids *out);

/* Byte-level BPE of one raw fragment (pre-tokenized inside). */
adil_status adil_bpe_tokenize(const adil_tokenizer *tok, const char *text, size_t len, adil_ids *out);

/* Fills tok->byte_to_cp (GPT-2's byte -> printable code point map). */
void adil_bpe_init_byte_map(adil_tokenizer *tok);

/* The byte a gpt2 token's code point stands for, or -1. */
int adil_bpe_byte_of_cp(const adil_tokenizer *tok, uint32_t cp);

/* ---- pretokenize.c ------------------------------------------------------- */

/* Splits the code points cps[0..n) into words by the pre-tokenizer's
 * pattern; writes the length (in code points) of each word to lens (room for
 * n entries) and their count to *n_words. */
void adil_pretokenize(adil_pretok kind, const uint32_t *cps, size_t n, size_t *lens, size_t *n_words);

#endif /* ADIL_TEXT_TOKENIZER_INTERNAL_H */
