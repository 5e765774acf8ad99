"""What each bundle is for, with its dev figures: the model guide, a file in this package written by
``thoughtvec eval report`` (``thoughtvec.training.evaluation.guide``, where the rules are) from the committed
evaluation records. ``/v1/models`` and ``/info`` show a bundle's entry only while the bundle is the one it was
measured on (the same fingerprint of its default view); any other bundle has none.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

GUIDE_FILE = Path(__file__).resolve().parent / "model_guide.json"
NONE: dict[str, Any] = {"best_for": [], "best_trained_here_for": [], "dev": None}


@lru_cache(maxsize=1)
def _models() -> dict[str, dict]:
    try:
        return json.loads(GUIDE_FILE.read_text(encoding="utf-8")).get("models", {})
    except (OSError, ValueError):  # a build without the file: no guide, nothing else changes
        return {}


def entry(name: str, fingerprint: str) -> dict[str, Any]:
    """``best_for``, ``best_trained_here_for`` (uses: similarity, search, features, speed) and ``dev`` (its dev
    figures) of bundle ``name`` whose default view has ``fingerprint``; empty lists and null for an unknown bundle."""
    e = _models().get(name)
    if e is None or e.get("fingerprint") != fingerprint:
        return dict(NONE)
    return {k: e[k] for k in NONE}
