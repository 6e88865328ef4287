"""A real browser against adil serve (issue 12, item 5): headless Chromium
loads tests/browser/service_page.html from a second local HTTP server -- a
different origin -- and the page calls the service with ``fetch``.  From an
origin outside the allow-list every call is refused (the preflight gets 403,
a request without preflight gets 403) and nothing runs; from an allowed
origin, generate, a streamed generate, chat completions and an error answer
all reach the page with CORS headers.  Loopback only; every subprocess and
wait is bounded.  Skipped where no Chromium binary exists (Debian:
``apt-get install -y chromium``)."""

from __future__ import annotations

import functools
import html
import http.server
import json
import re
import shutil
import subprocess
import threading
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

import adil
from adil.service import Server

PAGES = Path(__file__).parent / "browser"
WAIT = 20.0  # seconds: the bound of every wait on the service
BROWSER_LIMIT = 90.0  # seconds: the bound of one Chromium run
RESULT = re.compile(r'<pre id="result">(.*?)</pre>', re.S)


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


CHROMIUM = _chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium binary on PATH (Debian: apt-get install -y chromium)")


class _QuietPages(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's name
        pass


@pytest.fixture
def page_origin() -> Iterator[str]:
    """http://127.0.0.1:PORT serving tests/browser/ (the page's origin)."""
    handler = functools.partial(_QuietPages, directory=str(PAGES))
    pages = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=pages.serve_forever, name="page-server", daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{pages.server_address[1]}"
    pages.shutdown()
    pages.server_close()
    thread.join(WAIT)


@pytest.fixture
def serve(write_script: Callable[..., str]) -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def start(*texts: str, **kwargs: Any) -> Server:
        script = write_script({"turns": [{"text": t} for t in texts]})
        server = Server(script, library=adil.STUB_LIBRARY, port=0, **kwargs).start()
        servers.append(server)
        assert server.host.wait_loaded(WAIT) == "ready"
        return server

    yield start
    for server in servers:
        server.stop()


def open_page(tmp_path: Path, page_origin: str, server: Server, *cases: str) -> dict[str, Any]:
    """Loads the page in headless Chromium; what each case's fetch saw."""
    assert CHROMIUM is not None
    query = urllib.parse.urlencode({"service": server.url, "cases": ",".join(cases)})
    url = f"{page_origin}/service_page.html?{query}"
    command = [
        CHROMIUM, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
        "--no-first-run", "--no-default-browser-check", "--disable-extensions",
        f"--user-data-dir={tmp_path / 'chromium-profile'}",
        # virtual time waits for pending network loads, then the budget runs out
        "--virtual-time-budget=30000", "--dump-dom", url]
    done = subprocess.run(command, capture_output=True, text=True, timeout=BROWSER_LIMIT,
                          check=False)
    found = RESULT.search(done.stdout)
    assert done.returncode == 0 and found and found.group(1), (
        done.returncode, done.stdout[-2000:], done.stderr[-2000:])
    result: dict[str, Any] = json.loads(html.unescape(found.group(1)))
    assert result["origin"] == page_origin
    return result


def test_disallowed_origin_is_refused_and_nothing_runs(
        tmp_path: Path, page_origin: str, serve: Callable[..., Server]) -> None:
    server = serve("first", "second", allow_origins=["http://good.example"])
    seen = open_page(tmp_path, page_origin, server, "generate", "chat", "stream", "simple",
                     "noCors")
    for case in ("generate", "chat", "stream", "simple"):
        # preflight refused / an answer without CORS headers: fetch rejects
        assert "failed" in seen[case] and "TypeError" in seen[case]["failed"], seen
    # the request without preflight reached the server (an opaque answer came)
    assert seen["noCors"]["type"] == "opaque", seen
    assert list(server.host.outcomes) == []  # nothing ran
    assert not server.host.slot_taken
    with httpx.Client(base_url=server.url, timeout=WAIT) as http_client:
        # the script was not consumed: the first turn is still next
        answer = http_client.post("/adil/v1/generate", json={"prompt": "x"})
        assert answer.json()["text"] == "first"
        # and the server says why it refused such a page
        refused = http_client.post("/adil/v1/generate", json={"prompt": "x"},
                                   headers={"origin": page_origin})
        assert refused.status_code == 403
        error = refused.json()["error"]
        assert error["code"] == "permission_denied" and page_origin in error["message"]
    assert len(server.host.outcomes) == 1


def test_allowed_origin_works(
        tmp_path: Path, page_origin: str, serve: Callable[..., Server]) -> None:
    server = serve("Hello from the stub.", "Chat answer.", "Streamed answer.",
                   allow_origins=[page_origin])
    seen = open_page(tmp_path, page_origin, server, "generate", "chat", "stream", "badBody")

    generate = seen["generate"]
    assert generate["status"] == 200, seen
    assert generate["body"]["text"] == "Hello from the stub."
    assert re.fullmatch(r"req_[0-9a-f]{24}", generate["requestId"])  # exposed to the page

    chat = seen["chat"]
    assert chat["status"] == 200, seen["chat"]
    assert chat["body"]["choices"][0]["message"]["content"] == "Chat answer."

    stream = seen["stream"]
    assert stream["status"] == 200, seen
    assert stream["requestId"] == "page.stream-1"  # the page's own id kept
    events = [block.split("\n") for block in stream["body"].strip().split("\n\n")]
    pieces = [json.loads(lines[1][len("data: "):])["text"] for lines in events
              if lines[0] == "event: piece"]
    assert "".join(pieces) == "Streamed answer."
    assert events[-1][0] == "event: done"
    assert json.loads(events[-1][1][len("data: "):])["text"] == "Streamed answer."

    bad = seen["badBody"]  # an error answer is readable by the allowed page too
    assert bad["status"] == 400, seen
    assert bad["body"]["error"]["code"] == "invalid_argument"
    assert bad["body"]["error"]["request_id"] == bad["requestId"]

    assert len(server.host.outcomes) == 3  # generate, chat, stream ran; the bad body did not
    assert server.host.max_active_runs == 1
