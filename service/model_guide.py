"""The model guide: every choice made on dev data, as the evaluation records make it, in one data file beside the
bundles it was measured on (``<models_dir>/model_guide.json``, written by ``thoughtvec eval report`` from
``docs/results``; ``thoughtvec.training.evaluation.dev_choices`` holds the rules). Nothing in it is typed by
hand. The server reads it once, when it starts (:meth:`Guide.load`), never at import.

Every choice applies only to the bundle it was measured on: the guide records each bundle's fingerprint (of its
default view's vectors), and a served bundle under a guide's name whose fingerprint differs (re-exported,
retrained, another bundle under that name) or whose name the guide lacks is *unmeasured*: it is named by no rule
(the default model, ``=retrieval``), a new index over it searches ``lexical`` by default (BM25 needs no bundle),
and a hybrid search over it fuses with the fallback fusion; the server logs a line for each at load.

``choices`` of the file:

- ``default_models``: every evaluated bundle in the order of the default-model rule (best mean dev cosine ρ
  of the default view; within the noise margin, the smallest on disk); a request that names no model gets
  the first one served and measured;
- ``retrieval_models``: by dense dev nDCG@10 of the default view, best first; what the alias ``=retrieval``
  (OpenAI's model names) and a new index with no model get;
- ``hybrid_models``: the bundles whose hybrid search beats BM25 alone on dev (a new index over one of them
  searches hybrid, over any other BM25 alone);
- ``rerank_models``: the bundles with a rerank record on dev, on which rerank's fusion was chosen;
- ``search``: the ``analyzer``, ``bm25`` and ``fusion`` settings every dev retrieval record was measured with, and
  ``rerank``, the rerank records'. The analyser's and BM25's apply to every index (the lexical half involves no
  bundle); the fusion's to the bundles measured; rerank's to ``rerank_models``.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

GUIDE_FILE = "model_guide.json"  # in the models folder, beside the bundles
SEARCH_PARTS = ("analyzer", "bm25", "fusion", "rerank")
ENTRY_KEYS = ("best_for", "best_trained_here_for", "dev")  # a measured bundle's entry, as /v1/models shows it
NO_ENTRY: dict[str, Any] = {"best_for": [], "best_trained_here_for": [], "dev": None}


@dataclass(frozen=True)
class Guide:
    """The guide as written (``data``; empty: no guide), and where it was read from."""

    data: dict[str, Any] = field(default_factory=dict)
    source: Path | None = None

    @classmethod
    def load(cls, models_dir: Path) -> Guide:
        """The guide of the bundles in ``models_dir``; an empty one, said in the log, where there is none."""
        path = Path(models_dir) / GUIDE_FILE
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            log.info("no model guide in %s: every bundle is unmeasured (no dev choice applies)", models_dir)
            return cls({}, None)
        except (OSError, ValueError) as e:
            log.warning("the model guide %s cannot be read (%s): every bundle is unmeasured", path, e)
            return cls({}, None)
        return cls(data, path)

    # -- what was measured -------------------------------------------------------------------
    def fingerprint(self, name: str) -> str | None:
        """The fingerprint of the default view of the bundle the guide measured under ``name``."""
        return self.data.get("models", {}).get(name, {}).get("fingerprint")

    def measured(self, name: str, fingerprint: str | None) -> bool:
        """Whether the bundle ``name`` whose default view has ``fingerprint`` is the one the guide measured (None:
        not loaded yet, taken as measured until it is)."""
        known = self.fingerprint(name)
        return known is not None and (fingerprint is None or fingerprint == known)

    def entry(self, name: str, fingerprint: str) -> dict[str, Any]:
        """``best_for``, ``best_trained_here_for`` (uses: similarity, search, features, speed) and ``dev`` (its dev
        figures) of a measured bundle; empty lists and null for any other."""
        if not self.measured(name, fingerprint):
            return dict(NO_ENTRY)
        e = self.data["models"][name]
        return {k: e.get(k, NO_ENTRY[k]) for k in ENTRY_KEYS}

    # -- the choices ---------------------------------------------------------------------------
    def _choices(self) -> dict[str, Any]:
        return self.data.get("choices", {})

    def default_models(self) -> tuple[str, ...]:
        """Bundles in the default-model rule's order, best first."""
        return tuple(self._choices().get("default_models", ()))

    def retrieval_models(self) -> tuple[str, ...]:
        """Bundles by dense dev nDCG@10 of their default view, best first."""
        return tuple(self._choices().get("retrieval_models", ()))

    def hybrid_models(self) -> tuple[str, ...]:
        """The bundles whose hybrid search beats BM25 alone on dev."""
        return tuple(self._choices().get("hybrid_models", ()))

    def hybrid(self, name: str, fingerprint: str | None) -> bool:
        """Whether a new index over this bundle searches hybrid by default (its hybrid beat BM25 alone on dev)."""
        return name in self.hybrid_models() and self.measured(name, fingerprint)

    def reranks(self, name: str, fingerprint: str | None) -> bool:
        """Whether rerank's fusion (``search.rerank``) was chosen on this bundle (it has a rerank record on dev)."""
        return name in self._choices().get("rerank_models", ()) and self.measured(name, fingerprint)

    def search(self, part: str) -> dict[str, Any] | None:
        """The dev records' settings of ``part`` (``analyzer``, ``bm25``, ``fusion`` or ``rerank``); None without a guide
        (or, for ``rerank``, without a rerank record)."""
        if part not in SEARCH_PARTS:
            raise ValueError(f"{part!r}: one of {SEARCH_PARTS}")
        found = self._choices().get("search", {}).get(part)
        return dict(found) if found is not None else None
