"""Why a bundle retrieves what it does: vocabulary coverage, views, and how a long document's parts become one vector.

For one bundle, on the retrieval dev set (never a test set), prints:

* coverage: the share of document and query tokens the vocabulary maps to ``<unk>``, and (skip-thought) to
  a word known only through vocabulary expansion;
* for each view, nDCG@10 and recall@100 of exact cosine with the documents' parts (Punkt sentences, as
  ``truncation="split"`` makes them) pooled each way of :data:`thoughtvec.service.core.longinput.Pooling`
  (the served one marked), with ``truncate`` (the first ``max_input_tokens`` only), with ``title`` (the
  title alone: one sentence, as long as a query), and ``max-sim`` (a document scores its best sentence:
  not a vector per document, so not servable by a vector index; an upper reference for pooling);
* hubness: how many distinct documents fill the 809 queries' top 10s, and the share of the top 10s that the
  ten most frequent documents take (a pooled vector near every query's is a *hub*).

    python -m thoughtvec.training.evaluation.retrieval_check --bundle models/bi-skip
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import get_args

import numpy as np

from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.bundle.tokenization import Piece
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.core.longinput import Pooling, Prepared, pool, prepare
from thoughtvec.service.core.planner import plan_batches
from thoughtvec.training.evaluation import beir, retrieval
from thoughtvec.training.evaluation.rankers import top_k

POOLINGS: tuple[Pooling, ...] = get_args(Pooling)


def _tokens(enc: Encoder, text: str) -> list[Piece]:
    """The tokens of ``text`` as the bundle's tokenizer reads it, without the specials that frame it."""
    return [p for p in enc.tokenizer.pieces(text) if not p.special]


def _trained_size(enc: Encoder) -> int | None:
    """Ids at or above this come from vocabulary expansion; ``None`` for a bundle with its own tokenizer
    (hf-tokenizers: no word vocabulary, nothing expanded)."""
    return None if enc.spec.vocabulary is None else enc.spec.vocabulary.trained_size


def coverage(enc: Encoder, texts: list[str]) -> tuple[float, float]:
    """Shares of tokens that are unknown (``<unk>``) and that come from vocabulary expansion."""
    tokens = [p for t in texts for p in _tokens(enc, t)]
    ids, unknown = np.array([p.id for p in tokens]), np.array([p.oov for p in tokens])
    trained = _trained_size(enc)
    return float(unknown.mean()), float((ids >= trained).mean()) if trained else 0.0


def run_parts(enc: Encoder, prep: Prepared, views: list[str]) -> dict[str, np.ndarray]:
    """Each part's vector per view (post-processed as served, not normalised)."""
    out = {v: np.zeros((len(prep.parts), enc.dim(v)), np.float32) for v in views}
    for idx in plan_batches([len(p) for p in prep.parts], 128, 128 * 256):
        for v, x in enc.run_views([prep.parts[i] for i in idx], views).items():
            out[v][idx] = x
    return out


def scores_of(sims: np.ndarray, task: beir.RetrievalTask, queries: np.ndarray | None = None) -> dict[str, float]:
    """Mean nDCG@10 and recall@100 of exact cosine scores ``sims`` (queries, documents); over the queries
    flagged in ``queries`` only, when given."""
    keep = np.ones(len(task.query_ids), bool) if queries is None else queries
    ids = [q for q, k in zip(task.query_ids, keep) if k]
    if not ids:
        return {m: float("nan") for m in retrieval.METRICS}  # an empty group (every query on one side)
    rankings = dict(zip(ids, top_k(sims[keep], task.doc_ids, retrieval.DEPTH)))
    per = retrieval.per_query(rankings, {q: task.qrels[q] for q in ids})
    return {m: float(np.mean(list(v.values()))) for m, v in per.items()}


def fully_known(enc: Encoder, texts: list[str]) -> np.ndarray:
    """Which texts have every token among the words the model was trained on (no ``<unk>``, no expansion)."""
    trained = _trained_size(enc)
    return np.array([all(not p.oov and (trained is None or 1 < p.id < trained) for p in _tokens(enc, t)) for t in texts])


def hubness(sims: np.ndarray) -> tuple[int, float]:
    top = np.argsort(-sims, axis=1)[:, :10]
    counts = Counter(top.ravel().tolist())
    return len(counts), sum(n for _, n in counts.most_common(10)) / top.size


def check(bundle: str, views: list[str] | None, task: beir.RetrievalTask, out=print) -> None:
    enc = Encoder.load(bundle, providers=["CPUExecutionProvider"])
    views = [v for v in views if v in enc.spec.views] if views else list(enc.spec.views)  # --view: those this bundle has
    for name, texts in (("documents", task.doc_texts), ("queries", task.query_texts)):
        unk, expanded = coverage(enc, texts)
        out(f"{enc.name}: {name}: {unk:.1%} of tokens <unk>, {expanded:.1%} from vocabulary expansion")
    n = len(task.doc_texts)
    fields = [f"doc[{i}]" for i in range(n)]
    split = prepare(enc, task.doc_texts, fields, "split", allow_empty=True)
    cut = prepare(enc, task.doc_texts, fields, "truncate", allow_empty=True)
    title = prepare(enc, [t or d for t, d in zip(task.doc_titles, task.doc_texts)], fields, "truncate", allow_empty=True)
    out(f"{enc.name}: {n} documents -> {len(split.parts)} parts ({split.split} split); the served pooling: mean-unit")
    parts, cuts, heads = run_parts(enc, split, views), run_parts(enc, cut, views), run_parts(enc, title, views)
    queries = enc.encode_views(task.query_texts, views, truncation="split")
    owner = np.asarray(split.owner)
    known = fully_known(enc, task.query_texts)
    for v in views:
        q = queries[v]
        rows: dict[str, np.ndarray] = {p: l2_normalize(pool(parts[v], split, n, p)) for p in POOLINGS}
        rows |= {"truncate": l2_normalize(cuts[v]), "title": l2_normalize(heads[v])}
        for how, docs in rows.items():
            sims = q @ docs.T
            s, (distinct, share) = scores_of(sims, task), hubness(sims)
            out(f"  {v:22s} {how:15s} nDCG@10 {s['ndcg@10']:.4f}  recall@100 {s['recall@100']:.4f}  "
                f"top-10s: {distinct} documents, 10 most frequent {share:.1%}")  # fmt: skip
        served = q @ rows["mean-unit"].T
        a, b = scores_of(served, task, known), scores_of(served, task, ~known)
        out(f"  {v:22s} {'by query words':15s} nDCG@10 {a['ndcg@10']:.4f} on the {known.sum()} queries whose words the model "
            f"was trained on, {b['ndcg@10']:.4f} on the other {(~known).sum()}")  # fmt: skip
        part_sims = q @ l2_normalize(parts[v]).T  # (queries, parts)
        best = np.full((len(q), n), -np.inf, np.float32)
        np.maximum.at(best.T, owner, part_sims.T)
        s = scores_of(best, task)
        out(f"  {v:22s} {'max-sim':15s} nDCG@10 {s['ndcg@10']:.4f}  recall@100 {s['recall@100']:.4f}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bundle", action="append", required=True, help="bundle folder (repeatable)")
    p.add_argument("--view", action="append", help="views to check (default: all)")
    p.add_argument("--beir", help="BEIR folder (default $THOUGHTVEC_BEIR or ../shared/data/retrieval/scifact-dev)")
    args = p.parse_args(argv)
    task = beir.load(args.beir)
    for b in args.bundle:
        check(b, args.view, task, out=lambda m: print(m, flush=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
