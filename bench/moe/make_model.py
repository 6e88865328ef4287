"""Writes the two random-weight GGUF files of the mixture-of-experts bench
(bench/moe/README.md): a Qwen3-MoE-shaped model and a dense llama-shaped
model with the same active parameters per token, every matrix Q4_K.

    qwen3moe: 16 layers, width 1024, 16 query heads x 128 (2 KV heads),
              64 experts of 512, 8 per token, vocab 32000, own output head
              -> 1.75 B parameters, 0.31 B active per token
    llama:    the same attention and vocab, one dense FFN of 8 x 512 = 4096
              -> 0.31 B parameters, all active

With ``--llama-1b`` it writes instead the dense model of the decode roofline
(issue 14 item 3), a 1.1 B-parameter llama shape whose 0.7 GB of weights lie
far beyond any cache, in Q4_K_M's mix as llama.cpp's quantizer makes it:

    llama-1b: 16 layers, width 2048, 32 query heads x 64 (8 KV heads), FFN
              8192, vocab 32000, own output head; Q4_K everywhere except
              Q6_K for the output head and for attn_v and ffn_down of the
              layers Q4_K_M gives more bits (the first and last eighth and
              every third between)  -> 1.1 B parameters

The weights are random blocks (the scale fields set for a spread of about
0.02), the router float32 and random, so tokens spread over the experts
roughly evenly, as in a trained model; the logits mean nothing.  The files
(about 1 GB and 0.2 GB) go into a cache directory outside the repository and
are never committed:

    python bench/moe/make_model.py [OUT_DIR]   # default ~/.cache/adil-bench/moe
    python bench/moe/make_model.py --llama-1b [OUT_DIR]
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))
from make_tiny_models import TinySpec, tokenizer_vocab  # noqa: E402

Q4_K_BLOCK = (256, 144)  # elements, bytes; d and dmin are the fp16s at bytes 0 and 2
Q6_K_BLOCK = (256, 210)  # elements, bytes; d is the fp16 at bytes 208, after 16 int8 scales
SPREAD = 0.02


@dataclass(frozen=True)
class Shape:
    arch: str
    n_vocab: int = 32000
    n_embd: int = 1024
    n_layer: int = 16
    n_head: int = 16
    n_head_kv: int = 2
    head_dim: int = 128
    n_ff: int = 4096  # dense FFN; qwen3moe: feed_forward_length as its converter writes it
    n_expert: int = 0
    n_expert_used: int = 0
    n_ff_exp: int = 0


MOE = Shape("qwen3moe", n_expert=64, n_expert_used=8, n_ff_exp=512)
DENSE = Shape("llama")
LLAMA_1B = Shape("llama", n_embd=2048, n_head=32, n_head_kv=8, head_dim=64, n_ff=8192)


def _scale_field(rng: np.random.Generator) -> np.ndarray:
    """The fp16 value of d and dmin that gives random Q4_K blocks a spread of SPREAD."""
    blocks = rng.integers(0, 256, size=(64, Q4_K_BLOCK[1]), dtype=np.uint8)
    blocks[:, 0:4] = np.array([1.0, 1.0], dtype=np.float16).view(np.uint8)
    spread = float(quants.dequantize(blocks.reshape(1, -1), T.Q4_K).std())
    return np.array([SPREAD / spread], dtype=np.float16).view(np.uint8)


def _q6_k_scale_field(rng: np.random.Generator) -> np.ndarray:
    """The fp16 d that gives random Q6_K blocks (scales 1..15) a spread of SPREAD."""
    blocks = _q6_k_blocks(64, np.array([1.0], dtype=np.float16).view(np.uint8), rng)
    spread = float(quants.dequantize(blocks.reshape(1, -1), T.Q6_K).std())
    return np.array([SPREAD / spread], dtype=np.float16).view(np.uint8)


def _q6_k_blocks(n_blocks: int, d: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    blocks = rng.integers(0, 256, size=(n_blocks, Q6_K_BLOCK[1]), dtype=np.uint8)
    blocks[:, 192:208] = rng.integers(1, 16, size=(n_blocks, 16), dtype=np.uint8)
    blocks[:, 208:210] = d
    return blocks


def q6_k(shape: tuple[int, ...], d: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Random Q6_K blocks for a tensor of `shape`, as q4_k."""
    *outer, cols = shape
    blocks = _q6_k_blocks(int(np.prod(outer)) * cols // Q6_K_BLOCK[0], d, rng)
    return blocks.reshape(*outer, cols // Q6_K_BLOCK[0] * Q6_K_BLOCK[1])


def q4_k_m_type(name: str, n_layer: int) -> T:
    """The type llama.cpp's Q4_K_M gives a tensor of a llama-shaped model."""
    if name == "output.weight":
        return T.Q6_K
    if name.endswith(("attn_v.weight", "ffn_down.weight")):
        i = int(name.split(".")[1])
        more_bits = i < n_layer // 8 or i >= 7 * n_layer // 8 or (i - n_layer // 8) % 3 == 2
        return T.Q6_K if more_bits else T.Q4_K
    return T.Q4_K


def q4_k(shape: tuple[int, ...], scale: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Random Q4_K blocks for a tensor of `shape` (numpy order, the last
    dimension the row), as the byte array GGUFWriter takes."""
    *outer, cols = shape
    n_blocks = int(np.prod(outer)) * cols // Q4_K_BLOCK[0]
    blocks = rng.integers(0, 256, size=(n_blocks, Q4_K_BLOCK[1]), dtype=np.uint8)
    blocks[:, 0:2] = scale
    blocks[:, 2:4] = scale
    return blocks.reshape(*outer, cols // Q4_K_BLOCK[0] * Q4_K_BLOCK[1])


def _hparams(w: gguf.GGUFWriter, s: Shape) -> None:
    w.add_name(f"bench-{s.arch}")
    w.add_context_length(4096)
    w.add_embedding_length(s.n_embd)
    w.add_block_count(s.n_layer)
    w.add_feed_forward_length(s.n_ff)
    w.add_head_count(s.n_head)
    w.add_head_count_kv(s.n_head_kv)
    w.add_key_length(s.head_dim)
    w.add_value_length(s.head_dim)
    w.add_rope_dimension_count(s.head_dim)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_rope_freq_base(1000000.0)
    if s.n_expert:
        w.add_expert_count(s.n_expert)
        w.add_expert_used_count(s.n_expert_used)
        w.add_expert_feed_forward_length(s.n_ff_exp)


def _tokenizer(w: gguf.GGUFWriter, s: Shape) -> None:
    tokens, scores, types = tokenizer_vocab(TinySpec(arch="llama", n_vocab=s.n_vocab))
    w.add_tokenizer_model("llama")
    w.add_tokenizer_pre("default")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(types)
    w.add_bos_token_id(2)
    w.add_eos_token_id(1)
    w.add_unk_token_id(3)
    w.add_add_bos_token(True)


def _tensors(s: Shape) -> list[tuple[str, tuple[int, ...]]]:
    """(name, numpy shape) of every Q4_K tensor."""
    d, q, kv = s.n_embd, s.n_head * s.head_dim, s.n_head_kv * s.head_dim
    out: list[tuple[str, tuple[int, ...]]] = [("token_embd.weight", (s.n_vocab, d)),
                                              ("output.weight", (s.n_vocab, d))]
    for i in range(s.n_layer):
        out += [(f"blk.{i}.attn_q.weight", (q, d)), (f"blk.{i}.attn_k.weight", (kv, d)),
                (f"blk.{i}.attn_v.weight", (kv, d)), (f"blk.{i}.attn_output.weight", (d, q))]
        if s.n_expert:
            e, f = s.n_expert, s.n_ff_exp
            out += [(f"blk.{i}.ffn_gate_exps.weight", (e, f, d)),
                    (f"blk.{i}.ffn_up_exps.weight", (e, f, d)),
                    (f"blk.{i}.ffn_down_exps.weight", (e, d, f))]
        else:
            out += [(f"blk.{i}.ffn_gate.weight", (s.n_ff, d)),
                    (f"blk.{i}.ffn_up.weight", (s.n_ff, d)),
                    (f"blk.{i}.ffn_down.weight", (d, s.n_ff))]
    return out


def _f32_tensors(s: Shape, rng: np.random.Generator) -> list[tuple[str, np.ndarray]]:
    """Norms (about 1) and the routers (float32, as llama.cpp's quantizer leaves them)."""
    ones = lambda n: rng.uniform(0.8, 1.2, size=n).astype(np.float32)  # noqa: E731
    out = [("output_norm.weight", ones(s.n_embd))]
    for i in range(s.n_layer):
        out += [(f"blk.{i}.attn_norm.weight", ones(s.n_embd)),
                (f"blk.{i}.ffn_norm.weight", ones(s.n_embd))]
        if s.n_expert:
            out += [(f"blk.{i}.attn_q_norm.weight", ones(s.head_dim)),
                    (f"blk.{i}.attn_k_norm.weight", ones(s.head_dim))]
            router = rng.standard_normal((s.n_expert, s.n_embd)) * s.n_embd ** -0.5
            out.append((f"blk.{i}.ffn_gate_inp.weight", router.astype(np.float32)))
    return out


def write(path: Path, s: Shape, seed: int = 0, mix: bool = False) -> None:
    """Writes model `s`: every matrix Q4_K, or with `mix` in Q4_K_M's types."""
    rng = np.random.default_rng(seed)
    scale = _scale_field(rng)
    d6 = _q6_k_scale_field(rng) if mix else scale  # (the Q4_K-only files as they always were)
    w = gguf.GGUFWriter(str(path), s.arch)
    _hparams(w, s)
    _tokenizer(w, s)
    for name, shape in _tensors(s):
        kind = q4_k_m_type(name, s.n_layer) if mix else T.Q4_K
        data = q6_k(shape, d6, rng) if kind == T.Q6_K else q4_k(shape, scale, rng)
        w.add_tensor(name, data, raw_dtype=kind)
    for name, values in _f32_tensors(s, rng):
        w.add_tensor(name, values)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def main() -> None:
    args = sys.argv[1:]
    llama_1b = "--llama-1b" in args
    args = [a for a in args if a != "--llama-1b"]
    out = Path(args[0]) if args else Path.home() / ".cache" / "adil-bench" / "moe"
    out.mkdir(parents=True, exist_ok=True)
    files = ((LLAMA_1B, "llama-1b-bench-q4_k_m.gguf", True),) if llama_1b else (
        (MOE, "qwen3moe-bench-q4_k.gguf", False), (DENSE, "llama-dense-bench-q4_k.gguf", False))
    for shape, name, mix in files:
        path = out / name
        if not path.exists():
            write(path, shape, mix=mix)
        print(path)


if __name__ == "__main__":
    main()
