"""What each bundle is for, with its dev figures, from the model guide (:mod:`thoughtvec.service.model_guide`,
written by ``thoughtvec eval report``). ``/v1/models`` and ``/info`` show a bundle's entry only while the bundle is
the one it was measured on (the same fingerprint of its default view); any other bundle has none.
"""

from __future__ import annotations

from typing import Any

from thoughtvec.service import model_guide

NONE: dict[str, Any] = {"best_for": [], "best_trained_here_for": [], "dev": None}


def _models() -> dict[str, dict]:
    return model_guide.load().get("models", {})


def entry(name: str, fingerprint: str) -> dict[str, Any]:
    """``best_for``, ``best_trained_here_for`` (uses: similarity, search, features, speed) and ``dev`` (its dev
    figures) of bundle ``name`` whose default view has ``fingerprint``; empty lists and null for an unknown bundle."""
    e = _models().get(name)
    if e is None or e.get("fingerprint") != fingerprint:
        return dict(NONE)
    return {k: e[k] for k in NONE}
