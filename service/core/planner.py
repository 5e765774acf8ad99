"""The one batch planner: sort by length, cut into batches bounded by size and padded tokens.

The request batcher (:mod:`service.core.batcher`) plans each window of queued sentences with it,
and every bulk path plans a whole list with it: :meth:`Encoder.encode_views` (``thoughtvec index
build``, the evaluation harness) and the default-index build (which goes through the batcher).
Neighbours in length share little padding; a batch costs about B x longest, so that is the budget.
"""

from __future__ import annotations

from collections.abc import Sequence

# Defaults of the serving settings (``max_batch_size``, ``max_batch_tokens``), used where no settings are.
MAX_BATCH_SIZE = 32
MAX_BATCH_TOKENS = 8192


def plan_batches(lengths: Sequence[int], max_size: int, max_tokens: int) -> list[list[int]]:
    """Cut positions sorted by length into batches of at most ``max_size`` and ``max_tokens`` padded tokens.

    Returns lists of indices into ``lengths``. A single input longer than the budget runs alone.
    The sort is stable: equal lengths keep their order.
    """
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
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
