"""The model guide: every choice made on dev data, as the evaluation records make it, in one generated file
(``model_guide.json`` beside this module, written by ``thoughtvec eval report`` from ``docs/results``;
``thoughtvec.training.evaluation.guide`` holds the rules). Nothing here is typed in by hand: the registry's
default and retrieval models, a new index's search mode, and the analyser, BM25 and fusion defaults of the
index's rankers all read it.

``choices`` of the file:

- ``default_models``: every evaluated bundle in the order of the default-model rule (best mean dev cosine ρ
  of the default view; within the noise margin, the smallest on disk); a request that names no model gets
  the first one served;
- ``retrieval_models``: by dense dev nDCG@10 of the default view, best first; what the alias ``=retrieval``
  (OpenAI's model names) and a new index with no model get, the first one served;
- ``hybrid_models``: the bundles whose hybrid search beats BM25 alone on dev (a new index over one of them
  searches hybrid, over any other BM25 alone);
- ``search``: the ``analyzer``, ``bm25`` and ``fusion`` settings every dev retrieval record was measured with.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

GUIDE_FILE = Path(__file__).resolve().parent / "model_guide.json"
SEARCH_PARTS = ("analyzer", "bm25", "fusion")


@lru_cache(maxsize=1)
def load() -> dict[str, Any]:
    """The guide as written; empty where the file is missing or unreadable (a build without it)."""
    try:
        return json.loads(GUIDE_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


def _choices() -> dict[str, Any]:
    return load().get("choices", {})


def default_models() -> tuple[str, ...]:
    """Bundles in the default-model rule's order, best first."""
    return tuple(_choices().get("default_models", ()))


def default_model() -> str:
    """The model a request that names none gets when every evaluated bundle is served (what the API docs'
    examples name); ``RuntimeError`` when the guide has none."""
    order = default_models()
    if not order:
        raise RuntimeError(f"{GUIDE_FILE} holds no choices.default_models: run `thoughtvec eval report` to write the model guide")
    return order[0]


def retrieval_models() -> tuple[str, ...]:
    """Bundles by dense dev nDCG@10 of their default view, best first."""
    return tuple(_choices().get("retrieval_models", ()))


def hybrid_models() -> tuple[str, ...]:
    """The bundles whose hybrid search beats BM25 alone on dev."""
    return tuple(_choices().get("hybrid_models", ()))


def search(part: str) -> dict[str, Any]:
    """The dev records' settings of ``part`` (``analyzer``, ``bm25`` or ``fusion``): the rankers' defaults.
    ``RuntimeError`` when the guide lacks them: no default is made up."""
    settings = _choices().get("search", {}).get(part)
    if settings is None:
        raise RuntimeError(f"{GUIDE_FILE} holds no choices.search.{part}: run `thoughtvec eval report` to write the model guide")
    return dict(settings)
