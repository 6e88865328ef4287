"""Generates src/adil/_cdef.py from native/include/adil/adil.h.

The binding's cffi declarations come from the header itself, so the two
cannot drift; tests/test_cdef.py checks the committed file is up to date.
Besides the declarations (CDEF, with every integer macro; a macro that names
an enum constant, ADIL_STATUS_LAST, is written with its value) it writes what
cffi cannot take from a cdef:

    CONSTANTS         every numeric ADIL_ macro, floats included
                      (the ADIL_DEFAULT_* sampling defaults)
    LAST_FIELDS       minor -> struct -> its last field of that minor, from
                      the ADIL_SIZE_2_<minor>_* = ADIL_SIZE_THROUGH(struct, field)
                      macros (a struct is listed under the minors that
                      appended to it, and under 0)
    LAST_2_0_FIELDS   LAST_FIELDS[0]: struct -> its last 2.0 field
    FUNCTION_MINORS   function -> the minor that appended it, for the functions
                      after a top-level "2.N" comment line (minor 0, the base
                      ABI's functions, are not listed)

    python scripts/gen_cdef.py          # rewrite src/adil/_cdef.py
    python scripts/gen_cdef.py --check  # exit 1 when it is stale
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADER = ROOT / "native" / "include" / "adil" / "adil.h"
OUTPUT = ROOT / "src" / "adil" / "_cdef.py"

# Preprocessor blocks that are for C compilers only, skipped whole.
_SKIPPED_BLOCKS = ("#ifdef __cplusplus", "#if defined(_WIN32)")
_INT_DEFINE = re.compile(r"#define\s+(ADIL_\w+)\s+(\d+)\s*$")
_FLOAT_DEFINE = re.compile(r"#define\s+(ADIL_\w+)\s+(\d+\.\d*)f?\s*$")
_ALIAS_DEFINE = re.compile(r"#define\s+(ADIL_\w+)\s+(ADIL_\w+)\s*$")
_SIZE_DEFINE = re.compile(
    r"#define\s+ADIL_SIZE_2_(\d+)_\w+\s+ADIL_SIZE_THROUGH\((\w+),\s*(\w+)\)\s*$")
_ENUM_CONSTANT = re.compile(r"^\s*(ADIL_\w+)\s*=\s*(\d+)\s*,?\s*$")
# A top-level (unindented) "/* 2.N */" line: the next function was appended in 2.N.
_FUNCTION_MINOR = re.compile(r"^/\*\s*2\.(\d+)\s*\*/\s*$")
_FUNCTION_DECL = re.compile(r"^ADIL_API\b[^(]*?\b(adil_\w+)\(")


def _uncommented(text: str) -> str:
    return re.sub(r"/\*.*?\*/", "", text, flags=re.S)


def enum_constants(text: str) -> dict[str, int]:
    """Every `ADIL_X = N` enumerator of the header."""
    found = (_ENUM_CONSTANT.match(line) for line in _uncommented(text).splitlines())
    return {m.group(1): int(m.group(2)) for m in found if m}


def constants(text: str) -> dict[str, int | float]:
    """Every numeric ADIL_ macro: integers, floats, and names of enum constants
    (by value)."""
    enums = enum_constants(text)
    out: dict[str, int | float] = {}
    for line in _uncommented(text).splitlines():
        line = line.strip()
        if match := _INT_DEFINE.match(line):
            out[match.group(1)] = int(match.group(2))
        elif match := _FLOAT_DEFINE.match(line):
            out[match.group(1)] = float(match.group(2))
        elif (match := _ALIAS_DEFINE.match(line)) and match.group(2) in enums:
            out[match.group(1)] = enums[match.group(2)]
    return out


def last_fields(text: str) -> dict[int, dict[str, str]]:
    """minor -> struct -> the field its ADIL_SIZE_2_<minor>_* macro ends with."""
    out: dict[int, dict[str, str]] = {}
    for line in _uncommented(text).splitlines():
        if match := _SIZE_DEFINE.match(line.strip()):
            out.setdefault(int(match.group(1)), {})[match.group(2)] = match.group(3)
    return dict(sorted(out.items()))


def function_minors(text: str) -> dict[str, int]:
    """function -> the minor N of the "/* 2.N */" line before its declaration."""
    out: dict[str, int] = {}
    minor: int | None = None
    for line in text.splitlines():
        if match := _FUNCTION_MINOR.match(line):
            minor = int(match.group(1))
        elif (match := _FUNCTION_DECL.match(line)) and minor is not None:
            out[match.group(1)] = minor
            minor = None
    return out


def last_2_0_fields(text: str) -> dict[str, str]:
    """struct -> the field its ADIL_SIZE_2_0_* macro ends with."""
    return last_fields(text).get(0, {})


def header_to_cdef(text: str) -> str:
    """The declarations of the header in the form cffi's cdef() parses."""
    enums = enum_constants(text)
    text = _uncommented(text)
    out: list[str] = []
    depth_skipped = 0
    for raw in text.splitlines():
        line = raw.rstrip()
        stripped = line.strip()
        if depth_skipped:
            if stripped.startswith("#if"):
                depth_skipped += 1
            elif stripped.startswith("#endif"):
                depth_skipped -= 1
            continue
        if stripped.startswith(_SKIPPED_BLOCKS):
            depth_skipped = 1
            continue
        if stripped.startswith("#"):
            match = _INT_DEFINE.match(stripped)
            if match:
                out.append(f"#define {match.group(1)} {match.group(2)}")
            alias = _ALIAS_DEFINE.match(stripped)
            if alias and alias.group(2) in enums:
                out.append(f"#define {alias.group(1)} {enums[alias.group(2)]}")
            continue
        line = line.replace("ADIL_API ", "")
        if line.strip() or (out and out[-1].strip()):
            out.append(line)
    return "\n".join(out).strip() + "\n"


def render() -> str:
    header = HEADER.read_text(encoding="utf-8")
    cdef = header_to_cdef(header)
    numbers = "".join(f'    "{name}": {value!r},\n' for name, value in constants(header).items())
    by_minor = "".join(
        f"    {minor}: {{\n" + "".join(f'        "{struct}": "{field}",\n'
                                   for struct, field in fields.items()) + "    },\n"
        for minor, fields in last_fields(header).items())
    appended = "".join(f'    "{name}": {minor},\n'
                       for name, minor in function_minors(header).items())
    return (
        '"""cffi declarations of the v2 engine ABI.\n\n'
        "Generated by scripts/gen_cdef.py from native/include/adil/adil.h; do not edit.\n"
        '"""\n\n'
        f"CDEF = r'''\n{cdef}'''\n\n"
        "# Every numeric ADIL_ macro of the header (cffi takes only the integer ones).\n"
        f"CONSTANTS: dict[str, int | float] = {{\n{numbers}}}\n\n"
        "# minor -> struct -> its last field in that minor (ADIL_SIZE_2_<minor>_*): the\n"
        "# struct's size in that minor ends there.  Minor 0 lists every struct; a later\n"
        "# minor only those it appended to.\n"
        f"LAST_FIELDS: dict[int, dict[str, str]] = {{\n{by_minor}}}\n\n"
        "# struct -> its last 2.0 field (ADIL_SIZE_2_0_*): the struct's 2.0 size ends there.\n"
        "LAST_2_0_FIELDS: dict[str, str] = LAST_FIELDS[0]\n\n"
        "# function -> the minor that appended it (a \"/* 2.N */\" line before it); the\n"
        "# functions of the base ABI are not listed.\n"
        f"FUNCTION_MINORS: dict[str, int] = {{\n{appended}}}\n"
    )


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if OUTPUT.read_text(encoding="utf-8") != text:
            print(f"{OUTPUT} is stale: run python scripts/gen_cdef.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
