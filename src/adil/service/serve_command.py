"""``adil serve``: the command-line front of :class:`~adil.service.server.Server`.

    adil serve --model PATH|ALIAS [--library PATH] [--host 127.0.0.1] [--port 8765]
               [--allow-origin ORIGIN ...] [--allow-host NAME ...] [--api-key KEY]
               [--threads N] [--context-length N] [--max-body-bytes N]
               [--i-know-this-is-public]

The first line on stdout is ``listening on http://HOST:PORT`` (flushed, so a
parent process can read the port of ``--port 0``); loading progress and
warnings go to stderr.  Ctrl-C or SIGTERM stops it: open runs are
cancelled, the model closed, exit status 0.  The API key may also come from
``$ADIL_API_KEY``.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

from .config import DEFAULT_MAX_BODY_BYTES, DEFAULT_PORT

__all__ = ["add_serve_parser", "run_serve"]


def add_serve_parser(sub: Any, positive: Callable[[str], int],
                     non_empty: Callable[[str], str]) -> None:
    """The ``serve`` subcommand on `sub` (argparse subparsers)."""
    serve = sub.add_parser("serve", help="serve one model over HTTP (native and OpenAI routes)")
    serve.add_argument("--model", required=True, type=non_empty,
                       help="a model file, or an alias (loaded in the background)")
    serve.add_argument("--library", type=non_empty, help="an engine library by path")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to bind; default 127.0.0.1 (others need "
                            "--i-know-this-is-public)")
    serve.add_argument("--port", type=_port, default=DEFAULT_PORT,
                       help=f"TCP port; 0 picks a free one; default {DEFAULT_PORT}")
    serve.add_argument("--allow-origin", action="append", default=[], metavar="ORIGIN",
                       help="a browser origin allowed to call (repeatable; none by default)")
    serve.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                       help="a Host name accepted besides loopback ones (repeatable)")
    serve.add_argument("--api-key", default=None, metavar="KEY",
                       help="require 'Authorization: Bearer KEY' (default: $ADIL_API_KEY)")
    serve.add_argument("--threads", type=positive, default=None, metavar="N",
                       help="compute threads >= 1 (default: the engine's)")
    serve.add_argument("--context-length", type=positive, default=None, metavar="N",
                       help="context window in tokens >= 1 (default: the model's)")
    serve.add_argument("--max-body-bytes", type=positive, default=DEFAULT_MAX_BODY_BYTES,
                       metavar="N", help=f"request body cap; default {DEFAULT_MAX_BODY_BYTES}")
    serve.add_argument("--i-know-this-is-public", dest="public", action="store_true",
                       help="allow binding a non-loopback address (the model becomes "
                            "reachable from other machines)")
    serve.set_defaults(run=run_serve)


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0..65535, got {value}")
    return value


def run_serve(args: argparse.Namespace) -> int:
    from .server import Server

    _log_to_stderr()
    api_key = args.api_key or os.environ.get("ADIL_API_KEY") or None
    server = Server(args.model, library=args.library, host=args.host, port=args.port,
                    allow_origins=args.allow_origin, allow_hosts=args.allow_host,
                    api_key=api_key, threads=args.threads, context_length=args.context_length,
                    max_body_bytes=args.max_body_bytes, public=args.public)
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        try:
            server.start()
        except OSError as exc:
            print(f"adil: error: cannot listen on {args.host}:{args.port}: {exc}",
                  file=sys.stderr)
            return 2
        print(f"listening on {server.url}", flush=True)
        while not stop.wait(0.25):
            pass
    finally:
        server.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print("adil serve: stopped", file=sys.stderr)
    return 0


def _log_to_stderr() -> None:
    logger = logging.getLogger("adil.service")
    if not any(getattr(h, "_adil_serve", False) for h in logger.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("adil serve: %(message)s"))
        handler._adil_serve = True  # type: ignore[attr-defined]
        logger.addHandler(handler)
    logger.setLevel(logging.INFO)
