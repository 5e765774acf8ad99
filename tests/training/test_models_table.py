"""The model tables: picks made on dev numbers only, the reference encoder beside them, written in place
between markers, and the committed README and models page hold the generated ones."""

from __future__ import annotations

from pathlib import Path

from thoughtvec.training.evaluation.models_table import BUNDLE_MARKERS, USE_MARKERS, bundles_table, replace_between, use_table, write_tables
from thoughtvec.training.evaluation.report import load_records
from thoughtvec.training.evaluation.tasks import MACRO_TASKS

ROOT = Path(__file__).resolve().parents[2]


def _record(name: str, view: str, dim: int, dev_cos: float, test_cos: float, dev_acc: float, acc: float, kind: str = "bundle",
            default_view: str | None = None) -> dict:  # fmt: skip
    tasks = {t: {"acc": acc, "dev_acc": dev_acc} for t in MACRO_TASKS}
    for t in ("SICK-R-cos", "STS-B-cos"):
        tasks[t] = {"pearson": test_cos, "spearman": test_cos, "dev_spearman": dev_cos}
    return {"schema": "thoughtvec-eval-v1", "name": name, "kind": kind, "view": view, "dim": dim, "mode": "full", "created": "2026-01-01",
            "tasks": tasks, "source": {"path": f"models/{name}", "default_view": default_view or view, "views": {view: dim}}}  # fmt: skip


# "a" wins on dev cosine while "b" wins on test cosine; "b" has the best dev macro, "c" the best test macro
RECORDS = [
    _record("a", "cos", 1024, dev_cos=0.70, test_cos=0.50, dev_acc=70.0, acc=70.0),
    _record("b", "cos", 400, dev_cos=0.60, test_cos=0.90, dev_acc=60.0, acc=60.0, default_view="cos"),
    _record("b", "feat", 2048, dev_cos=0.10, test_cos=0.10, dev_acc=80.0, acc=75.0, default_view="cos"),
    _record("c", "small", 256, dev_cos=0.40, test_cos=0.40, dev_acc=50.0, acc=90.0),
    _record("minilm", "mean", 384, dev_cos=0.85, test_cos=0.82, dev_acc=82.0, acc=83.19, kind="baseline"),
]


def test_uses_are_picked_on_dev_and_the_reference_stands_beside():
    rows = {line.split(" | ")[0].lstrip("| "): line for line in use_table(RECORDS).splitlines()[2:]}
    assert "`a`" in rows["similarity (cosine)"] and "STS-B ρ 0.500" in rows["similarity (cosine)"]  # not b, better on test
    assert "`b`" in rows["classifier features"] and "`feat` (2048)" in rows["classifier features"]  # not c, better on test
    assert "SentEval macro 83.19" in rows["classifier features"] and "STS-B ρ 0.820" in rows["similarity (cosine)"]
    assert "`c`" in rows["small and fast"]  # the narrowest default view
    assert "no retrieval figure" in rows["search"] and "`a`" in rows["search"]
    assert "minilm" not in use_table(RECORDS).split("\n", 2)[2]  # the reference is a column, never a pick


def test_a_retrieval_figure_picks_the_search_row():
    with_ret = [dict(r, tasks=dict(r["tasks"], SciFact={"ndcg@10": 0.3 if r["name"] == "b" else 0.1})) for r in RECORDS]
    search = next(line for line in use_table(with_ret).splitlines() if line.startswith("| search"))
    assert "`b`" in search and "SciFact nDCG@10 0.300" in search and search.endswith("SciFact nDCG@10 0.100 |")


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
    assert text.startswith(f"intro\n{USE_MARKERS[0]}\n| use |") and text.endswith(f"|\n{USE_MARKERS[1]}\nafter\n") and "old" not in text
    assert page.read_text(encoding="utf-8") == "no markers here\n"
    assert replace_between("x", USE_MARKERS, "y") is None


def test_committed_tables_are_generated():
    records = load_records(ROOT / "docs" / "results")
    for path, markers, render in (
        (ROOT / "README.md", USE_MARKERS, use_table),
        (ROOT / "docs" / "models.md", BUNDLE_MARKERS, bundles_table),
    ):
        text = path.read_text(encoding="utf-8")
        assert replace_between(text, markers, render(records)) == text, f"{path.name}: run `thoughtvec eval report`"
