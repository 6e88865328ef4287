"""The shipped libraries export exactly the ABI: every function declared
ADIL_API in adil.h and nothing else; the stub also its test tool of
native/stub/adil_stub.h (a slow native tool, one of its injectable faults).
The engine's test hooks live in the test-only libadil_engine_hooks.  The
exports are read from the ELF dynamic symbol table with the small reader
below, so no binutils are needed."""

from __future__ import annotations

import re
import struct
import sys
from pathlib import Path

import pytest

from adil import _binding, _cdef

ROOT = Path(__file__).resolve().parent.parent
HEADER = ROOT / "native" / "include" / "adil" / "adil.h"
STUB_HEADER = ROOT / "native" / "stub" / "adil_stub.h"

SHT_DYNSYM = 11
STT_FUNC = 2
STB_GLOBAL, STB_WEAK = 1, 2
SHN_UNDEF = 0
STV_DEFAULT, STV_PROTECTED = 0, 3

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads ELF shared libraries")


def declared_functions(path: Path) -> set[str]:
    """The names of the functions a header declares ADIL_API."""
    text = re.sub(r"/\*.*?\*/", "", path.read_text(encoding="utf-8"), flags=re.S)
    text = re.sub(r"^\s*#.*?(?<!\\)$", "", text, flags=re.M | re.S)  # preprocessor lines
    return set(re.findall(r"\bADIL_API\b[^;{(]*?\b(\w+)\s*\(", text))


def exported_symbols(path: Path) -> dict[str, int]:
    """Defined global or weak symbols with default or protected visibility in
    the dynamic symbol table of an ELF64 little-endian library: name -> type."""
    data = path.read_bytes()
    assert data[:4] == b"\x7fELF", f"{path}: not an ELF file"
    assert data[4] == 2 and data[5] == 1, f"{path}: expected ELF64 little-endian"
    e_shoff, = struct.unpack_from("<Q", data, 0x28)
    e_shentsize, e_shnum = struct.unpack_from("<HH", data, 0x3A)

    def section(i: int) -> tuple[int, int, int, int, int]:
        # sh_type, sh_offset, sh_size, sh_link, sh_entsize
        sh = struct.unpack_from("<IIQQQQIIQQ", data, e_shoff + i * e_shentsize)
        return sh[1], sh[4], sh[5], sh[6], sh[9]

    symbols: dict[str, int] = {}
    for i in range(e_shnum):
        sh_type, offset, size, link, entsize = section(i)
        if sh_type != SHT_DYNSYM:
            continue
        _, str_offset, _, _, _ = section(link)
        for at in range(offset + entsize, offset + size, entsize):  # entry 0 is null
            st_name, st_info, st_other, st_shndx = struct.unpack_from("<IBBH", data, at)
            bind, kind, visibility = st_info >> 4, st_info & 0xF, st_other & 0x3
            if st_shndx == SHN_UNDEF or bind not in (STB_GLOBAL, STB_WEAK):
                continue
            if visibility not in (STV_DEFAULT, STV_PROTECTED):
                continue
            end = data.index(b"\0", str_offset + st_name)
            symbols[data[str_offset + st_name:end].decode()] = kind
    return symbols


def test_the_header_s_functions_are_the_cdef_s() -> None:
    functions = declared_functions(HEADER)
    assert "adil_abi_version" in functions and "adil_run_step" in functions
    assert all(name.startswith("adil_") for name in functions), functions
    for name in functions:
        assert re.search(rf"\b{name}\s*\(", _cdef.CDEF), name


@pytest.mark.parametrize(("library", "headers"), [
    (_binding.ENGINE_LIBRARY, [HEADER]),
    (_binding.STUB_LIBRARY, [HEADER, STUB_HEADER]),
], ids=["engine", "stub"])
def test_shipped_library_exports_exactly_the_abi(library: str, headers: list[Path]) -> None:
    path = Path(library)
    if not path.exists():
        pytest.skip(f"not built: {path}")
    exported = exported_symbols(path)
    declared = set().union(*(declared_functions(h) for h in headers))
    assert sorted(set(exported) - declared) == [], "exported but not declared ADIL_API"
    assert sorted(declared - set(exported)) == [], "declared ADIL_API but not exported"
    assert {name for name, kind in exported.items() if kind != STT_FUNC} == set()
