"""The model tables: picks made on dev numbers only, the reference encoder beside them, written in place
between markers, and the committed README and models page hold the generated ones."""

from __future__ import annotations

from pathlib import Path

from thoughtvec.training.evaluation import retrieval_report
from thoughtvec.training.evaluation.models_table import BUNDLE_MARKERS, USE_MARKERS, bundles_table, replace_between, use_table, write_tables
from thoughtvec.training.evaluation.report import load_records
from thoughtvec.training.evaluation.tasks import MACRO_TASKS

ROOT = Path(__file__).resolve().parents[2]


def _record(name: str, view: str, dim: int, dev_cos: float, test_cos: float, dev_acc: float, acc: float, kind: str = "bundle",
            default_view: str | None = None, family: str = "skip-thought") -> dict:  # fmt: skip
    tasks = {t: {"acc": acc, "dev_acc": dev_acc} for t in MACRO_TASKS}
    for t in ("SICK-R-cos", "STS-B-cos"):
        tasks[t] = {"pearson": test_cos, "spearman": test_cos, "dev_spearman": dev_cos}
    return {"schema": "thoughtvec-eval-v1", "name": name, "kind": kind, "view": view, "dim": dim, "mode": "full", "created": "2026-01-01",
            "tasks": tasks, "source": {"path": f"models/{name}", "default_view": default_view or view, "views": {view: dim},
                                       "family": family}}  # fmt: skip


def retrieval(name: str, view: str, ndcg: float, mode: str = "dense", kind: str = "bundle") -> dict:
    return {"task": "scifact-dev", "kind": kind, "name": name, "view": view, "mode": mode, "metrics": {"ndcg@10": {"mean": ndcg}}}


# "a" wins on dev cosine while "b" wins on test cosine; "b" has the best dev macro, "c" the best test macro; "t" is
# imported (family transformer): best on dev at everything but size, never a pick among the bundles trained here
RECORDS = [
    _record("a", "cos", 1024, dev_cos=0.70, test_cos=0.50, dev_acc=70.0, acc=70.0),
    _record("b", "cos", 400, dev_cos=0.60, test_cos=0.90, dev_acc=60.0, acc=60.0, default_view="cos"),
    _record("b", "feat", 2048, dev_cos=0.10, test_cos=0.10, dev_acc=80.0, acc=75.0, default_view="cos"),
    _record("c", "small", 256, dev_cos=0.40, test_cos=0.40, dev_acc=50.0, acc=90.0),
    _record("minilm", "mean", 384, dev_cos=0.85, test_cos=0.82, dev_acc=82.0, acc=83.19, kind="baseline"),
]
IMPORTED = _record("t", "mean", 384, dev_cos=0.85, test_cos=0.82, dev_acc=82.0, acc=83.19, family="transformer")
# "b" searches best by its default view; "a" has a better view that requests without `view` do not get; modes other
# than dense and baselines are not what /v1/embeddings serves
RETRIEVAL = [retrieval("a", "cos", 0.20), retrieval("a", "other", 0.90), retrieval("b", "cos", 0.30), retrieval("c", "small", 0.95, "hybrid"),
             retrieval("minilm", "mean", 0.99, kind="baseline")]  # fmt: skip


def rows(records, ret=()) -> dict[str, str]:
    return {line.split(" | ")[0].lstrip("| "): line for line in use_table(records, ret).splitlines()[2:]}


def test_uses_are_picked_on_dev():
    r = rows(RECORDS, RETRIEVAL)
    assert r["similarity (cosine)"].startswith("| similarity (cosine) | `a`") and "STS-B ρ 0.500" in r["similarity (cosine)"]  # not b
    assert "| `b`" in r["classifier features"] and "`feat` (2048)" in r["classifier features"]  # not c, better on test
    assert "| `c`" in r["small and fast"]  # the narrowest default view
    assert "| `b`" in r["search"] and "SciFact nDCG@10 0.300 (dev)" in r["search"]  # the default view, dense only
    assert all(line.endswith("| the same |  |") for line in r.values())  # every pick is trained here
    assert "minilm" not in use_table(RECORDS, RETRIEVAL)  # a baseline is never a pick


def test_an_imported_encoder_is_picked_beside_the_best_trained_here():
    r = rows([*RECORDS, IMPORTED], [*RETRIEVAL, retrieval("t", "mean", 0.6)])
    for use, ours in (("similarity (cosine)", "`a`"), ("search", "`b`"), ("classifier features", "`b`")):
        cells = r[use].split(" | ")
        assert cells[1].startswith("`t`") and cells[3].startswith(ours), r[use]
    assert "SentEval macro 83.19" in r["classifier features"] and "SentEval macro 75.00" in r["classifier features"]
    assert r["small and fast"].startswith("| small and fast | `c`")  # t is 384-d


def test_the_search_pick_shows_its_hybrid_only_where_it_beats_bm25():
    bm25 = retrieval("bm25", "", 0.50, "lexical", kind="lexical")
    beats = rows(RECORDS, [*RETRIEVAL, bm25, retrieval("b", "cos", 0.60, "hybrid")])["search"]
    assert "SciFact nDCG@10 0.300 dense, 0.600 hybrid with BM25 (dev)" in beats
    below = rows(RECORDS, [*RETRIEVAL, bm25, retrieval("b", "cos", 0.45, "hybrid")])["search"]
    assert "SciFact nDCG@10 0.300 (dev)" in below and "hybrid" not in below


def test_bundles_table_has_a_row_per_bundle_and_the_reference():
    lines = bundles_table(RECORDS).splitlines()
    assert [line.split(" | ")[0] for line in lines[2:]] == [
        "| **`a`** (default model)",
        "| `b`",
        "| `c`",
        "| *all-MiniLM-L6-v2* (baseline)",
    ]
    assert "`feat` 75.00" in lines[3]


def test_tables_are_written_between_markers_only(tmp_path):
    (tmp_path / "docs").mkdir()
    readme, page = tmp_path / "README.md", tmp_path / "docs" / "models.md"
    readme.write_text(f"intro\n{USE_MARKERS[0]}\nold\n{USE_MARKERS[1]}\nafter\n", encoding="utf-8")
    page.write_text("no markers here\n", encoding="utf-8")
    assert write_tables(RECORDS, tmp_path / "docs" / "RESULTS.md") == [readme]
    text = readme.read_text(encoding="utf-8")
    assert text.startswith(f"intro\n{USE_MARKERS[0]}\n| for |") and text.endswith(f"|\n{USE_MARKERS[1]}\nafter\n") and "old" not in text
    assert page.read_text(encoding="utf-8") == "no markers here\n"
    assert replace_between("x", USE_MARKERS, "y") is None


def test_committed_tables_are_generated():
    records, ret = load_records(ROOT / "docs" / "results"), retrieval_report.load(ROOT / "docs" / "results")
    for path, markers, render in (
        (ROOT / "README.md", USE_MARKERS, use_table),
        (ROOT / "docs" / "models.md", BUNDLE_MARKERS, bundles_table),
    ):
        text = path.read_text(encoding="utf-8")
        assert replace_between(text, markers, render(records, ret)) == text, f"{path.name}: run `thoughtvec eval report`"
