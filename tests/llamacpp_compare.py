"""How our logits and greedy tokens are compared with llama.cpp's fixtures:
the tolerance rules of the real-model tests (test_model_gemma_real.py,
test_smollm2_llamacpp.py), shared with the tiny-model fixtures
(test_tiny_llamacpp.py).  Each test file states what it observed.

A fixture's `top` is, for every position of a teacher-forced sequence,
llama.cpp's top-k [id, logit] pairs, best first.

  * TOP_MEAN_TOL: over a sequence, the mean |ours - llama.cpp| of the logits
    of llama.cpp's top-k tokens is at most 0.8; TOP_MAX_TOL: at most 3.5 at
    any single position;
  * ARGMAX_MARGIN: llama.cpp's best token is our argmax or within 2.0 of our
    max at every position;
  * NEAR_TIE: where llama.cpp's own top-2 gap is below 0.5, either order is
    right (teacher-forced argmax and greedy continuations are compared only
    up to such a position).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

TOP_MEAN_TOL = 0.8
TOP_MAX_TOL = 3.5
ARGMAX_MARGIN = 2.0
NEAR_TIE = 0.5
END = -1  # stands for the end-of-generation token that ended a generation

Top = Sequence[Sequence[float]]  # one position's [id, logit] pairs, best first


def top_logit_diffs(ours: np.ndarray, tops: Sequence[Top], label: str) -> np.ndarray:
    """|ours - llama.cpp| over llama.cpp's top-k at each position, (n_pos, k);
    asserts TOP_MAX_TOL and ARGMAX_MARGIN at every position and TOP_MEAN_TOL
    over the sequence."""
    diffs = []
    for pos, top in enumerate(tops):
        top_ids = [int(t[0]) for t in top]
        theirs = np.array([t[1] for t in top], dtype=np.float64)
        diff = np.abs(ours[pos, top_ids] - theirs)
        diffs.append(diff)
        assert diff.max() <= TOP_MAX_TOL, (label, pos, diff.max())
        deficit = float(ours[pos].max() - ours[pos, top_ids[0]])
        assert deficit <= ARGMAX_MARGIN, (label, pos, deficit)
    out = np.array(diffs)
    assert out.mean() <= TOP_MEAN_TOL, (label, out.mean())
    return out


def gap(top: Top) -> float:
    """llama.cpp's own margin between its best and second-best token."""
    return float(top[0][1] - top[1][1])


def argmax_mismatches(ours: np.ndarray, tops: Sequence[Top]) -> tuple[int, list[tuple[int, float]]]:
    """(positions checked, [(position, gap)] where our argmax is not
    llama.cpp's best), over the positions whose gap is at least NEAR_TIE."""
    checked, wrong = 0, []
    for pos, top in enumerate(tops):
        if gap(top) < NEAR_TIE:
            continue
        checked += 1
        if int(np.argmax(ours[pos])) != int(top[0][0]):
            wrong.append((pos, gap(top)))
    return checked, wrong


def with_end(ids: Sequence[int], ended: bool) -> list[int]:
    """ids, then END where generation stopped at an end-of-generation token."""
    return [int(i) for i in ids] + ([END] if ended else [])


def assert_greedy_like(ours: list[int], theirs: list[int], tops: Sequence[Top], label: str,
                       eog_tokens: Sequence[int]) -> None:
    """Our greedy tokens equal llama.cpp's up to its first near-tie, and
    where they part ours is a token llama.cpp scores within NEAR_TIE of its
    best.  ours/theirs: with_end lists; tops[i]: llama.cpp's top-k before
    generated token i."""
    if ours == theirs:
        return
    shorter = min(len(ours), len(theirs))
    part = next((i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b), shorter)
    assert part < len(tops), (label, "lengths differ", ours, theirs)
    first_tie = next((i for i, top in enumerate(tops) if gap(top) < NEAR_TIE), len(tops))
    assert part >= first_tie, (label, part, first_tie)
    best = float(tops[part][0][1])
    close = {int(t[0]) for t in tops[part] if best - float(t[1]) < NEAR_TIE}
    close |= {END} if close & set(eog_tokens) else set()
    assert ours[part] in close, (label, part, list(tops[part][:3]))
