"""``thoughtvec eval`` end to end on the tiny bundle: every task runs, results and report are
written, the relatedness head lands in the bundle and predicts what the evaluation measured."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from tests.tiny_bundle import make_tiny_bundle
from thoughtvec.cli import main
from thoughtvec.service.bundle.format import load_bundle
from thoughtvec.service.bundle.heads import load as load_head
from thoughtvec.training.evaluation import runner, sources, tasks
from thoughtvec.training.evaluation.classifiers import QUICK
from thoughtvec.training.evaluation.datasets import load_task
from thoughtvec.training.evaluation.report import load_records, render

from .fixtures.eval.senteval_tiny import write_senteval, write_sick

SICK_SIZES = (4500, 500, 4927)  # the published sizes: the CLI checks them


@pytest.fixture(scope="module")
def sick_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("sick")
    write_sick(root, SICK_SIZES)
    return root


def test_every_task_runs_on_tiny_data(tmp_path):
    data = write_senteval(tmp_path / "senteval", n=30)
    make_tiny_bundle(tmp_path / "tiny")
    opts = runner.RunOptions(tasks=tasks.select("all"), protocol=dataclasses.replace(QUICK, folds=3, inner_folds=3),
                             data_root=data, check_counts=False, plots_dir=tmp_path / "plots")  # fmt: skip
    logs = []
    (rec,) = runner.evaluate(sources.BundleSource(tmp_path / "tiny"), ["meanmax"], opts, log=logs.append)
    assert set(rec["tasks"]) == set(tasks.TASKS)
    for name in ("MR", "CR", "SUBJ", "MPQA", "SST2"):
        assert rec["tasks"][name]["acc"] > 62, name  # the fixture's labels follow its words (chance: 50)
    assert 0 <= rec["tasks"]["MRPC"]["f1"] <= 100 and rec["tasks"]["SICK-R"]["pearson"] > 0.3
    assert rec["timing"]["encode_s"] >= 0 and rec["sentences"] > 100
    assert (tmp_path / "plots" / rec["plots"]["tsne"]).is_file()
    assert any("MR fold 3/3" in m for m in logs)
    md = render([rec])
    assert "| **tiny** (quick mode) | meanmax | 16 |" in md and "*mean-max AAE*" in md and "CC BY-NC-SA" in md


def test_cli_saves_results_report_and_head(tmp_path, sick_dir, capsys):
    bundle = make_tiny_bundle(tmp_path / "tiny").path
    out = tmp_path / "results"
    argv = ["eval", "--bundle", str(bundle), "--all-views", "--tasks", "SICK-E,SICK-R,SICK-R-cos", "--quick", "--save-head",
            "--data", str(sick_dir), "--results-dir", str(out), "--report", str(tmp_path / "R.md"), "--out", str(tmp_path / "all.json")]  # fmt: skip
    assert main(argv) == 0
    summary = capsys.readouterr().out
    assert summary.startswith("eval: tiny/mean") and "quick" in summary
    recs = {r["view"]: r for r in load_records(out)}
    assert set(recs) == {"mean", "meanmax"} and all(r["mode"] == "quick" for r in recs.values())
    assert recs["mean"]["command"].startswith(f"thoughtvec eval --bundle {bundle} --all-views --tasks SICK-E,SICK-R,SICK-R-cos --quick")
    assert "SICK-R" in (tmp_path / "R.md").read_text() and len(json.loads((tmp_path / "all.json").read_text())["runs"]) == 2

    # the head: in bundle.json, for the view with the best SICK-R dev Pearson, predicting the test scores as measured
    spec = load_bundle(bundle).spec
    best = max(recs.values(), key=lambda r: r["tasks"]["SICK-R"]["dev_pearson"])
    assert spec.heads["relatedness"].view == best["view"] and best.get("head", {}).get("view") == best["view"]
    head = load_head(bundle / spec.heads["relatedness"].file)
    test = load_task("SICKRelatedness", sick_dir).splits["test"]
    src = sources.BundleSource(bundle, normalize=False)  # the server hands the head raw vectors
    u, v = src.encode(test.first, best["view"]), src.encode(test.second, best["view"])
    pred = head.predict(u, v)
    assert np.corrcoef(pred, test.scores)[0, 1] == pytest.approx(best["tasks"]["SICK-R"]["pearson"], abs=2e-3)
    assert 1 <= pred.min() and pred.max() <= 5


def test_out_defaults_beside_the_report(tmp_path, monkeypatch):
    # an evaluation into a scratch report must not overwrite the repository's docs/results.json
    monkeypatch.chdir(tmp_path)
    assert main(["eval", "report", "--results-dir", "none", "--report", "scratch/R.md"]) == 0
    assert (tmp_path / "scratch" / "results.json").is_file() and not (tmp_path / "docs").exists()


def test_cli_report_only_and_errors(tmp_path, sick_dir, capsys):
    assert main(["eval", "report", "--results-dir", str(tmp_path / "none"), "--report", str(tmp_path / "R.md"),
                 "--out", str(tmp_path / "all.json")]) == 0  # fmt: skip
    assert "No results yet" in (tmp_path / "R.md").read_text()
    assert main(["eval"]) == 2
    assert "--bundle PATH" in capsys.readouterr().err
    bundle = make_tiny_bundle(tmp_path / "tiny").path
    missing = tmp_path / "empty"
    missing.mkdir()
    assert main(["eval", "--bundle", str(bundle), "--tasks", "MR", "--data", str(missing), "--no-report"]) == 2
    assert "rt-polarity.pos: file not found" in capsys.readouterr().err
    assert main(["eval", "--bundle", str(bundle), "--view", "nope", "--data", str(sick_dir), "--no-report"]) == 2
    assert "has no view nope" in capsys.readouterr().err
    assert main(["eval", "--baseline", "glove-avg", "--save-head"]) == 2
    assert main(["eval", "--bundle", str(bundle), "--tasks", "MR", "--save-head"]) == 2
    assert "needs the SICK-R task" in capsys.readouterr().err


def test_task_selection():
    assert [t.name for t in tasks.select("sick-r,MR")] == ["MR", "SICK-R"]
    assert len(tasks.select(None)) == len(tasks.TASKS)
    with pytest.raises(ValueError, match="unknown task"):
        tasks.select("MR,NOPE")
