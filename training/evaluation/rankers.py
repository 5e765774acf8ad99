"""Rankers for :func:`thoughtvec.training.evaluation.retrieval.evaluate`: query texts -> ``[(doc_id, score)]``.

* :class:`DenseRanker` — exact cosine over a source's view (what a ``Flat`` cosine index returns); a bundle
  is encoded by the server's :class:`~thoughtvec.service.core.encoder.Encoder` with ``truncation="split"``,
  the server's default, so a long document is split and pooled exactly as served;
* :class:`LexicalRanker` — BM25 through the server's own :class:`~thoughtvec.service.index.lexical.LexicalIndex`;
* :class:`HybridRanker` — both, fused by the server's :class:`~thoughtvec.service.index.fusion.Fusion`;
* :class:`RerankRanker` — BM25's best ``candidates`` of the corpus reranked as ``POST /v1/rerank`` ranks documents
  sent to it (:func:`~thoughtvec.service.core.scoring.fused_relevance`: the cosine, the best sentence's where the
  rerank fusion weighs it, and BM25 over the candidates alone, fused by the rerank fusion): what a RAG stack gets from its own BM25 followed by the server's rerank;
* :class:`ServerRanker` — a running server's ``POST /v1/search`` over an index of the corpus that it builds
  (and drops) through the HTTP API; ``mode`` is sent when given (else the index's own mode answers), so a
  server's search is scored by the same function as the in-process rankers.
"""

from __future__ import annotations

import dataclasses
import re
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from thoughtvec.paths import MODELS
from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.core.longinput import sentence_texts, sentences
from thoughtvec.service.core.scoring import fused_relevance
from thoughtvec.service.index.fusion import Fusion, RerankFusion
from thoughtvec.service.index.lexical import BM25, Analyzer, LexicalIndex
from thoughtvec.service.index.search_settings import SearchSettings
from thoughtvec.service.model_guide import Guide
from thoughtvec.training.evaluation.beir import RetrievalTask
from thoughtvec.training.evaluation.retrieval import Ranking
from thoughtvec.training.evaluation.sources import Progress, Source, encode_views


def top_k(sims: np.ndarray, ids: Sequence[str], k: int) -> list[Ranking]:
    """Each row's ``k`` best columns as ``(id, score)``, best first (ties: the earlier column first)."""
    k = min(k, sims.shape[1])
    out = []
    for row in sims:
        cand = np.argpartition(-row, k - 1)[:k] if k < len(row) else np.arange(len(row))
        cand = cand[np.lexsort((cand, -row[cand]))]
        out.append([(ids[j], float(row[j])) for j in cand])
    return out


class DenseRanker:
    """Exact cosine between a source's query and document vectors of one view."""

    mode = "dense"

    def __init__(self, source: Source, view: str, doc_ids: Sequence[str], doc_vectors: np.ndarray, batch_size: int = 256):
        self.source, self.view, self.batch_size = source, view, batch_size
        self.name, self.kind = source.name, source.kind
        self.doc_ids = list(doc_ids)
        self.docs = l2_normalize(np.asarray(doc_vectors, np.float32))

    @classmethod
    def for_views(cls, source: Source, views: Sequence[str], task: RetrievalTask, batch_size: int = 256,
                  progress: Progress | None = None) -> list[DenseRanker]:  # fmt: skip
        """One ranker per view; the corpus is encoded once for all of them."""
        vecs = encode_views(source, task.doc_texts, views, batch_size=batch_size, progress=progress)
        return [cls(source, v, task.doc_ids, vecs[v], batch_size) for v in views]

    def rank(self, queries: Sequence[str], k: int) -> list[Ranking]:
        return top_k(self.rank_vectors(queries) @ self.docs.T, self.doc_ids, k)

    def rank_vectors(self, queries: Sequence[str]) -> np.ndarray:
        """The queries' unit vectors in this view."""
        return l2_normalize(encode_views(self.source, list(queries), [self.view], batch_size=self.batch_size)[self.view])

    def describe(self) -> dict:
        return {"dense": self.source.describe(), "view": self.view, "truncation": getattr(self.source, "truncation", None)}


def measured_search() -> SearchSettings:
    """The analyser, BM25 and fusion the dev retrieval records were measured with: the model guide's, beside the
    bundles (what the server searches with); the fallback of each part the guide lacks."""
    return SearchSettings.of(Guide.load(MODELS))


class LexicalRanker:
    """BM25 over the corpus, by the server's lexical index."""

    kind, view, mode = "lexical", "", "lexical"

    def __init__(self, task: RetrievalTask, analyzer: Analyzer | None = None, bm25: BM25 | None = None):
        measured = measured_search() if analyzer is None or bm25 is None else None
        analyzer = analyzer or (measured.analyzer if measured else None)
        bm25 = bm25 or (measured.bm25 if measured else None)
        self.index = LexicalIndex.from_documents(zip(task.doc_ids, task.doc_texts), analyzer, bm25)
        self.name = "bm25"

    def rank(self, queries: Sequence[str], k: int) -> list[Ranking]:
        return [self.index.search(q, k) for q in queries]

    def describe(self) -> dict:
        a, b = self.index.analyzer, self.index.bm25
        return {"kind": "lexical", "stemmer": a.stemmer, "stopwords": a.stopwords, "method": b.method, "k1": b.k1, "b": b.b}


class HybridRanker:
    """A dense and a lexical ranking of each query, fused."""

    mode = "hybrid"

    def __init__(self, dense: DenseRanker, lexical: LexicalRanker, fusion: Fusion | None = None):
        self.dense, self.lexical, self.fusion = dense, lexical, fusion or measured_search().fusion
        self.name, self.kind, self.view = dense.name, dense.kind, dense.view

    def rank(self, queries: Sequence[str], k: int) -> list[Ranking]:
        depth = max(k, self.fusion.depth)
        pairs = zip(self.dense.rank(queries, depth), self.lexical.rank(queries, depth))
        return [self.fusion.fuse(d, lx, k) for d, lx in pairs]

    def describe(self) -> dict:
        f = self.fusion
        return self.dense.describe() | {"lexical": self.lexical.describe(),
                                        "fusion": {"method": f.method, "lexical_weight": f.lexical_weight, "rrf_k": f.rrf_k, "depth": f.depth}}  # fmt: skip


class RerankRanker:
    """Each query's ``candidates`` best BM25 documents (over the corpus), reranked by the server's rerank."""

    mode = "rerank"
    candidates = 100  # BM25's top 100: how RAG stacks call a reranker

    def __init__(self, dense: DenseRanker, lexical: LexicalRanker, task: RetrievalTask, fusion: RerankFusion | None = None,
                 progress: Callable[[int], Progress] | None = None):  # fmt: skip
        self.dense, self.lexical, self.fusion = dense, lexical, fusion or measured_search().rerank
        self.name, self.kind, self.view = dense.name, dense.kind, dense.view
        self.text = dict(zip(task.doc_ids, task.doc_texts))
        self.row = {d: i for i, d in enumerate(dense.doc_ids)}
        self.search = SearchSettings(lexical.index.analyzer, lexical.index.bm25)  # the candidates' BM25, as the server's
        self._sentences: PartVectors | None = None
        self._progress = progress  # given the corpus's sentence count, what reports their embedding's progress

    def best_sentences(self, vec: np.ndarray, ids: Sequence[str]) -> np.ndarray | None:
        """Each document's best sentence's cosine to a query's unit vector, where the fusion weighs them."""
        if not self.fusion.sentence_weight:
            return None
        if self._sentences is None:
            self._sentences = PartVectors.of(self.dense, self.text, progress=self._progress)
        return self._sentences.best(vec, ids)

    def rank(self, queries: Sequence[str], k: int) -> list[Ranking]:
        out = []
        for query, vec, found in zip(queries, self.dense.rank_vectors(queries), self.lexical.rank(queries, self.candidates)):
            ids = [d for d, _ in found]
            cos = self.dense.docs[[self.row[d] for d in ids]] @ vec
            docs = [self.text[d] for d in ids]
            relevance, raw = fused_relevance(query, docs, cos, self.search, self.fusion, self.best_sentences(vec, ids))
            order = np.lexsort((np.arange(len(ids)), -raw))[:k]  # as the server orders them
            out.append([(ids[i], float(raw[i])) for i in order])
        return out

    def describe(self) -> dict:
        f = self.fusion
        return self.dense.describe() | {"lexical": self.lexical.describe(), "candidates": self.candidates,
                                        "rerank": dataclasses.asdict(f)}  # fmt: skip


def document_parts(text: str, encoder: Any = None, window: int = 1) -> list[str]:
    """A document's sentences as rerank embeds them (:func:`~thoughtvec.service.core.longinput.sentence_texts`, by a
    bundle's ``encoder``; Punkt's sentences without one), or its windows of ``window`` consecutive sentences (all of
    them in one where it has fewer; a one-sentence document is itself)."""
    found = sentence_texts(encoder, text) if encoder is not None else (sentences(text) or [text])
    if window == 1 or len(found) == 1:
        return found
    return [" ".join(found[i : i + window]) for i in range(max(1, len(found) - window + 1))]


class PartVectors:
    """Every part of a corpus's documents (:func:`document_parts`: sentences, or windows of them) in a dense ranker's
    view, each embedded alone, and the best cosine of each document's parts."""

    def __init__(self, vectors: np.ndarray, rows: dict[str, np.ndarray]):
        self.vectors, self.rows = vectors, rows

    @classmethod
    def of(cls, dense: DenseRanker, text: dict[str, str], window: int = 1,
           progress: Callable[[int], Progress] | None = None) -> PartVectors:  # fmt: skip
        encoder = getattr(dense.source, "encoder", None)  # a bundle's: its tokenizer decides which sentences hold tokens
        split = {d: document_parts(t, encoder, window) for d, t in text.items()}
        unique = list(dict.fromkeys(s for parts in split.values() for s in parts))
        at = {s: i for i, s in enumerate(unique)}
        report = progress(len(unique)) if progress else None
        vectors = encode_views(dense.source, unique, [dense.view], batch_size=dense.batch_size, progress=report)[dense.view]
        return cls(l2_normalize(np.asarray(vectors, np.float32)), {d: np.array([at[s] for s in parts]) for d, parts in split.items()})

    def best(self, vec: np.ndarray, ids: Sequence[str]) -> np.ndarray:
        """The best cosine of each of documents ``ids``' parts to a query's unit vector."""
        return np.array([float(np.max(self.vectors[self.rows[d]] @ vec)) for d in ids])

    def best_of_every(self, queries: np.ndarray) -> np.ndarray:
        """(queries, documents in the order they were given): the best cosine of each document's parts to each query."""
        owner = np.concatenate([np.full(len(r), i) for i, r in enumerate(self.rows.values())])
        flat = np.concatenate(list(self.rows.values()))
        out = np.full((len(queries), len(self.rows)), -1.0, np.float32)
        np.maximum.at(out.T, owner, (queries @ self.vectors[flat].T).T)
        return out


class ServerRanker:
    """``POST /v1/search`` of a running server, over an index of the corpus made through its API.

    ``index``: search an index that already holds the corpus (ids = the corpus's ids); otherwise one is
    created for ``model``/``view`` (the server's defaults when None), filled in requests of ``batch``
    documents (long ones handled as ``truncation`` says, the server's own default ``split`` unless told)
    and dropped by :meth:`close`. ``mode`` is sent with each search when given; :attr:`mode` is the
    mode the server answered in (the index's own when none is sent).
    """

    kind = "server"

    def __init__(self, url: str, task: RetrievalTask, *, index: str | None = None, model: str | None = None,
                 view: str | None = None, mode: str | None = None, api_key: str | None = None, batch: int = 64,
                 timeout: float = 600.0, progress: Callable[[int], None] | None = None, truncation: str = "split"):  # fmt: skip
        import httpx  # noqa: PLC0415  # a development dependency, not the package's: only a server (--url) needs it

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.url, self.mode_sent, self.batch, self.truncation = url.rstrip("/"), mode, batch, truncation
        self.client = httpx.Client(base_url=self.url, headers=headers, timeout=timeout)
        self.created = index is None
        self.index = index or f"eval-{re.sub(r'[^a-z0-9._-]', '-', task.name.lower())[:40]}-{uuid.uuid4().hex[:8]}"
        if self.created:
            body = {"name": self.index} | ({"model": model} if model else {}) | ({"view": view} if view else {})
            self._post("/v1/indexes", body)
            for s in range(0, len(task.doc_ids), batch):
                docs = [{"id": i, "text": t} for i, t in zip(task.doc_ids[s : s + batch], task.doc_texts[s : s + batch])]
                self._post(f"/v1/indexes/{self.index}/documents", {"documents": docs, "truncation": truncation})
                if progress:
                    progress(len(docs))
        stats = self._get(f"/v1/indexes/{self.index}")
        self.name, self.view, self.mode = stats["model"], stats["view"], mode or stats.get("mode", "dense")

    def _post(self, path: str, body: dict) -> dict:
        r = self.client.post(path, json=body)
        if r.status_code not in (200, 201):
            raise RuntimeError(f"POST {self.url}{path}: HTTP {r.status_code}: {r.text[:300]}")
        return r.json()

    def _get(self, path: str) -> dict:
        r = self.client.get(path)
        if r.status_code != 200:
            raise RuntimeError(f"GET {self.url}{path}: HTTP {r.status_code}: {r.text[:300]}")
        return r.json()

    def rank(self, queries: Sequence[str], k: int) -> list[Ranking]:
        out: list[Ranking] = []
        for s in range(0, len(queries), self.batch):  # within the server's max_inputs
            body = {"index": self.index, "query": list(queries[s : s + self.batch]), "k": k, "truncation": self.truncation}
            answer = self._post("/v1/search", body | ({"mode": self.mode_sent} if self.mode_sent else {}))
            results, self.mode = answer["results"], answer.get("mode", self.mode)
            out += [[(h["id"], float(h["score"])) for h in row if h["score"] is not None] for row in results]
        return out

    def describe(self) -> dict:
        return {"kind": self.kind, "url": self.url, "index": self.index, "model": self.name, "view": self.view, "mode": self.mode,
                "truncation": self.truncation}  # fmt: skip

    def close(self) -> None:
        """Drop the index this ranker made (an index it was given stays)."""
        if self.created:
            self.client.delete(f"/v1/indexes/{self.index}")
        self.client.close()
