"""The ``adil`` command line.

    adil info [--json] [--library PATH]
    adil generate --model PATH|ALIAS [--max-tokens N] [--temperature T] [--seed S]
                  [--threads N] [--stats] [--chat] [--schema FILE] "prompt"
    adil bench --model PATH|ALIAS [--threads N] [--prompt-tokens 512] [--gen-tokens 128]
               [--repetitions 5] [--schema FILE] [--json]

--schema FILE: a JSON schema (the SDK's subset).  generate prints one valid
document of it once complete (exit 2 with the error, e.g. output_validation_failed
when max_tokens cuts it short); bench adds the grammar's figures (compile
time, mask time per token, forced tokens, constrained vs unconstrained decode).
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
from .generation import Stats
from .sampling import Sampling

__all__ = ["SCHEMA_MAX_TOKENS", "main"]

# generate's default max_tokens with --schema: a document cut short is an error.
SCHEMA_MAX_TOKENS = 512


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
    max_tokens = args.max_tokens or (SCHEMA_MAX_TOKENS if args.schema else 128)
    if args.schema is not None:
        # The document is printed once it is complete and valid, never a part of it.
        with model.generate(prompt, max_tokens=max_tokens, sampling=sampling,
                            schema=args.schema) as generation:
            done = generation.completion()
        print(done.text.strip())  # the document, without the whitespace around it
        if args.stats:
            _print_stats(done.stats, done.stop_reason, grammar=True)
        return 0
    with model.generate(prompt, max_tokens=max_tokens, sampling=sampling) as generation:
        for piece in generation:
            sys.stdout.write(piece.text)
            sys.stdout.flush()
    sys.stdout.write("\n")
    if args.stats:
        _print_stats(generation.stats, generation.stop_reason, grammar=False)
    return 0


def _print_stats(s: Stats, stop_reason: str, *, grammar: bool) -> None:
    lines = [
        f"prefill: {s.n_prompt_tokens - s.n_cached_tokens} tokens in {s.prefill_ms:.1f} ms "
        f"({s.prefill_tokens_per_s:.1f} tokens/s)",
        f"decode:  {max(s.n_generated - 1, 0)} tokens in {s.decode_ms:.1f} ms "
        f"({s.decode_tokens_per_s:.1f} tokens/s)",
    ]
    if grammar:
        lines.append(f"grammar: {s.grammar_ms:.2f} ms, {s.forced_tokens} of {s.n_generated} "
                     "tokens forced")
    lines.append(f"stop:    {stop_reason}")
    print("\n".join(lines), file=sys.stderr)


def _bench(args: argparse.Namespace) -> int:
    from .bench import format_table, run_bench

    result = run_bench(_resolve_model(args.model), threads=args.threads,
                       prompt_tokens=args.prompt_tokens, gen_tokens=args.gen_tokens,
                       repetitions=args.repetitions, library=args.library, schema=args.schema)
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


def _schema_file(path: str) -> dict[str, Any]:
    """The JSON object in file `path` (checked against the subset later,
    where a refusal names its JSON Pointer)."""
    try:
        with open(path, encoding="utf-8") as file:
            schema = json.load(file)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"expected a readable JSON file, got {path!r} "
                                         f"({exc.strerror})") from None
    except (ValueError, RecursionError) as exc:
        raise argparse.ArgumentTypeError(f"expected a JSON file, got {path!r} ({exc})") from None
    if not isinstance(schema, dict):
        raise argparse.ArgumentTypeError(
            f"expected a JSON schema (an object), got {path!r} holding a {type(schema).__name__}")
    return schema


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
    gen.add_argument("--max-tokens", type=positive, default=None, metavar="N",
                     help="at most N tokens (>= 1; end of text or a full context stop "
                          f"sooner); default 128, {SCHEMA_MAX_TOKENS} with --schema")
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
    gen.add_argument("--schema", type=_schema_file, default=None, metavar="FILE",
                     help="a JSON schema file: print one valid JSON document of it (the "
                          "engine's grammar keeps the output valid; exit 2 if it cannot be "
                          "completed within --max-tokens)")
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
    bench.add_argument("--schema", type=_schema_file, default=None, metavar="FILE",
                       help="also measure constrained decoding with this JSON schema (or a "
                            "grammar document with x-adil-tools): compile time, mask time per "
                            "token, forced tokens, decode speed against unconstrained")
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
        location = getattr(error, "location", None)
        if location is not None:
            message += f" (at {json.dumps(location, ensure_ascii=False)})"
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
