"""Tiny synthetic GGUF models for the architecture tests.

Each file is a real GGUF of one architecture (``gemma3``, ``llama`` or
``qwen3moe``) with
random weights in one weight type, a small SentencePiece-style (``llama``)
tokenizer section, and shapes small enough to write and run in milliseconds
but wide enough for every block type (K-quants need rows of 256 elements).

Weight data:
  * F32, F16, BF16, Q8_0, Q4_0, Q5_0, Q5_1, MXFP4: random float weights
    quantized with the ``gguf`` package's numpy quantizers;
  * Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS: the ``gguf`` package has
    no quantizer for these, so their blocks are random bytes with the scale
    fields set so that the dequantized weights (read back with
    ``gguf.quants.dequantize``) have the wanted spread.  The weights are
    random either way.
Norm weights stay F32, as in converted models.

    python tests/make_tiny_models.py OUT_DIR      # writes every (arch, type)
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

ARCHITECTURES = ("gemma3", "llama", "qwen3moe")
WEIGHT_TYPES = (T.F32, T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q5_0, T.Q4_K, T.Q5_K, T.Q6_K,
                T.Q5_1, T.IQ4_NL, T.MXFP4, T.Q2_K, T.Q3_K, T.IQ4_XS)

# Blocks written as random bytes: (elements, bytes, byte offsets of the fp16
# scale fields).  x = d * a - dmin * b for Q2_K/Q4_K/Q5_K, x = d * a for
# Q3_K/Q6_K, IQ4_NL and IQ4_XS: linear in the fields, so scaling every field
# by c scales the weights by c.
_RANDOM_BLOCKS: dict[T, tuple[int, int, tuple[int, ...]]] = {
    T.Q2_K: (256, 84, (80, 82)),
    T.Q3_K: (256, 110, (108,)),
    T.Q4_K: (256, 144, (0, 2)),
    T.Q5_K: (256, 176, (0, 2)),
    T.Q6_K: (256, 210, (208,)),
    T.IQ4_NL: (32, 18, (0,)),
    T.IQ4_XS: (256, 136, (0,)),
}
# Byte ranges of a block holding the 2-bit high fields of 6-bit scales stored
# plus 32: Q3_K's scales[8:12], IQ4_XS's scales_h (see _scale_magnitudes).
_SCALE_HIGH_BITS: dict[T, tuple[int, int]] = {T.Q3_K: (104, 108), T.IQ4_XS: (2, 4)}


@dataclass(frozen=True)
class TinySpec:
    """Shapes of a tiny model (the same for every weight type)."""

    arch: str
    n_vocab: int = 384
    n_embd: int = 256
    n_layer: int = 7  # gemma3: layers 0-4 and 6 local, layer 5 global
    n_head: int = 4
    n_head_kv: int = 2
    head_dim: int = 64
    n_ff: int = 512
    n_ctx_train: int = 256
    sliding_window: int = 12  # < the 64-token test prompt, so the window matters
    rms_eps: float = 1e-6
    rope_base: float = 10000.0  # llama; gemma3 global layers use rope_base_global
    rope_base_global: float = 1000000.0
    tied_output: bool = True  # llama files get a separate output.weight
    n_expert: int = 0  # qwen3moe: experts per layer (0: a dense FFN)
    n_expert_used: int = 0
    n_ff_exp: int = 0  # hidden width of one expert (K-quants: a multiple of 256)


def spec_for(arch: str) -> TinySpec:
    if arch == "gemma3":
        return TinySpec(arch="gemma3")
    if arch == "llama":
        return TinySpec(arch="llama", n_layer=3, rms_eps=1e-5, tied_output=False)
    if arch == "qwen3moe":
        return TinySpec(arch="qwen3moe", n_layer=2, tied_output=False, rope_base=1000000.0,
                        n_expert=8, n_expert_used=2, n_ff_exp=256)
    raise ValueError(f"unknown architecture {arch!r}; expected one of {ARCHITECTURES}")


# ---- tokenizer ---------------------------------------------------------------

SPECIALS = ("<pad>", "<eos>", "<bos>", "<unk>")
GEMMA_TURNS = ("<start_of_turn>", "<end_of_turn>")
_WORDS = ("the", "of", "and", "to", "in", "is", "capital", "France", "Paris", "model",
          "tiny", "cat", "dog", "sat", "on", "mat", "hello", "world", "code", "test")


def tokenizer_vocab(spec: TinySpec) -> tuple[list[str], list[float], list[int]]:
    """Tokens, scores and types: specials, the 256 byte tokens, then pieces
    (``▁`` marks a space) scored so longer pieces merge first."""
    tokens: list[str] = list(SPECIALS)
    types = [3, 3, 3, 2]  # control, control, control, unknown
    if spec.arch == "gemma3":
        tokens += GEMMA_TURNS
        types += [3, 3]
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [6] * 256
    pieces: list[str] = ["▁"] + [chr(c) for c in range(ord("a"), ord("z") + 1)]
    pieces += [chr(c) for c in range(ord("A"), ord("Z") + 1)]
    for word in _WORDS:
        pieces += ["▁" + word[: i + 1] for i in range(len(word))]
        pieces += [word[: i + 1] for i in range(1, len(word))]
    seen: set[str] = set(tokens)
    for piece in pieces:
        if piece not in seen and len(tokens) < spec.n_vocab:
            seen.add(piece)
            tokens.append(piece)
            types.append(1)
    while len(tokens) < spec.n_vocab:
        tokens.append(f"<unused{len(tokens)}>")
        types.append(5)
    # Longer pieces score higher, so SentencePiece merges prefer them.
    scores = [0.0 if t != 1 else float(len(tok)) - i * 1e-3 for i, (tok, t)
              in enumerate(zip(tokens, types, strict=True))]
    return tokens, scores, types


# ---- weights -------------------------------------------------------------------


def _scale_magnitudes(qtype: T, blocks: np.ndarray, rng: np.random.Generator) -> None:
    """6-bit scales stored plus 32 (Q3_K, IQ4_XS) get magnitudes 16..32: each
    2-bit high field in the bytes _SCALE_HIGH_BITS[qtype] becomes 00 or 11, as
    a quantizer that fits d to the largest sub-block writes them.  Uniform
    random scales, many near 0, make the weights heavy-tailed: with seeds 0..3
    the tiny llama/gemma3 models' logits then differ from the reference by up
    to 0.053 of their scale (IQ4_XS; tolerance 0.05), by up to 0.037 with
    these."""
    begin, end = _SCALE_HIGH_BITS[qtype]
    fields = rng.integers(0, 2, size=(blocks.shape[0], end - begin, 4), dtype=np.uint8) * 3
    shifts = np.array([0, 2, 4, 6], dtype=np.uint8)
    blocks[:, begin:end] = (fields << shifts).sum(axis=2, dtype=np.uint8)


def _random_block_rows(rows: int, cols: int, qtype: T, std: float,
                  rng: np.random.Generator) -> np.ndarray:
    elems, size, offsets = _RANDOM_BLOCKS[qtype]
    blocks = rng.integers(0, 256, size=(rows * cols // elems, size), dtype=np.uint8)
    if qtype in _SCALE_HIGH_BITS:
        _scale_magnitudes(qtype, blocks, rng)
    unit = np.array([1.0], dtype=np.float16).view(np.uint8)
    for off in offsets:
        blocks[:, off:off + 2] = unit
    raw = blocks.reshape(rows, cols // elems * size)
    spread = float(quants.dequantize(raw, qtype).std())
    factor = np.array([std / spread], dtype=np.float16).view(np.uint8)
    for off in offsets:
        blocks[:, off:off + 2] = factor
    return blocks.reshape(rows, cols // elems * size)


def encode_matrix(values: np.ndarray, qtype: T, rng: np.random.Generator) -> np.ndarray:
    """`values` (rows, cols) float32 as stored in a tensor of `qtype`."""
    if qtype == T.F32:
        return values.astype(np.float32)
    if qtype == T.F16:
        return values.astype(np.float16)
    if qtype in _RANDOM_BLOCKS:
        return _random_block_rows(values.shape[0], values.shape[1], qtype, float(values.std()), rng)
    return quants.quantize(values.astype(np.float32), qtype)


def _matrices(spec: TinySpec) -> list[tuple[str, int, int, float]]:
    """(name, rows, cols, std) of every matrix."""
    d, hd = spec.n_embd, spec.head_dim
    out = [("token_embd.weight", spec.n_vocab, d, 1.0 if spec.arch == "llama" else 0.1)]
    if not spec.tied_output:
        out.append(("output.weight", spec.n_vocab, d, d ** -0.5))
    for i in range(spec.n_layer):
        out += [
            (f"blk.{i}.attn_q.weight", spec.n_head * hd, d, d ** -0.5),
            (f"blk.{i}.attn_k.weight", spec.n_head_kv * hd, d, d ** -0.5),
            (f"blk.{i}.attn_v.weight", spec.n_head_kv * hd, d, d ** -0.5),
            (f"blk.{i}.attn_output.weight", d, spec.n_head * hd, (spec.n_head * hd) ** -0.5),
        ]
        if spec.n_expert == 0:
            out += [
                (f"blk.{i}.ffn_gate.weight", spec.n_ff, d, d ** -0.5),
                (f"blk.{i}.ffn_up.weight", spec.n_ff, d, d ** -0.5),
                (f"blk.{i}.ffn_down.weight", d, spec.n_ff, spec.n_ff ** -0.5),
            ]
    return out


def _expert_matrices(spec: TinySpec) -> list[tuple[str, int, int, float]]:
    """(name, rows, cols, std) of each expert of every stacked expert tensor
    (written as ne = [cols, rows, n_expert])."""
    d, f = spec.n_embd, spec.n_ff_exp
    out = []
    for i in range(spec.n_layer if spec.n_expert else 0):
        out += [
            (f"blk.{i}.ffn_gate_exps.weight", f, d, d ** -0.5),
            (f"blk.{i}.ffn_up_exps.weight", f, d, d ** -0.5),
            (f"blk.{i}.ffn_down_exps.weight", d, f, f ** -0.5),
        ]
    return out


def _norms(spec: TinySpec) -> list[tuple[str, int]]:
    names = ["attn_norm", "ffn_norm"]
    if spec.arch == "gemma3":
        names += ["post_attention_norm", "post_ffw_norm"]
    out = [("output_norm.weight", spec.n_embd)]
    for i in range(spec.n_layer):
        out += [(f"blk.{i}.{n}.weight", spec.n_embd) for n in names]
        if spec.arch in ("gemma3", "qwen3moe"):
            out += [(f"blk.{i}.attn_q_norm.weight", spec.head_dim),
                    (f"blk.{i}.attn_k_norm.weight", spec.head_dim)]
    return out


# ---- the file --------------------------------------------------------------------


def _write_hparams(w: gguf.GGUFWriter, spec: TinySpec) -> None:
    w.add_name(f"tiny-{spec.arch}")
    w.add_context_length(spec.n_ctx_train)
    w.add_embedding_length(spec.n_embd)
    w.add_block_count(spec.n_layer)
    w.add_feed_forward_length(spec.n_ff)
    w.add_head_count(spec.n_head)
    w.add_head_count_kv(spec.n_head_kv)
    w.add_key_length(spec.head_dim)
    w.add_value_length(spec.head_dim)
    w.add_layer_norm_rms_eps(spec.rms_eps)
    if spec.arch == "gemma3":
        w.add_rope_freq_base(spec.rope_base_global)
        w.add_sliding_window(spec.sliding_window)
    else:
        w.add_rope_freq_base(spec.rope_base)
        w.add_rope_dimension_count(spec.head_dim)
    if spec.n_expert:
        w.add_expert_count(spec.n_expert)
        w.add_expert_used_count(spec.n_expert_used)
        w.add_expert_feed_forward_length(spec.n_ff_exp)


def _write_tokenizer(w: gguf.GGUFWriter, spec: TinySpec) -> None:
    tokens, scores, types = tokenizer_vocab(spec)
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(2)
    w.add_eos_token_id(1)
    w.add_unk_token_id(3)
    w.add_pad_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.add_add_space_prefix(spec.arch == "llama")


def write_tiny_model(
    path: str | Path, arch: str, qtype: T, seed: int = 0, chat_template: str | None = None
) -> TinySpec:
    """Writes the tiny `arch` model with matrices of `qtype` to `path`
    (with `chat_template` as tokenizer.chat_template when given)."""
    spec = spec_for(arch)
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), arch)
    _write_hparams(w, spec)
    _write_tokenizer(w, spec)
    if chat_template is not None:
        w.add_chat_template(chat_template)
    write_weights(w, spec, qtype, rng)
    return spec


def write_weights(w: gguf.GGUFWriter, spec: TinySpec, qtype: T, rng: np.random.Generator) -> None:
    """Adds `spec`'s random matrices (in `qtype`) and norms to `w`, then
    writes the file and closes it: the last step of every tiny model."""
    for name, rows, cols, std in _matrices(spec):
        values = (rng.standard_normal((rows, cols)) * std).astype(np.float32)
        data = encode_matrix(values, qtype, rng)
        w.add_tensor(name, data, raw_dtype=qtype if qtype not in (T.F32, T.F16) else None)
    for name, rows, cols, std in _expert_matrices(spec):
        values = (rng.standard_normal((spec.n_expert * rows, cols)) * std).astype(np.float32)
        data = encode_matrix(values, qtype, rng)
        data = data.reshape(spec.n_expert, rows, data.shape[-1])
        w.add_tensor(name, data, raw_dtype=qtype if qtype not in (T.F32, T.F16) else None)
    for i in range(spec.n_layer if spec.n_expert else 0):
        # the router stays F32, as llama.cpp's quantizer leaves it
        router = rng.standard_normal((spec.n_expert, spec.n_embd)) * spec.n_embd ** -0.5
        w.add_tensor(f"blk.{i}.ffn_gate_inp.weight", router.astype(np.float32))
    for name, n in _norms(spec):
        w.add_tensor(name, rng.uniform(0.5, 1.5, size=n).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def model_path(directory: Path, arch: str, qtype: T) -> Path:
    return directory / f"tiny-{arch}-{qtype.name.lower()}.gguf"


def write_all(directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for arch in ARCHITECTURES:
        for qtype in WEIGHT_TYPES:
            path = model_path(directory, arch, qtype)
            write_tiny_model(path, arch, qtype)
            written.append(path)
    return written


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/make_tiny_models.py OUT_DIR")
    for p in write_all(Path(sys.argv[1])):
        print(p)
