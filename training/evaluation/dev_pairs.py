"""The dev pairs that post-processing (:mod:`thoughtvec.training.export.postprocess`) and the dimension checks
choose on: STS-B dev (1 500 pairs) and SICK's trial set (500), read from the SentEval files. Post-processing
takes them as an argument, so the bundle side never reads the evaluation data itself."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from thoughtvec.training.evaluation import datasets
from thoughtvec.training.export.postprocess import DevPairs

DEV_TASKS = (("STS-B", "STSBenchmark"), ("SICK-R", "SICKRelatedness"))  # DevPairs' task name, SentEval's


def load_dev_pairs(root: Path | None = None, check_counts: bool = True) -> DevPairs:
    """The dev split of each of :data:`DEV_TASKS` (``root``: the SentEval folder, default ``datasets.default_root()``)."""
    out = {}
    for name, key in DEV_TASKS:
        dev = datasets.load_task(key, root, check_counts=check_counts).pairs("dev")
        out[name] = (list(dev.first), list(dev.second), np.asarray(dev.scores, np.float64))
    return DevPairs(out)
