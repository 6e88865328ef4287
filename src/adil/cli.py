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
import os
import sys
from collections.abc import Sequence
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


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="adil", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)

    info = sub.add_parser("info", help="the component set: engine, ABI, host, CPU, backends")
    info.add_argument("--json", action="store_true", help="one JSON object")
    info.add_argument("--library", help="an engine library by path (default: bundled CPU engine)")
    info.set_defaults(run=_info)

    gen = sub.add_parser("generate", help="stream a completion of a prompt")
    gen.add_argument("prompt")
    gen.add_argument("--model", required=True, help="a model file, or an installed alias")
    gen.add_argument("--library", help="an engine library by path")
    gen.add_argument("--max-tokens", type=int, default=128)
    gen.add_argument("--temperature", type=float, default=0.0)
    gen.add_argument("--seed", type=int, default=None)
    gen.add_argument("--threads", type=int, default=None)
    gen.add_argument("--context-length", type=int, default=None)
    gen.add_argument("--stats", action="store_true", help="prefill and decode tokens/s")
    gen.add_argument("--chat", action="store_true",
                     help="send the prompt as a user message through the model's chat template")
    gen.set_defaults(run=_generate)

    bench = sub.add_parser("bench", help="prefill and decode tokens/s, bandwidth roofline")
    bench.add_argument("--model", required=True, help="a model file, or an installed alias")
    bench.add_argument("--library", help="an engine library by path")
    bench.add_argument("--threads", type=int, default=2)
    bench.add_argument("--prompt-tokens", type=int, default=512)
    bench.add_argument("--gen-tokens", type=int, default=128)
    bench.add_argument("--repetitions", type=int, default=5)
    bench.add_argument("--json", action="store_true", help="one JSON object")
    bench.set_defaults(run=_bench)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        result: Any = args.run(args)
        return int(result)
    except AdilError as error:
        print(f"adil: error [{error.code}]: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # The reader went away (`adil bench | head`): stop quietly, as cat does.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
