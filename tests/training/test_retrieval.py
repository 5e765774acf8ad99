"""Retrieval metrics as trec_eval defines them (a hand-computed example, then pytrec_eval on random runs),
the BEIR reader, bootstrap intervals, and the rankers end to end on a tiny BEIR folder."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from tests.tiny_bundle import make_tiny_bundle
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.index.fusion import Fusion
from thoughtvec.service.index.search_settings import FALLBACK_RERANK
from thoughtvec.training.evaluation import beir, rankers, retrieval, sources
from thoughtvec.training.evaluation.datasets import DatasetError

# one query, graded judgements: d1 (2), d2 (1), d3 (0: judged, not relevant), d4 (1, never retrieved)
QRELS = {"q": {"d1": 2, "d2": 1, "d3": 0, "d4": 1}}
# the ranker's order is d3, d2, x, d1; "x" and "d1" tie at 0.5, so trec_eval puts "x" (the larger id) first
RUN = [("d3", 0.9), ("d2", 0.8), ("d1", 0.5), ("x", 0.5)]


def test_trec_order_breaks_ties_by_document_id_descending():
    assert retrieval.trec_order(RUN) == ["d3", "d2", "x", "d1"]


def test_ndcg_by_hand():
    dcg = 0 / math.log2(2) + 1 / math.log2(3) + 0 / math.log2(4) + 2 / math.log2(5)
    ideal = 2 / math.log2(2) + 1 / math.log2(3) + 1 / math.log2(4)  # all judged grades, d4's included
    assert retrieval.ndcg_at(RUN, QRELS["q"], 10) == pytest.approx(dcg / ideal)
    assert retrieval.ndcg_at(RUN, QRELS["q"], 2) == pytest.approx((1 / math.log2(3)) / (2 + 1 / math.log2(3)))


def test_recall_by_hand():
    assert retrieval.recall_at(RUN, QRELS["q"], 100) == pytest.approx(2 / 3)  # d1, d2 of d1, d2, d4
    assert retrieval.recall_at(RUN, QRELS["q"], 2) == pytest.approx(1 / 3)


def test_a_query_without_results_scores_zero_and_counts():
    qrels = QRELS | {"empty": {"d9": 1}, "unjudged-only": {"d3": 0}}
    scores = retrieval.per_query({"q": RUN}, qrels)
    assert set(scores["ndcg@10"]) == {"q", "empty"}  # no relevant document: not scored
    assert scores["ndcg@10"]["empty"] == 0 and scores["recall@100"]["empty"] == 0


def test_metrics_match_pytrec_eval_on_random_runs():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = np.random.default_rng(0)
    docs = [f"d{i}" for i in range(300)]
    qrels, run = {}, {}
    for q in range(40):
        judged = rng.choice(docs, size=int(rng.integers(1, 12)), replace=False)
        qrels[f"q{q}"] = {d: int(rng.integers(0, 4)) for d in judged} | {str(judged[0]): 1}
        ranked = rng.choice(docs, size=150, replace=False)
        scores = np.round(rng.random(150), 1)  # coarse scores: many ties, broken by trec_eval's rule
        run[f"q{q}"] = [(str(d), float(s)) for d, s in zip(ranked, scores)]
    ours = retrieval.per_query(run, qrels)
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10", "recall.100"})
    theirs = ev.evaluate({q: dict(r) for q, r in run.items()})
    for q in qrels:
        assert ours["ndcg@10"][q] == pytest.approx(theirs[q]["ndcg_cut_10"], abs=1e-12)
        assert ours["recall@100"][q] == pytest.approx(theirs[q]["recall_100"], abs=1e-12)


def test_bootstrap_interval_brackets_the_mean_and_paired_difference_is_exact_for_a_constant_shift():
    v = np.random.default_rng(1).random(200)
    lo, hi = retrieval.bootstrap(v, resamples=2000)
    assert lo < v.mean() < hi and hi - lo < 0.2
    a = {str(i): float(x) for i, x in enumerate(v)}
    d = retrieval.paired({q: x + 0.05 for q, x in a.items()}, a, resamples=500)
    assert d["diff"] == pytest.approx(0.05) and d["lo"] == pytest.approx(0.05) and d["hi"] == pytest.approx(0.05)


# -- the BEIR reader and the rankers -------------------------------------------------------------------
DOCS = {
    "c1": ("Cats", "the cat sat on the mat . it purred all day long in the sun ."),
    "c2": ("Dogs", "a dog ran in the city park and barked at the birds ."),
    "c3": ("", "the king rode into battle with his army at dawn ."),
    "c4": ("Rivers", "the old man read a letter by the river and the water was cold ."),
    # over the tiny bundle's 32-token limit: split into sentences and pooled, as the server does
    "c5": ("Weather", " ".join(["the rain fell on the green hills all night ."] * 3 + ["the snow came in the morning ."] * 3)),
}
QUERIES = {"1": "a cat on a mat", "2": "the king and his army", "3": "letters by the river", "9": "not judged"}
JUDGED = [("1", "c1", 1), ("2", "c3", 2), ("3", "c4", 1)]


def write_beir(root, judged=JUDGED):
    root.mkdir(parents=True, exist_ok=True)
    with open(root / "corpus.jsonl", "w") as f:
        for i, (title, text) in DOCS.items():
            f.write(json.dumps({"_id": i, "title": title, "text": text}) + "\n")
    with open(root / "queries.jsonl", "w") as f:
        for i, text in QUERIES.items():
            f.write(json.dumps({"_id": i, "text": text}) + "\n")
    (root / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in judged))
    return root


def test_reader_joins_title_and_keeps_judged_queries(tmp_path):
    task = beir.load(write_beir(tmp_path / "toy"))
    assert task.name == "toy" and task.doc_ids == ["c1", "c2", "c3", "c4", "c5"]
    assert task.doc_texts[0].startswith("Cats the cat sat") and task.doc_texts[2].startswith("the king")  # no title: no space
    assert task.query_ids == ["1", "2", "3"] and task.qrels["2"] == {"c3": 2}


@pytest.mark.parametrize(
    "judged, message",
    [([("1", "c7", 1)], "not in corpus.jsonl"), ([("5", "c1", 1)], "not in queries.jsonl"), ([("1", "c1", "x")], "not an integer")],
)
def test_reader_names_the_problem(tmp_path, judged, message):
    with pytest.raises(DatasetError, match=message):
        beir.load(write_beir(tmp_path / "bad", judged))


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    root = tmp_path_factory.mktemp("beir")
    make_tiny_bundle(root / "tiny", name="tiny")
    return root, beir.load(write_beir(root / "toy"))


def test_lexical_ranker_finds_each_judged_document_first(toy):
    _, task = toy
    record = retrieval.evaluate(rankers.LexicalRanker(task), task, log=lambda m: None)
    assert record["metrics"]["ndcg@10"]["mean"] == pytest.approx(1.0)
    assert record["schema"] == retrieval.SCHEMA and record["queries"] == 3 and record["mode"] == "lexical"


def test_dense_ranker_is_exact_cosine_over_split_documents(toy):
    root, task = toy
    (dense,) = rankers.DenseRanker.for_views(sources.BundleSource(root / "tiny", truncation="split"), ["mean"], task)
    enc = Encoder.load(root / "tiny")
    q = enc.encode(task.query_texts[:2], "mean")
    d = enc.encode(task.doc_texts, "mean", truncation="split")  # the server's path for long inputs
    assert not np.allclose(d[-1], enc.encode(task.doc_texts[-1:], "mean", truncation="truncate")[0], atol=1e-3)
    got = dense.rank(task.query_texts[:2], 5)
    for row, sims in zip(got, q @ d.T):
        assert [i for i, _ in row] == [task.doc_ids[j] for j in np.argsort(-sims, kind="stable")]
        np.testing.assert_allclose([s for _, s in row], np.sort(sims)[::-1], atol=1e-5)


def test_hybrid_ranker_fuses_both_rankings(toy):
    root, task = toy
    (dense,) = rankers.DenseRanker.for_views(sources.BundleSource(root / "tiny", truncation="split"), ["mean"], task)
    lexical = rankers.LexicalRanker(task)
    fusion = Fusion("rrf", lexical_weight=1.0, rrf_k=60, depth=4)
    hybrid = rankers.HybridRanker(dense, lexical, fusion)
    (got,) = hybrid.rank(task.query_texts[:1], 4)
    (d,), (lx,) = dense.rank(task.query_texts[:1], 4), lexical.rank(task.query_texts[:1], 4)
    assert got == fusion.fuse(d, lx, 4) and hybrid.mode == "hybrid" and hybrid.describe()["fusion"]["depth"] == 4


@pytest.mark.parametrize("sentence_weight", [0.0, 1.0])
def test_rerank_ranker_ranks_bm25s_candidates_as_the_servers_rerank_does(toy, sentence_weight):
    from thoughtvec.service import api

    root, task = toy
    (dense,) = rankers.DenseRanker.for_views(sources.BundleSource(root / "tiny", truncation="split"), ["mean"], task)
    lexical = rankers.LexicalRanker(task)
    fusion = dataclasses.replace(FALLBACK_RERANK, sentence_weight=sentence_weight)
    rerank = rankers.RerankRanker(dense, lexical, task, fusion)
    assert rerank.mode == "rerank" and rerank.describe()["rerank"] == dataclasses.asdict(fusion)
    got = rerank.rank(task.query_texts, 10)
    with api.load("tiny", models_dir=root) as tiny:
        tiny._core.scoring.rerank_fusion = lambda model: fusion  # as the guide gives it for a bundle it measured
        for row, query, found in zip(got, task.query_texts, lexical.rank(task.query_texts, rerank.candidates)):
            ids = [d for d, _ in found]  # BM25's candidates only: a document sharing no term is never reranked in
            served = tiny.rerank(query, [task.doc_texts[task.doc_ids.index(d)] for d in ids], truncation="split")
            assert [d for d, _ in row] == [ids[r.index] for r in served]
            assert [s for _, s in row] == pytest.approx([r.raw for r in served], abs=1e-5)


@pytest.mark.parametrize("what", ["rerank", "feedback", "signals"])
def test_retrieval_tuning_grids_run_and_report_paired_against_the_default_search(toy, capsys, what):
    from thoughtvec.training.evaluation import retrieval_tuning

    root, _ = toy
    assert retrieval_tuning.main([what, "--bundle", str(root / "tiny"), "--beir", str(root / "toy")]) == 0
    out = capsys.readouterr().out
    if what == "rerank":
        assert (
            "the cosine alone (mode dense): {'ndcg@10': " in out
            and "192 settings" in out
            and "best vs BM25 alone" in out
            and "best vs the default search" in out
        )
        assert "best vs the best without sentences (0.0," in out
        assert "best: RerankFusion(method=" in out
    elif what == "feedback":
        paired = out.split("against the default search, paired")[1].splitlines()[1:]
        assert len(paired) == 9 + 12 + 3  # Rocchio 3 x 3, RM3 3 x 2 x 2, titles 3
        assert all(line.strip().startswith(("('rocchio'", "('rm3'", "('title'")) for line in paired)
    else:
        assert "sentences alone (the best of each document's, dense): nDCG@10 " in out and "windows alone" in out
        paired = out.split("against the default search, paired")[1].splitlines()[1:]
        assert len(paired) == 2 * 3 * 3  # the part, its weight, the lexical weight
        assert all(line.strip().startswith(("('sentences'", "('windows'")) for line in paired)


def test_index_factories_pairs_each_approximate_index_with_the_exact_search(toy, capsys):
    from thoughtvec.training.evaluation import index_factories

    root, _ = toy
    assert index_factories.main(["--bundle", str(root / "tiny"), "--beir", str(root / "toy"), "--factories", "HNSW32;IVF4,Flat"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("the default search (tiny / ") and "exact: nDCG@10 " in out
    rows = {line.split()[0]: line for line in out.splitlines() if "vs exact" in line}
    assert list(rows) == ["HNSW32", "IVF4,Flat"]
    # a toy corpus: the graph and the inverted lists (all 4 probed) find the exact top 10 among the index's own ids,
    # so the search is the exact one's
    for factory in rows:
        assert "dense recall@10 1.0000" in rows[factory] and "vs exact +0.0000 [+0.0000, +0.0000]" in rows[factory]


def test_retrieval_check_reports_every_pooling_and_the_coverage(toy):
    from thoughtvec.training.evaluation import retrieval_check

    root, task = toy
    lines: list[str] = []
    retrieval_check.check(str(root / "tiny"), ["mean", "no-such-view"], task, out=lines.append)
    text = "\n".join(lines)
    assert "tiny: documents:" in text and "% of tokens <unk>" in text
    for how in ("mean-unit", "mean-raw", "token-weighted", "max", "truncate", "title", "max-sim", "by query words"):
        assert f" {how} " in text, how
    assert "no-such-view" not in text


def test_retrieval_check_reads_the_coverage_of_a_bundle_with_its_own_tokenizer():
    from thoughtvec.paths import MODELS
    from thoughtvec.training.evaluation import retrieval_check

    bundle = MODELS / "all-minilm-l6-v2"  # hf-tokenizers: no word vocabulary, no expansion
    if not (bundle / "model.onnx").exists():
        pytest.skip("the MiniLM bundle is not in this checkout")
    enc = Encoder.load(bundle, providers=["CPUExecutionProvider"])
    unk, expanded = retrieval_check.coverage(enc, ["a dog ran", "a dog 🙂"])  # 🙂 is [UNK] in its WordPiece vocabulary
    assert unk == pytest.approx(1 / 6) and expanded == 0.0
    assert retrieval_check.fully_known(enc, ["a dog ran", "a dog 🙂"]).tolist() == [True, False]


def test_milvus_fusion_scores_the_server_s_fusion_and_milvus_s_rankers_on_one_index(toy):
    """The Milvus comparison (docs/search.md, *Indexes in Milvus*) on Milvus Lite: every ranker scored over one index
    of the corpus, each judged document found first, the server's fusion the baseline of the paired differences,
    and the index dropped afterwards."""
    from tests.service.index.milvus_support import need, released_lite

    need("milvus_lite")
    from thoughtvec.service.index.milvus import MilvusStore
    from thoughtvec.service.index.milvus_schema import MilvusOptions
    from thoughtvec.training.evaluation import milvus_fusion

    root, task = toy
    lines: list[str] = []
    with released_lite(root / "milvus.db"):
        got = milvus_fusion.milvus_grid(
            task, sources.BundleSource(root / "tiny", truncation="split"), "mean", str(root / "milvus.db"), lines.append
        )
        store = MilvusStore(MilvusOptions(str(root / "milvus.db"), prefix="tuning_"))
        assert store.names() == []
        store.close()
    server, *others = got
    assert server.startswith("server: minmax") and len(others) == len(milvus_fusion.MILVUS_RANKERS)
    assert "Milvus RRFRanker(k=60)" in others and "Milvus WeightedRanker(0.4, 0.6)" in others
    for label, r in got.items():
        assert r["metrics"]["ndcg@10"]["mean"] == pytest.approx(1.0), label
        assert r["vs_server"]["ndcg@10"]["queries"] == len(task.query_ids)
    assert got[server]["vs_server"]["ndcg@10"]["diff"] == 0.0
    assert any("paired difference from the server's fusion" in line for line in lines)


def test_signal_parts_are_sentences_or_windows_of_two_consecutive_ones():
    text = "Cats sleep a lot. Dogs bark at night. Birds sing at dawn."
    assert rankers.document_parts(text) == ["Cats sleep a lot.", "Dogs bark at night.", "Birds sing at dawn."]
    assert rankers.document_parts(text, window=2) == ["Cats sleep a lot. Dogs bark at night.", "Dogs bark at night. Birds sing at dawn."]
    assert rankers.document_parts("One sentence only.", window=2) == ["One sentence only."]
    assert rankers.document_parts("Two of them. Here.", window=2) == ["Two of them. Here."]  # fewer than a window: one


def test_part_vectors_give_each_documents_best_part_for_one_query_or_all(toy):
    root, task = toy
    (dense,) = rankers.DenseRanker.for_views(sources.BundleSource(root / "tiny", truncation="split"), ["mean"], task)
    parts = rankers.PartVectors.of(dense, dict(zip(task.doc_ids, task.doc_texts)), window=2)
    q = dense.rank_vectors(task.query_texts)
    every = parts.best_of_every(q)
    assert every.shape == (len(task.query_ids), len(task.doc_ids))
    for i, vec in enumerate(q):
        assert every[i] == pytest.approx(parts.best(vec, task.doc_ids), abs=1e-6)
