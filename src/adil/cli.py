"""The ``adil`` command line.

    adil info [--json] [--library PATH]
    adil generate --model PATH|ALIAS [--max-tokens N] [--temperature T] [--seed S]
                  [--threads N] [--stats] [--chat] "prompt"
    adil bench --model PATH|ALIAS [--threads N] [--prompt-tokens 512] [--gen-tokens 128]
               [--repetitions 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from .engine import Engine
from .errors import AdilError
from .sampling import Sampling

__all__ = ["main"]


def _info(args: argparse.Namespace) -> int:
    engine = Engine.open(library=args.library)
    info = asdict(engine.info)
    info["abi"] = engine.info.abi
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    rows = [
        ("engine library", info["library"]),
        ("engine", f"{info['engine_name']} {info['engine_version']}"),
        ("ABI", info["abi"]),
        ("host", f"{info['host_name']} {info['host_version']} (host ABI "
                 f"{info['host_major']}.{info['host_minor']})"),
        ("backends", ", ".join(info["backends"]) or "-"),
        ("CPU features", ", ".join(info["cpu_features"]) or "-"),
        ("kernels", info["kernels"] or "-"),
        ("capabilities", ", ".join(info["capabilities"]) or "-"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    return 0


def _resolve_model(name: str) -> str:
    from pathlib import Path

    if Path(name).exists():
        return name
    from . import models

    return str(models.path(name))


def _generate(args: argparse.Namespace) -> int:
    engine = Engine.open(library=args.library)
    model = engine.load_model(_resolve_model(args.model), threads=args.threads,
                              context_length=args.context_length)
    sampling = Sampling(temperature=args.temperature, seed=args.seed)
    prompt = args.prompt
    if args.chat:
        prompt = model.render_chat([{"role": "user", "content": prompt}])
    generation = model.generate(prompt, max_tokens=args.max_tokens, sampling=sampling)
    for piece in generation:
        sys.stdout.write(piece.text)
        sys.stdout.flush()
    sys.stdout.write("\n")
    if args.stats:
        s = generation.stats
        print(
            f"prefill: {s.n_prompt_tokens - s.n_cached_tokens} tokens in {s.prefill_ms:.1f} ms "
            f"({s.prefill_tokens_per_s:.1f} tokens/s)\n"
            f"decode:  {max(s.n_generated - 1, 0)} tokens in {s.decode_ms:.1f} ms "
            f"({s.decode_tokens_per_s:.1f} tokens/s)\n"
            f"stop:    {generation.stop_reason}",
            file=sys.stderr,
        )
    return 0


def _bench(args: argparse.Namespace) -> int:
    from .bench import format_table, run_bench

    result = run_bench(_resolve_model(args.model), threads=args.threads,
                       prompt_tokens=args.prompt_tokens, gen_tokens=args.gen_tokens,
                       repetitions=args.repetitions, library=args.library)
    print(json.dumps(result.to_json(), indent=2) if args.json else format_table(result))
    return 0


# -- option types: a bad value is argparse's usage error (exit 2), never a traceback

def _int_at_least(minimum: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected an integer >= {minimum}, got {text!r}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


def _seed(text: str) -> int:
    value = _int_at_least(0)(text)
    if value >= 2**64:
        raise argparse.ArgumentTypeError(f"expected an integer below 2**64, got {text!r}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value


def _non_empty(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("expected a path or a name, got ''")
    return text


def _parser() -> argparse.ArgumentParser:
    from .bench import MIN_GEN_TOKENS, MIN_PROMPT_TOKENS

    positive = _int_at_least(1)
    parser = argparse.ArgumentParser(prog="adil", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    info = sub.add_parser("info", help="the component set: engine, ABI, host, CPU, backends")
    info.add_argument("--json", action="store_true", help="one JSON object")
    info.add_argument("--library", type=_non_empty,
                      help="an engine library by path (default: bundled CPU engine)")
    info.set_defaults(run=_info)

    gen = sub.add_parser("generate", help="stream a completion of a prompt")
    gen.add_argument("prompt", help="the text to continue (with --chat: the user's message)")
    gen.add_argument("--model", required=True, type=_non_empty,
                     help="a model file, or an installed alias")
    gen.add_argument("--library", type=_non_empty, help="an engine library by path")
    gen.add_argument("--max-tokens", type=positive, default=128, metavar="N",
                     help="at most N tokens (>= 1; end of text or a full context stop "
                          "sooner); default 128")
    gen.add_argument("--temperature", type=_non_negative_float, default=0.0, metavar="T",
                     help="sampling temperature >= 0 (0: greedy); default 0")
    gen.add_argument("--seed", type=_seed, default=None, metavar="S",
                     help="sampling seed in [0, 2**64)")
    gen.add_argument("--threads", type=positive, default=None, metavar="N",
                     help="compute threads >= 1 (default: the engine's)")
    gen.add_argument("--context-length", type=positive, default=None, metavar="N",
                     help="context window in tokens >= 1 (default: the model's)")
    gen.add_argument("--stats", action="store_true", help="prefill and decode tokens/s")
    gen.add_argument("--chat", action="store_true",
                     help="send the prompt as a user message through the model's chat template")
    gen.set_defaults(run=_generate)

    bench = sub.add_parser("bench", help="prefill and decode tokens/s, bandwidth roofline")
    bench.add_argument("--model", required=True, type=_non_empty,
                       help="a model file, or an installed alias")
    bench.add_argument("--library", type=_non_empty, help="an engine library by path")
    bench.add_argument("--threads", type=positive, default=2, metavar="N",
                       help="compute threads >= 1; default 2")
    bench.add_argument("--prompt-tokens", type=_int_at_least(MIN_PROMPT_TOKENS), default=512,
                       metavar="N", help=f"prefill test size >= {MIN_PROMPT_TOKENS}; default 512")
    bench.add_argument("--gen-tokens", type=_int_at_least(MIN_GEN_TOKENS), default=128,
                       metavar="N", help=f"decode test size >= {MIN_GEN_TOKENS} (the first token "
                                         "comes from the prefill); default 128")
    bench.add_argument("--repetitions", type=positive, default=5, metavar="N",
                       help="runs of each test >= 1 (the median is reported); default 5")
    bench.add_argument("--json", action="store_true", help="one JSON object")
    bench.set_defaults(run=_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        result: Any = args.run(args)
        return int(result)
    except AdilError as error:
        message = " ".join(str(error).split())  # one line, whatever the message holds
        print(f"adil: error [{error.code}]: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130  # 128 + SIGINT, as a shell reports it; no traceback
    except BrokenPipeError:
        # The reader went away (`adil bench | head`): stop quietly, as cat does.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
