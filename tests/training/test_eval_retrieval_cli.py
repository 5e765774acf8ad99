"""``thoughtvec eval --retrieval`` end to end on a tiny BEIR folder and the tiny bundle, and a running
server's search scored by the same function as the in-process rankers."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.service.conftest import live_server, settings_for, write_guide
from tests.tiny_bundle import make_tiny_bundle
from thoughtvec.cli import main
from thoughtvec.training.evaluation import beir, rankers, retrieval, retrieval_report, sources

from .test_retrieval import write_beir


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    root = tmp_path_factory.mktemp("eval-retrieval")
    make_tiny_bundle(root / "models" / "tiny", name="tiny")
    # the guide's search settings, as the in-process rankers read them, with tiny measured: its hybrid fuses as measured
    write_guide(root / "models", ["tiny"])
    return root, write_beir(root / "toy")


def test_cli_scores_bm25_dense_and_hybrid_and_writes_the_table(setup, tmp_path, capsys):
    root, toy = setup
    args = ["eval", "--retrieval", "--beir", str(toy), "--lexical", "--bundle", str(root / "models" / "tiny"), "--mode", "dense",
            "--mode", "hybrid", "--results-dir", str(tmp_path / "results"), "--report", str(tmp_path / "RESULTS.md")]  # fmt: skip
    assert main(args) == 0
    assert "bm25/-/lexical nDCG@10 1.0000" in capsys.readouterr().out
    files = sorted(p.name for p in (tmp_path / "results" / "retrieval").glob("*.json"))
    assert files == ["toy__bm25__-__lexical.json", "toy__tiny__mean__dense.json", "toy__tiny__mean__hybrid.json"]
    rec = json.loads((tmp_path / "results" / "retrieval" / "toy__tiny__mean__hybrid.json").read_text())
    assert rec["command"] == f"thoughtvec eval --retrieval --bundle {root / 'models' / 'tiny'} --view mean --mode hybrid --beir {toy}"
    assert rec["ranker"]["truncation"] == "split" and set(rec["per_query"]["ndcg@10"]) == {"1", "2", "3"}
    md = (tmp_path / "RESULTS.md").read_text()
    assert "## Retrieval" in md and "### toy (5 documents, 3 judged queries)" in md
    assert "| **tiny** | mean | hybrid |" in md and "Default search of a new index" in md
    combined = json.loads((tmp_path / "results.json").read_text())
    assert len(combined["retrieval"]) == 3 and "per_query" not in combined["retrieval"][0]


def test_cli_truncation_reaches_the_encoder_and_the_command(setup, tmp_path):
    root, toy = setup
    args = ["eval", "--retrieval", "--beir", str(toy), "--bundle", str(root / "models" / "tiny"), "--truncation", "truncate",
            "--results-dir", str(tmp_path / "results"), "--report", str(tmp_path / "RESULTS.md")]  # fmt: skip
    assert main(args) == 0
    rec = json.loads((tmp_path / "results" / "retrieval" / "toy__tiny__mean__dense.json").read_text())
    assert rec["ranker"]["truncation"] == "truncate" and rec["command"].endswith(" --mode dense --truncation truncate --beir " + str(toy))


def test_cli_fuses_a_bundle_with_bm25_beside_a_server(setup, tmp_path):
    """--bundle and --url in hybrid mode: the bundle is fused with the in-process BM25, the server searches on its own."""
    root, toy = setup
    with live_server(settings_for(root / "models", root / "indexes")) as (url, _app):
        args = ["eval", "--retrieval", "--beir", str(toy), "--bundle", str(root / "models" / "tiny"), "--url", url, "--mode", "hybrid",
                "--results-dir", str(tmp_path / "results"), "--report", str(tmp_path / "RESULTS.md")]  # fmt: skip
        assert main(args) == 0
    records = [json.loads(p.read_text()) for p in (tmp_path / "results" / "retrieval").glob("*.json")]
    assert sorted((r["kind"], r["mode"]) for r in records) == [("bundle", "hybrid"), ("server", "hybrid")]


def test_cli_names_a_missing_folder(tmp_path, capsys):
    assert main(["eval", "--retrieval", "--lexical", "--beir", str(tmp_path / "nowhere"), "--results-dir", str(tmp_path)]) == 2
    assert "corpus.jsonl: not found" in capsys.readouterr().err
    assert main(["eval", "--retrieval", "--results-dir", str(tmp_path)]) == 2


def test_the_default_search_rule_takes_the_best_servable_ranker():
    def rec(kind, name, mode, ndcg):
        return {"kind": kind, "name": name, "mode": mode, "metrics": {"ndcg@10": {"mean": ndcg}}}

    records = [rec("lexical", "bm25", "lexical", 0.6), rec("bundle", "a", "hybrid", 0.65), rec("baseline", "minilm", "hybrid", 0.7)]
    assert retrieval_report.default_search(records)["name"] == "a"  # a baseline is not servable
    reranked = [*records, rec("bundle", "b", "rerank", 0.69)]  # rerank ranks what another search found: no index's mode
    assert retrieval_report.default_search(reranked)["name"] == "a"


@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid", None])
def test_server_search_scores_as_the_in_process_rankers(setup, mode):
    """Each mode of the server's search ranks as the in-process ranker of that mode; with no mode sent, the
    index's own answers (tiny: BM25 alone, the dev rule) and the record says so."""
    root, toy = setup
    task = beir.load(toy)
    (dense,) = rankers.DenseRanker.for_views(sources.BundleSource(root / "models" / "tiny", truncation="split"), ["mean"], task)
    lexical = rankers.LexicalRanker(task)
    local = {"dense": dense, "lexical": lexical, "hybrid": rankers.HybridRanker(dense, lexical), None: lexical}[mode]
    with live_server(settings_for(root / "models", root / "indexes")) as (url, _app):
        server = rankers.ServerRanker(url, task, batch=2, mode=mode, truncation="split")
        try:
            got, want = server.rank(task.query_texts, 4), local.rank(task.query_texts, 4)
            assert [[d for d, _ in r] for r in got] == [[d for d, _ in r] for r in want]
            for g, w in zip(got, want):
                assert [s for _, s in g] == pytest.approx([s for _, s in w], abs=1e-5)
            record = retrieval.evaluate(server, task, log=lambda m: None)
            assert record["kind"] == "server" and record["mode"] == local.mode
        finally:
            server.close()
        assert server.index not in {i["name"] for i in httpx.get(f"{url}/v1/indexes").json()["data"]}


def test_server_ranker_indexes_long_documents_as_told(setup):
    """``truncation`` reaches the server: a document over the tiny bundle's 32 tokens is cut or split there
    exactly as the in-process encoder cuts or splits it."""
    root, _ = setup
    long_doc = " . ".join(["the old man read a letter by the river"] * 3 + ["a dog ran in the city"] * 3)
    task = beir.RetrievalTask("long", ["a", "b"], [long_doc, "a dog ran"], ["", ""], ["q"], ["a dog ran in the city"], {"q": {"a": 1}})
    scores = {}
    with live_server(settings_for(root / "models", root / "indexes")) as (url, _app):
        for truncation in ("split", "truncate"):
            source = sources.BundleSource(root / "models" / "tiny", truncation=truncation)
            (local,) = rankers.DenseRanker.for_views(source, ["mean"], task)
            server = rankers.ServerRanker(url, task, mode="dense", truncation=truncation)
            try:
                got, want = dict(server.rank(task.query_texts, 2)[0]), dict(local.rank(task.query_texts, 2)[0])
            finally:
                server.close()
            assert got == pytest.approx(want, abs=1e-5) and server.describe()["truncation"] == truncation
            scores[truncation] = got["a"]
    assert abs(scores["split"] - scores["truncate"]) > 1e-3  # the two ways differ on this document
