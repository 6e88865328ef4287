"""Throughput benchmark: prefill and decode tokens/s, like llama-bench's
pp and tg tests, plus the machine's read bandwidth and how close decode
comes to the roofline it sets (every decoded token reads the weights once).

    adil bench --model gemma3-270m --threads 2 --prompt-tokens 512 \
               --gen-tokens 128 --repetitions 5 [--json]
"""

from __future__ import annotations

import statistics
import threading
import time
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from .engine import Engine, Model
from .errors import InvalidArgumentError
from .sampling import Sampling

__all__ = ["MIN_GEN_TOKENS", "MIN_PROMPT_TOKENS", "BenchResult", "measure_read_bandwidth",
           "run_bench"]

MIN_PROMPT_TOKENS = 1
MIN_GEN_TOKENS = 2  # the first generated token comes out of the prefill; decode starts after it

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

    @property
    def decode_roofline_tokens_per_s(self) -> float:
        return self.read_bandwidth_gb_per_s * 1e9 / self.weight_bytes if self.weight_bytes else 0.0

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
    info = model.info
    rng = np.random.default_rng(1234)
    low = min(1000, info.n_vocab // 4)
    ids = rng.integers(low, info.n_vocab - 1, size=n_tokens, dtype=np.int32)
    if info.bos_token is not None:
        ids[0] = info.bos_token
    return ids


def run_bench(
    model_path: str,
    *,
    threads: int,
    prompt_tokens: int = 512,
    gen_tokens: int = 128,
    repetitions: int = 5,
    library: str | None = None,
) -> BenchResult:
    """Runs the prefill test (`prompt_tokens` >= MIN_PROMPT_TOKENS) and the
    decode test (`gen_tokens` >= MIN_GEN_TOKENS) `repetitions` (>= 1) times
    each; InvalidArgumentError for sizes below those."""
    for name, value, minimum in (("prompt_tokens", prompt_tokens, MIN_PROMPT_TOKENS),
                                 ("gen_tokens", gen_tokens, MIN_GEN_TOKENS),
                                 ("repetitions", repetitions, 1)):
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise InvalidArgumentError(f"{name} must be an integer >= {minimum}, got {value!r}")
    need = max(prompt_tokens, gen_tokens + 1) + 8
    with Engine.open(library=library, threads=threads) as engine, \
            engine.load_model(model_path, threads=threads, context_length=need) as model:
        threads = model.info.threads  # what runs: the engine may use fewer than asked
        prefill, decode = Series(), Series()
        prompt = _prompt(model, prompt_tokens)
        bos = prompt[:1]
        for _ in range(repetitions):
            # A fresh, different first token defeats the KV prefix cache.
            model.complete(bos, max_tokens=1, sampling=_GREEDY)
            done = model.complete(prompt, max_tokens=1, sampling=_GREEDY)
            prefill.values.append(done.stats.prefill_tokens_per_s)
            done = model.complete(bos, max_tokens=gen_tokens, sampling=_GREEDY,
                                  ignore_eos=True)
            decode.values.append(done.stats.decode_tokens_per_s)
        engine_name = f"{engine.info.engine_name} {engine.info.engine_version}"
        cpu_features, kernels = engine.info.cpu_features, engine.info.kernels
        weight_bytes = model.info.size_bytes
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
        prefill=prefill,
        decode=decode,
        read_bandwidth_gb_per_s=measure_read_bandwidth(threads),
    )


def format_table(result: BenchResult) -> str:
    """A llama-bench-like table."""
    rows = [("test", "tokens/s median", "min", "max")]
    for name, series in ((f"pp{result.prompt_tokens}", result.prefill),
                         (f"tg{result.gen_tokens}", result.decode)):
        s = series.summary()
        rows.append((name, f"{s['median']:.2f}", f"{s['min']:.2f}", f"{s['max']:.2f}"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = [" | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    lines += [
        "",
        f"model: {result.model} ({result.weight_bytes / 1e6:.1f} MB of weights)",
        f"engine: {result.engine}, threads {result.threads}, kernels {result.kernels or '-'}, "
        f"CPU features: {','.join(result.cpu_features) or '-'}",
        f"read bandwidth: {result.read_bandwidth_gb_per_s:.1f} GB/s -> decode ceiling "
        f"{result.decode_roofline_tokens_per_s:.1f} tokens/s; decode at "
        f"{100 * result.decode_roofline_fraction:.0f}% of it",
    ]
    return "\n".join(lines)
