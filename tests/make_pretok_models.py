"""Tiny GGUF models whose byte-level BPE vocabulary tells pre-tokenizers apart.

A pre-tokenizer cuts text into words before BPE merges within each word, so
a wrong cut shows in the token ids only where a merge would have joined the
two sides.  The vocabulary here is trained (plain BPE: the most frequent pair
first) on the test strings themselves *without* any pre-tokenization, so its
merges freely cross word boundaries: " wo", "d!", "3 3", "\\n ", "é " ...
Every pre-tokenizer then gives different ids on most strings, and each
boundary it puts in the wrong place changes them.

The model around the vocabulary is make_tiny_models' tiny ``llama`` (one
layer, random F32 weights): llama.cpp reads the vocabulary with
``vocab_only=True``; our engine needs a whole model to tokenize.  The file
sets no ``tokenizer.ggml.add_bos_token``, so each pre-tokenizer's own default
applies.  Everything is deterministic: the same strings give the same file.

    python tests/make_pretok_models.py OUT_DIR PRE [PRE ...]
"""

from __future__ import annotations

import hashlib
import sys
from collections import Counter
from pathlib import Path

import gguf
import make_tiny_models as tiny
import numpy as np
from gguf import GGMLQuantizationType as T

N_MERGES = 1500
MIN_PAIR_COUNT = 1
BOS, EOS = "<|bos|>", "<|eos|>"
TOKEN_NORMAL, TOKEN_CONTROL = 1, 3


def _gpt2_byte_chars() -> list[str]:
    """GPT-2's printable character for each byte (the alphabet of byte-level
    BPE vocabularies): printable Latin-1 bytes stand for themselves, the other
    68 take the code points from U+0100 on, in byte order."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    chars, nxt = [], 0x100
    for b in range(256):
        if b in printable:
            chars.append(chr(b))
        else:
            chars.append(chr(nxt))
            nxt += 1
    return chars


BYTE_CHARS = _gpt2_byte_chars()


def _merge_pair(seq: list[str], a: str, b: str) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(seq):
        if i + 1 < len(seq) and seq[i] == a and seq[i + 1] == b:
            out.append(a + b)
            i += 2
        else:
            out.append(seq[i])
            i += 1
    return out


def train_merges(texts: list[bytes], n_merges: int = N_MERGES) -> list[tuple[str, str]]:
    """BPE merges learnt from `texts` taken whole (no pre-tokenization): the
    most frequent adjacent pair first, ties broken by the pair's text."""
    seqs = [[BYTE_CHARS[b] for b in t] for t in texts if len(t) > 1]
    merges: list[tuple[str, str]] = []
    while len(merges) < n_merges:
        counts: Counter[tuple[str, str]] = Counter()
        for s in seqs:
            counts.update(zip(s, s[1:], strict=False))
        if not counts:
            break
        pair, count = min(counts.items(), key=lambda kv: (-kv[1], kv[0]))
        if count < MIN_PAIR_COUNT:
            break
        merges.append(pair)
        seqs = [_merge_pair(s, *pair) for s in seqs]
    return merges


def build_vocab(texts: list[bytes]) -> tuple[list[str], list[int], list[str]]:
    """Tokens (the 256 byte characters, each merge's result, BOS and EOS),
    their types, and the merges as "left right" strings."""
    merges = train_merges(texts)
    tokens = list(BYTE_CHARS)
    seen = set(tokens)
    for a, b in merges:
        if a + b not in seen:
            seen.add(a + b)
            tokens.append(a + b)
    types = [TOKEN_NORMAL] * len(tokens) + [TOKEN_CONTROL, TOKEN_CONTROL]
    tokens += [BOS, EOS]
    return tokens, types, [f"{a} {b}" for a, b in merges]


def vocab_sha256(tokens: list[str], merges: list[str]) -> str:
    """A digest of the vocabulary and merges (what the fixtures depend on)."""
    h = hashlib.sha256()
    for part in (*tokens, "\x00", *merges):
        h.update(part.encode("utf-8") + b"\x00")
    return h.hexdigest()


Vocab = tuple[list[str], list[int], list[str]]


def write_pretok_model(path: str | Path, pre: str, vocab: Vocab) -> None:
    """Writes the tiny model with `vocab` (from build_vocab) and
    tokenizer.ggml.pre = `pre`."""
    tokens, types, merges = vocab
    spec = tiny.TinySpec(
        arch="llama",
        n_vocab=len(tokens),
        n_embd=64,
        n_layer=1,
        n_head=1,
        n_head_kv=1,
        n_ff=64,
        tied_output=False,
    )
    w = gguf.GGUFWriter(str(path), "llama")
    tiny._write_hparams(w, spec)
    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre(pre)
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(tokens.index(BOS))
    w.add_eos_token_id(tokens.index(EOS))
    tiny.write_weights(w, spec, T.F32, np.random.default_rng(0))


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit("usage: python tests/make_pretok_models.py OUT_DIR PRE [PRE ...]")
    sample = [b"Hello world", b"HELLO world", b"3333 apples", "café 日本".encode()]
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    vocab = build_vocab(sample)
    for name in sys.argv[2:]:
        p = out / f"pretok-{name}.gguf"
        write_pretok_model(p, name, vocab)
        print(p)
