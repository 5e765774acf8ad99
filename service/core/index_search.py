"""Search, without HTTP: an index's ``k`` best documents for a text, texts or a vector, in its modes (dense by the
vectors, lexical by BM25, hybrid the two rankings fused), and the map of an index's documents on a plane.

A request is checked whole before any search runs (:meth:`SearchService._checked`), in the order a reader
expects: the index answers, ``k``, the query's form, the least size of the answer, the mode (the index's vectors,
a vector query's, the backend's), the texts, then the model (the export of the index's vectors). Texts are
embedded through :class:`~thoughtvec.service.core.embedding.EmbeddingService`, so the same limits and long-input
rules apply as to an embeddings request.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from thoughtvec.service.core.index_state import IndexState, check_mode
from thoughtvec.service.core.limits import EXPLAIN_JSON_BYTES, HIT_JSON_BYTES, Texts, check_answer, check_count, room
from thoughtvec.service.core.projection import pca_2d, project
from thoughtvec.service.core.registry import Model
from thoughtvec.service.core.results import Hit, IndexMap, MapPoint, SearchResult, Usage
from thoughtvec.service.errors import InvalidInput
from thoughtvec.service.index.contents import Doc, IndexConfig
from thoughtvec.service.index.fusion import Fusion
from thoughtvec.service.settings import SearchMode, Truncation


@dataclass(frozen=True)
class Search:
    """A search request, checked: what runs it and nothing left to refuse but the size of its answer."""

    name: str
    config: IndexConfig
    k: int
    mode: SearchMode
    vector: np.ndarray | None = None  # a vector query, (1, dim) float32; None: text queries
    texts: Texts | None = None  # the text queries, checked (each with its field: query, or query[i]); None: a vector
    model: Model | None = None  # the model that embeds the text queries (dense, hybrid), the export of the index's vectors
    truncation: Truncation | None = None
    explain: bool = False  # the answer says what each ranking added to each hybrid hit (counted in its size)


class SearchService:
    """Every index searched through the embedding service's models."""

    def __init__(self, state: IndexState):
        self.state = state
        self.settings = state.settings
        self.embedding = state.embedding

    async def search(
        self,
        *,
        query: Any,
        index: str | None = None,
        k: int = 10,
        truncation: Truncation | None = None,
        mode: SearchMode | None = None,
        explain: bool = False,
    ) -> SearchResult:
        """``k`` neighbours of each query (a text, texts, or a vector) in ``index`` (default: the server's), found in
        ``mode`` (default: the index's; a vector query is searched by vector only). Hybrid hits carry what each ranking
        added to their score; ``explain``: the answer will show it (its size is checked with it)."""
        name = index or self.settings.default_index
        s = self._checked(name, self.state.config(name), query, k, mode, truncation)
        return await self._answer(dataclasses.replace(s, explain=explain) if explain else s)

    # -- the checks, in order ------------------------------------------------------------
    def _checked(
        self, name: str, config: IndexConfig, query: Any, k: int, mode: SearchMode | None, truncation: Truncation | None
    ) -> Search:
        """The search of ``query`` in index ``name`` (its ``config`` read: it answers), every part checked."""
        if not 1 <= k <= self.settings.max_k:
            raise InvalidInput(f"k is {k}; it must be between 1 and {self.settings.max_k}", field="k")
        form = self._form(query, config.dim, name)
        queries = len(form)
        check_answer(queries * k * HIT_JSON_BYTES, self.settings.max_response_bytes, "k", f"{queries} queries x k {k}")  # its least
        if isinstance(form, np.ndarray):
            mode = self._mode(name, config, mode, vector=True)
            if config.model in self.embedding.registry.models:  # a vector needs no model, but its index must not be stale
                self.state.index_model(name, config)
            return Search(name, config, k, mode, vector=form)
        mode = self._mode(name, config, mode, vector=False)
        fields = ["query"] if isinstance(query, str) else [f"query[{i}]" for i in range(queries)]
        texts = self.embedding.texts(form, fields, truncation, setting="max_query_chars")
        model = None if mode == "lexical" else self.state.index_model(name, config)  # BM25 alone runs no model
        return Search(name, config, k, mode, texts=texts, model=model, truncation=truncation)

    def _form(self, query: Any, dim: int, name: str) -> list[Any] | np.ndarray:
        """The query's texts (each checked later, as a text), or its vector as a (1, dim) float32 array."""
        if isinstance(query, str):
            return [query]
        if not isinstance(query, list) or not query:
            raise InvalidInput("query must be a text, a non-empty list of texts, or a vector of numbers", field="query")
        if all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in query):
            if len(query) != dim:
                raise InvalidInput(f"query has {len(query)} dimensions; index '{name}' has {dim}", field="query")
            with np.errstate(over="ignore"):  # 1e308 overflows float32 to inf: refused just below
                vec = np.asarray(query, np.float32)[None, :]
            if not np.isfinite(vec).all():
                raise InvalidInput("query has a value that is not a finite float32", field="query")
            return vec
        check_count(len(query), self.settings.max_inputs, "query")
        return query

    def _mode(self, name: str, config: IndexConfig, mode: SearchMode | None, vector: bool) -> SearchMode:
        """The mode that answers: ``mode``, else the index's. A lexical-only index has no vectors to search; a vector
        query is searched by vector only; a text query's mode is one the backend serves."""
        if not config.embedded and (vector or mode not in (None, "lexical")):
            raise InvalidInput(
                f"index '{name}' is lexical-only (made with mode 'lexical' named, its documents are not embedded): it is searched by "
                f"text in mode 'lexical'; {'a vector query' if vector else f'mode {mode!r}'} needs an index made with mode "
                "'dense' or 'hybrid'",
                field="query" if vector else "mode",
            )
        if vector:
            if mode not in (None, "dense"):
                raise InvalidInput(
                    f"mode '{mode}' needs a text query; a vector query is searched by vector only (mode 'dense')", field="mode"
                )
            return "dense"  # every backend searches by vector
        mode = mode or config.mode
        check_mode(self.state.store.capabilities, mode)
        return mode

    # -- running a checked search --------------------------------------------------------
    async def _answer(self, s: Search) -> SearchResult:
        """The checked search ``s``, on the store: by vector, by BM25, or both fused."""
        store, run = self.state.store, self.state.run
        if s.vector is not None:
            return self._hits(s, await run(store.search, s.name, s.vector, s.k), Usage())
        assert s.texts is not None  # checked: a search is by a vector or by texts
        if s.mode == "lexical":  # BM25 alone: no model runs, but the work is admitted to the index model's queue
            queued = self.embedding.registry.models.get(s.config.model)
            held = (
                queued.batcher.admit(room(s.texts.texts, s.texts.chars, queued.encoder.max_tokens)) if queued else contextlib.nullcontext()
            )
            with held:
                rows = await run(store.lexical_search, s.name, s.texts.texts, s.k)
            return self._hits(s, rows, Usage())
        assert s.model is not None  # checked: a dense or hybrid search has its model
        enc = await self.embedding.encode(s.model, s.config.view, s.texts, normalize=False, mode=s.truncation)
        if s.mode == "dense":
            return self._hits(s, await run(store.search, s.name, enc.vectors, s.k), enc.usage)
        fusion = self.state.fusion(s.config)  # the guide's for a bundle it measured, else the fallback
        depth = max(s.k, fusion.depth)  # each side's best `depth`, as the dev numbers were measured
        dense = await run(store.search, s.name, enc.vectors, depth)
        lexical = await run(store.lexical_search, s.name, s.texts.texts, depth)
        lower = s.config.metric == "l2"
        return self._sized(s, [fuse_hits(fusion, d, lx, s.k, lower_is_better=lower) for d, lx in zip(dense, lexical)], enc.usage)

    def _hits(self, s: Search, rows: list[list[tuple[Doc, float]]], usage: Usage) -> SearchResult:
        return self._sized(s, [[_hit(d, score) for d, score in row] for row in rows], usage)

    def _sized(self, s: Search, results: list[list[Hit]], usage: Usage) -> SearchResult:
        """The answer, within ``max_response_bytes`` with the hits' texts and metadata."""
        hits = sum(map(len, results))
        each = HIT_JSON_BYTES + (EXPLAIN_JSON_BYTES if s.explain and s.mode == "hybrid" else 0)
        size = sum(len(h.text) + (len(json.dumps(h.metadata)) if h.metadata else 0) for row in results for h in row)
        check_answer(hits * each + size, self.settings.max_response_bytes, "k", f"{hits} hits with their text and metadata")
        return SearchResult(s.name, s.config.model, s.config.metric, s.mode, results, usage)

    # -- the map -------------------------------------------------------------------------
    async def index_map(
        self, name: str, query: str | None, limit: int, include: Sequence[str] = (), k: int = 0, mode: SearchMode | None = None
    ) -> IndexMap:
        """Up to ``limit`` of an index's documents on a 2-D PCA plane, with ``query`` on it. Drawn first: the
        query's ``k`` best documents by :meth:`search` (in ``mode``, default the index's: the search
        ``/v1/search`` makes), then those ``include`` names, then the first added."""
        config = self.state.config(name)
        self._check_map(name, config, query, limit, k, mode)
        found = await self._answer(self._checked(name, config, query, k, mode, None)) if k else None
        hits = [h.id for h in found.results[0]] if found else None
        docs = await self.state.run(self.state.store.documents, name, limit, (hits or []) + list(include))
        if not docs:  # one or two documents make a map too (a point, a line)
            raise InvalidInput(f"index '{name}' has no documents to map", field="name")
        model = self.state.index_model(name, config)
        texts = [d.text for d in docs] + ([query] if query is not None else [])
        fields = [f"documents[{i}]" for i in range(len(docs))] + ["query"]
        enc = await self.embedding.encode(model, config.view, self.embedding.texts(texts, fields[: len(texts)]), normalize=True)
        mean, axes, share = pca_2d(enc.vectors[: len(docs)])
        xy = project(enc.vectors, mean, axes)
        points = [MapPoint(d.text, float(p[0]), float(p[1]), id=d.id) for d, p in zip(docs, xy)]
        placed = MapPoint(query, float(xy[-1, 0]), float(xy[-1, 1])) if query is not None else None
        usage = enc.usage if found is None else _sum(enc.usage, found.usage)
        return IndexMap(name, config.model, points, placed, [float(v) for v in share], usage, hits, found.mode if found else None)

    def _check_map(self, name: str, config: IndexConfig, query: Any, limit: int, k: int, mode: SearchMode | None) -> None:
        """The map's own fields: an index with vectors, ``limit``, ``k`` (its search's checked with it), ``mode`` only
        with ``k``, and ``query`` one text (the search would take a list as texts or a vector)."""
        if not config.embedded:
            raise InvalidInput(
                f"index '{name}' is lexical-only (made with mode 'lexical' named): its documents have no vectors to draw", field="name"
            )
        if not 3 <= limit <= self.settings.max_inputs:
            raise InvalidInput(f"limit is {limit}; it must be between 3 and {self.settings.max_inputs}", field="limit")
        if k and query is None or not 0 <= k <= limit:
            raise InvalidInput(f"k is {k}; it must be between 0 and limit ({limit}), and above 0 only with a query", field="k")
        if mode is not None and not k:
            raise InvalidInput("mode is the search's that marks the query's k best documents: send k too", field="mode")
        if query is not None:
            self.embedding.texts([query], ["query"], setting="max_query_chars")


def _sum(a: Usage, b: Usage) -> Usage:
    return Usage(a.tokens + b.tokens, a.split + b.split, a.truncated + b.truncated)


def _hit(d: Doc, score: float) -> Hit:
    return Hit(d.id, d.text, score if math.isfinite(score) else None, d.metadata)


def fuse_hits(fusion: Fusion, dense: list[tuple[Doc, float]], lexical: list[tuple[Doc, float]], k: int, lower_is_better: bool) -> list[Hit]:
    """One query's dense and lexical hits (each best first) fused by ``fusion``: the best ``k``, each with its rank,
    its score and what it added to the fused score on both sides. ``lower_is_better``: the dense scores are distances
    (metric l2), negated before fusing."""
    docs = {d.id: d for d, _ in lexical} | {d.id: d for d, _ in dense}
    dense_of = {d.id: (r, s if math.isfinite(s) else None) for r, (d, s) in enumerate(dense, start=1)}
    lexical_of = {d.id: (r, s) for r, (d, s) in enumerate(lexical, start=1)}
    sign = -1.0 if lower_is_better else 1.0
    ranked = [(d.id, sign * s) for d, s in dense if math.isfinite(s)], [(d.id, s) for d, s in lexical]
    parts = fusion.parts(*ranked)
    hits = []
    for i, score in fusion.ranked(parts, k):  # the parts once: the fused score is their sum
        (dense_rank, dense_score), (lexical_rank, lexical_score) = dense_of.get(i, (None, None)), lexical_of.get(i, (None, None))
        d = docs[i]
        finite = score if math.isfinite(score) else None
        hits.append(Hit(d.id, d.text, finite, d.metadata, dense_rank, lexical_rank, dense_score, lexical_score, *parts[i]))
    return hits
