"""Shared fixtures: the stub engine, stub scripts, and the mismatched
engine variants that the refusal tests load (built once per session with
CMake from this checkout)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import settings

import adil

if TYPE_CHECKING:
    from adil.service.server import Server

# No per-example time limit (shared, noisy machines); in CI the examples are
# derived from the test itself, so a run is repeatable.
settings.register_profile("default", deadline=None)
settings.register_profile("ci", deadline=None, derandomize=True, print_blob=True)
settings.load_profile("ci" if os.environ.get("CI") else "default")

ROOT = Path(__file__).resolve().parent.parent
SCRIPTS = ROOT / "tests" / "stub_scripts"
VARIANTS = ("abi1", "abi3", "missing_symbol", "short_struct", "refuses_host", "abi2_7", "abi2_5",
            "abi2_2", "abi2_1", "abi2_0")


@pytest.fixture(scope="module")
def engine() -> Iterator[adil.Engine]:
    """The bundled CPU engine, opened once per test module."""
    with adil.Engine.open() as e:
        yield e


@pytest.fixture(scope="session")
def stub_engine() -> adil.Engine:
    return adil.Engine.open(library=adil.STUB_LIBRARY)


@pytest.fixture
def write_script(tmp_path: Path) -> Callable[..., str]:
    """Writes a stub script (native/stub/stub_script.h) and returns its path."""
    counter = iter(range(10**6))

    def write(script: dict[str, Any] | str) -> str:
        path = tmp_path / f"script{next(counter)}.json"
        path.write_text(script if isinstance(script, str) else json.dumps(script))
        return str(path)

    return write


@pytest.fixture
def stub_model(
    stub_engine: adil.Engine, write_script: Callable[..., str]
) -> Callable[..., adil.Model]:
    def load(script: dict[str, Any] | str, **kwargs: Any) -> adil.Model:
        return stub_engine.load_model(write_script(script), **kwargs)

    return load


@pytest.fixture
def accepted(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The connections adil.service.Server accepted during the test (one
    entry each)."""
    from adil.service.server import Server

    accepted: list[object] = []
    accept = Server._accept

    async def counting(self: Server, reader: Any, writer: Any) -> None:
        accepted.append(writer)
        await accept(self, reader, writer)

    monkeypatch.setattr(Server, "_accept", counting)
    return accepted


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    """Starts an adil.service Server on the stub for a script (a dict, or a
    file of tests/stub_scripts by name) on a free port; ``ready=True`` waits
    until its model is loaded (a test without retries then meets no 503).
    The servers are stopped after the test."""
    from adil.service.server import Server  # the service extra, only where it is asked for

    servers: list[Server] = []

    def start(script: dict[str, Any] | str, *, ready: bool = False, **options: Any) -> Server:
        if isinstance(script, str):
            path = SCRIPTS / script
        else:
            path = tmp_path / f"script{len(servers)}.json"
            path.write_text(json.dumps(script), encoding="utf-8")
        server = Server(str(path), library=str(adil.STUB_LIBRARY), port=0, **options)
        servers.append(server)
        server.start()
        if ready:
            assert server.host.wait_loaded(30) == "ready"
        return server

    yield start
    for server in servers:
        server.stop()


def _cmake() -> str:
    found = shutil.which("cmake")
    if found:
        return found
    pytest.skip("cmake is needed to build the refusal-test engine variants")


@pytest.fixture(scope="session")
def variant_libraries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Paths of the deliberately mismatched engines, plus two non-engines,
    and of five that this host accepts: abi2_7, a later minor's handshake with
    fields appended to every struct, abi2_5, a 2.5 handshake whose context
    params end before kv_type (2.6), abi2_2, a 2.2 handshake without the field
    2.3 appended (no lookup) or the function 2.4 appended, abi2_1, a 2.1 handshake without the field
    and function 2.2 appended (no logprobs), and abi2_0, a 2.0 handshake whose
    structs end before the fields 2.1 appended."""
    build = tmp_path_factory.mktemp("variants")
    cmake = _cmake()
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    subprocess.run(
        [cmake, "-S", str(ROOT), "-B", str(build), *generator, "-DADIL_TEST_VARIANTS=ON",
         "-DCMAKE_BUILD_TYPE=Debug"],
        check=True, capture_output=True,
    )
    targets = [f"adil_stub_{name}" for name in VARIANTS]
    subprocess.run([cmake, "--build", str(build), "--target", *targets, "-j2"],
                   check=True, capture_output=True)
    libs = {name: str(build / "lib" / f"libadil_stub_{name}.so") for name in VARIANTS}
    # A shared library that is not an ADIL engine.
    source = build / "not_adil.c"
    source.write_text("int not_an_adil_engine(void) { return 42; }\n")
    other = build / "libnot_adil.so"
    compiler = os.environ.get("CC", "cc")
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(other), str(source)], check=True)
    libs["not_adil"] = str(other)
    # A file that is not a shared library at all.
    text = build / "libtext.so"
    text.write_text("this is not an ELF file\n")
    libs["not_a_library"] = str(text)
    libs["no_such_file"] = str(build / "libdoes_not_exist.so")
    return libs


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [f"adil libraries: {Path(adil.STUB_LIBRARY).parent}", f"python: {sys.executable}"]
