"""Tiny synthetic GGUF models for the architecture tests.

Each file is a real GGUF of one architecture (``gemma3``, ``llama``,
``qwen3moe``, ``qwen2``, ``qwen3``, ``phi3``, ``gpt-oss``; ``llama-swa`` is a
``llama`` file with Mistral's sliding window on every layer, ``llama-yarn``
one with YaRN rope scaling) with
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

Every file is a function of (arch, weight type, seed) only: the llama.cpp
fixtures (tests/fixtures/tiny/) record the sha256 of each file they were
recorded on, so a change of what this module writes for an existing arch
shows up as a fixture mismatch.  To add an architecture: a spec_for branch,
its tensors in _matrices/_norms/_biases, its keys in _write_hparams, a branch
in reference_forward.py, and the name in ARCHITECTURES (appended: the files
of the other archs must not change).

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

ARCHITECTURES = ("gemma3", "llama", "qwen3moe", "qwen2", "qwen3", "phi3", "llama-swa",
                 "phi3-longrope", "gpt-oss", "llama-yarn")
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
    name: str = ""  # the variant (ARCHITECTURES entry) when not arch: "llama-swa"
    n_rot: int = 0  # rotated dims of a head; 0 = head_dim (phi3: partial rotary)
    attn_bias: bool = False  # qwen2: attn_{q,k,v}.bias
    qk_norm: bool = False  # qwen3 (gemma3 has its own norms list)
    fused: bool = False  # phi3: attn_qkv = [q; k; v], ffn_up = [gate; up]
    # random-byte K-quant blocks of mean 0 (the archs added after the
    # first ones, whose files stay as they were first written)
    centered: bool = False
    # phi3 LongRoPE: rope.scaling.original_context_length (0: none), the
    # rope_factors_short/long tensors and rope.scaling.attn_factor
    n_ctx_orig: int = 0

    @property
    def variant(self) -> str:
        return self.name or self.arch
    yarn_factor: float = 0.0  # > 0: rope.scaling.type yarn with this factor
    yarn_orig_ctx: int = 0  # rope.scaling.original_context_length


def spec_for(arch: str) -> TinySpec:
    if arch == "gemma3":
        return TinySpec(arch="gemma3")
    if arch == "llama":
        return TinySpec(arch="llama", n_layer=3, rms_eps=1e-5, tied_output=False)
    if arch == "qwen3moe":
        return TinySpec(arch="qwen3moe", n_layer=2, tied_output=False, rope_base=1000000.0,
                        n_expert=8, n_expert_used=2, n_ff_exp=256)
    if arch == "llama-swa":  # Mistral 7B v0.1: a window on every layer
        return TinySpec(arch="llama", name="llama-swa", n_layer=3, rms_eps=1e-5, tied_output=False,
                        centered=True)
    if arch == "qwen2":
        return TinySpec(arch="qwen2", n_layer=3, rope_base=1000000.0, attn_bias=True, centered=True)
    if arch == "qwen3":  # head_dim != n_embd / n_head, as in Qwen3-0.6B
        return TinySpec(arch="qwen3", n_layer=3, n_head=8, rope_base=1000000.0, qk_norm=True,
                        centered=True)
    if arch == "phi3":  # partial rotary as Phi-4-mini; the window is ignored (see phi3.c)
        return TinySpec(arch="phi3", n_layer=3, rms_eps=1e-5, tied_output=False, n_rot=32,
                        fused=True, centered=True)
    if arch == "phi3-longrope":  # Phi-3.5 / Phi-4-mini: LongRoPE past 64 positions
        return TinySpec(arch="phi3", name="phi3-longrope", n_layer=3, rms_eps=1e-5,
                        tied_output=False, n_rot=32, fused=True, centered=True, n_ctx_orig=64)
    if arch == "llama-yarn":  # llama with YaRN: factor 4 over 32 original positions
        return TinySpec(arch="llama", name="llama-yarn", n_layer=3, rms_eps=1e-5,
                        tied_output=False, yarn_factor=4.0, yarn_orig_ctx=32)
    if arch == "gpt-oss":
        # gpt-oss-20b in small: 8 query heads of 64 (n_head * head_dim != n_embd),
        # local layers 0 and 2 with a window of 8 (< the prompt), 4 experts
        # top-2, YaRN as the released files (factor 32 over 4096 positions)
        return TinySpec(arch="gpt-oss", n_layer=4, n_head=8, n_head_kv=2, n_ff=256,
                        n_ctx_train=131072, sliding_window=8, rms_eps=1e-5, rope_base=150000.0,
                        tied_output=False, n_expert=4, n_expert_used=2, n_ff_exp=256,
                        yarn_factor=32.0, yarn_orig_ctx=4096)
    raise ValueError(f"unknown architecture {arch!r}; expected one of {ARCHITECTURES}")


# ---- tokenizer ---------------------------------------------------------------

SPECIALS = ("<pad>", "<eos>", "<bos>", "<unk>")
GEMMA_TURNS = ("<start_of_turn>", "<end_of_turn>")
# phi3 LongRoPE's cos / sin multiplier (sqrt(1 + ln(scale) / ln(n_ctx_orig)) in
# the converter; here scale = 4)
LONGROPE_ATTN_FACTOR = 1.1902380714238083
# llama.cpp's vocab loader looks these up by name in a model called "*phi3*"
PHI3_SPECIALS = ("<s>", "</s>", "<|endoftext|>")
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
    if spec.arch == "phi3":
        tokens += PHI3_SPECIALS
        types += [3, 3, 3]
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


def _fp16_fields(blocks: np.ndarray, offsets: tuple[int, ...], values: tuple[float, ...]) -> None:
    for off, value in zip(offsets, values, strict=True):
        blocks[:, off:off + 2] = np.array([value], dtype=np.float16).view(np.uint8)


def _random_block_rows(rows: int, cols: int, qtype: T, std: float,
                  rng: np.random.Generator, centered: bool = False) -> np.ndarray:
    elems, size, offsets = _RANDOM_BLOCKS[qtype]
    blocks = rng.integers(0, 256, size=(rows * cols // elems, size), dtype=np.uint8)
    if qtype in _SCALE_HIGH_BITS:
        _scale_magnitudes(qtype, blocks, rng)
    shape = (rows, cols // elems * size)
    unit = (1.0,) * len(offsets)
    if centered and len(offsets) == 2:
        # x = d * a - dmin * b: random bytes make both terms positive on
        # average (weights of mean ~ std), so activations grow layer by
        # layer; dmin / d = mean(a) / mean(b) makes the mean 0
        _fp16_fields(blocks, offsets, (1.0, 0.0))
        mean_a = float(quants.dequantize(blocks.reshape(shape), qtype).mean())
        _fp16_fields(blocks, offsets, (0.0, -1.0))
        mean_b = float(quants.dequantize(blocks.reshape(shape), qtype).mean())
        unit = (1.0, mean_a / mean_b)
    _fp16_fields(blocks, offsets, unit)
    spread = float(quants.dequantize(blocks.reshape(shape), qtype).std())
    _fp16_fields(blocks, offsets, tuple(u * std / spread for u in unit))
    return blocks.reshape(shape)


def encode_matrix(values: np.ndarray, qtype: T, rng: np.random.Generator,
                  centered: bool = False) -> np.ndarray:
    """`values` (rows, cols) float32 as stored in a tensor of `qtype`
    (centered: random-byte blocks of mean 0, see _random_block_rows)."""
    if qtype == T.F32:
        return values.astype(np.float32)
    if qtype == T.F16:
        return values.astype(np.float16)
    if qtype in _RANDOM_BLOCKS:
        return _random_block_rows(values.shape[0], values.shape[1], qtype, float(values.std()),
                                  rng, centered)
    return quants.quantize(values.astype(np.float32), qtype)


def _matrices(spec: TinySpec) -> list[tuple[str, int, int, float]]:
    """(name, rows, cols, std) of every matrix."""
    d, hd = spec.n_embd, spec.head_dim
    out = [("token_embd.weight", spec.n_vocab, d, 1.0 if spec.arch in ("llama", "phi3") else 0.1)]
    if not spec.tied_output:
        out.append(("output.weight", spec.n_vocab, d, d ** -0.5))
    for i in range(spec.n_layer):
        if spec.fused:
            qkv_rows = (spec.n_head + 2 * spec.n_head_kv) * hd
            attn = [(f"blk.{i}.attn_qkv.weight", qkv_rows, d, d ** -0.5)]
        else:
            attn = [
                (f"blk.{i}.attn_q.weight", spec.n_head * hd, d, d ** -0.5),
                (f"blk.{i}.attn_k.weight", spec.n_head_kv * hd, d, d ** -0.5),
                (f"blk.{i}.attn_v.weight", spec.n_head_kv * hd, d, d ** -0.5),
            ]
        n_att = spec.n_head * hd
        attn.append((f"blk.{i}.attn_output.weight", d, n_att, n_att ** -0.5))
        if spec.fused:
            ffn = [(f"blk.{i}.ffn_up.weight", 2 * spec.n_ff, d, d ** -0.5)]
        else:
            ffn = [
                (f"blk.{i}.ffn_gate.weight", spec.n_ff, d, d ** -0.5),
                (f"blk.{i}.ffn_up.weight", spec.n_ff, d, d ** -0.5),
            ]
        out += attn
        if spec.n_expert == 0:
            out += ffn + [(f"blk.{i}.ffn_down.weight", d, spec.n_ff, spec.n_ff ** -0.5)]
    return out


def _expert_matrices(spec: TinySpec) -> list[tuple[str, int, int, float]]:
    """(name, rows, cols, std) of each expert of every stacked expert tensor
    (written as ne = [cols, rows, n_expert]).  gpt-oss's gate and up are
    spread 3 times wider, so that swiglu-oai's clamps at 7 are reached."""
    d, f = spec.n_embd, spec.n_ff_exp
    wide = 3.0 if spec.arch == "gpt-oss" else 1.0
    out = []
    for i in range(spec.n_layer if spec.n_expert else 0):
        out += [
            (f"blk.{i}.ffn_gate_exps.weight", f, d, wide * d ** -0.5),
            (f"blk.{i}.ffn_up_exps.weight", f, d, wide * d ** -0.5),
            (f"blk.{i}.ffn_down_exps.weight", d, f, f ** -0.5),
        ]
    return out


def _gpt_oss_vectors(spec: TinySpec) -> list[tuple[str, tuple[int, ...], float]]:
    """(name, numpy shape, std) of gpt-oss's F32 extras: attention biases and
    sinks, the router's and the experts' biases."""
    if spec.arch != "gpt-oss":
        return []
    d, hd, e, f = spec.n_embd, spec.head_dim, spec.n_expert, spec.n_ff_exp
    out: list[tuple[str, tuple[int, ...], float]] = []
    for i in range(spec.n_layer):
        out += [(f"blk.{i}.attn_q.bias", (spec.n_head * hd,), 0.5),
                (f"blk.{i}.attn_k.bias", (spec.n_head_kv * hd,), 0.5),
                (f"blk.{i}.attn_v.bias", (spec.n_head_kv * hd,), 0.5),
                (f"blk.{i}.attn_output.bias", (d,), 0.5),
                (f"blk.{i}.attn_sinks.weight", (spec.n_head,), 1.0),
                (f"blk.{i}.ffn_gate_inp.bias", (e,), 0.5),
                (f"blk.{i}.ffn_gate_exps.bias", (e, f), 0.5),
                (f"blk.{i}.ffn_up_exps.bias", (e, f), 0.5),
                (f"blk.{i}.ffn_down_exps.bias", (e, d), 0.5)]
    return out


def _norms(spec: TinySpec) -> list[tuple[str, int]]:
    # gpt-oss names the norm before its experts post_attention_norm
    names = ["attn_norm", "post_attention_norm" if spec.arch == "gpt-oss" else "ffn_norm"]
    if spec.arch == "gemma3":
        names += ["post_attention_norm", "post_ffw_norm"]
    out = [("output_norm.weight", spec.n_embd)]
    for i in range(spec.n_layer):
        out += [(f"blk.{i}.{n}.weight", spec.n_embd) for n in names]
        if spec.arch in ("gemma3", "qwen3moe") or spec.qk_norm:
            out += [(f"blk.{i}.attn_q_norm.weight", spec.head_dim),
                    (f"blk.{i}.attn_k_norm.weight", spec.head_dim)]
    return out


def _biases(spec: TinySpec) -> list[tuple[str, int]]:
    """(name, n) of every bias vector (qwen2's q/k/v)."""
    if not spec.attn_bias:
        return []
    out = []
    for i in range(spec.n_layer):
        out += [(f"blk.{i}.attn_q.bias", spec.n_head * spec.head_dim),
                (f"blk.{i}.attn_k.bias", spec.n_head_kv * spec.head_dim),
                (f"blk.{i}.attn_v.bias", spec.n_head_kv * spec.head_dim)]
    return out


# ---- the file --------------------------------------------------------------------


def _write_hparams(w: gguf.GGUFWriter, spec: TinySpec) -> None:
    w.add_name(f"tiny-{spec.variant}")
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
    elif spec.arch == "gpt-oss":  # as convert_hf_to_gguf writes it: no rope dims
        w.add_rope_freq_base(spec.rope_base)
        w.add_sliding_window(spec.sliding_window)
    else:
        w.add_rope_freq_base(spec.rope_base)
        w.add_rope_dimension_count(spec.n_rot or spec.head_dim)
    if spec.variant in ("llama-swa", "phi3", "phi3-longrope"):
        w.add_sliding_window(spec.sliding_window)
    if spec.n_ctx_orig:
        w.add_rope_scaling_orig_ctx_len(spec.n_ctx_orig)
        w.add_rope_scaling_attn_factors(LONGROPE_ATTN_FACTOR)
    if spec.n_expert:
        w.add_expert_count(spec.n_expert)
        w.add_expert_used_count(spec.n_expert_used)
        w.add_expert_feed_forward_length(spec.n_ff_exp)
    if spec.yarn_factor:
        w.add_rope_scaling_type(gguf.RopeScalingType.YARN)
        w.add_rope_scaling_factor(spec.yarn_factor)
        w.add_rope_scaling_orig_ctx_len(spec.yarn_orig_ctx)


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
    path: str | Path, arch: str, qtype: T, seed: int = 0, chat_template: str | None = None,
    spec: TinySpec | None = None,
) -> TinySpec:
    """Writes the tiny `arch` model with matrices of `qtype` to `path`
    (with `chat_template` as tokenizer.chat_template when given; `spec`:
    other shapes than spec_for(arch)'s)."""
    spec = spec or spec_for(arch)
    rng = np.random.default_rng(seed)
    w = gguf.GGUFWriter(str(path), spec.arch)
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
        data = encode_matrix(values, qtype, rng, centered=spec.centered)
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
        values = rng.uniform(0.5, 1.5, size=n).astype(np.float32)
        if spec.qk_norm and ("attn_q_norm" in name or "attn_k_norm" in name):
            # halved: unit-RMS heads of 64 make sharp attention, where the
            # 8-bit activations of the quantized types move logits by up to
            # 6% (the numpy reference multiplies exactly); at half, by <= 3%
            values *= 0.5
        w.add_tensor(name, values)
    for name, n in _biases(spec):
        w.add_tensor(name, (rng.standard_normal(n) * 0.5).astype(np.float32))
    if spec.n_ctx_orig:  # fixed values: no draws from rng
        half = (spec.n_rot or spec.head_dim) // 2
        w.add_tensor("rope_factors_long.weight", np.linspace(1.0, 8.0, half, dtype=np.float32))
        w.add_tensor("rope_factors_short.weight", np.linspace(1.0, 1.5, half, dtype=np.float32))
    for name, shape, std in _gpt_oss_vectors(spec):
        w.add_tensor(name, (rng.standard_normal(shape) * std).astype(np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def model_path(directory: Path, arch: str, qtype: T) -> Path:
    return directory / f"tiny-{arch}-{qtype.name.lower()}.gguf"


def write_tiny(directory: Path, arch: str, qtype: T) -> Path:
    """The tiny `arch` model of `qtype` written to its model_path in `directory`."""
    path = model_path(directory, arch, qtype)
    write_tiny_model(path, arch, qtype)
    return path


def write_all(directory: Path, archs: tuple[str, ...] = ARCHITECTURES) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for arch in archs:
        for qtype in WEIGHT_TYPES:
            written.append(write_tiny(directory, arch, qtype))
    return written


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tests/make_tiny_models.py OUT_DIR")
    for p in write_all(Path(sys.argv[1])):
        print(p)
