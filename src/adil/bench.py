"""Throughput benchmark: prefill and decode tokens/s, like llama-bench's
pp and tg tests, plus the machine's read bandwidth and how close decode
comes to the roofline it sets (every decoded token reads the weights once:
all of them for a dense model, the routed experts' share for a mixture of
experts, ``Model.info.decode_bytes``).

    adil bench --model gemma3-270m --threads 2 --prompt-tokens 512 \
               --gen-tokens 128 --repetitions 5 [--depth 0,1024,4096] \
               [--schema FILE] [--json]

Depth (llama-bench's ``-d``): at each depth D the prefill and decode tests
run with D tokens already in the KV cache (rows ``pp512@d1024``,
``tg128@d1024``).  Before every repetition a run of the D-token prefix fills
the cache (a full prefill the first time; after that one token, since the
engine's prefix cache keeps the prefix, unless a sliding-window ring has
overwritten rows it needs: pp or tg longer than the engine's batch of 512
on gemma3), then ``prefix + pp`` times the prefill of the pp tokens at
depth D and ``prefix + one token`` the decode at depth D; every measured run
must report ``n_cached_tokens == D`` (EngineInternalError otherwise), so
tokens/s counts only the tokens evaluated at that depth.  With two or more
depths the report adds the cost curve: prefill and decode ms per token
against depth and their least-squares line (:func:`fit_cost`: the slope in
ms per token per 1k tokens of depth, which is the attention share, and the
intercept at depth 0).  The decode roofline and the top-level
``prefill``/``decode`` figures of the JSON are those of the first depth
listed (depth 0 by default); ``depths`` holds one entry per depth.

With a schema, constrained decoding too (:class:`GrammarResult`): the
grammar's compile time (around the compile call; the model's first compile,
which also indexes its vocabulary, apart), its mask time per token
(a run stepped one token at a time, the per-step growth of the run's
``grammar_ms``: median and p99), the tokens it forced, and constrained decode
tokens/s against unconstrained decode of as many tokens from the same
prompt, the two runs alternating.

Memory: the bytes of the context's KV cache (``Model.info.kv_cache_bytes``,
at ``context_length`` positions: by default just what the tests need, or
``--context-length N`` to size it as an application would; ``--kv-type``
f16, f32 or q8_0 for its element type) and the
process's peak resident set (``getrusage`` ``ru_maxrss``) after the
prefill and decode tests, before the bandwidth test's buffer.
"""

from __future__ import annotations

import resource
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .constraints import Constraint, schema_constraint
from .engine import Engine, KvType, Model, ModelInfo
from .errors import EngineInternalError, InvalidArgumentError, OutputValidationError
from .sampling import Sampling

__all__ = ["GRAMMAR_MAX_TOKENS", "GRAMMAR_PROMPT", "MIN_GEN_TOKENS", "MIN_PROMPT_TOKENS",
           "BenchResult", "CostFit", "DepthResult", "GrammarResult", "bench_constraint",
           "check_depths", "fit_cost", "measure_read_bandwidth", "run_bench"]

MIN_PROMPT_TOKENS = 1
MIN_GEN_TOKENS = 2  # the first generated token comes out of the prefill; decode starts after it
# The constrained runs: this prompt, and at most this many tokens of document.
GRAMMAR_PROMPT = "Here is the answer as one JSON document:\n"
GRAMMAR_MAX_TOKENS = 512

_GREEDY = Sampling(temperature=0.0, seed=0)


@dataclass
class Series:
    """Tokens/s of the repetitions of one test."""

    values: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.values) if self.values else 0.0

    def summary(self) -> dict[str, float]:
        if not self.values:
            return {"median": 0.0, "min": 0.0, "max": 0.0}
        return {"median": self.median, "min": min(self.values), "max": max(self.values)}


def _ms_per_token(tokens_per_s: float) -> float:
    return 1000.0 / tokens_per_s if tokens_per_s > 0 else 0.0


@dataclass
class DepthResult:
    """The prefill and decode tests at one context depth."""

    depth: int  # tokens already in the KV cache when each measured run starts
    prefill: Series = field(default_factory=Series)
    decode: Series = field(default_factory=Series)
    n_cached_tokens: int = 0  # what the measured runs reported reusing (== depth)

    @property
    def prefill_ms_per_token(self) -> float:
        return _ms_per_token(self.prefill.median)

    @property
    def decode_ms_per_token(self) -> float:
        return _ms_per_token(self.decode.median)

    def to_json(self) -> dict[str, Any]:
        return {"depth": self.depth, "n_cached_tokens": self.n_cached_tokens,
                "prefill": self.prefill.summary(), "decode": self.decode.summary(),
                "prefill_tokens_per_s": self.prefill.median,
                "decode_tokens_per_s": self.decode.median,
                "prefill_ms_per_token": self.prefill_ms_per_token,
                "decode_ms_per_token": self.decode_ms_per_token}


@dataclass(frozen=True)
class CostFit:
    """The least-squares line of ms per token against depth."""

    slope_ms_per_1k: float  # ms per token more for every 1,000 tokens of depth
    intercept_ms: float  # ms per token at depth 0, as the line puts it
    points: int  # depths it was fitted to

    def to_json(self) -> dict[str, float | int]:
        return {"slope_ms_per_token_per_1k_depth": self.slope_ms_per_1k,
                "intercept_ms_per_token": self.intercept_ms, "points": self.points}


def fit_cost(depths: list[int], ms_per_token: list[float]) -> CostFit | None:
    """The least-squares line through (depth, ms per token); None with
    fewer than two distinct depths (no slope to fit)."""
    if len(depths) != len(ms_per_token):
        raise InvalidArgumentError(
            f"fit_cost: {len(depths)} depths but {len(ms_per_token)} times")
    if len(set(depths)) < 2:
        return None
    slope, intercept = statistics.linear_regression([d / 1000 for d in depths], ms_per_token)
    return CostFit(slope_ms_per_1k=slope, intercept_ms=intercept, points=len(depths))


def check_depths(depths: Any) -> list[int]:
    """`depths` as a list of distinct integers >= 0, at least one
    (InvalidArgumentError otherwise); the order is kept."""
    if isinstance(depths, (str, bytes)) or not hasattr(depths, "__iter__"):
        raise InvalidArgumentError(f"depths must be a list of integers >= 0, got {depths!r}")
    out = list(depths)
    if not out:
        raise InvalidArgumentError("depths must hold at least one depth, got none")
    for d in out:
        if isinstance(d, bool) or not isinstance(d, int) or d < 0:
            raise InvalidArgumentError(f"depths must be integers >= 0, got {d!r}")
    if len(set(out)) != len(out):
        raise InvalidArgumentError(f"depths must be distinct, got {out!r}")
    return out


@dataclass
class GrammarResult:
    """Constrained decoding with one schema (all times from the engine's
    stats, except compile time, taken around the compile call)."""

    compile_ms: float  # median over the repetitions, after the first
    first_compile_ms: float  # the model's first compile (the engine indexes its vocabulary)
    mask_us_median: float  # per generated token
    mask_us_p99: float
    generated_tokens: int  # of the last constrained run
    forced_tokens: int  # of those, appended without sampling
    truncated_runs: int  # runs that reached GRAMMAR_MAX_TOKENS before the document ended
    constrained: Series = field(default_factory=Series)  # decode tokens/s
    unconstrained: Series = field(default_factory=Series)  # as many tokens, no grammar

    @property
    def decode_ratio(self) -> float:
        """Constrained / unconstrained decode tokens/s (medians)."""
        base = self.unconstrained.median
        return self.constrained.median / base if base else 0.0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(constrained=self.constrained.summary(),
                    unconstrained=self.unconstrained.summary(),
                    constrained_tokens_per_s=self.constrained.median,
                    unconstrained_tokens_per_s=self.unconstrained.median,
                    decode_ratio=self.decode_ratio)
        return data


@dataclass
class BenchResult:
    model: str
    engine: str
    threads: int
    prompt_tokens: int
    gen_tokens: int
    repetitions: int
    cpu_features: tuple[str, ...]
    kernels: str
    weight_bytes: int
    prefill: Series
    decode: Series
    read_bandwidth_gb_per_s: float
    grammar: GrammarResult | None = None
    context_length: int = 0
    kv_cache_bytes: int | None = None  # None: the engine cannot say (before ABI 2.4)
    kv_type: str | None = None  # the KV cache type asked for (None: the engine's default)
    peak_rss_bytes: int = 0
    depths: list[DepthResult] = field(default_factory=list)  # prefill/decode: depths[0]'s
    # bytes of weights one decoded token reads (Model.info.decode_bytes:
    # a mixture of experts reads only its routed experts); None: the engine
    # cannot say (before ABI 2.5), and the ceiling counts every weight
    decode_bytes: int | None = None
    # the int8 multiply-accumulate peak of this CPU on `threads` threads
    # (Engine.int8_peak; None: the engine measures none) and the weights a
    # prefilled token multiplies by (prefill_params; None before ABI 2.5)
    int8_peak_macs_per_s: float | None = None
    prefill_params: float | None = None

    @property
    def prefill_macs_per_s(self) -> float | None:
        """Prefill tokens/s times the weights each prompt token multiplies
        by (the matrix products' multiply-adds; attention not counted)."""
        return self.prefill.median * self.prefill_params if self.prefill_params else None

    @property
    def prefill_peak_fraction(self) -> float | None:
        macs, peak = self.prefill_macs_per_s, self.int8_peak_macs_per_s
        return macs / peak if macs is not None and peak else None

    @property
    def bytes_per_token(self) -> int:
        """The weights one decoded token reads: what the ceiling divides by."""
        return self.decode_bytes or self.weight_bytes

    @property
    def prefill_fit(self) -> CostFit | None:
        return fit_cost([d.depth for d in self.depths],
                        [d.prefill_ms_per_token for d in self.depths])

    @property
    def decode_fit(self) -> CostFit | None:
        return fit_cost([d.depth for d in self.depths],
                        [d.decode_ms_per_token for d in self.depths])

    @property
    def decode_roofline_tokens_per_s(self) -> float:
        per_token = self.bytes_per_token
        return self.read_bandwidth_gb_per_s * 1e9 / per_token if per_token else 0.0

    @property
    def decode_roofline_fraction(self) -> float:
        ceiling = self.decode_roofline_tokens_per_s
        return self.decode.median / ceiling if ceiling else 0.0

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(
            prefill=self.prefill.summary(),
            decode=self.decode.summary(),
            prefill_tokens_per_s=self.prefill.median,
            decode_tokens_per_s=self.decode.median,
            decode_roofline_tokens_per_s=self.decode_roofline_tokens_per_s,
            decode_roofline_fraction=self.decode_roofline_fraction,
            prefill_macs_per_s=self.prefill_macs_per_s,
            prefill_peak_fraction=self.prefill_peak_fraction,
            grammar=self.grammar.to_json() if self.grammar is not None else None,
            depth=self.depths[0].depth if self.depths else 0,
            depths=[d.to_json() for d in self.depths],
            cost_fit={name: fit.to_json() if fit is not None else None
                      for name, fit in (("prefill", self.prefill_fit),
                                        ("decode", self.decode_fit))},
        )
        return data


def measure_read_bandwidth(threads: int, size_bytes: int = 1 << 30, rounds: int = 3) -> float:
    """GB/s of reading a buffer far larger than the caches with `threads`
    threads (numpy releases the GIL while it sums); the best of `rounds`."""
    data = np.ones(size_bytes // 8, dtype=np.int64)
    chunks = np.array_split(data, threads)
    best = 0.0
    for _ in range(rounds):
        workers = [threading.Thread(target=np.add.reduce, args=(chunk,)) for chunk in chunks]
        start = time.perf_counter()
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        best = max(best, data.nbytes / (time.perf_counter() - start) / 1e9)
    return best


def _prompt(model: Model, n_tokens: int) -> np.ndarray[Any, np.dtype[np.int32]]:
    """A reproducible prompt of ordinary tokens (BOS first when the model has one)."""
    ids = _ordinary_tokens(model, n_tokens, seed=1234)
    if model.info.bos_token is not None:
        ids[0] = model.info.bos_token
    return ids


def bench_constraint(schema: dict[str, Any]) -> Constraint:
    """The constraint of a schema (checked: ToolSchemaError with its
    location), or of a grammar document that uses the x-adil-* extensions
    (taken as it is: the engine's compiler checks it)."""
    if any(isinstance(key, str) and key.startswith("x-adil-") for key in schema):
        return Constraint.raw(schema)
    return schema_constraint(schema)


def peak_rss_bytes() -> int:
    """The process's peak resident set so far (ru_maxrss: KiB on Linux,
    bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak) if sys.platform == "darwin" else int(peak) * 1024


def run_bench(
    model_path: str,
    *,
    threads: int,
    prompt_tokens: int = 512,
    gen_tokens: int = 128,
    repetitions: int = 5,
    library: str | None = None,
    schema: dict[str, Any] | None = None,
    context_length: int | None = None,
    depths: Sequence[int] = (0,),
    backend: str | None = None,
    kv_type: KvType | None = None,
) -> BenchResult:
    """Runs the prefill test (`prompt_tokens` >= MIN_PROMPT_TOKENS) and the
    decode test (`gen_tokens` >= MIN_GEN_TOKENS) `repetitions` (>= 1) times
    each at every depth of `depths` (distinct integers >= 0: tokens already
    in the KV cache, see the module docstring), and with `schema` the
    constrained-decoding test, in a context of `context_length` positions
    (None: what the tests need at the deepest depth) whose KV cache keeps
    `kv_type` elements (Engine.load_model; None: the engine's default);
    InvalidArgumentError for sizes below those, EngineInternalError when a
    measured run did not reuse the depth's prefix from the cache; `backend`
    is Engine.open's (CapabilityError when it cannot be had)."""
    for name, value, minimum in (("prompt_tokens", prompt_tokens, MIN_PROMPT_TOKENS),
                                 ("gen_tokens", gen_tokens, MIN_GEN_TOKENS),
                                 ("repetitions", repetitions, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise InvalidArgumentError(f"{name} must be an integer >= {minimum}, got {value!r}")
    depths = check_depths(depths)
    constraint = bench_constraint(schema) if schema is not None else None
    need = max(depths) + max(prompt_tokens, gen_tokens + 1) + 8
    if constraint is not None:
        need = max(need, len(GRAMMAR_PROMPT.encode("utf-8")) + GRAMMAR_MAX_TOKENS + 8)
    if context_length is not None and (isinstance(context_length, bool)
                                       or not isinstance(context_length, int)
                                       or context_length < need):
        raise InvalidArgumentError(
            f"context_length must be an integer >= {need} (what the tests need), "
            f"got {context_length!r}")
    grammar: GrammarResult | None = None
    with Engine.open(library=library, threads=threads, backend=backend) as engine, \
            engine.load_model(model_path, threads=threads,
                              context_length=context_length or need, kv_type=kv_type) as model:
        threads = model.info.threads  # what runs: the engine may use fewer than asked
        results = [_depth_bench(model, depth, prompt_tokens, gen_tokens, repetitions)
                   for depth in depths]
        if constraint is not None:
            grammar = _grammar_bench(model, constraint, repetitions)
        engine_name = f"{engine.info.engine_name} {engine.info.engine_version}"
        cpu_features, kernels = engine.info.cpu_features, engine.info.kernels
        weight_bytes, decode_bytes = model.info.size_bytes, model.info.decode_bytes
        n_ctx, kv_bytes = model.info.context_length, model.info.kv_cache_bytes
        peak = peak_rss_bytes()
        int8_peak = engine.int8_peak(threads)
        prefill_params = _prefill_params(model.info, prompt_tokens)
    return BenchResult(
        model=model_path,
        engine=engine_name,
        threads=threads,
        prompt_tokens=prompt_tokens,
        gen_tokens=gen_tokens,
        repetitions=repetitions,
        cpu_features=cpu_features,
        kernels=kernels,
        weight_bytes=weight_bytes,
        prefill=results[0].prefill,
        decode=results[0].decode,
        read_bandwidth_gb_per_s=measure_read_bandwidth(threads),
        grammar=grammar,
        context_length=n_ctx,
        kv_cache_bytes=kv_bytes,
        kv_type=kv_type,
        peak_rss_bytes=peak,
        decode_bytes=decode_bytes,
        depths=results,
        int8_peak_macs_per_s=int8_peak,
        prefill_params=prefill_params,
    )


def _ordinary_tokens(model: Model, n_tokens: int, seed: int) -> np.ndarray[Any, np.dtype[np.int32]]:
    """Reproducible ordinary tokens, no BOS: what follows a depth prefix."""
    n_vocab = model.info.n_vocab
    low = min(1000, n_vocab // 4)
    ids = np.random.default_rng(seed).integers(low, n_vocab - 1, size=n_tokens, dtype=np.int32)
    bos = model.info.bos_token
    if bos is not None:
        ids[ids == bos] = low if bos != low else low + 1
    return ids


def _depth_bench(model: Model, depth: int, prompt_tokens: int, gen_tokens: int,
                 repetitions: int) -> DepthResult:
    """The prefill and decode tests with `depth` tokens in the cache: a fill
    run of the prefix before each measured run leaves exactly the prefix
    cached (a prompt always evaluates at least its last token, so the fill
    costs one token once the prefix is cached), and every measured run must
    say it reused `depth` tokens."""
    result = DepthResult(depth=depth, n_cached_tokens=depth)
    if depth == 0:
        prefix = np.zeros(0, dtype=np.int32)
        measured = _prompt(model, prompt_tokens)  # pp at an empty context starts with BOS
        first = measured[:1]
        # A one-token fill run of another token: nothing of the prompt is cached.
        fill = np.array([(int(measured[0]) + 1) % model.info.n_vocab], dtype=np.int32)
    else:
        prefix = _prompt(model, depth)  # BOS first: the document the tests continue
        measured = _ordinary_tokens(model, prompt_tokens, seed=depth + 1)
        first = _ordinary_tokens(model, 1, seed=depth + 2)
        fill = prefix
    for _ in range(repetitions):
        model.complete(fill, max_tokens=1, sampling=_GREEDY)
        done = model.complete(np.concatenate([prefix, measured]), max_tokens=1,
                              sampling=_GREEDY)
        _check_cached(done.stats.n_cached_tokens, depth, "prefill")
        result.prefill.values.append(done.stats.prefill_tokens_per_s)
        if depth:
            model.complete(fill, max_tokens=1, sampling=_GREEDY)
        done = model.complete(np.concatenate([prefix, first]), max_tokens=gen_tokens,
                              sampling=_GREEDY, ignore_eos=True)
        _check_cached(done.stats.n_cached_tokens, depth, "decode")
        result.decode.values.append(done.stats.decode_tokens_per_s)
    return result


def _check_cached(n_cached: int, depth: int, test: str) -> None:
    if n_cached != depth:
        raise EngineInternalError(
            f"bench: the {test} run at depth {depth} reused {n_cached} cached tokens, expected "
            f"{depth}: the KV prefix cache did not keep the prefix the fill run left")


def _grammar_bench(model: Model, constraint: Constraint, repetitions: int) -> GrammarResult:
    compile_ms: list[float] = []
    for _ in range(repetitions + 1):
        start = time.perf_counter()
        model._compile_grammar(constraint)
        compile_ms.append((time.perf_counter() - start) * 1000)
    prompt = model.tokenize(GRAMMAR_PROMPT)
    masks: list[float] = []
    result = GrammarResult(compile_ms=statistics.median(compile_ms[1:]),
                           first_compile_ms=compile_ms[0], mask_us_median=0.0, mask_us_p99=0.0,
                           generated_tokens=0, forced_tokens=0, truncated_runs=0)
    for _ in range(repetitions):
        masks.extend(_mask_times(model, prompt, constraint))
        # Constrained and unconstrained decode of as many tokens, alternating.
        try:
            done = model.complete(prompt, max_tokens=GRAMMAR_MAX_TOKENS, sampling=_GREEDY,
                                  constraint=constraint)
            stats = done.stats
        except OutputValidationError:
            result.truncated_runs += 1
            continue
        result.generated_tokens, result.forced_tokens = stats.n_generated, stats.forced_tokens
        if stats.n_generated < MIN_GEN_TOKENS:
            continue  # no decode step to time
        result.constrained.values.append(stats.decode_tokens_per_s)
        free = model.complete(prompt, max_tokens=stats.n_generated, sampling=_GREEDY,
                              ignore_eos=True)
        result.unconstrained.values.append(free.stats.decode_tokens_per_s)
    if masks:
        result.mask_us_median = float(np.percentile(masks, 50))
        result.mask_us_p99 = float(np.percentile(masks, 99))
    return result


def _mask_times(model: Model, prompt: Any, constraint: Constraint) -> list[float]:
    """µs of grammar work per token: a constrained run stepped one token at
    a time, the growth of its grammar_ms at each step."""
    times: list[float] = []
    before = 0.0
    with model.generate(prompt, max_tokens=GRAMMAR_MAX_TOKENS, sampling=_GREEDY,
                        constraint=constraint) as generation:
        generation._capacity = 1
        try:
            for piece in generation:
                now = generation.live_stats().grammar_ms
                if piece.tokens:
                    times.append((now - before) * 1000 / len(piece.tokens))
                before = now
        except OutputValidationError:
            pass  # truncated: the steps before count all the same
    return times


def _prefill_params(info: ModelInfo, prompt_tokens: int) -> float | None:
    """The weights one prompt token multiplies by, on average over a prompt
    of `prompt_tokens`: a decoded token's (Model.info.decode_params), but
    the output head (n_vocab x n_embd) only for the prompt's last token,
    which is all prefill applies it to.  None before ABI 2.5."""
    if not info.decode_params or info.n_embd is None:
        return None
    head = info.n_vocab * info.n_embd
    return float(info.decode_params - head + head / prompt_tokens)


def _mib(n: int | None) -> str:
    return "-" if n is None else f"{n / 1048576:.1f} MiB"


def _prefill_peak_line(result: BenchResult) -> str:
    """Prefill's multiply-adds per second against the CPU's int8 peak."""
    macs, peak = result.prefill_macs_per_s, result.int8_peak_macs_per_s
    fraction = result.prefill_peak_fraction
    shown = "-" if macs is None else f"{macs / 1e9:.1f} GMAC/s"
    if peak is None:
        return f"prefill: {shown} (the engine measures no int8 peak)"
    percent = "-" if fraction is None else f"{100 * fraction:.1f}%"
    return f"prefill: {shown} = {percent} of the int8 peak {peak / 1e9:.1f} GMAC/s"


def format_table(result: BenchResult) -> str:
    """A llama-bench-like table (rows pp512, tg128, pp512@d1024, ...)."""
    rows = [("test", "tokens/s median", "min", "max", "ms/token")]
    depths = result.depths or [DepthResult(0, result.prefill, result.decode)]
    for d in depths:
        at = f"@d{d.depth}" if d.depth else ""
        for name, series in ((f"pp{result.prompt_tokens}{at}", d.prefill),
                             (f"tg{result.gen_tokens}{at}", d.decode)):
            s = series.summary()
            rows.append((name, f"{s['median']:.2f}", f"{s['min']:.2f}", f"{s['max']:.2f}",
                         f"{_ms_per_token(s['median']):.3f}"))
    widths = [max(len(r[i]) for r in rows) for i in range(5)]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    lines += [
        "",
        f"model: {result.model} ({result.weight_bytes / 1e6:.1f} MB of weights, "
        f"{result.bytes_per_token / 1e6:.1f} MB read per decoded token)",
        f"engine: {result.engine}, threads {result.threads}, kernels {result.kernels or '-'}, "
        f"CPU features: {','.join(result.cpu_features) or '-'}",
        f"read bandwidth: {result.read_bandwidth_gb_per_s:.1f} GB/s -> decode ceiling "
        f"{result.decode_roofline_tokens_per_s:.1f} tokens/s; decode at "
        f"{100 * result.decode_roofline_fraction:.0f}% of it"
        + (f" (at depth {depths[0].depth})" if depths[0].depth else ""),
        _prefill_peak_line(result),
        f"memory: KV cache {_mib(result.kv_cache_bytes)} at {result.context_length} positions"
        f" ({result.kv_type or 'default'} elements), peak RSS {_mib(result.peak_rss_bytes)}",
    ]
    for test, fit in (("prefill", result.prefill_fit), ("decode", result.decode_fit)):
        if fit is not None:
            lines.append(f"cost curve, {test}: {fit.intercept_ms:.3f} ms/token at depth 0 "
                         f"+ {fit.slope_ms_per_1k:.4f} ms/token per 1k tokens of depth "
                         f"(least squares over {fit.points} depths)")
    grammar = result.grammar
    if grammar is not None:
        lines += [
            f"grammar: compile {grammar.compile_ms:.2f} ms (the first "
            f"{grammar.first_compile_ms:.1f} ms: vocabulary index); mask per token median "
            f"{grammar.mask_us_median:.1f} us, p99 {grammar.mask_us_p99:.1f} us; "
            f"{grammar.forced_tokens} of {grammar.generated_tokens} tokens forced",
            f"constrained decode {grammar.constrained.median:.2f} tokens/s vs unconstrained "
            f"{grammar.unconstrained.median:.2f}: x{grammar.decode_ratio:.3f}"
            + (f" ({grammar.truncated_runs} runs truncated)" if grammar.truncated_runs else ""),
        ]
    return "\n".join(lines)
