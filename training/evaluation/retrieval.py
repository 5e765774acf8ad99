"""Retrieval scored as trec_eval scores it, with bootstrap intervals over queries.

Any *ranker* (:class:`Ranker`: query texts -> one ranking of ``(doc_id, score)`` per query) is scored by
:func:`evaluate` on a :class:`~thoughtvec.training.evaluation.beir.RetrievalTask`; the rankers themselves
(dense through the server's encoder, BM25 through the server's lexical index, their fusion, a running
server's search) are in :mod:`thoughtvec.training.evaluation.rankers`.

Definitions (trec_eval 9's ``ndcg_cut.10`` and ``recall.100``; checked against ``pytrec_eval`` in the tests):

* a query's ranking is ordered by score, descending, ties by document id descending (``strcmp``), whatever
  order the ranker gave: that is how trec_eval reads a run;
* nDCG@10: gain = the judged grade (0 for unjudged or non-positive), discount ``log2(rank + 1)``; the ideal
  from *all* the query's judged grades, best first, cut at 10;
* recall@100: relevant documents (grade >= 1) in the first 100, over all relevant documents;
* the mean runs over the judged queries that have a relevant document; a query the ranker returns
  nothing for scores 0 (trec_eval's ``-c``).

Intervals: percentile bootstrap over queries (10,000 resamples, fixed seed); a difference between two
rankers is resampled *paired* (the same queries on both sides).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol

import numpy as np

from thoughtvec.training.evaluation.beir import RetrievalTask

SCHEMA = "thoughtvec-retrieval-v1"
Ranking = list[tuple[str, float]]
METRICS = ("ndcg@10", "recall@100")
DEPTH = 100  # documents asked of a ranker per query: recall@100 needs them all
RESAMPLES = 10_000
SEED = 20_240_601


class Ranker(Protocol):
    name: str
    kind: str  # "bundle" | "baseline" | "lexical" | "server"
    view: str  # the dense view ("" for lexical alone)
    mode: str  # "dense" | "lexical" | "hybrid"

    def rank(self, queries: Sequence[str], k: int) -> list[Ranking]: ...

    def describe(self) -> dict: ...


def trec_order(ranking: Sequence[tuple[str, float]]) -> list[str]:
    """Document ids in trec_eval's order: score descending, then document id descending."""
    return [d for d, _ in sorted(ranking, key=lambda x: (x[1], x[0]), reverse=True)]


def ndcg_at(ranking: Sequence[tuple[str, float]], judged: Mapping[str, int], k: int = 10) -> float:
    """nDCG@k of one query (trec_eval's ``ndcg_cut.k``)."""
    ideal_gains = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    ideal = sum(g / math.log2(i + 2) for i, g in enumerate(ideal_gains))
    if ideal == 0:
        return 0.0
    gains = (max(judged.get(d, 0), 0) for d in trec_order(ranking)[:k])
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains)) / ideal


def recall_at(ranking: Sequence[tuple[str, float]], judged: Mapping[str, int], k: int = 100) -> float:
    """Recall@k of one query (trec_eval's ``recall.k``, relevance level 1)."""
    relevant = {d for d, g in judged.items() if g >= 1}
    if not relevant:
        return 0.0
    return len(relevant.intersection(trec_order(ranking)[:k])) / len(relevant)


def per_query(rankings: Mapping[str, Sequence[tuple[str, float]]], qrels: Mapping[str, Mapping[str, int]]) -> dict[str, dict[str, float]]:
    """``{metric: {query_id: value}}`` over the judged queries with a relevant document."""
    scored = [q for q, judged in qrels.items() if any(g >= 1 for g in judged.values())]
    return {
        "ndcg@10": {q: ndcg_at(rankings.get(q, []), qrels[q], 10) for q in scored},
        "recall@100": {q: recall_at(rankings.get(q, []), qrels[q], 100) for q in scored},
    }


def bootstrap(values: np.ndarray, resamples: int = RESAMPLES, seed: int = SEED, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of the mean of ``values`` (one per query) over query resamples."""
    idx = np.random.default_rng(seed).integers(0, len(values), size=(resamples, len(values)))
    means = np.asarray(values, np.float64)[idx].mean(axis=1)
    tail = (1 - level) / 2 * 100
    lo, hi = np.percentile(means, [tail, 100 - tail])
    return float(lo), float(hi)


def paired(a: Mapping[str, float], b: Mapping[str, float], resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, float]:
    """Mean of ``a - b`` over the queries both have, with its paired bootstrap interval."""
    common = sorted(set(a) & set(b))
    diff = np.array([a[q] - b[q] for q in common], np.float64)
    lo, hi = bootstrap(diff, resamples, seed)
    return {"diff": float(diff.mean()), "lo": lo, "hi": hi, "queries": len(common)}


def summary(scores: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Mean and 95% interval of each metric."""
    out = {}
    for metric, by_query in scores.items():
        v = np.fromiter(by_query.values(), np.float64, len(by_query))
        lo, hi = bootstrap(v)
        out[metric] = {"mean": float(v.mean()), "lo": lo, "hi": hi}
    return out


def evaluate(ranker: Ranker, task: RetrievalTask, *, batch: int = 256, command: str = "",
             log: Callable[[str], None] = print) -> dict:  # fmt: skip
    """Score ``ranker`` on ``task``: the record (plain JSON) with means, intervals and per-query values."""
    t0 = time.perf_counter()
    rankings: dict[str, Ranking] = {}
    for s in range(0, len(task.query_ids), batch):
        ids, texts = task.query_ids[s : s + batch], task.query_texts[s : s + batch]
        rankings.update(zip(ids, ranker.rank(texts, DEPTH)))
    t_rank = time.perf_counter() - t0
    scores = per_query(rankings, task.qrels)
    means = summary(scores)
    log(f"{ranker.name}/{ranker.view or '-'}/{ranker.mode} on {task.name}: "
        + ", ".join(f"{m} {v['mean']:.4f} [{v['lo']:.4f}, {v['hi']:.4f}]" for m, v in means.items()))  # fmt: skip
    return {
        "schema": SCHEMA, "task": task.name, "name": ranker.name, "kind": ranker.kind, "view": ranker.view,
        "mode": ranker.mode, "ranker": ranker.describe(), "metrics": means, "per_query": scores,
        "queries": len(scores["ndcg@10"]), "documents": len(task.doc_ids), "command": command,
        "timing": {"rank_s": round(t_rank, 2)},
    }  # fmt: skip


def slug(record: dict) -> str:
    """File stem of a retrieval record: ``scifact-dev__invertible-bijection__de__dense``."""
    name = record["name"] + ("@server" if record["kind"] == "server" else "")
    return "__".join([record["task"], name, record["view"] or "-", record["mode"]])
