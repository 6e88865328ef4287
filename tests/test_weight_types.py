"""Weight types: the engine's dequantizers, quantizers and dot products against
the `gguf` package's numpy implementations (an independent oracle), on random
data.  They run with the kernels of the CPU level the engine selects (ADIL_CPU);
test_kernels_levels.py runs this file once per level the machine supports.

Error budgets of the dot products (relative to sum |w_i x_i|, the scale of the
result):
  * against dequant(w) · dequant(quantized x), i.e. the same maths in float64:
    DOT_BUDGET_SAME_MATH = 1e-5 (float32 accumulation order only);
  * against the exact dequant(w) · x: the activations' 8-bit quantization,
    DOT_BUDGET_Q8 = 2e-2 for the quantized types, 1e-6 for F32/F16/BF16.
"""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from gguf import quants
from gguf_hooks import ADIL_OK, ADIL_STATUS_INVALID_ARGUMENT, Hooks, hooks
from reference_forward import round_q8_0, round_q8_k

DOT_BUDGET_SAME_MATH = 1e-5
DOT_BUDGET_Q8 = 2e-2
DOT_BUDGET_FLOAT = 1e-6

# type -> (block elements, block bytes, byte offsets of fp16 scale fields)
# (MXFP4's scale is an E8M0 byte instead: E8M0_SCALE)
BLOCKS: dict[T, tuple[int, int, tuple[int, ...]]] = {
    T.Q4_0: (32, 18, (0,)),
    T.Q4_1: (32, 20, (0, 2)),
    T.Q5_0: (32, 22, (0,)),
    T.Q5_1: (32, 24, (0, 2)),
    T.Q8_0: (32, 34, (0,)),
    T.IQ4_NL: (32, 18, (0,)),
    T.MXFP4: (32, 17, ()),
    T.Q2_K: (256, 84, (80, 82)),
    T.Q3_K: (256, 110, (108,)),
    T.Q4_K: (256, 144, (0, 2)),
    T.Q5_K: (256, 176, (0, 2)),
    T.Q6_K: (256, 210, (208,)),
    T.IQ4_XS: (256, 136, (0,)),
}
FLOATS = (T.F32, T.F16, T.BF16)
QUANTIZED = tuple(BLOCKS)
ACTIVATION = {
    t: (T.Q8_K if BLOCKS[t][0] == 256 else T.Q8_1 if t in (T.Q4_1, T.Q5_1) else T.Q8_0)
    for t in QUANTIZED
}
# type -> byte offset of an E8M0 scale byte (2^(e - 127)) in its block.
E8M0_SCALE = {T.MXFP4: 0}
# The gguf package can quantize these (bit-exact reference rounding).
QUANTIZABLE = (T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.MXFP4, T.BF16)


@pytest.fixture(scope="module")
def lib() -> Hooks:
    return hooks()


def random_row(qtype: T, n: int, rng: np.random.Generator) -> np.ndarray:
    """Raw bytes of a row of n elements: random bits, scale fields set to sane
    fp16 values (random bits there would give inf/NaN)."""
    if qtype == T.F32:
        return rng.standard_normal(n).astype(np.float32).view(np.uint8)
    if qtype == T.F16:
        return rng.standard_normal(n).astype(np.float16).view(np.uint8)
    if qtype == T.BF16:
        return quants.quantize(rng.standard_normal(n).astype(np.float32), T.BF16).reshape(-1)
    elems, size, scale_offsets = BLOCKS[qtype]
    blocks = rng.integers(0, 256, size=(n // elems, size), dtype=np.uint8)
    for off in scale_offsets:
        scales = rng.uniform(-0.05, 0.05, size=n // elems).astype(np.float16)
        blocks[:, off : off + 2] = scales.view(np.uint8).reshape(-1, 2)
    if qtype in E8M0_SCALE:  # scales 2^-15 .. 2^0 (with the doubled E2M1 table)
        off = E8M0_SCALE[qtype]
        blocks[:, off] = rng.integers(112, 128, size=n // elems, dtype=np.uint8)
    return blocks.reshape(-1)


def oracle_dequantize(qtype: T, raw: np.ndarray) -> np.ndarray:
    if qtype == T.F32:
        return raw.view(np.float32)
    if qtype == T.F16:
        return raw.view(np.float16).astype(np.float32)
    return quants.dequantize(raw, qtype).reshape(-1).astype(np.float32)


def relative_error(got: float, want: float, scale: float) -> float:
    return abs(got - want) / max(scale, 1e-30)


@pytest.mark.parametrize("qtype", FLOATS + QUANTIZED, ids=lambda t: t.name)
def test_row_size(lib: Hooks, qtype: T) -> None:
    elems, size = quants.GGML_QUANT_SIZES[qtype]
    assert lib.row_size(qtype, 4 * elems) == 4 * size
    if elems > 1:
        assert lib.row_size(qtype, elems + 1) == 0  # not whole blocks


@pytest.mark.parametrize("qtype", FLOATS + QUANTIZED, ids=lambda t: t.name)
def test_dequantize_matches_oracle(lib: Hooks, qtype: T) -> None:
    rng = np.random.default_rng(int(qtype))
    n = 1024
    raw = random_row(qtype, n, rng)
    got = lib.dequantize(qtype, raw, n)
    want = oracle_dequantize(qtype, raw)
    # Same float32 operations in the same order: bit-identical.
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("qtype", QUANTIZABLE, ids=lambda t: t.name)
def test_quantize_matches_oracle(lib: Hooks, qtype: T) -> None:
    rng = np.random.default_rng(100 + int(qtype))
    x = rng.standard_normal(2048).astype(np.float32) * 3
    x[:32] = 0.0  # an all-zero block
    x[40] = np.float32(1e-3)
    want = quants.quantize(x, qtype).reshape(-1)
    np.testing.assert_array_equal(lib.quantize(qtype, x), want)


def test_mxfp4_quantize_ties(lib: Hooks) -> None:
    """Values exactly between two E2M1 levels go to the first code in the table
    (as the gguf package's argmin and ggml's search); -0 and +0 both to code 0;
    largest magnitudes of every binade, subnormal scales included."""
    grid = np.array([0, 0.25, 0.5, 0.75, 1, 1.25, 1.5, 1.75, 2, 2.5, 3, 3.5, 4, 5, 6, 5.5],
                    dtype=np.float32)
    blocks = [np.concatenate([grid, -grid]), np.concatenate([grid, -grid])[::-1] * 4]
    blocks += [np.full(32, -0.0, dtype=np.float32)]
    blocks += [np.linspace(-1, 1, 32, dtype=np.float32) * np.float32(2.0) ** k
               for k in (-120, -60, -3, 0, 7, 60)]
    x = np.concatenate(blocks).astype(np.float32)
    np.testing.assert_array_equal(lib.quantize(T.MXFP4, x), quants.quantize(x, T.MXFP4).reshape(-1))


def test_f16_quantize_matches_numpy(lib: Hooks) -> None:
    rng = np.random.default_rng(7)
    x = np.concatenate(
        [
            rng.standard_normal(1000).astype(np.float32) * 1000,
            np.array(
                [65504, 65519.99, 65520, 1e-8, 6e-8, 3e-8, -0.0, np.inf, -np.inf], dtype=np.float32
            ),
            (rng.standard_normal(100) * 1e-5).astype(np.float32),  # subnormal halves
        ]
    )
    with np.errstate(over="ignore"):  # 65520 and up overflow to inf, as intended
        want = x.astype(np.float16).view(np.uint8)
    np.testing.assert_array_equal(lib.quantize(T.F16, x), want)


def reference_q8_K(x: np.ndarray) -> np.ndarray:
    """Q8_K as described in weight_types.h: per 256 elements the value of
    largest magnitude maps to -127, ties to even, float32 d, int16 sums of 16."""
    out = []
    for block in x.reshape(-1, 256).astype(np.float32):
        i = int(np.argmax(np.abs(block)))
        if block[i] == 0:
            out.append(np.zeros(4 + 256 + 32, dtype=np.uint8))
            continue
        iscale = np.float32(-127.0) / block[i]
        q = np.clip(np.rint(iscale * block), -128, 127).astype(np.int8)
        bsums = q.astype(np.int16).reshape(16, 16).sum(axis=1).astype(np.int16)
        d = np.array([np.float32(1.0) / iscale], dtype=np.float32)
        out.append(np.concatenate([d.view(np.uint8), q.view(np.uint8), bsums.view(np.uint8)]))
    return np.concatenate(out)


def test_q8_K_quantize(lib: Hooks) -> None:
    rng = np.random.default_rng(8)
    x = rng.standard_normal(1024).astype(np.float32)
    x[256:512] = 0.0
    np.testing.assert_array_equal(lib.quantize(T.Q8_K, x), reference_q8_K(x))


def reference_q8_1(x: np.ndarray) -> np.ndarray:
    """Q8_1 as described in weight_types.h: the Q8_0 block (the gguf package's
    reference rounding) with s = fp16(sum(q) * d) after d, d in float32 before
    its own rounding to fp16."""
    q8_0 = quants.quantize(x, T.Q8_0).reshape(-1, 34)
    qs = q8_0[:, 2:].view(np.int8)
    d = np.abs(x.astype(np.float32).reshape(-1, 32)).max(axis=1) / np.float32(127)
    s = (qs.astype(np.int32).sum(axis=1).astype(np.float32) * d).astype(np.float16)
    blocks = [q8_0[:, :2], s.view(np.uint8).reshape(-1, 2), q8_0[:, 2:]]
    return np.concatenate(blocks, axis=1).reshape(-1)


def test_q8_1_quantize(lib: Hooks) -> None:
    rng = np.random.default_rng(9)
    x = rng.standard_normal(1024).astype(np.float32) * 5
    x[64:96] = 0.0
    np.testing.assert_array_equal(lib.quantize(T.Q8_1, x), reference_q8_1(x))


def near_tie_rows(rng: np.random.Generator) -> np.ndarray:
    """8 blocks of 256 whose largest magnitude is 127 (Q8_0's and Q8_K's scale is
    then 1 or -1, exact), so every value is its own level: halves k + 1/2, their
    float neighbours, 0.49999997; then the same rows times 2^-10 (exact) and times
    3 (1 / d inexact, so the rounding of the products decides)."""
    halves = rng.integers(-127, 127, size=2048).astype(np.float32) + np.float32(0.5)
    side = rng.integers(0, 3, size=2048)  # the half itself, the float below, above
    x = np.where(side == 0, halves, np.nextafter(halves, np.where(side == 1, -np.inf, np.inf)))
    x[::29] = np.float32(0.49999997) * np.where(rng.integers(0, 2, x[::29].size) == 0, -1, 1)
    x[::32] = np.float32(127)  # each 32 (and so each 256) holds 127
    x = x.astype(np.float32)
    return np.concatenate([x, x * np.float32(2**-10), x * np.float32(3)])


@pytest.mark.parametrize("qtype", (T.Q8_0, T.Q8_K), ids=lambda t: t.name)
def test_reference_forward_rounds_as_the_engine(lib: Hooks, qtype: T) -> None:
    """reference_forward.round_q8_0 / round_q8_k (the rounding reference of the
    logits tests) give the engine's quantized activations bit for bit, near
    rounding ties too: the only difference left between that reference and the
    engine is the float32 rounding of the inputs themselves."""
    rng = np.random.default_rng(10)
    x = np.concatenate([near_tie_rows(rng), rng.standard_normal(2048).astype(np.float32) * 3])
    want = lib.dequantize(qtype, lib.quantize(qtype, x), x.size)
    got = (round_q8_0 if qtype == T.Q8_0 else round_q8_k)(x)
    np.testing.assert_array_equal(got, want.astype(np.float64))


def quantized_activation(lib: Hooks, qtype: T, x: np.ndarray) -> np.ndarray:
    """x as the kernel sees it: quantized to the activation type and back."""
    act = ACTIVATION[qtype]
    raw = lib.quantize(act, x)
    if act == T.Q8_0:  # our activation quantizer is the reference Q8_0
        np.testing.assert_array_equal(raw, quants.quantize(x, T.Q8_0).reshape(-1))
    if act == T.Q8_1:
        np.testing.assert_array_equal(raw, reference_q8_1(x))
    return lib.dequantize(act, raw, x.size).astype(np.float64)


@pytest.mark.parametrize("qtype", FLOATS + QUANTIZED, ids=lambda t: t.name)
def test_vec_dot_within_budget(lib: Hooks, qtype: T) -> None:
    rng = np.random.default_rng(200 + int(qtype))
    for n in (256, 2048):
        raw = random_row(qtype, n, rng)
        x = rng.standard_normal(n).astype(np.float32)
        w = oracle_dequantize(qtype, raw).astype(np.float64)
        got = lib.vec_dot(qtype, raw, x)
        scale = float(np.sum(np.abs(w * x)))
        exact = float(w @ x.astype(np.float64))
        if qtype in FLOATS:
            assert relative_error(got, exact, scale) <= DOT_BUDGET_FLOAT
            continue
        same_math = float(w @ quantized_activation(lib, qtype, x))
        assert relative_error(got, same_math, scale) <= DOT_BUDGET_SAME_MATH
        assert relative_error(got, exact, scale) <= DOT_BUDGET_Q8


@pytest.mark.parametrize(
    "qtype",
    (T.F32, T.F16, T.Q8_0, T.Q4_0, T.Q5_0, T.Q4_1, T.Q5_1, T.IQ4_NL, T.MXFP4,
     T.Q2_K, T.Q3_K, T.Q4_K, T.Q6_K, T.IQ4_XS),
    ids=lambda t: t.name,
)
def test_matmul_matches_vec_dot(lib: Hooks, qtype: T) -> None:
    """Tiling and threading do not change a single bit: every y[t, r] equals the
    row's own vec_dot.  40 rows (not a multiple of the 16-row grain) and 33
    tokens (one past a 32-token tile)."""
    rng = np.random.default_rng(300 + int(qtype))
    rows, cols = 40, 512
    raw = random_row(qtype, rows * cols, rng)
    row_bytes = lib.row_size(qtype, cols)
    x = rng.standard_normal((33, cols)).astype(np.float32)
    want = np.array(
        [
            [
                lib.vec_dot(qtype, raw[r * row_bytes : (r + 1) * row_bytes], x[t])
                for r in range(rows)
            ]
            for t in range(x.shape[0])
        ],
        dtype=np.float32,
    )
    for n_threads in (1, 3):
        for n_tokens in (1, 5, 33):
            got = lib.matmul(qtype, raw, rows, cols, x[:n_tokens], n_threads)
            np.testing.assert_array_equal(got, want[:n_tokens])


@pytest.mark.parametrize(
    "qtype",
    (T.F32, T.BF16, T.Q8_0, T.Q5_0, T.Q4_1, T.Q5_1, T.IQ4_NL, T.MXFP4,
     T.Q2_K, T.Q3_K, T.Q4_K, T.Q6_K, T.IQ4_XS),
    ids=lambda t: t.name,
)
def test_get_rows(lib: Hooks, qtype: T) -> None:
    rng = np.random.default_rng(400 + int(qtype))
    rows, cols = 10, 256
    raw = random_row(qtype, rows * cols, rng)
    table = oracle_dequantize(qtype, raw).reshape(rows, cols)
    ids = np.array([3, 0, 9, 3], dtype=np.int32)
    status, got = lib.get_rows(qtype, raw, rows, cols, ids)
    assert status == ADIL_OK
    np.testing.assert_array_equal(got, table[ids])
    status, _ = lib.get_rows(qtype, raw, rows, cols, np.array([1, 10], dtype=np.int32))
    assert status == ADIL_STATUS_INVALID_ARGUMENT
    assert "expected 0..9, got 10" in lib.last_error()
