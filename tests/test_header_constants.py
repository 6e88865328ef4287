"""What the binding reads from the header agrees with what a C compiler makes
of adil.h: every numeric macro (CONSTANTS, floats included), every status and
stop reason, every struct's size, field offsets and its size in each minor
(ADIL_SIZE_2_<minor>_*).  The engines' default params are the header's defaults,
and so are Sampling's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

import adil
from adil._binding import (
    SIZES,
    SIZES_2_0,
    STATUSES,
    STOP_REASONS,
    STRUCT_SIZE_FIELDS,
    ffi,
    open_library,
)
from adil._cdef import CONSTANTS, LAST_2_0_FIELDS, LAST_FIELDS

ROOT = Path(__file__).resolve().parent.parent
INCLUDE = ROOT / "native" / "include"


def _c_program() -> str:
    """A C program that prints, as JSON, every value the binding takes from
    the header, as the compiler sees it."""
    lines = []
    for name in [*CONSTANTS, *STATUSES, *STOP_REASONS]:
        lines.append(f'    printf("\\"%s\\": %.17g,\\n", "{name}", (double)({name}));')
    for minor, fields in LAST_FIELDS.items():
        for struct in fields:
            macro = f"ADIL_SIZE_2_{minor}_" + struct.removeprefix("adil_").upper()
            lines.append(f'    printf("\\"2.{minor} {struct}\\": %zu,\\n", (size_t)({macro}));')
    for struct in LAST_2_0_FIELDS:
        lines.append(f'    printf("\\"sizeof {struct}\\": %zu,\\n", sizeof({struct}));')
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


def _as_float32(value: float) -> float:
    return float(ffi.cast("float", value))


def test_constants_are_the_headers(compiled: dict[str, float]) -> None:
    for name, value in CONSTANTS.items():
        if isinstance(value, float):  # the header's float literals are C floats
            assert _as_float32(value) == _as_float32(compiled[name]), name
        else:
            assert value == compiled[name], name


def test_statuses_and_stop_reasons_are_the_headers(compiled: dict[str, float]) -> None:
    for name, value in {**STATUSES, **STOP_REASONS}.items():
        assert value == compiled[name], name
    assert max(STATUSES.values()) == CONSTANTS["ADIL_STATUS_LAST"]


def test_every_stop_reason_has_its_name() -> None:
    from adil.generation import _STOP_REASONS

    assert set(_STOP_REASONS) == set(STOP_REASONS.values())


def test_sizes_of_later_minors_are_the_headers(compiled: dict[str, float]) -> None:
    """Every ADIL_SIZE_2_<minor>_* of the header, as the binding computes it."""
    # every minor that appended fields (2.4 appended a function only)
    assert set(LAST_FIELDS) == {0, 1, 2, 3, 5, 6}
    assert set(LAST_FIELDS) <= set(range(int(CONSTANTS["ADIL_ABI_MINOR"]) + 1))
    assert LAST_FIELDS[1] == {"adil_component_info": "capabilities",
                              "adil_run_stats": "grammar_ms"}
    assert LAST_FIELDS[2] == {"adil_run_params": "n_logprobs"}
    assert LAST_FIELDS[3] == {"adil_run_params": "speculative",
                              "adil_run_stats": "n_draft_accepted"}
    assert LAST_FIELDS[5] == {"adil_model_info": "n_embd"}
    assert LAST_FIELDS[6] == {"adil_context_params": "kv_type"}
    for minor, fields in LAST_FIELDS.items():
        for struct in fields:
            assert SIZES[minor][struct] == compiled[f"2.{minor} {struct}"], (minor, struct)
            # a minor only appends: its size is past every field of the one before
            if minor:
                assert SIZES[minor][struct] > max(
                    size.get(struct, 0) for m, size in SIZES.items() if m < minor)
    assert SIZES[1]["adil_run_stats"] == ffi.offsetof("adil_run_stats", "grammar_ms") + 8
    assert SIZES[1]["adil_component_info"] == ffi.sizeof("adil_component_info")
    assert SIZES[2]["adil_run_params"] == ffi.offsetof("adil_run_params", "n_logprobs") + 4
    assert SIZES[3]["adil_run_params"] == ffi.sizeof("adil_run_params")
    assert SIZES[3]["adil_run_stats"] == ffi.sizeof("adil_run_stats")
    assert SIZES[5]["adil_model_info"] == ffi.offsetof("adil_model_info", "n_embd") + 4
    assert SIZES[6]["adil_context_params"] == ffi.sizeof("adil_context_params")


def test_functions_of_later_minors_are_marked() -> None:
    """adil_run_token_logprobs came with 2.2 (its "/* 2.2 */" line) and
    adil_model_kv_bytes with 2.4, adil_engine_int8_peak with 2.5; every other
    function is the base ABI's."""
    from adil._binding import FUNCTIONS, REQUIRED_SYMBOLS
    from adil._cdef import FUNCTION_MINORS

    assert FUNCTION_MINORS == {"adil_run_token_logprobs": 2, "adil_model_kv_bytes": 4,
                               "adil_engine_int8_peak": 5}
    assert set(FUNCTIONS) == {*REQUIRED_SYMBOLS, *FUNCTION_MINORS}
    assert "adil_run_token_logprobs" not in REQUIRED_SYMBOLS
    assert "adil_model_kv_bytes" not in REQUIRED_SYMBOLS
    assert "adil_engine_int8_peak" not in REQUIRED_SYMBOLS


def test_engines_report_this_minor_and_their_capabilities() -> None:
    for path, capabilities in ((adil.STUB_LIBRARY, ("grammar", "logprobs", "lookup")),
                               (adil.ENGINE_LIBRARY, ("grammar", "logits", "logprobs", "lookup"))):
        library = open_library(path)
        assert (library.abi_major, library.abi_minor) == (
            CONSTANTS["ADIL_ABI_MAJOR"], CONSTANTS["ADIL_ABI_MINOR"])
        assert library.capabilities == capabilities
        assert library.has_fields("adil_component_info", 1)
        assert library.has_fields("adil_run_stats", 1)
        assert library.has_fields("adil_run_params", 2)
        assert library.has_fields("adil_run_params", 3)
        assert library.has_fields("adil_run_stats", 3)
        assert library.has_function("adil_run_token_logprobs")


def test_struct_layouts_and_2_0_sizes_are_the_headers(compiled: dict[str, float]) -> None:
    assert set(LAST_2_0_FIELDS) == {"adil_component_info", *STRUCT_SIZE_FIELDS.values()}
    for struct in LAST_2_0_FIELDS:
        assert ffi.sizeof(struct) == compiled[f"sizeof {struct}"], struct
        assert SIZES_2_0[struct] == compiled[f"2.0 {struct}"], struct
        for field, _ in ffi.typeof(struct).fields:
            assert ffi.offsetof(struct, field) == compiled[f"offsetof {struct}.{field}"], field


@pytest.mark.parametrize("which", ["stub", "engine"])
def test_default_params_are_the_header_defaults(which: str) -> None:
    lib = open_library(adil.STUB_LIBRARY if which == "stub" else adil.ENGINE_LIBRARY).lib
    context = ffi.new("adil_context_params *")
    lib.adil_context_default_params(context)
    assert context.struct_size == ffi.sizeof("adil_context_params")
    assert (context.n_ctx, context.n_batch) == (0, CONSTANTS["ADIL_DEFAULT_N_BATCH"])
    assert context.kv_type == lib.ADIL_KV_CACHE_DEFAULT == 0
    run = ffi.new("adil_run_params *")
    lib.adil_run_default_params(run)
    assert run.step_budget_ms == CONSTANTS["ADIL_DEFAULT_STEP_BUDGET_MS"]
    sampling = ffi.new("adil_sampling_params *")
    lib.adil_sampling_default_params(sampling)
    python = adil.Sampling()
    fields = {
        "temperature": "ADIL_DEFAULT_TEMPERATURE", "top_k": "ADIL_DEFAULT_TOP_K",
        "top_p": "ADIL_DEFAULT_TOP_P", "min_p": "ADIL_DEFAULT_MIN_P",
        "repeat_penalty": "ADIL_DEFAULT_REPEAT_PENALTY",
        "repeat_last_n": "ADIL_DEFAULT_REPEAT_LAST_N",
    }
    for field, macro in fields.items():
        c_value, py_value = getattr(sampling, field), getattr(python, field)
        assert c_value == _as_float32(CONSTANTS[macro]), field
        assert c_value == _as_float32(py_value), field


def test_default_window_is_capped_by_the_header(
    stub_model: Callable[..., adil.Model],
) -> None:
    cap = int(CONSTANTS["ADIL_DEFAULT_N_CTX_CAP"])
    with stub_model({"turns": [{"text": "x"}], "context_length": 2 * cap}) as model:
        assert model.info.context_length == cap
    with stub_model({"turns": [{"text": "x"}], "context_length": cap // 2}) as model:
        assert model.info.context_length == cap // 2
