"""The GGUF reader against a mutation corpus.

A small valid GGUF is written with the `gguf` package; an independent walker
below records where every header field lies.  From it we derive truncations at
every field boundary, absurd values in every count, length, type, n_dims, dim
and offset, unknown types, overlapping tensors, duplicates, and byte flips over
the whole metadata.  Every case must give ADIL_OK or a clean MODEL_FORMAT error
("gguf: <field> at offset N: expected ..., got ..."), never a crash; run under
ASan (LD_PRELOAD=libasan.so) this also proves no read leaves the buffer, which
the hooks allocate at exactly the image's size.

Set ADIL_GGUF_CORPUS_DIR to also write every mutated image there.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T
from gguf import GGUFWriter
from gguf_hooks import ADIL_OK, ADIL_STATUS_IO, ADIL_STATUS_MODEL_FORMAT, Hooks, hooks

MF = ADIL_STATUS_MODEL_FORMAT
SCALAR_SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
BLOCK = {T.F32: (1, 4), T.F16: (1, 2), T.Q8_0: (32, 34), T.Q4_K: (256, 144)}


# ---- the valid image --------------------------------------------------------


def write_valid(path: Path, alignment: int | None = None) -> bytes:
    w = GGUFWriter(path, "llama")
    if alignment is not None:
        w.add_custom_alignment(alignment)
    w.add_uint8("test.u8", 7)
    w.add_int8("test.i8", -7)
    w.add_uint16("test.u16", 700)
    w.add_int16("test.i16", -700)
    w.add_uint32("test.u32", 70000)
    w.add_int32("test.i32", -70000)
    w.add_float32("test.f32", 0.5)
    w.add_bool("test.bool", True)
    w.add_uint64("test.u64", 2**40)
    w.add_int64("test.i64", -(2**40))
    w.add_float64("test.f64", 0.25)
    w.add_string("test.dup_a", "x")
    w.add_string("test.dup_b", "y")
    w.add_array("test.ints", [1, 2, 3])
    w.add_array("test.floats", [0.5, 1.5])
    w.add_array("test.strs", ["alpha", "", "gamma"])
    w.add_array("test.nested", [[1, 2], [3]])
    rng = np.random.default_rng(0)
    w.add_tensor("t.f32", rng.standard_normal((4, 8)).astype(np.float32))
    w.add_tensor("t.f16", rng.standard_normal(16).astype(np.float16))
    w.add_tensor("t.q8_0", rng.integers(0, 255, (2, 68), dtype=np.uint8), raw_dtype=T.Q8_0)
    w.add_tensor("t.q4_k", rng.integers(0, 255, (1, 144), dtype=np.uint8), raw_dtype=T.Q4_K)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path.read_bytes()


# ---- an independent walker: where every field is --------------------------------


@dataclass(frozen=True)
class Field:
    kind: str  # magic version n_tensors n_kv strlen vtype arrtype arrlen value ndims dim
    #            ttype toffset
    offset: int
    size: int


@dataclass
class Layout:
    fields: list[Field] = field(default_factory=list)
    data_offset: int = 0
    tensors: list[tuple[str, int, int]] = field(default_factory=list)  # name, begin, end
    keys: dict[str, int] = field(default_factory=dict)  # key -> offset of its length

    def of(self, kind: str) -> list[Field]:
        return [f for f in self.fields if f.kind == kind]


class Walker:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos, self.out = data, 0, Layout()

    def take(self, kind: str, fmt: str) -> int:
        size = struct.calcsize(fmt)
        self.out.fields.append(Field(kind, self.pos, size))
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return int(value)

    def string(self) -> str:
        n = self.take("strlen", "<Q")
        s = self.data[self.pos : self.pos + n].decode()
        self.pos += n
        return s

    def value(self, vtype: int) -> None:
        if vtype == 8:
            self.string()
        elif vtype == 9:
            etype = self.take("arrtype", "<I")
            count = self.take("arrlen", "<Q")
            for _ in range(count):
                self.value(etype)
        else:
            self.out.fields.append(Field("value", self.pos, SCALAR_SIZES[vtype]))
            self.pos += SCALAR_SIZES[vtype]

    def walk(self) -> Layout:
        self.take("magic", "<I")
        self.take("version", "<I")
        n_tensors = self.take("n_tensors", "<Q")
        n_kv = self.take("n_kv", "<Q")
        alignment = 32
        for _ in range(n_kv):
            at = self.pos
            key = self.string()
            self.out.keys[key] = at
            vtype = self.take("vtype", "<I")
            if key == "general.alignment":
                alignment = struct.unpack_from("<I", self.data, self.pos)[0]
            self.value(vtype)
        infos = []
        for _ in range(n_tensors):
            name = self.string()
            dims = [self.take("dim", "<Q") for _ in range(self.take("ndims", "<I"))]
            qtype = T(self.take("ttype", "<I"))
            offset = self.take("toffset", "<Q")
            elems, size = BLOCK[qtype]
            infos.append((name, offset, int(np.prod(dims)) // elems * size))
        self.out.data_offset = -(-self.pos // alignment) * alignment
        base = self.out.data_offset
        self.out.tensors = [(n, base + o, base + o + s) for n, o, s in infos]
        return self.out


# ---- fixtures and checks ----------------------------------------------------------


@pytest.fixture(scope="module")
def lib() -> Hooks:
    return hooks()


@pytest.fixture(scope="module")
def valid(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    return write_valid(tmp_path_factory.mktemp("gguf") / "valid.gguf")


@pytest.fixture(scope="module")
def layout(valid: bytes) -> Layout:
    return Walker(valid).walk()


def patch(data: bytes, offset: int, raw: bytes) -> bytes:
    return data[:offset] + raw + data[offset + len(raw) :]


def put(data: bytes, f: Field, value: int) -> bytes:
    return patch(data, f.offset, value.to_bytes(f.size, "little", signed=False))


class Corpus:
    """Runs mutated images through the reader, optionally saving them."""

    def __init__(self, lib: Hooks, name: str) -> None:
        self.lib, self.name, self.count = lib, name, 0
        root = os.environ.get("ADIL_GGUF_CORPUS_DIR")
        self.dir = Path(root) / name if root else None
        if self.dir is not None:
            self.dir.mkdir(parents=True, exist_ok=True)

    def check(self, data: bytes, expect_error: bool, what: str) -> str:
        self.count += 1
        if self.dir is not None:
            (self.dir / f"{self.count:05d}.gguf").write_bytes(data)
        status, message = self.lib.gguf_check(data)
        if expect_error:
            assert status == MF, f"{what}: expected MODEL_FORMAT, got {status}"
        else:
            assert status in (ADIL_OK, MF), f"{what}: status {status}: {message}"
        if status == MF:
            assert message.startswith("gguf: "), f"{what}: {message}"
            assert "expected" in message, f"{what}: {message}"
        return message


# ---- tests ---------------------------------------------------------------------------


def test_valid_image_parses(lib: Hooks, valid: bytes, layout: Layout, tmp_path: Path) -> None:
    assert lib.gguf_check(valid) == (ADIL_OK, "")
    path = tmp_path / "file.gguf"
    path.write_bytes(valid)
    assert lib.gguf_check_file(path) == (ADIL_OK, "")
    assert len(layout.tensors) == 4 and layout.tensors[-1][2] <= len(valid)


def test_custom_alignment(lib: Hooks, tmp_path: Path) -> None:
    data = write_valid(tmp_path / "a64.gguf", alignment=64)
    assert lib.gguf_check(data) == (ADIL_OK, "")
    lay = Walker(data).walk()
    value = next(
        f for f in lay.fields if f.kind == "value" and f.offset > lay.keys["general.alignment"]
    )
    for bad in (0, 3, 48):
        message = Corpus(lib, "alignment").check(put(data, value, bad), True, f"alignment {bad}")
        assert "general.alignment" in message and "power of two" in message


def test_io_error_for_missing_file(lib: Hooks, tmp_path: Path) -> None:
    status, message = lib.gguf_check_file(tmp_path / "absent.gguf")
    assert status == ADIL_STATUS_IO and "absent.gguf" in message


def boundaries(layout: Layout, size: int) -> Iterator[int]:
    points = {0, size - 1, layout.data_offset}
    for f in layout.fields:
        points |= {f.offset, f.offset + 1, f.offset + f.size - 1, f.offset + f.size}
    for _, begin, end in layout.tensors:
        points |= {begin, end - 1}
    yield from sorted(p for p in points if 0 <= p < size)


def test_truncation_at_every_boundary(lib: Hooks, valid: bytes, layout: Layout) -> None:
    corpus = Corpus(lib, "truncation")
    needed = max(end for _, _, end in layout.tensors)
    for cut in boundaries(layout, len(valid)):
        message = corpus.check(valid[:cut], cut < needed, f"truncated at {cut}")
        if cut < needed:
            assert " at offset " in message, message


ABSURD = (0, 1, 2**31, 2**32 - 1, 2**63, 2**64 - 1)
# Values of each kind that must be refused, and where the whole field says so.
MUST_FAIL: dict[str, tuple[int, ...]] = {
    "magic": (0, 0x46554746),
    "version": (0, 1, 4, 0x03000000),
    "n_tensors": (2**40, 2**64 - 1),
    "n_kv": (2**40, 2**64 - 1),
    "strlen": (2**40, 2**63, 2**64 - 1),
    "vtype": (13, 77, 2**32 - 1),
    "arrtype": (13, 2**32 - 1),
    "arrlen": (2**40, 2**64 - 1),
    "ndims": (0, 5, 2**32 - 1),
    "dim": (0, 2**63, 2**64 - 1),
    "ttype": (4, 5, 16, 99, 2**32 - 1),
    "toffset": (2**63, 2**64 - 32),
}


def test_absurd_values_in_every_field(lib: Hooks, valid: bytes, layout: Layout) -> None:
    corpus = Corpus(lib, "fields")
    for f in layout.fields:
        original = int.from_bytes(valid[f.offset : f.offset + f.size], "little")
        must = MUST_FAIL.get(f.kind, ())
        limit = 2 ** (8 * f.size)
        candidates = {v % limit for v in ABSURD + must} | {
            (original + 1) % limit,
            (original - 1) % limit,
        }
        for value in sorted(candidates):
            if value == original:
                continue
            corpus.check(put(valid, f, value), value in must, f"{f.kind} at {f.offset} = {value}")


def test_misaligned_tensor_offsets(lib: Hooks, valid: bytes, layout: Layout) -> None:
    corpus = Corpus(lib, "misaligned")
    for f in layout.of("toffset"):
        original = int.from_bytes(valid[f.offset : f.offset + 8], "little")
        for delta in (1, 2, 16):
            message = corpus.check(put(valid, f, original + delta), True, "misaligned offset")
            assert "multiple of the alignment 32" in message


def test_overlapping_tensors(lib: Hooks, valid: bytes, layout: Layout) -> None:
    corpus = Corpus(lib, "overlap")
    offsets = layout.of("toffset")
    first = int.from_bytes(valid[offsets[0].offset : offsets[0].offset + 8], "little")
    for f in offsets[1:]:
        message = corpus.check(put(valid, f, first), True, "overlap")
        assert "overlap" in message


def test_tensor_beyond_file(lib: Hooks, valid: bytes, layout: Layout) -> None:
    last = layout.of("toffset")[-1]
    room = len(valid) - layout.data_offset
    message = Corpus(lib, "beyond").check(put(valid, last, room // 32 * 32), True, "beyond")
    assert "inside the data section" in message


def test_duplicates(lib: Hooks, valid: bytes, layout: Layout) -> None:
    corpus = Corpus(lib, "duplicates")
    key_at = layout.keys["test.dup_b"] + 8
    message = corpus.check(patch(valid, key_at, b"test.dup_a"), True, "duplicate key")
    assert "test.dup_a" in message and "unique" in message
    name_at = (
        next(
            f
            for f in layout.fields
            if f.kind == "strlen" and valid[f.offset + 8 : f.offset + 13] == b"t.f16"
        ).offset
        + 8
    )
    message = corpus.check(patch(valid, name_at, b"t.f32"), True, "duplicate tensor")
    assert "t.f32" in message and "unique" in message


def test_bool_must_be_0_or_1(lib: Hooks, valid: bytes, layout: Layout) -> None:
    at = next(
        f for f in layout.fields if f.kind == "value" and f.offset > layout.keys["test.bool"]
    ).offset
    message = Corpus(lib, "bool").check(patch(valid, at, b"\x02"), True, "bool 2")
    assert "bool" in message


def test_byte_flips_over_the_metadata(lib: Hooks, valid: bytes, layout: Layout) -> None:
    corpus = Corpus(lib, "flips")
    for at in range(layout.data_offset):
        for mask in (0xFF, 0x01, 0x80):
            flipped = bytes([valid[at] ^ mask])
            corpus.check(patch(valid, at, flipped), at < 4, f"byte {at} ^ {mask:#x}")


def test_random_multi_byte_mutations(lib: Hooks, valid: bytes, layout: Layout) -> None:
    corpus = Corpus(lib, "random")
    rng = np.random.default_rng(1234)
    for case in range(3000):
        data = bytearray(valid[: layout.data_offset + 64])
        for _ in range(int(rng.integers(1, 5))):
            data[int(rng.integers(0, layout.data_offset))] = int(rng.integers(0, 256))
        corpus.check(bytes(data), False, f"random case {case}")


def test_nesting_depth_is_bounded(lib: Hooks) -> None:
    """An array nested 10 000 deep must be refused, not recursed into."""
    depth = 10_000
    key = b"deep"
    body = struct.pack("<Q", len(key)) + key + struct.pack("<I", 9)
    body += struct.pack("<IQ", 9, 1) * depth + struct.pack("<IQ", 4, 0)
    data = b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + body
    message = Corpus(lib, "depth").check(data, True, "deep nesting")
    assert "nested at most" in message
