"""The one batch planner: sort by length, cut into batches bounded by size and padded tokens.

The request batcher (:mod:`thoughtvec.service.core.batcher`) plans each window of queued sentences with it,
and every bulk path plans a whole list with it: :meth:`Encoder.encode_views` (``thoughtvec index
build``, the evaluation harness) and the default-index build (which goes through the batcher).

Two ways to cut the sorted list, both into runs of neighbours in length:

* **greedy** (no cost model): fill each batch up to the bounds. Right for a whole list sorted at
  once, where neighbours are nearly equal and padding is small.
* **cheapest** (a :class:`RunCost`): the partition with the least predicted run time, by dynamic
  programming over the sorted order. A window of 32 one-sentence requests holds random lengths;
  greedy runs all 32 to the longest (1.72 padded tokens per real one, invertible-linear), while
  a split pays one more run's fixed cost to save the padding. Each model's costs differ (a GRU
  step against an attention layer, a run's fixed cost), so the batcher measures them at warm-up
  and refits them on the runs it serves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Defaults of the serving settings (``max_batch_size``, ``max_batch_tokens``), used where no settings are.
MAX_BATCH_SIZE = 32
MAX_BATCH_TOKENS = 8192


@dataclass(frozen=True)
class RunCost:
    """Predicted seconds of one run of ``size`` inputs padded to ``longest`` tokens.

    ``per_run + longest * (per_step + size * per_row_step)``: a fixed cost (the hand-off to the
    model's thread, session overhead), a cost per time step whatever the batch (a recurrent step's
    kernel launches), and the cost of one row at one step. Fitted to measured runs by :meth:`fit`.
    """

    per_run: float
    per_step: float
    per_row_step: float

    def seconds(self, size: int, longest: int) -> float:
        return self.per_run + longest * (self.per_step + size * self.per_row_step)

    @classmethod
    def fit(cls, samples: Sequence[tuple[int, int, float]]) -> RunCost:
        """Least squares over ``(size, longest, seconds)`` samples; no term below zero.

        A term the samples make negative (noise on a cost that is nearly nil) is dropped and the
        others are fitted again without it.
        """
        if len(samples) < 3:
            raise ValueError(f"fitting a run cost needs at least 3 samples, got {len(samples)}")
        a = np.array([[1.0, longest, size * longest] for size, longest, _ in samples])
        y = np.array([s for *_, s in samples])
        keep = [0, 1, 2]
        while True:
            coef = np.linalg.lstsq(a[:, keep], y, rcond=None)[0]
            if (coef >= 0).all() or len(keep) == 1:
                break
            keep.pop(int(np.argmin(coef)))
        terms = [0.0, 0.0, 0.0]
        for k, c in zip(keep, coef):
            terms[k] = max(0.0, float(c))
        return cls(*terms)

    def describe(self) -> str:
        us = 1e6
        return f"a run costs {self.per_run * 1e3:.2f} ms + longest x ({self.per_step * us:.1f} us + size x {self.per_row_step * us:.1f} us)"


def plan_batches(lengths: Sequence[int], max_size: int, max_tokens: int, cost: RunCost | None = None) -> list[list[int]]:
    """Cut positions sorted by length into batches of at most ``max_size`` and ``max_tokens`` padded tokens.

    Returns lists of indices into ``lengths``, shortest first. A single input longer than the
    budget runs alone. The sort is stable: equal lengths keep their order. Without ``cost`` the
    batches are filled greedily; with it, the bounded partition of least predicted time is taken
    (never more than greedy's, which is one of the partitions it weighs).
    """
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    if cost is not None:
        return _cheapest(order, [max(1, lengths[i]) for i in order], max_size, max_tokens, cost)
    batches: list[list[int]] = []
    cur: list[int] = []
    for i in order:
        longest = max(1, lengths[i])  # ascending, so the newcomer is the longest
        if cur and (len(cur) + 1 > max_size or (len(cur) + 1) * longest > max_tokens):
            batches.append(cur)
            cur = []
        cur.append(i)
    if cur:
        batches.append(cur)
    return batches


def _cheapest(order: list[int], sorted_lengths: list[int], max_size: int, max_tokens: int, cost: RunCost) -> list[list[int]]:
    """Least-cost cut of the sorted order into contiguous batches: best[j] = min over i of best[i] + cost(i..j)."""
    n = len(order)
    best = [0.0] + [float("inf")] * n
    start = [0] * (n + 1)  # start[j]: where the last batch of the best plan of the first j begins
    per_run, per_step, per_row_step = cost.per_run, cost.per_step, cost.per_row_step
    for j in range(1, n + 1):
        longest = sorted_lengths[j - 1]  # the batch ending at j runs to this length
        step, row = per_step * longest, per_row_step * longest
        low, low_at = float("inf"), j - 1
        for i in range(j - 1, max(0, j - max_size) - 1, -1):
            size = j - i
            if size > 1 and size * longest > max_tokens:
                break
            c = best[i] + row * size
            if c < low:
                low, low_at = c, i
        best[j] = low + step + per_run
        start[j] = low_at
    batches: list[list[int]] = []
    j = n
    while j:
        batches.append(order[start[j] : j])
        j = start[j]
    return batches[::-1]
