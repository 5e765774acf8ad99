"""The *Retrieval* section of ``docs/RESULTS.md`` from the saved retrieval records (``docs/results/retrieval/*.json``).

One table per task: every ranker's nDCG@10 and recall@100 with 95% bootstrap intervals over queries, and its
paired difference from BM25 alone; then the default search of a new index by the rule below, with its paired
differences from BM25 alone and from the best dense ranker alone.
"""

from __future__ import annotations

import json
from pathlib import Path

from thoughtvec.training.evaluation.retrieval import SCHEMA, paired

KIND_ORDER = {"lexical": 0, "bundle": 1, "baseline": 2, "server": 3}
MODE_ORDER = {"lexical": 0, "dense": 1, "hybrid": 2, "rerank": 3}


def load(results_dir: str | Path) -> list[dict]:
    """Every retrieval record under ``results_dir/retrieval``; the newest per (task, kind, name, view, mode)."""
    newest: dict[tuple, dict] = {}
    for p in sorted((Path(results_dir) / "retrieval").glob("*.json")):
        rec = json.loads(p.read_text(encoding="utf-8"))
        if rec.get("schema") != SCHEMA:
            continue
        key = (rec["task"], rec["kind"], rec["name"], rec["view"], rec["mode"])
        if key not in newest or rec.get("created", "") >= newest[key].get("created", ""):
            newest[key] = rec
    return sorted(
        newest.values(), key=lambda r: (r["task"], KIND_ORDER.get(r["kind"], 9), r["name"], r["view"], MODE_ORDER.get(r["mode"], 9))
    )


def default_search(records: list[dict]) -> dict | None:
    """The rule for a new index's default search: of the rankers a server can serve (bundles' views in any
    search mode, BM25 alone), the best mean nDCG@10 on dev. A rerank record ranks another search's candidates: no
    index searches in that mode."""
    servable = [r for r in records if r["kind"] in ("bundle", "lexical") and r["mode"] != "rerank"]
    return max(servable, key=lambda r: r["metrics"]["ndcg@10"]["mean"]) if servable else None


def _ci(m: dict) -> str:
    return f"{m['mean']:.4f} [{m['lo']:.4f}, {m['hi']:.4f}]"


def _diff(a: dict, b: dict | None) -> str:
    if b is None or a is b:
        return "–"
    d = paired(a["per_query"]["ndcg@10"], b["per_query"]["ndcg@10"])
    return f"{d['diff']:+.4f} [{d['lo']:+.4f}, {d['hi']:+.4f}]"


def _label(r: dict) -> str:
    if r["kind"] == "lexical":
        d = r["ranker"]
        return f"BM25 ({d['method']} k1={d['k1']:g} b={d['b']:g}, stemmer {d['stemmer']}, stop words {d['stopwords']})"
    return {"bundle": f"**{r['name']}**", "server": f"{r['name']} (via server)"}.get(r["kind"], r["name"])


def section(records: list[dict]) -> list[str]:
    if not records:
        return []
    out = ["## Retrieval", "",
           "BEIR-layout tasks scored as trec_eval scores them (`ndcg_cut.10`, `recall.100`; checked against pytrec_eval in "
           "`tests/training/test_retrieval.py`). *dense*: exact cosine over the view, documents longer than the bundle's "
           "limit split as the server splits them (`truncation: split`: a part per sentence, or sentences packed up to the limit for a passage encoder) and pooled; *lexical*: BM25 by the "
           "server's lexical index; *hybrid*: the two rankings fused (`thoughtvec.service.index.fusion`); *rerank*: BM25's top "
           "100 reranked as `POST /v1/rerank` ranks documents sent to it (the cosine, the best sentence's where the rerank "
           "fusion weighs it, and BM25 over the candidates alone, fused; "
           "no index's search mode). Intervals: 95% "
           "percentile bootstrap over queries (10,000 resamples); *Δ vs BM25*: paired over the same resamples. Each row's "
           "command is in the last column. These are dev numbers: every choice below is made on them.", ""]  # fmt: skip
    for task in dict.fromkeys(r["task"] for r in records):
        rows = [r for r in records if r["task"] == task]
        bm25 = next((r for r in rows if r["kind"] == "lexical"), None)
        n = rows[0]
        out += [f"### {task} ({n['documents']} documents, {n['queries']} judged queries)", "",
                "| ranker | view | mode | nDCG@10 [95%] | recall@100 [95%] | Δ nDCG@10 vs BM25 [95%] | command |",
                "|---|---|---|---:|---:|---:|---|"]  # fmt: skip
        for r in rows:
            m = r["metrics"]
            out.append(f"| {_label(r)} | {r['view'] or '–'} | {r['mode']} | {_ci(m['ndcg@10'])} | {_ci(m['recall@100'])} | "
                       f"{_diff(r, bm25)} | `{r['command']}` |")  # fmt: skip
        out += [""] + _default_lines(rows, bm25)
    return out


def _default_lines(rows: list[dict], bm25: dict | None) -> list[str]:
    best = default_search(rows)
    if best is None:
        return []
    lines = ["Default search of a new index (the rule: of what a server can serve, the best dev nDCG@10): "
             f"**mode `{best['mode']}`" + (f", model `{best['name']}`, view `{best['view']}`" if best["kind"] == "bundle" else "")
             + f"**, nDCG@10 {_ci(best['metrics']['ndcg@10'])}."]  # fmt: skip
    lines += _against(best, rows, bm25)
    top = max(rows, key=lambda r: r["metrics"]["ndcg@10"]["mean"])
    if top is not best:
        why = ("`POST /v1/rerank` of BM25's candidates, not an index's search mode" if top["mode"] == "rerank"
               else "not served until it is a bundle")  # fmt: skip
        lines += ["", f"Best of all rows: {top['name']} / {top['view'] or '–'} / {top['mode']} ({top['kind']}; {why}), "
                  f"nDCG@10 {_ci(top['metrics']['ndcg@10'])}."]  # fmt: skip
        lines += _against(top, rows, bm25)
    return lines + [""]


def _against(r: dict, rows: list[dict], bm25: dict | None) -> list[str]:
    """``r``'s paired differences from BM25 alone and from the best dense ranker alone."""
    dense = [x for x in rows if x["mode"] == "dense"]
    top_dense = max(dense, key=lambda x: x["metrics"]["ndcg@10"]["mean"]) if dense else None
    out = []
    if bm25 is not None and bm25 is not r:
        out.append(f"- against BM25 alone: {_diff(r, bm25)} (paired)")
    if top_dense is not None and top_dense is not r:
        out.append(f"- against the best dense ranker alone ({top_dense['name']} / {top_dense['view']}): {_diff(r, top_dense)} (paired)")
    return out
