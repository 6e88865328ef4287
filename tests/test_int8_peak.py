"""Engine.int8_peak (adil_engine_int8_peak, ABI 2.5): a positive figure from
the CPU engine, None from the stub (no kernels) and from an engine before
2.5 (the abi2_2 variant does not export the function).  No timing is
asserted beyond "> 0": the cores are shared."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest

import adil


def test_cpu_engine_measures_a_peak() -> None:
    with adil.Engine.open() as engine:
        for threads in (None, 1, 2):
            peak = engine.int8_peak(threads)
            assert peak is not None and peak > 0 and math.isfinite(peak), threads
        with pytest.raises(adil.InvalidArgumentError):
            engine.int8_peak(0)


def test_scalar_level_has_no_peak() -> None:
    # ADIL_CPU is read once per process: a child process at the scalar level.
    code = "import adil; print(adil.Engine.open().int8_peak())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "ADIL_CPU": "scalar"}, timeout=120, check=True)
    assert out.stdout.strip() == "None"


def test_stub_has_no_kernels() -> None:
    with adil.Engine.open(library=adil.STUB_LIBRARY) as engine:
        assert engine.library.has_function("adil_engine_int8_peak")
        assert engine.int8_peak() is None


def test_engine_before_2_5_has_none(variant_libraries: dict[str, str]) -> None:
    with adil.Engine.open(library=variant_libraries["abi2_2"]) as engine:
        assert not engine.library.has_function("adil_engine_int8_peak")
        assert engine.int8_peak() is None


def test_closed_engine_refuses() -> None:
    engine = adil.Engine.open()
    engine.close()
    with pytest.raises(adil.InvalidArgumentError):
        engine.int8_peak()
