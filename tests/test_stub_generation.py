"""Generation through the reference stub engine: streaming, completions,
deadlines, cancellation through the C flag, faults and their error classes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

import adil

Load = Callable[..., adil.Model]


def test_complete_returns_text_tokens_reason_stats(stub_model: Load) -> None:
    model = stub_model({"turns": [{"text": "It is sunny in Oslo."}]})
    done = model.complete("Weather?")
    assert done.text == "It is sunny in Oslo."
    assert list(done.tokens) == list(b"It is sunny in Oslo.")
    assert done.stop_reason == "end_of_text"
    assert done.stats.n_generated == len(done.tokens)
    assert done.stats.n_prompt_tokens == len(b"Weather?")


def test_generate_streams_pieces_and_next_turns(stub_model: Load) -> None:
    model = stub_model({"turns": [{"text": "first"}, {"text": "second"}]})
    pieces = list(model.generate("a"))
    assert "".join(p.text for p in pieces) == "first"
    assert model.complete("b").text == "second"
    empty = model.complete("c")  # turns ran out: empty answer that stops at once
    assert empty.text == "" and empty.stop_reason == "end_of_text"


def test_tool_call_is_written_in_the_sdk_syntax(stub_model: Load) -> None:
    model = stub_model({"turns": [
        {"text": "Checking.", "tool_call": {"name": "get_weather", "arguments": {"city": "Oslo"}}},
        {"text": "", "tool_call": {"name": "n", "arguments_json": "{\"x\": 1.10}"}},
    ]})
    assert model.complete("x").text == (
        'Checking.<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>')
    expected = '<tool_call>{"name": "n", "arguments": {"x": 1.10}}</tool_call>'
    assert model.complete("x").text == expected


def test_utf8_split_across_tokens(stub_model: Load) -> None:
    model = stub_model({"turns": [{"text": "Ærlig talt, 東京 🌍"}]})
    assert model.complete("x").text == "Ærlig talt, 東京 🌍"


def test_max_tokens_and_stop_strings(stub_model: Load) -> None:
    model = stub_model({"turns": [{"text": "abcdefgh"}, {"text": "one STOP two"}]})
    done = model.complete("x", max_tokens=3)
    assert done.text == "abc" and done.stop_reason == "max_tokens"
    done = model.complete("x", stop=["STOP"])
    assert done.text == "one " and done.stop_reason == "stop_sequence"


def test_tokenize_detokenize(stub_model: Load) -> None:
    model = stub_model({"turns": []})
    ids = model.tokenize("hé<eos>")
    assert list(ids) == [*b"h\xc3\xa9", 257]
    assert list(model.tokenize("<eos>", special=False)) == list(b"<eos>")
    assert model.detokenize(ids) == "hé"
    assert model.detokenize(ids, special=True) == "hé<eos>"


def test_total_deadline(stub_model: Load) -> None:
    model = stub_model({"turns": [{"text": "x" * 200}], "token_delay_ms": 5})
    generation = model.generate("x", timeout=adil.Timeout(total=0.1))
    with pytest.raises(adil.DeadlineError) as caught:
        for _ in generation:
            pass
    assert caught.value.limit == "total" and caught.value.code == "timeout"
    assert len(generation.text) < 200  # the deadline ended it (200 tokens take 1 s), no clock read


def test_read_deadline(stub_model: Load) -> None:
    model = stub_model({"turns": [{"text": "slow"}], "token_delay_ms": 200})
    pieces: list[str] = []
    with pytest.raises(adil.DeadlineError) as caught:
        for piece in model.generate("x", timeout=adil.Timeout(read=0.05)):
            pieces.append(piece.text)
    assert caught.value.limit == "read"
    assert pieces == []


def test_cancel_through_the_c_flag(stub_model: Load) -> None:
    model = stub_model({"turns": [{"text": "y" * 1000}], "token_delay_ms": 2})
    token = model.cancel_token()
    assert token.cancelled() is False
    threading.Timer(0.05, token.cancel).start()
    done = model.complete("x", cancel=token)
    assert token.cancelled() is True
    assert done.stop_reason == "cancelled"
    assert 0 < len(done.text) < 1000
    assert done.cancel_acknowledged


def test_late_answer_after_cancel_is_acknowledged(stub_model: Load) -> None:
    model = stub_model({"turns": [{"text": "late text"}], "token_delay_ms": 1,
                        "faults": [{"on_call": 1, "late_answer": True}]})
    token = model.cancel_token()
    token.cancel()
    done = model.complete("x", cancel=token)
    assert done.text == "late text"
    assert done.cancel_acknowledged


@pytest.mark.parametrize("status,cls", [
    ("busy", adil.BusyError),
    ("model_not_ready", adil.ModelNotReadyError),
    ("context_length", adil.ContextLengthError),
    ("capability", adil.CapabilityError),
])
def test_faults_raise_their_class_without_consuming_a_turn(
    stub_model: Load, status: str, cls: type[adil.AdilError]
) -> None:
    model = stub_model({"turns": [{"text": "ok"}], "faults": [{"on_call": 1, "status": status}]})
    with pytest.raises(cls):
        model.complete("x")
    assert model.complete("x").text == "ok"


def test_not_ready_window_after_load(stub_model: Load) -> None:
    model = stub_model({"turns": [{"text": "ok"}], "faults": [{"not_ready_ms": 150}]})
    assert not model.ready()
    with pytest.raises(adil.ModelNotReadyError):
        model.complete("x")
    time.sleep(0.2)
    assert model.ready()
    assert model.complete("x").text == "ok"


def test_context_length_names_both_numbers(stub_model: Load) -> None:
    model = stub_model({"turns": [{"text": "ok"}]}, context_length=32)
    with pytest.raises(adil.ContextLengthError) as caught:
        model.complete("x" * 30, max_tokens=10)
    assert "40" in str(caught.value) or ("30" in str(caught.value) and "32" in str(caught.value))


def test_one_generation_at_a_time(stub_model: Load) -> None:
    model = stub_model({"turns": [{"text": "abc"}, {"text": "def"}]})
    first = model.generate("x")
    with pytest.raises(adil.BusyError):
        model.generate("y")
    assert first.completion().text == "abc"
    assert model.complete("y").text == "def"


def test_capability_errors(stub_model: Load) -> None:
    model = stub_model({"turns": [{"text": "ok"}]})
    with pytest.raises(adil.CapabilityError):
        model.complete("x", n=2)
    with pytest.raises(adil.CapabilityError):
        model.complete("x", images=[b"png"])
    with pytest.raises(adil.OutputValidationError):  # the stub checks its script against a schema
        model.complete("x", schema={"type": "object"})
    with pytest.raises(adil.CapabilityError):
        model.logits([1, 2, 3])


def test_bad_scripts_are_model_format_errors(stub_engine: adil.Engine,
                                             write_script: Callable[..., str]) -> None:
    bad_fault = '{"turns": [], "faults": [{"on_call": 1, "status": "nope"}]}'
    for bad in ['{"turns": [', '{"turns": 3}', bad_fault, '[]', '']:
        with pytest.raises(adil.ModelFormatError):
            stub_engine.load_model(write_script(bad))
    with pytest.raises(adil.ModelFileError):
        stub_engine.load_model("/nonexistent/script.json")


def test_close_is_idempotent_and_context_managed(stub_engine: adil.Engine,
                                                 write_script: Callable[..., str]) -> None:
    path = write_script({"turns": [{"text": "ok"}]})
    with adil.Engine.open(library=adil.STUB_LIBRARY) as engine:
        with engine.load_model(path) as model:
            with model.generate("x") as generation:
                assert generation.completion().text == "ok"
            generation.close()
        model.close()
        with pytest.raises(adil.InvalidArgumentError):
            model.complete("x")
    engine.close()
    with pytest.raises(adil.InvalidArgumentError):
        engine.load_model(path)


def test_abandoned_generation_frees_the_model(stub_model: Load) -> None:
    import gc

    model = stub_model({"turns": [{"text": "abc"}, {"text": "def"}]})
    generation = model.generate("x")
    next(generation)
    del generation
    gc.collect()
    assert model.complete("y").text == "def"


def test_a_long_output_comes_out_whole(stub_model: Load) -> None:
    """D19: text and tokens were rebuilt on every step (quadratic: 1.6 M
    tokens took about a minute; 1.2 s now, measured in the issue's note)."""
    model = stub_model({"turns": [{"text": "ab" * 200_000}]}, context_length=500_000)
    pieces = 0
    generation = model.generate("hi", max_tokens=450_000)
    for _ in generation:
        pieces += 1
    assert generation.text == "ab" * 200_000 and len(generation.tokens) == 400_000
    assert pieces > 1 and generation.stop_reason == "end_of_text"
