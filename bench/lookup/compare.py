"""Plain decoding next to speculative="lookup", side by side in one run.

Two tasks on one model (gemma3-270m by default): ``extract``, a fixed prompt
whose answer copies from the prompt (greedy), and ``free``, free text sampled
at temperature 0.8 with a fixed seed per round (the same tokens in both modes:
lookup never changes what is drawn).  Each round runs both modes one after
the other, reversing the order every other round; one warm-up run per mode is
not counted.  Decode tokens/s is the run's own (adil Stats: the tokens after
the first over decode_ms), so prefill is left out.  Reports medians and the
median of the per-round ratios (lookup over plain) and each round's ratio by
its seed, the drafted and kept tokens, and checks that both modes produced
the same tokens.

    python bench/lookup/compare.py                 # gemma3-270m, 2 threads, 7 rounds
    python bench/lookup/compare.py --threads 1 --rounds 5 --json
    python bench/lookup/compare.py --task free --seeds 1003 1006 --repeat 5

With ``--repeat n`` each seed runs n pairs and its ratio is their median (one
pair's ratio swings by 0.3 either way on a busy machine).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from typing import Any

import adil

DOCUMENT = """Warehouse transfer log, week 12.
- 03/17 08:10 pallet P-2211: 40 boxes of A4 copier paper from dock 2 to aisle 14, shelf C.
- 03/17 09:45 pallet P-2212: 12 office chairs (black mesh, model KX-40) from dock 2 to aisle 3.
- 03/17 11:30 pallet P-2219: 6 standing desks (oak top, 140 cm) from dock 4 to aisle 7, shelf A.
- 03/18 07:55 pallet P-2230: 200 toner cartridges (HP 26A) from dock 1 to the secure cage.
- 03/18 10:20 pallet P-2231: 30 monitor arms (dual, gas spring) from dock 1 to aisle 9, shelf B.
- 03/18 14:05 pallet P-2240: 18 filing cabinets (grey steel, 4 drawers) from dock 3 to aisle 2.
- 03/19 08:30 pallet P-2245: 60 desk lamps (LED, warm white) from dock 3 to aisle 11, shelf D.
Inventory check: no damaged goods; pallet P-2219 arrived one desk short (ticket 5521 opened)."""
EXTRACT = DOCUMENT + "\n\nThe entries of the log above, copied exactly, one per line:\n-"
FREE = "Write a short story about a lighthouse keeper who finds a letter in a bottle.\n\n"
TASKS = {
    "extract": (EXTRACT, {"temperature": 0.0}),
    "free": (FREE, {"temperature": 0.8}),
}


def one(model: adil.Model, prompt: str, sampling: dict[str, Any], seed: int, max_tokens: int,
        speculative: str | None) -> tuple[float, tuple[int, ...], adil.Stats]:
    done = model.complete(prompt, max_tokens=max_tokens, seed=seed, speculative=speculative,
                          **sampling)
    return done.stats.decode_tokens_per_s, done.tokens, done.stats


def measure(model: adil.Model, seeds: list[int], max_tokens: int, repeat: int = 1,
            tasks: tuple[str, ...] = tuple(TASKS)) -> dict[str, Any]:
    report: dict[str, Any] = {}
    for task in tasks:
        prompt, sampling = TASKS[task]
        for mode in (None, "lookup"):  # warm-up
            one(model, prompt, sampling, 0, max_tokens, mode)
        plain: list[float] = []
        lookup: list[float] = []
        by_seed: dict[int, list[float]] = {seed: [] for seed in seeds}
        drafted = kept = generated = 0
        same = True
        for r, seed in enumerate(s for s in seeds for _ in range(repeat)):
            order = (None, "lookup") if r % 2 == 0 else ("lookup", None)
            got: dict[str | None, tuple[float, tuple[int, ...], adil.Stats]] = {}
            for mode in order:
                got[mode] = one(model, prompt, sampling, seed, max_tokens, mode)
            plain.append(got[None][0])
            lookup.append(got["lookup"][0])
            by_seed[seed].append(got["lookup"][0] / got[None][0])
            same &= got[None][1] == got["lookup"][1]
            stats = got["lookup"][2]
            drafted += stats.drafted_tokens
            kept += stats.draft_accepted
            generated += stats.n_generated
        # A seed's ratio: the median of its repeats (one pair each, back to back).
        ratios = {seed: statistics.median(rs) for seed, rs in by_seed.items()}
        report[task] = {
            "ratios": ratios,
            "plain_tok_s": statistics.median(plain),
            "lookup_tok_s": statistics.median(lookup),
            "ratio_median": statistics.median(ratios.values()),
            "ratio_min": min(ratios.values()),
            "ratio_max": max(ratios.values()),
            "drafted": drafted,
            "kept": kept,
            "generated": generated,
            "same_tokens": same,
            "samples": {"plain": plain, "lookup": lookup},
        }
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma3-270m", help="a path or an adil.models alias")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--seeds", type=int, nargs="+",
                        help="these seeds instead of 1000 .. 1000 + rounds - 1")
    parser.add_argument("--repeat", type=int, default=1,
                        help="pairs of runs per seed (its ratio: their median)")
    parser.add_argument("--task", choices=list(TASKS), action="append",
                        help="only this task (may repeat; default: all)")
    parser.add_argument("--json", action="store_true", help="print the whole report as JSON")
    args = parser.parse_args(argv)
    import adil.models

    path = adil.models.path(args.model)
    with adil.Engine.open() as engine, engine.load_model(path, threads=args.threads,
                                                         context_length=2048) as model:
        seeds = args.seeds or [1000 + r for r in range(args.rounds)]
        report = measure(model, seeds, args.max_tokens, args.repeat,
                         tuple(args.task or TASKS))
    meta = {"model": os.path.basename(path), "threads": args.threads, "seeds": seeds,
            "repeat": args.repeat, "max_tokens": args.max_tokens, "loadavg": os.getloadavg()}
    if args.json:
        print(json.dumps({"meta": meta, "tasks": report}, indent=2))
        return 0
    print(f"{meta['model']}, {args.threads} thread(s), {len(seeds)} seeds x {args.repeat} "
          f"pair(s) of runs of {args.max_tokens} tokens, load average {meta['loadavg'][0]:.1f}")
    print("| task | plain tok/s | lookup tok/s | lookup / plain (median, min-max) "
          "| drafted | kept | same tokens |")
    print("|---|---|---|---|---|---|---|")
    for task, t in report.items():
        print(f"| {task} | {t['plain_tok_s']:.1f} | {t['lookup_tok_s']:.1f} | "
              f"{t['ratio_median']:.2f}x ({t['ratio_min']:.2f}-{t['ratio_max']:.2f}) | "
              f"{t['drafted']} | {t['kept']} | {t['same_tokens']} |")
    for task, t in report.items():
        print(f"{task}, lookup / plain per seed: "
              + ", ".join(f"{seed} {ratio:.2f}" for seed, ratio in t["ratios"].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
