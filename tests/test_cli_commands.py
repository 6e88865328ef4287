"""``adil --version``, ``generate -`` (stdin), ``generate --chat``, the
sampling defaults of the CLI, the help of ``models`` and ``chat``, and the
py.typed marker that the wheel ships."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import adil
from adil.cli import _parser, _sampling, main
from adil.sampling import DEFAULT_SAMPLING

ROOT = Path(__file__).resolve().parent.parent


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "adil", *args], capture_output=True, text=True,
                          timeout=300, input=stdin)


def script(tmp_path: Path, *texts: str) -> str:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"turns": [{"text": t} for t in texts]}))
    return str(path)


def test_version_names_the_package_and_the_engine_abi() -> None:
    result = run_cli("--version")
    assert result.returncode == 0, result.stderr
    line = result.stdout.strip()
    assert line.startswith(f"adil {adil.__version__} (engine adil-cpu ")
    assert ", ABI 2." in line


def test_no_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        main([])
    assert exited.value.code == 2
    assert "a command is required" in capsys.readouterr().err


def test_generate_reads_the_prompt_from_stdin(tmp_path: Path) -> None:
    result = run_cli("generate", "--library", adil.STUB_LIBRARY, "--model",
                     script(tmp_path, "From a pipe."), "-", stdin="the prompt\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "From a pipe.\n"


def test_generate_chat(tmp_path: Path) -> None:
    result = run_cli("generate", "--chat", "--library", adil.STUB_LIBRARY, "--model",
                     script(tmp_path, "A chat answer."), "--stats", "hello")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "A chat answer.\n"
    assert "decode:" in result.stderr


def test_generate_chat_with_a_schema(tmp_path: Path) -> None:
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({
        "type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"], "additionalProperties": False}))
    result = run_cli("generate", "--chat", "--schema", str(schema), "--library",
                     adil.STUB_LIBRARY, "--model", script(tmp_path, '{"name":"Ada","age":36}'),
                     "a person")
    assert result.returncode == 0, result.stderr
    assert result.stdout == '{"name":"Ada","age":36}\n'


def test_sampling_options_default_to_default_sampling() -> None:
    args = _parser().parse_args(["generate", "--model", "m", "hi"])
    assert _sampling(args) == DEFAULT_SAMPLING
    args = _parser().parse_args(["chat", "--model", "m", "--temperature", "0", "--seed", "5",
                                 "--top-k", "3"])
    chosen = _sampling(args)
    assert (chosen.temperature, chosen.seed, chosen.top_k) == (0.0, 5, 3)
    assert chosen.top_p == DEFAULT_SAMPLING.top_p and chosen.min_p == DEFAULT_SAMPLING.min_p


def test_a_sampling_value_outside_its_range_is_a_one_line_error(tmp_path: Path) -> None:
    result = run_cli("generate", "--library", adil.STUB_LIBRARY, "--model",
                     script(tmp_path, "x"), "--top-p", "0", "hi")
    assert result.returncode == 2
    assert result.stderr.startswith("adil: error [invalid_argument]: ")
    assert "Traceback" not in result.stderr


def test_help_of_the_new_commands() -> None:
    for command in (["models"], ["models", "list"], ["models", "pull"], ["chat"]):
        result = run_cli(*command, "--help")
        assert result.returncode == 0 and result.stdout.startswith("usage: adil"), command


def test_py_typed_ships_in_the_wheel() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    marker = ROOT / "src" / "adil" / "py.typed"
    assert marker.is_file()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    # scikit-build-core puts every file of the listed package directories
    # that git does not ignore into the wheel.
    assert "src/adil" in config["tool"]["scikit-build"]["wheel"]["packages"]
    ignored = subprocess.run(["git", "-C", str(ROOT), "check-ignore", "-q", str(marker)],
                             check=False)
    assert ignored.returncode == 1  # 1: not ignored
    try:
        from scikit_build_core.build._pathutil import iter_package_files
    except ImportError:
        return
    try:
        files = {str(target) for _, target in iter_package_files(
            packages={"adil": str(ROOT / "src" / "adil")}, include=[], src_exclude=[],
            target_exclude=[], build_dir="build/x", mode="default")}
    except TypeError:  # another scikit-build-core signature: the checks above stand
        return
    assert "adil/py.typed" in files
