/*
 * grammar_internal.h — what the files of native/grammar share: the compiled
 * schema (a tree of nodes), the matcher's frames, and the vocab index.
 *
 * The matcher is a pushdown automaton over bytes.  Its stack is a chain of
 * immutable frames in an arena (each frame names its parent by index), so a
 * state is one index and advancing a byte copies at most the top frames:
 * the mask walk over the vocabulary's byte trie keeps one state per trie
 * depth and throws the deeper frames away when it backtracks.
 */
#ifndef ADIL_GRAMMAR_INTERNAL_H
#define ADIL_GRAMMAR_INTERNAL_H

#include "grammar.h"

#define GRAMMAR_NONE      UINT32_MAX
#define GRAMMAR_MAX_EXACT 9007199254740991LL /* 2^53 - 1 */

/* ---- compiled schema ------------------------------------------------------ */

typedef enum node_kind {
    NODE_ANY,      /* any JSON value (dispatches on its first byte) */
    NODE_OBJECT,   /* props[a .. a+b), required mask, additional */
    NODE_ARRAY,    /* item node a, min/max items */
    NODE_STRING,   /* min/max code points */
    NODE_INTEGER,  /* imin .. imax */
    NODE_NUMBER,   /* min .. max (doubles), integers or decimals */
    NODE_LITERALS, /* canonical texts lits[a .. a+b), sorted */
    NODE_UNION,    /* type list: children kids[a .. a+b), told apart by their first byte */
    NODE_TOOLCALL  /* {"name":N,"arguments":<tools[a+i]>}, tools sorted by name */
} node_kind;

typedef struct gnode {
    node_kind kind;
    uint32_t a, b;
    uint32_t min_len, max_len; /* STRING: code points; ARRAY: items */
    bool additional;           /* OBJECT: other keys allowed */
    uint64_t required;         /* OBJECT: bit i = props[a+i] is required */
    int64_t imin, imax;        /* INTEGER; NUMBER: the integer texts' range */
    double min, max;           /* NUMBER (clamped to ±(2^53-1)) */
    /* The fewest containers a value of this node nests, its own included
     * (an object: 1 + the deepest of its required values; an array: 1 + its
     * items' when minItems > 0; a union: its shallowest kid).  A container
     * opens only where that many fit under GRAMMAR_MAX_DEPTH, and a declared
     * key is offered only where its value fits, so the depth limit never
     * leaves a document without a way to finish. */
    uint32_t nest;
} gnode;

/* A byte string in the grammar's pool. */
typedef struct gtext {
    uint32_t off, len;
} gtext;

/* An object property: its key as canonical JSON string content (escaped,
 * without the quotes), and the schema of its value. */
typedef struct gprop {
    gtext key;
    uint32_t value;
} gprop;

struct adil_grammar {
    const grammar_vocab *vocab;
    gnode *nodes;
    uint32_t n_nodes, cap_nodes;
    gprop *props;
    uint32_t n_props, cap_props;
    gtext *lits;        /* LITERALS texts; TOOLCALL names ("\"name\"" with quotes) */
    uint32_t *lit_kids; /* parallel to lits: a TOOLCALL name's argument node */
    uint32_t n_lits, cap_lits, cap_lit_kids;
    uint32_t *kids; /* UNION children */
    uint32_t n_kids, cap_kids;
    uint8_t *pool;
    uint32_t pool_len, pool_cap;
    uint32_t root;
    /* Shared nodes of "any value". */
    uint32_t any;
    /* Lazy mode: trigger and end strings (pool), KMP failure table of the
     * trigger, and per KMP state the tokens that complete the trigger. */
    bool lazy;
    gtext trigger, end;
    uint8_t kmp[64];
    uint32_t *trig_tokens[64];
    uint32_t n_trig_tokens[64];
};

/* ---- frames ------------------------------------------------------------------ */

typedef enum frame_type {
    FR_ROOT,  /* the whole output: lazy free text, leading whitespace, the document */
    FR_VALUE, /* a value of node `node` */
    FR_KEY,   /* an object key (node = the object's node) */
    FR_LIST   /* a seen additional key: x = its hash, parent = the next one */
} frame_type;

/* Phases the matcher's files share (feed.c owns the rest). */
enum { R_FREE, R_LEAD, R_DOC, R_TRAIL, R_DONE }; /* FR_ROOT */
enum { S_START, S_BODY };                        /* NODE_STRING */
#define KEY_GENERIC 1u                           /* FR_KEY flags: the key may still be an additional one */

/* A JSON string lexer's state (value strings and keys). */
typedef struct strlex {
    uint8_t esc;    /* ESC_* below */
    uint8_t need;   /* UTF-8 continuation bytes still due */
    uint8_t lo, hi; /* range of the next continuation byte */
    uint16_t acc;   /* \u digits so far */
    uint16_t high;  /* a high surrogate waiting for its low half (0: none) */
} strlex;

typedef struct frame {
    uint32_t parent;
    uint32_t node;
    uint8_t type, phase, ws, flags;
    uint32_t count; /* items, code points, or a position in a text */
    uint32_t lo, hi;
    uint64_t x;
    uint32_t y, depth;
    strlex s;
} frame;

/* The arena frames live in; states are indices into it. */
typedef struct arena {
    frame *f;
    uint32_t len, cap;
    bool failed; /* an allocation failed: every later feed refuses */
} arena;

typedef struct feeder {
    const adil_grammar *g;
    arena *a;
    /* Checking an enum/const value's canonical text against its schema: an
     * additional key may hold escapes (a model may not write them: the key
     * could then spell a declared name, or one twice). */
    bool checking_value;
} feeder;

/* Appends a frame; its index, or GRAMMAR_NONE (and a->failed) when out of memory. */
uint32_t grammar_push(const feeder *fd, const frame *f);

/* Advances state *top over byte b; false (state unspecified) when refused. */
bool grammar_feed(const feeder *fd, uint32_t *top, uint8_t b);

/* The root frame of a new matcher (lazy: in free text). */
uint32_t grammar_start(const feeder *fd, uint32_t node, bool lazy);

grammar_position grammar_position_of(const feeder *fd, uint32_t top);

/* Copies the state `top` (its chain and what it refers to) into `scratch`,
 * then swaps the two arenas: the garbage of earlier states goes.  Returns
 * the new top. */
uint32_t grammar_compact_with(const adil_grammar *g, arena *a, uint32_t top, arena *scratch);

/* ---- vocab index ------------------------------------------------------------ */

/* A trie node: byte `byte` at depth `depth` (1-based); its subtree ends
 * before node `end`; it spells tokens t_ids[tok .. tok + ntok). */
typedef struct trie_node {
    uint32_t end, tok;
    uint16_t ntok;
    uint8_t byte, depth;
} trie_node;

/* A token of plain string text, then a quote or backslash: its suffix class
 * and the code points of its plain part. */
typedef struct special_token {
    uint32_t id, cls, cp;
} special_token;

struct grammar_vocab {
    uint32_t n;
    uint8_t *kind;
    uint32_t *off, *len;
    uint8_t *bytes;
    /* The byte trie of TEXT tokens in preorder (one record per node, so a
     * walk reads memory in order): a subtree is a contiguous run of nodes;
     * root[b] is the depth-1 node of byte b (GRAMMAR_NONE: no token starts
     * with b). */
    trie_node *trie;
    uint32_t n_nodes;
    uint32_t root[256];
    /* The depth-2 nodes under root[b], in one sequential run:
     * kids2[kids2_off[b] .. kids2_off[b + 1]) with their bytes in kids2_byte
     * (a first byte such as ' ' has hundreds of children spread over a large
     * subtree: the walk reads their bytes here, and only the accepted ones
     * there). */
    uint32_t *kids2;
    uint8_t *kids2_byte;
    uint32_t kids2_off[257];
    uint32_t *t_ids;   /* token ids, grouped by node */
    uint32_t *end_ids; /* END tokens */
    uint32_t n_end;
    uint32_t words; /* mask words */
    /* Inside a string: the tokens of plain string text (no quote, backslash or
     * control byte; valid UTF-8 from a character start), by code points:
     * plain_upto[c] holds those of at most c code points (c <= PLAIN_BUCKETS),
     * plain_all all of them. */
    uint32_t *plain_all;
    uint32_t *plain_upto[17];
    uint32_t n_plain_all, n_plain_upto[17]; /* how many tokens each holds */
    uint32_t *long_plain;                   /* plain tokens of more than 16 code points */
    uint32_t n_long_plain;
    uint8_t *cp; /* code points of each plain token / of a special token's plain prefix */
    /* Tokens of plain text then a quote or a backslash (the rest must be fed),
     * and their suffix classes: the distinct suffixes, their bytes in
     * suffix_bytes[suffix_off[c] .. suffix_off[c + 1]). */
    special_token *special;
    uint32_t n_special;
    uint8_t *suffix_bytes;
    uint32_t *suffix_off;   /* n_suffix + 1 */
    uint8_t *suffix_closes; /* per suffix class: it closes the string */
    uint8_t *suffix_cp;     /* per suffix class: code points it adds before closing (at most 255) */
    uint32_t n_suffix;
};

#define PLAIN_BUCKETS 16

/* Sorts ids[0 .. n) by `order` (< 0, 0, > 0 as a before, like, after b),
 * keeping the order of equal ones: a bottom-up merge sort; tmp holds n. */
typedef int (*grammar_order)(const void *ctx, uint32_t a, uint32_t b);
void grammar_sort_ids(uint32_t *ids, uint32_t *tmp, uint32_t n, grammar_order order, const void *ctx);

/* JSON whitespace. */
static inline bool json_ws(uint8_t b) { return b == ' ' || b == '\n' || b == '\t' || b == '\r'; }

/* The lazy trigger's KMP state after byte b from state j. */
static inline uint32_t kmp_next(const adil_grammar *g, uint32_t j, uint8_t b) {
    const uint8_t *t = g->pool + g->trigger.off;
    while (j > 0 && t[j] != b) j = g->kmp[j - 1];
    return t[j] == b ? j + 1 : 0;
}

static inline bool mask_test(const uint32_t *mask, uint32_t id) { return (mask[id >> 5] >> (id & 31)) & 1u; }
static inline void mask_set(uint32_t *mask, uint32_t id) { mask[id >> 5] |= 1u << (id & 31); }
static inline void mask_clear(uint32_t *mask, uint32_t id) { mask[id >> 5] &= ~(1u << (id & 31)); }

/* Canonical JSON text (json.dumps(v, separators=(",", ":"),
 * ensure_ascii=False)) of `value` (source text `src`) appended to the
 * grammar's pool; false when the value has no such text within the
 * exact-number rule (a number out of range). */
struct adil_json;
bool grammar_canonical(adil_grammar *g, const char *src, const struct adil_json *value, gtext *out);
/* The canonical JSON string of s[0 .. len) in the pool, with or without
 * its quotes (false: out of memory). */
bool grammar_string_text(adil_grammar *g, const char *s, size_t len, bool quotes, gtext *out);
/* Appends bytes to the pool (false: out of memory). */
bool grammar_pool_add(adil_grammar *g, const void *bytes, size_t len, gtext *out);

#endif /* ADIL_GRAMMAR_INTERNAL_H */
