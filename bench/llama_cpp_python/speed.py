"""Prefill and decode tokens/s of llama.cpp through llama-cpp-python, the
way ``adil bench`` measures ours: a 512-token prompt evaluated in one call,
then 128 tokens decoded one ``eval`` at a time; the best of 3.

A reference tool, never a dependency: run it with the Python of a separate
environment that has llama-cpp-python 0.3.36 (tests/fixtures/record_llamacpp.py
says how to make one), alternating with ``adil bench`` on the same file:

    REF=<that environment's python>
    MODEL=$(python -c 'import adil.models; print(adil.models.path("smollm2-135m-instruct"))')
    for i in 1 2 3; do
        $REF bench/llama_cpp_python/speed.py "$MODEL" 2
        python -m adil bench --model "$MODEL" --threads 2 --repetitions 3 --json
    done

Use it where llama-bench is not built (bench/compare is the side-by-side of
record: it drives llama-bench).  On gemma3-270m it reads within about 10%
of llama-bench's figures in bench/RESULTS.md.
"""

from __future__ import annotations

import sys
import time

import llama_cpp  # type: ignore[import-not-found]

PROMPT_TOKENS = 512
DECODE_TOKENS = 128
REPETITIONS = 3


def main() -> None:
    path, threads = sys.argv[1], int(sys.argv[2])
    llm = llama_cpp.Llama(model_path=path, n_ctx=1024, n_batch=PROMPT_TOKENS, n_threads=threads,
                          n_threads_batch=threads, verbose=False)
    prompt = list(range(1000, 1000 + PROMPT_TOKENS))  # ordinary tokens of every vocabulary here
    best_prefill = best_decode = 0.0
    for _ in range(REPETITIONS):
        llm.reset()
        start = time.perf_counter()
        llm.eval(prompt)
        best_prefill = max(best_prefill, PROMPT_TOKENS / (time.perf_counter() - start))
        llm.reset()
        llm.eval([1000])
        start = time.perf_counter()
        for i in range(DECODE_TOKENS):
            llm.eval([1001 + i])
        best_decode = max(best_decode, DECODE_TOKENS / (time.perf_counter() - start))
    print(f"llama.cpp (llama-cpp-python {llama_cpp.__version__}), {threads} threads: "
          f"prefill {best_prefill:.1f} tok/s, decode {best_decode:.1f} tok/s")


if __name__ == "__main__":
    main()
