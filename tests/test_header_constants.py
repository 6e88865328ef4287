"""What the binding reads from the header agrees with what a C compiler makes
of adil.h: every struct's size, field offsets and 2.0 size
(ADIL_SIZE_2_0_*)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from adil._binding import SIZES_2_0, STRUCT_SIZE_FIELDS, ffi
from adil._cdef import LAST_2_0_FIELDS

ROOT = Path(__file__).resolve().parent.parent
INCLUDE = ROOT / "native" / "include"


def _c_program() -> str:
    """A C program that prints, as JSON, every value the binding takes from
    the header, as the compiler sees it."""
    lines = []
    for struct in LAST_2_0_FIELDS:
        size_2_0 = "ADIL_SIZE_2_0_" + struct.removeprefix("adil_").upper()
        lines.append(f'    printf("\\"sizeof {struct}\\": %zu,\\n", sizeof({struct}));')
        lines.append(f'    printf("\\"2.0 {struct}\\": %zu,\\n", (size_t)({size_2_0}));')
        for field, _ in ffi.typeof(struct).fields:
            lines.append(f'    printf("\\"offsetof {struct}.{field}\\": %zu,\\n", '
                         f"offsetof({struct}, {field}));")
    body = "\n".join(lines)
    return ("#include <stdio.h>\n#include \"adil/adil.h\"\n"
            f'int main(void)\n{{\n    printf("{{\\n");\n{body}\n    printf("\\"end\\": 0}}\\n");\n'
            "    return 0;\n}\n")


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, float]:
    compiler = os.environ.get("CC", "cc")
    if shutil.which(compiler) is None:
        pytest.skip(f"no C compiler ({compiler}) to read adil.h with")
    folder = tmp_path_factory.mktemp("header")
    source, program = folder / "constants.c", folder / "constants"
    source.write_text(_c_program())
    subprocess.run([compiler, "-std=c11", "-Wall", "-Werror", f"-I{INCLUDE}", "-o", str(program),
                    str(source)], check=True)
    out = subprocess.run([str(program)], check=True, capture_output=True, text=True).stdout
    values: dict[str, float] = json.loads(out)
    return values


def test_struct_layouts_and_2_0_sizes_are_the_headers(compiled: dict[str, float]) -> None:
    assert set(LAST_2_0_FIELDS) == {"adil_component_info", *STRUCT_SIZE_FIELDS.values()}
    for struct in LAST_2_0_FIELDS:
        assert ffi.sizeof(struct) == compiled[f"sizeof {struct}"], struct
        assert SIZES_2_0[struct] == compiled[f"2.0 {struct}"], struct
        for field, _ in ffi.typeof(struct).fields:
            assert ffi.offsetof(struct, field) == compiled[f"offsetof {struct}.{field}"], field
