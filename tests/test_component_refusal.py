"""Refusal matrix (adil.h's rules of the ABI, as adil/_binding.py and
adil_engine_open check them): every mismatched component gives
ComponentRefusedError with the right code and a message naming the file,
what was found and what was expected; afterwards the good stub still opens
and generates.  An engine of a later minor whose structs have appended
fields is accepted (adil.h's struct_size rule)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import adil

CASES = {
    # variant: (code, words the message must contain besides the path)
    "abi1": ("library_refused", ["ABI version 1.0", "expected ABI version 2"]),
    "abi3": ("library_refused", ["ABI version 3.0", "expected ABI version 2"]),
    "missing_symbol": ("library_refused", ["adil_run_step", "expected every function"]),
    "short_struct": ("library_refused", ["sizeof(adil_run_params) =", "expected at least",
                                         "2.0 size"]),
    "refuses_host": ("host_refused", ["refused this host", "adil-python 2.0"]),
    "not_adil": ("library_refused", ["not export adil_abi_version", "expected an ADIL engine"]),
    "not_a_library": ("library_refused", ["cannot load", "expected an ADIL version-2 engine"]),
    "no_such_file": ("library_refused", ["no such file", "expected an ADIL version-2 engine"]),
}


@pytest.mark.parametrize("variant", sorted(CASES))
def test_refused_then_good_stub_still_works(
    variant: str, variant_libraries: dict[str, str], stub_model: Callable[..., adil.Model]
) -> None:
    code, words = CASES[variant]
    path = variant_libraries[variant]
    with pytest.raises(adil.ComponentRefusedError) as caught:
        adil.Engine.open(library=path)
    error = caught.value
    assert error.code == code
    assert isinstance(error, adil.AdilError)
    message = str(error)
    assert path in message
    for word in words:
        assert word in message, message
    # The process is intact: the good stub opens and generates.
    model = stub_model({"turns": [{"text": "still here"}]})
    assert model.complete("hi").text == "still here"


def test_refusal_is_repeatable(variant_libraries: dict[str, str]) -> None:
    for _ in range(3):
        with pytest.raises(adil.ComponentRefusedError):
            adil.Engine.open(library=variant_libraries["abi3"])


def test_host_major_is_checked_by_the_engine(stub_engine: adil.Engine) -> None:
    """The stub refuses a host of another major (called through the C ABI)."""
    from adil._binding import ffi

    lib = stub_engine.library.lib
    host = ffi.new("adil_host_info *")
    host.struct_size = ffi.sizeof("adil_host_info")
    host.host_major = 3
    out = ffi.new("adil_engine **")
    assert lib.adil_engine_open(host, ffi.NULL, out) == lib.ADIL_STATUS_HOST_REFUSED
    message = ffi.string(lib.adil_last_error()).decode()
    assert "3" in message and "2" in message


def test_later_minor_with_appended_fields_is_accepted(
    variant_libraries: dict[str, str], write_script: Callable[..., str]
) -> None:
    """abi2_7 reports ABI 2.7 and every struct 8 bytes larger than this
    binding's: accepted, it serves this 2.3 host, and the 2.1 and 2.3 fields
    and 2.2 function are used."""
    from adil._binding import SIZES_2_0, STRUCT_SIZE_FIELDS, ffi

    engine = adil.Engine.open(library=variant_libraries["abi2_7"])
    assert engine.info.abi == "2.7"
    assert engine.library.capabilities == ("grammar", "logprobs", "lookup")
    assert engine.library.has_fields("adil_run_stats", 1)
    assert engine.library.has_fields("adil_run_stats", 3)
    assert engine.library.has_fields("adil_run_params", 2)
    assert engine.library.has_fields("adil_run_params", 3)
    assert engine.library.has_function("adil_run_token_logprobs")
    component = engine.library.lib.adil_component()
    for field, struct in STRUCT_SIZE_FIELDS.items():
        assert getattr(component, field) == ffi.sizeof(struct) + 8 > SIZES_2_0[struct]
    with engine.load_model(write_script({"turns": [{"text": "from 2.7"}] * 2})) as model:
        assert model.complete("hi").text == "from 2.7"
        assert model.complete("hi", speculative="lookup").text == "from 2.7"


def test_2_2_engine_is_accepted_without_lookup(
    variant_libraries: dict[str, str], write_script: Callable[..., str]
) -> None:
    """abi2_2 reports ABI 2.2, the 2.2 size of adil_run_params and of
    adil_run_stats the 2.1 one, and no "lookup": accepted, it serves, the 2.3
    stats read as 0, and speculative="lookup" is refused with CapabilityError
    before anything is started (the engine would not read the field); it
    lacks the 2.4 function, so Model.info.kv_cache_bytes is None."""
    from adil._binding import SIZES

    engine = adil.Engine.open(library=variant_libraries["abi2_2"])
    library = engine.library
    assert engine.info.abi == "2.2"
    assert library.capabilities == ("grammar", "logprobs")
    assert library.has_fields("adil_run_params", 2)
    assert not library.has_fields("adil_run_params", 3)
    assert not library.has_fields("adil_run_stats", 3)
    assert library.sizes["adil_run_params"] < SIZES[3]["adil_run_params"]
    with engine.load_model(write_script({"turns": [{"text": "from 2.2"}] * 2})) as model:
        with pytest.raises(adil.CapabilityError, match="lookup"):
            model.complete("hi", speculative="lookup")
        completion = model.complete("hi", logprobs=1)
        assert completion.text == "from 2.2"
        assert (completion.stats.drafted_tokens, completion.stats.draft_accepted) == (0, 0)
        # adil_model_kv_bytes came with 2.4: not exported, not asked
        assert not library.has_function("adil_model_kv_bytes")
        assert model.info.kv_cache_bytes is None


def test_2_1_engine_is_accepted_without_the_2_2_function(
    variant_libraries: dict[str, str], write_script: Callable[..., str]
) -> None:
    """abi2_1 reports ABI 2.1, the 2.1 size of adil_run_params and no
    "logprobs", and does not export adil_run_token_logprobs: accepted (that
    function is required of 2.2 engines only), the 2.1 fields are read, the
    2.2 function is not offered, and it serves."""
    from adil._binding import SIZES, required_symbols

    engine = adil.Engine.open(library=variant_libraries["abi2_1"])
    library = engine.library
    assert engine.info.abi == "2.1"
    assert library.capabilities == ("grammar",)
    assert library.has_fields("adil_run_stats", 1)
    assert not library.has_fields("adil_run_params", 2)
    assert library.sizes["adil_run_params"] < SIZES[2]["adil_run_params"]
    assert not library.has_function("adil_run_token_logprobs")
    assert library.has_function("adil_run_step")
    assert "adil_run_token_logprobs" not in required_symbols(1)
    assert "adil_run_token_logprobs" in required_symbols(2)
    with pytest.raises(AttributeError):
        _ = library.lib.adil_run_token_logprobs
    with engine.load_model(write_script({"turns": [{"text": "from 2.1"}]})) as model:
        assert model.complete("hi").text == "from 2.1"


def test_2_0_engine_is_accepted_without_the_2_1_fields(
    variant_libraries: dict[str, str], write_script: Callable[..., str]
) -> None:
    """abi2_0 reports ABI 2.0 and the 2.0 sizes of the structs 2.1 appended
    to: accepted, no 2.1 field is read (no capabilities, stats of 0), and it
    serves."""
    from adil._binding import SIZES_2_0

    engine = adil.Engine.open(library=variant_libraries["abi2_0"])
    assert engine.info.abi == "2.0"
    assert engine.info.capabilities == ()
    component = engine.library.lib.adil_component()
    assert component.struct_size == SIZES_2_0["adil_component_info"]
    assert component.size_run_stats == SIZES_2_0["adil_run_stats"]
    assert not engine.library.has_fields("adil_component_info", 1)
    assert not engine.library.has_fields("adil_run_stats", 1)
    assert not engine.library.has_function("adil_run_token_logprobs")
    with engine.load_model(write_script({"turns": [{"text": "from 2.0"}]})) as model:
        completion = model.complete("hi")
        assert completion.text == "from 2.0"
        assert (completion.stats.forced_tokens, completion.stats.grammar_ms) == (0, 0.0)
