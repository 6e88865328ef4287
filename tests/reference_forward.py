"""A numpy reference forward pass for the GGUF architectures the engine runs
(``gemma3``, ``llama``, ``qwen3moe``, ``qwen2``, ``qwen3``, ``phi3``, ``gpt-oss``):
teacher-forced logits for every position of a prompt.

Written for clarity, in float64, from the architecture descriptions (no KV
cache, a full causal mask per layer).  Weights are read with the ``gguf``
package and dequantized with ``gguf.quants``, an implementation independent
of the engine's kernels.

    logits = reference_logits("model.gguf", [2, 17, 99])   # (3, n_vocab)

With ``engine_activations=True`` every product with a quantized weight first
rounds its input as the engine (and llama.cpp) does: to 8 bits per element
in blocks (Q8_0 for the 32-element types, Q8_K for the 256-element ones),
written here from the block formats.  A mixture-of-experts router picks its
experts by comparing scores, so the exact-input reference and the engine
can choose differently where two scores are within the rounding error (a
gap of 1e-3 in the tiny qwen3moe files): the comparison is then only fair
with the engine's rounding.  The rounding is the engine's bit for bit
(test_weight_types.py checks it at every kernel level), not its inputs: this
pass is float64, the engine float32, so a value within about 1e-6 of a
rounding tie can land on the other level here (test_model_logits.py gives
the numbers).

Keys and values (after their norm and RoPE) are rounded to float16, as the
engine's KV cache (and llama.cpp's) stores them; ``kv_f16=False`` keeps them
exact, for an engine context with ``ADIL_KV_TYPE=f32``; ``kv_q8_0=True``
rounds them to Q8_0 blocks of 32 along each head, as a context with
``kv_type="q8_0"`` keeps them (scale max|x| / 127 in float32, stored as a
half; each element round(x / scale) half away from zero).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import GGUFReader, quants

F64 = np.float64


@dataclass(frozen=True)
class Config:
    arch: str
    n_embd: int
    n_layer: int
    n_head: int
    n_head_kv: int
    head_dim: int
    n_rot: int
    rms_eps: float
    rope_base: float
    rope_base_local: float
    sliding_window: int
    swa_period: int  # layer i is local when i % swa_period != swa_period - 1; 0: every layer
    neox: bool  # RoPE pairs (i, i + n_rot/2) instead of (2i, 2i + 1)
    rope_attn_factor: float  # phi3 LongRoPE: multiplies cos / sin
    n_expert: int = 0  # qwen3moe: experts per layer
    n_expert_used: int = 0
    expert_weights_norm: bool = True
    rope_scale: float = 1.0  # linear scaling: positions times 1 / rope.scaling.factor
    yarn_factor: float = 0.0  # > 0: YaRN (rope.scaling.type yarn) with this factor
    yarn_orig_ctx: int = 0  # rope.scaling.original_context_length
    kv_f16: bool = True  # keys and values rounded to float16, as the engine's KV cache stores them
    kv_q8_0: bool = False  # keys and values rounded to Q8_0 blocks instead (kv_type="q8_0")


# NeoX-style RoPE (llama.cpp's LLAMA_ROPE_TYPE_NEOX for these archs)
NEOX_ARCHS = ("gemma3", "qwen3moe", "qwen2", "qwen3", "phi3", "gpt-oss")
# default rope.freq_base / layer_norm_rms_epsilon when a file has none
ROPE_BASE = {"gemma3": 1e6, "qwen3moe": 1e6, "qwen3": 1e6}
RMS_EPS = {"gemma3": 1e-6, "qwen2": 1e-6, "qwen3": 1e-6}


def _field(reader: GGUFReader, key: str, default: Any = None) -> Any:
    field = reader.fields.get(key)
    if field is None:
        if default is None:
            raise KeyError(key)
        return default
    return field.contents()


def read_config(reader: GGUFReader) -> Config:
    arch = str(_field(reader, "general.architecture"))
    n_embd = int(_field(reader, f"{arch}.embedding_length"))
    n_head = int(_field(reader, f"{arch}.attention.head_count"))
    head_dim = int(_field(reader, f"{arch}.attention.key_length", n_embd // n_head))
    # gemma3: 5 of 6 layers local; gpt-oss: the even ones; llama (Mistral):
    # every layer; phi3's window is ignored, as llama.cpp does
    window = int(_field(reader, f"{arch}.attention.sliding_window", 0))
    scaling = str(_field(reader, f"{arch}.rope.scaling.type", "linear"))
    factor = float(_field(reader, f"{arch}.rope.scaling.factor", 1.0))
    yarn = scaling == "yarn"
    return Config(
        arch=arch,
        n_embd=n_embd,
        n_layer=int(_field(reader, f"{arch}.block_count")),
        n_head=n_head,
        n_head_kv=int(_field(reader, f"{arch}.attention.head_count_kv", n_head)),
        head_dim=head_dim,
        n_rot=int(_field(reader, f"{arch}.rope.dimension_count", head_dim)),
        rms_eps=float(_field(reader, f"{arch}.attention.layer_norm_rms_epsilon",
                             RMS_EPS.get(arch, 1e-5))),
        rope_base=float(_field(reader, f"{arch}.rope.freq_base", ROPE_BASE.get(arch, 1e4))),
        rope_base_local=10000.0,
        sliding_window=window if arch in ("gemma3", "llama", "gpt-oss") else 0,
        swa_period={"gemma3": 6, "gpt-oss": 2}.get(arch, 0),
        neox=arch in NEOX_ARCHS,
        rope_attn_factor=float(_field(reader, f"{arch}.rope.scaling.attn_factor", 1.0)),
        n_expert=int(_field(reader, f"{arch}.expert_count", 0)),
        n_expert_used=int(_field(reader, f"{arch}.expert_used_count", 0)),
        expert_weights_norm=bool(_field(reader, f"{arch}.expert_weights_norm", True)),
        rope_scale=1.0 / factor if scaling == "linear" else 1.0,
        yarn_factor=factor if yarn else 0.0,
        yarn_orig_ctx=int(_field(reader, f"{arch}.rope.scaling.original_context_length",
                                 _field(reader, f"{arch}.context_length"))) if yarn else 0,
    )


def read_tensors(reader: GGUFReader) -> dict[str, np.ndarray]:
    """Every tensor dequantized to float64, shaped (rows, cols) / (n,)."""
    out: dict[str, np.ndarray] = {}
    for t in reader.tensors:
        qtype = T(t.tensor_type)
        data = np.asarray(t.data)
        if qtype == T.F32:
            values = data.astype(F64)
        elif qtype == T.F16:
            values = data.view(np.float16).astype(F64)
        else:
            values = quants.dequantize(data, qtype).astype(F64)
        # GGUF ne is innermost first; 3-D expert tensors: (n_expert, rows, cols)
        shape = tuple(int(n) for n in reversed(t.shape))
        out[t.name] = values.reshape(shape)
    return out


# ---- the engine's rounding of activations ---------------------------------------

# Weight types whose activations are Q8_K (256-element blocks); every other
# quantized type uses Q8_0 (Q8_1 rounds the same way).
_Q8_K_TYPES = {T.Q2_K, T.Q3_K, T.Q4_K, T.Q5_K, T.Q6_K, T.IQ4_XS}


def round_q8_0(x: np.ndarray) -> np.ndarray:
    """x through Q8_0: d = amax / 127 (stored as fp16) per 32, q = round(x * (1 / d))
    half away from zero (C's roundf: truncated, plus one where the dropped
    fraction is at least 1/2; floor(|v| + 0.5) would take 0.49999997 to 1)."""
    b = np.asarray(x, dtype=np.float32).reshape(*np.shape(x)[:-1], -1, 32)
    d = np.abs(b).max(axis=-1, keepdims=True) / np.float32(127)
    inv = np.divide(np.float32(1), d, out=np.zeros_like(d), where=d != 0)
    v = b * inv
    t = np.trunc(v)
    q = np.clip(t + np.where(np.abs(v - t) >= np.float32(0.5), np.sign(v), 0), -127, 127)
    return (q * d.astype(np.float16).astype(np.float32)).astype(F64).reshape(np.shape(x))


def round_q8_k(x: np.ndarray) -> np.ndarray:
    """x through Q8_K: per 256, m = the element of largest magnitude,
    q = round(-127 / m * x) half to even, d = 1 / (-127 / m)."""
    b = np.asarray(x, dtype=np.float32).reshape(*np.shape(x)[:-1], -1, 256)
    m = np.take_along_axis(b, np.abs(b).argmax(axis=-1)[..., None], axis=-1)
    iscale = np.divide(np.float32(-127), m, out=np.zeros_like(m), where=m != 0)
    q = np.clip(np.rint(b * iscale), -128, 127)
    d = np.divide(np.float32(1), iscale, out=np.zeros_like(m), where=m != 0)
    return (q * d).astype(F64).reshape(np.shape(x))


class _Weight:
    """A quantized weight whose products round their input first: ``x @ w.T``
    and ``w[e] @ x`` (an expert of a stacked tensor) work as on the array;
    other indexing (embedding rows) gives plain values."""

    __array_ufunc__ = None  # so that x @ w comes here instead of to numpy

    def __init__(self, values: np.ndarray, qtype: T) -> None:
        self.values = values
        self.round = round_q8_k if qtype in _Q8_K_TYPES else round_q8_0
        self.qtype = qtype

    @property
    def T(self) -> _Transposed:  # noqa: N802 (the numpy attribute it stands for)
        return _Transposed(self)

    def __getitem__(self, key: Any) -> Any:
        part = self.values[key]
        if isinstance(key, (int, np.integer)) and part.ndim == 2:
            return _Weight(part, self.qtype)
        return part

    def __matmul__(self, x: np.ndarray) -> np.ndarray:
        return self.values @ self.round(x)


class _Transposed:
    __array_ufunc__ = None

    def __init__(self, w: _Weight) -> None:
        self.w = w

    def __rmatmul__(self, x: np.ndarray) -> np.ndarray:
        return self.w.round(x) @ self.w.values.T


def engine_weights(reader: GGUFReader, w: dict[str, np.ndarray]) -> dict[str, Any]:
    """w with every quantized matrix wrapped to round its inputs as the engine does."""
    types = {t.name: T(t.tensor_type) for t in reader.tensors}
    floats = (T.F32, T.F16, T.BF16)
    return {name: _Weight(v, types[name]) if types[name] not in floats and v.ndim >= 2 else v
            for name, v in w.items()}


# ---- building blocks --------------------------------------------------------------


def rms_norm(x: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def yarn_frequencies(n_rot: int, base: float, factor: float,
                     orig_ctx: int) -> tuple[np.ndarray, float]:
    """YaRN (ggml's rope_yarn, llama.cpp's beta_fast 32 and beta_slow 1):
    each frequency's angle per position, and the magnitude of cos / sin.
    Frequencies that turn more than beta_fast times over the original
    context keep their angle, those turning less than beta_slow times are
    divided by `factor`, with a linear ramp between (over dims, floored /
    ceiled as ggml does)."""
    half = n_rot // 2

    def dim_turning(rotations: float) -> float:
        return n_rot * np.log(orig_ctx / (rotations * 2 * np.pi)) / (2 * np.log(base))

    low, high = max(0.0, np.floor(dim_turning(32.0))), min(n_rot - 1.0, np.ceil(dim_turning(1.0)))
    i = np.arange(half, dtype=F64)
    keep = 1.0 - np.clip((i - low) / max(0.001, high - low), 0.0, 1.0)
    inv = base ** (-2.0 * i / n_rot)
    return inv * (keep + (1.0 - keep) / factor), 1.0 + 0.1 * np.log(factor)


def rope(x: np.ndarray, positions: np.ndarray, n_rot: int, base: float, neox: bool,
         factors: np.ndarray | None = None, mscale: float = 1.0, scale: float = 1.0,
         yarn: tuple[float, int] | None = None) -> np.ndarray:
    """x (T, heads, head_dim): rotates the first n_rot dims of each head;
    frequency i times `scale` and divided by factors[i] when given, cos / sin
    times mscale; or yarn: (factor, original context length) for YaRN."""
    half = n_rot // 2
    inv = scale * base ** (-2.0 * np.arange(half, dtype=F64) / n_rot)
    if factors is not None:
        inv = inv / factors
    if yarn is not None:
        inv, mscale = yarn_frequencies(n_rot, base, *yarn)
    theta = positions[:, None].astype(F64) * inv[None, :]  # (T, half)
    cos = np.cos(theta)[:, None, :] * mscale
    sin = np.sin(theta)[:, None, :] * mscale
    out = x.copy()
    if neox:
        a, b = x[..., :half], x[..., half:n_rot]
        out[..., :half] = a * cos - b * sin
        out[..., half:n_rot] = a * sin + b * cos
    else:
        a, b = x[..., 0:n_rot:2], x[..., 1:n_rot:2]
        out[..., 0:n_rot:2] = a * cos - b * sin
        out[..., 1:n_rot:2] = a * sin + b * cos
    return out


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float,
              window: int, sinks: np.ndarray | None = None) -> np.ndarray:
    """q (T, H, d), k and v (T, Hkv, d): causal, optionally windowed; sinks
    (H): a logit per head that joins each softmax with no value (gpt-oss)."""
    n, n_head, _ = q.shape
    group = n_head // k.shape[1]
    k = np.repeat(k, group, axis=1)
    v = np.repeat(v, group, axis=1)
    scores = np.einsum("thd,shd->hts", q, k) * scale
    pos = np.arange(n)
    visible = pos[None, :] <= pos[:, None]
    if window > 0:
        visible &= pos[:, None] - pos[None, :] < window
    scores = np.where(visible[None], scores, -np.inf)
    if sinks is not None:  # one more column, dropped after the softmax
        scores = np.concatenate([scores, np.broadcast_to(sinks[:, None, None], (n_head, n, 1))],
                                axis=-1)
    scores -= scores.max(axis=-1, keepdims=True)
    weights = np.exp(scores)
    weights /= weights.sum(axis=-1, keepdims=True)
    weights = weights[..., :n]
    return np.einsum("hts,shd->thd", weights, v).reshape(n, -1)


def gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))


def silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


def swiglu_oai(gate: np.ndarray, up: np.ndarray) -> np.ndarray:
    """gpt-oss's gated activation: gate clamped above at 7, up to [-7, 7]."""
    g, u = np.minimum(gate, 7.0), np.clip(up, -7.0, 7.0)
    return g / (1.0 + np.exp(-1.702 * g)) * (u + 1.0)


# ---- the forward pass ----------------------------------------------------------------


def _self_attention(cfg: Config, w: dict[str, np.ndarray], i: int, x: np.ndarray,
                    pos: np.ndarray) -> np.ndarray:
    n = x.shape[0]
    period = cfg.swa_period
    local = cfg.sliding_window > 0 and (period == 0 or i % period != period - 1)
    q, k, v = _qkv(cfg, w, i, x)
    q, k, v = (q.reshape(n, cfg.n_head, cfg.head_dim), k.reshape(n, cfg.n_head_kv, cfg.head_dim),
               v.reshape(n, cfg.n_head_kv, cfg.head_dim))
    if f"blk.{i}.attn_q_norm.weight" in w:  # gemma3, qwen3, qwen3moe
        q = rms_norm(q, w[f"blk.{i}.attn_q_norm.weight"], cfg.rms_eps)
        k = rms_norm(k, w[f"blk.{i}.attn_k_norm.weight"], cfg.rms_eps)
    # gemma3's local layers rotate with their own base
    base = cfg.rope_base_local if local and cfg.arch == "gemma3" else cfg.rope_base
    # phi3 LongRoPE: the long factors (the tests' contexts are longer than the
    # tiny files' original 64 positions) and attn_factor on cos / sin
    factors = w.get("rope_factors_long.weight")
    mscale = cfg.rope_attn_factor if factors is not None else 1.0
    yarn = (cfg.yarn_factor, cfg.yarn_orig_ctx) if cfg.yarn_factor else None
    # gemma3's local layers are never scaled
    scale = 1.0 if local and cfg.arch == "gemma3" else cfg.rope_scale
    q = rope(q, pos, cfg.n_rot, base, cfg.neox, factors, mscale, scale, yarn)
    k = rope(k, pos, cfg.n_rot, base, cfg.neox, factors, mscale, scale, yarn)
    if cfg.kv_q8_0:  # what the KV cache keeps
        k, v = q8_0_rounded(k), q8_0_rounded(v)
    elif cfg.kv_f16:
        k, v = k.astype(np.float16).astype(F64), v.astype(np.float16).astype(F64)
    # gpt-oss: per-head sinks in the softmax, a bias on the output
    att = attention(q, k, v, 1.0 / np.sqrt(cfg.head_dim), cfg.sliding_window if local else 0,
                    w.get(f"blk.{i}.attn_sinks.weight"))
    return att @ w[f"blk.{i}.attn_output.weight"].T + w.get(f"blk.{i}.attn_output.bias", 0.0)


def q8_0_rounded(x: np.ndarray) -> np.ndarray:
    """x (..., d) with d a multiple of 32, rounded to Q8_0 blocks along its
    last axis in float32 as the engine's quantizer does, and widened back."""
    blocks = x.astype(np.float32).reshape(*x.shape[:-1], -1, 32)
    amax = np.abs(blocks).max(axis=-1, keepdims=True)
    d = amax / np.float32(127.0)
    inv = np.divide(np.float32(1.0), d, out=np.zeros_like(d), where=d != 0)
    scaled = blocks * inv
    whole = np.trunc(scaled)  # roundf: half away from zero, exactly
    q = np.clip(whole + np.sign(scaled) * (np.abs(scaled - whole) >= 0.5), -127, 127)
    back = q.astype(F64) * d.astype(np.float16).astype(F64)
    return back.reshape(x.shape)


def _qkv(cfg: Config, w: dict[str, np.ndarray], i: int,
         x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Queries, keys and values (T, rows) of layer i: the separate matrices
    plus their biases (qwen2, gpt-oss), or the rows [q; k; v] of phi3's attn_qkv."""
    if f"blk.{i}.attn_qkv.weight" in w:
        qkv = x @ w[f"blk.{i}.attn_qkv.weight"].T
        nq, nk = cfg.n_head * cfg.head_dim, cfg.n_head_kv * cfg.head_dim
        return qkv[:, :nq], qkv[:, nq:nq + nk], qkv[:, nq + nk:]
    out = []
    for name in ("attn_q", "attn_k", "attn_v"):
        y = x @ w[f"blk.{i}.{name}.weight"].T
        out.append(y + w.get(f"blk.{i}.{name}.bias", 0.0))
    return out[0], out[1], out[2]


def _ffn(cfg: Config, w: dict[str, np.ndarray], i: int, x: np.ndarray) -> np.ndarray:
    act = gelu_tanh if cfg.arch == "gemma3" else silu
    if f"blk.{i}.ffn_gate.weight" in w:
        gate = x @ w[f"blk.{i}.ffn_gate.weight"].T
        up = x @ w[f"blk.{i}.ffn_up.weight"].T
    else:  # phi3: ffn_up holds the rows [gate; up]
        gate, up = np.split(x @ w[f"blk.{i}.ffn_up.weight"].T, 2, axis=1)
    return (act(gate) * up) @ w[f"blk.{i}.ffn_down.weight"].T


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _moe_ffn(cfg: Config, w: dict[str, np.ndarray], i: int, x: np.ndarray) -> np.ndarray:
    """The router (plus its bias, gpt-oss) picks k experts per token, ties to
    the lower id: qwen3moe takes the softmax over all logits, the top k,
    renormalised to sum 1; gpt-oss the top k logits and the softmax over
    those.  Their SwiGLU FFNs (gpt-oss: swiglu-oai, with biases) are summed
    with those weights."""
    p, oss = f"blk.{i}.", cfg.arch == "gpt-oss"
    logits = x @ w[p + "ffn_gate_inp.weight"].T + w.get(p + "ffn_gate_inp.bias", 0.0)
    probs = _softmax(logits)  # (T, n_expert)
    gate = w[p + "ffn_gate_exps.weight"]  # (n_expert, n_ff_exp, n_embd)
    up = w[p + "ffn_up_exps.weight"]
    down = w[p + "ffn_down_exps.weight"]  # (n_expert, n_embd, n_ff_exp)
    zeros = np.zeros((cfg.n_expert, 1))
    bg, bu, bd = (w.get(p + f"ffn_{n}_exps.bias", zeros) for n in ("gate", "up", "down"))
    out = np.zeros_like(x)
    for t in range(x.shape[0]):
        chosen = np.argsort(-logits[t], kind="stable")[: cfg.n_expert_used]
        weights = _softmax(logits[t, chosen]) if oss else probs[t, chosen]
        if cfg.expert_weights_norm and not oss:
            weights = weights / weights.sum()
        for e, wt in zip(chosen, weights, strict=True):
            g, u = gate[e] @ x[t] + bg[e], up[e] @ x[t] + bu[e]
            h = swiglu_oai(g, u) if oss else silu(g) * u
            out[t] += wt * (down[e] @ h + bd[e])
    return out


def forward(cfg: Config, w: dict[str, np.ndarray], ids: np.ndarray) -> np.ndarray:
    """Logits (len(ids), n_vocab) in float64."""
    gemma = cfg.arch == "gemma3"
    pos = np.arange(len(ids))
    x = w["token_embd.weight"][ids]
    if gemma:
        x = x * np.sqrt(cfg.n_embd)
    for i in range(cfg.n_layer):
        h = _self_attention(cfg, w, i, rms_norm(x, w[f"blk.{i}.attn_norm.weight"], cfg.rms_eps),
                            pos)
        if gemma:
            h = rms_norm(h, w[f"blk.{i}.post_attention_norm.weight"], cfg.rms_eps)
        x = x + h
        ffn = _moe_ffn if cfg.n_expert else _ffn
        # gpt-oss calls the norm before its experts post_attention_norm
        norm = "post_attention_norm" if cfg.arch == "gpt-oss" else "ffn_norm"
        h = ffn(cfg, w, i, rms_norm(x, w[f"blk.{i}.{norm}.weight"], cfg.rms_eps))
        if gemma:
            h = rms_norm(h, w[f"blk.{i}.post_ffw_norm.weight"], cfg.rms_eps)
        x = x + h
    x = rms_norm(x, w["output_norm.weight"], cfg.rms_eps)
    output = w.get("output.weight", w["token_embd.weight"])
    return x @ output.T


def reference_logits(path: str | Path, ids: np.ndarray | list[int],
                     engine_activations: bool = False, kv_f16: bool = True,
                     kv_q8_0: bool = False) -> np.ndarray:
    reader = GGUFReader(str(path))
    cfg = dataclasses.replace(read_config(reader), kv_f16=kv_f16, kv_q8_0=kv_q8_0)
    w: dict[str, Any] = read_tensors(reader)
    if engine_activations:
        w = engine_weights(reader, w)
    return forward(cfg, w, np.asarray(ids, dtype=np.int64))
