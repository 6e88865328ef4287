"""Replays compare.py's rounds through a model of the drafting rule: counts
without timing noise.

The tokens a run draws do not depend on its drafts (that is what keeps the
output the plain run's), so one run's output fixes, for any drafting rule,
how many passes and rows lookup decoding evaluates.  This script runs each
round once with speculative="lookup", replays its tokens through the rule of
native/engine/api/run_lookup.c written again below (and fails when its
drafted/kept counts differ from the engine's), and predicts the decode
speed-up as plain passes over ``passes + row_cost x extra rows``: row_cost is
what one more row of a pass costs next to a one-row pass (fit it from
compare.py's ratios; bench/lookup/README.md).  Edit `Rule` to try another.

    python bench/lookup/replay.py --rounds 9 --row-cost 0.25 0.5
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass

import compare

import adil
import adil.models

MAX_DRAFT = 16  # RUN_LOOKUP_MAX_DRAFT
NGRAMS = (4, 3)  # RUN_LOOKUP_NGRAM_MAX down to RUN_LOOKUP_NGRAM_MIN
SLACK = 2  # RUN_LOOKUP_MATCH_SLACK
MATCH_MAX = MAX_DRAFT + SLACK  # RUN_LOOKUP_MATCH_MAX


def draft(hist: list[int]) -> tuple[list[int], int]:
    """run_lookup_draft: the continuation (up to MAX_DRAFT) and the match length."""
    n = len(hist)
    for g in NGRAMS:
        if n < g + 1:
            continue
        key = hist[n - g:]
        for j in range(n - g - 1, -1, -1):
            if hist[j:j + g] == key:
                length = g
                while (length < MATCH_MAX and length < j + g
                       and hist[j + g - length - 1] == hist[n - length - 1]):
                    length += 1
                return hist[j + g:j + g + MAX_DRAFT], length
    return [], 0


@dataclass
class Rule:
    """run_lookup_next and run_lookup_adapt."""

    budget: int = 8

    def size(self, matched: int, room: int) -> int:
        return min(self.budget, room, max(matched - SLACK, 0))

    def adapt(self, drafted: int, accepted: int) -> None:
        if accepted == drafted and drafted >= self.budget:
            self.budget = min(self.budget * 2, MAX_DRAFT)
        elif accepted == 0:
            self.budget = max(self.budget // 2, 1)


@dataclass
class Counts:
    passes: int = 0
    rows: int = 0
    drafted: int = 0
    kept: int = 0


def replay(prompt: list[int], out: list[int], max_tokens: int) -> Counts:
    """The passes after the first token (which the prefill yields)."""
    rule, counts = Rule(), Counts()
    hist, i = [*prompt, out[0]], 1
    while i < len(out):
        continuation, matched = draft(hist)
        d = continuation[:rule.size(matched, max_tokens - i - 1)]
        a = 0
        while a < len(d) and i + a < len(out) and out[i + a] == d[a]:
            a += 1
        n_new = min(a + 1, len(out) - i)  # the kept tokens, then the one drawn after them
        counts.passes += 1
        counts.rows += len(d) + 1
        counts.drafted += len(d)
        counts.kept += a
        hist += out[i:i + n_new]
        i += n_new
        if d and not (i == len(out) and n_new == a):  # a pass a stop token ended adapts nothing
            rule.adapt(len(d), a)
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="gemma3-270m", help="a path or an adil.models alias")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--max-tokens", type=int, default=128)
    parser.add_argument("--row-cost", type=float, nargs="+", default=[0.25, 0.5])
    args = parser.parse_args(argv)
    mismatches = 0
    costs = " | ".join(f"predicted at {c}" for c in args.row_cost)
    print(f"| run | passes | rows | drafted | kept | {costs} |")
    print("|---|---|---|---|---|" + "---|" * len(args.row_cost))
    with adil.Engine.open() as engine, engine.load_model(adil.models.path(args.model), threads=2,
                                                         context_length=2048) as model:
        for task, (prompt, sampling) in compare.TASKS.items():
            tokens = [int(t) for t in model.tokenize(prompt)]
            for seed in range(1000, 1000 + args.rounds):
                done = model.complete(prompt, max_tokens=args.max_tokens, seed=seed,
                                      speculative="lookup", **sampling)
                c = replay(tokens, list(done.tokens), args.max_tokens)
                if (c.drafted, c.kept) != (done.stats.drafted_tokens, done.stats.draft_accepted):
                    mismatches += 1
                    print(f"{task} {seed}: the engine drafted/kept {done.stats.drafted_tokens}/"
                          f"{done.stats.draft_accepted}, the replay {c.drafted}/{c.kept}")
                plain = len(done.tokens) - 1
                predicted = " | ".join(f"{plain / (c.passes + r * (c.rows - c.passes)):.2f}x"
                                       for r in args.row_cost)
                print(f"| {task} {seed} | {c.passes} | {c.rows} | {c.drafted} | {c.kept} | "
                      f"{predicted} |")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
