"""The error hierarchy: every C status maps onto exactly one class, every
class has its stable code, and the public names are importable."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import adil
from adil import errors
from adil._cdef import CONSTANTS

HEADER = Path(__file__).resolve().parent.parent / "native" / "include" / "adil" / "adil.h"

SEED_TABLE = {
    "ServiceConnectionError": "connection_error",
    "DeadlineError": "timeout",
    "ModelNotReadyError": "model_not_ready",
    "ContextLengthError": "context_length_exceeded",
    "CapabilityError": "unsupported_capability",
    "OutputValidationError": "output_validation_failed",
    "BusyError": "busy",
    "PermissionDeniedError": "permission_denied",
    "ComponentRefusedError": "library_refused",
    "ToolSchemaError": "tool_schema_invalid",
    "ModelFormatError": "model_format_invalid",
}


def header_statuses() -> dict[str, int]:
    body = re.search(r"typedef enum adil_status \{(.*?)\} adil_status;", HEADER.read_text(), re.S)
    assert body
    pairs = re.findall(r"(ADIL_\w+)\s*=\s*(\d+)", body.group(1))
    return {name: int(value) for name, value in pairs}


def test_every_status_maps_to_exactly_one_class() -> None:
    statuses = header_statuses()
    assert statuses.pop("ADIL_OK") == 0
    assert set(statuses) == set(errors.STATUS_CLASSES)
    classes = list(errors.STATUS_CLASSES.values())
    assert len(classes) == len(set(classes)), "two statuses share a class"
    for cls in classes:
        assert issubclass(cls, adil.AdilError)


def test_binding_maps_every_status_by_value() -> None:
    """The binding's table by value comes from the cdef's enum, and covers
    every status up to ADIL_STATUS_LAST."""
    from adil import _binding

    statuses = header_statuses()
    for name, value in statuses.items():
        assert _binding.STATUSES[name] == value
        if name != "ADIL_OK":
            assert _binding.STATUS_ERRORS[value] is errors.STATUS_CLASSES[name]
    assert max(_binding.STATUS_ERRORS) == CONSTANTS["ADIL_STATUS_LAST"]


def test_a_status_without_a_class_fails_at_import(monkeypatch: pytest.MonkeyPatch) -> None:
    from adil import _binding

    classes = dict(errors.STATUS_CLASSES)
    del classes["ADIL_STATUS_IO"]
    monkeypatch.setattr(_binding, "STATUS_CLASSES", classes)
    with pytest.raises(ImportError, match="no class for ADIL_STATUS_IO"):
        _binding._status_errors()


def test_status_names_match_the_engine(stub_engine: adil.Engine) -> None:
    from adil._binding import ffi

    lib = stub_engine.library.lib
    for name, value in header_statuses().items():
        text = ffi.string(lib.adil_status_string(value)).decode()
        assert text == name.removeprefix("ADIL_STATUS_").removeprefix("ADIL_").lower()


@pytest.mark.parametrize("name,code", sorted(SEED_TABLE.items()))
def test_seed_table_codes(name: str, code: str) -> None:
    cls = getattr(adil, name)
    assert issubclass(cls, adil.AdilError)
    assert cls.code == code
    error = cls("boom")
    assert error.code == code and error.status is None and error.request_id is None


def test_component_refused_codes() -> None:
    assert adil.ComponentRefusedError("x").code == "library_refused"
    assert adil.ComponentRefusedError("x", code="host_refused").code == "host_refused"


def test_codes_are_unique() -> None:
    codes = [cls.code for cls in errors.STATUS_CLASSES.values()]
    assert len(codes) == len(set(codes))


def test_http_fields_and_error_for_code() -> None:
    error = adil.BusyError("busy", status=429, request_id="req-1")
    assert error.status == 429 and error.request_id == "req-1"
    assert "req-1" in str(error)
    assert errors.error_for_code("busy") is adil.BusyError
    assert errors.error_for_code("host_refused") is adil.ComponentRefusedError
    assert errors.error_for_code("never-heard-of") is adil.AdilError


def test_public_names_importable() -> None:
    for name in ["Engine", "Model", "Timeout", "Sampling", "STUB_LIBRARY", "AdilError",
                 "Completion", "Piece", *SEED_TABLE]:
        assert hasattr(adil, name), name
    assert adil.Timeout(connect=1, read=2, total=3).total == 3
    with pytest.raises(ValueError):
        adil.Timeout(total=0)
