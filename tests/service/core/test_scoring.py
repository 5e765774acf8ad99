"""The scoring service without HTTP, over a fake runtime: pair similarity by the model's cosine; rerank by the cosine
alone (``dense``) and fused with BM25 over the documents sent (``hybrid``, the default), each checked by hand."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from tests.service.conftest import SENTENCES
from tests.service.core.fake_runtime import fake_services
from thoughtvec.service.core.longinput import sentences
from thoughtvec.service.core.scoring import ScoringService, candidate_bm25, fuse_scores, fused_relevance
from thoughtvec.service.errors import InvalidInput, RequestTooLarge
from thoughtvec.service.index.fusion import Fusion, RerankFusion
from thoughtvec.service.index.lexical import BM25, Analyzer, LexicalIndex
from thoughtvec.service.index.search_settings import FALLBACK_RERANK, SearchSettings
from thoughtvec.service.model_guide import Guide

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def services(models_dir, tmp_path):
    return lambda **settings: fake_services(models_dir, tmp_path / "indexes", **settings)


async def test_similarity_and_rerank_score_by_the_models_cosine(services):
    async with services() as (emb, _, fakes):
        scoring = ScoringService(emb)
        fake = fakes["tiny"]
        sim = await scoring.similarity(pairs=[[SENTENCES[0], SENTENCES[1]], [SENTENCES[2], SENTENCES[2]]], model="tiny")
        want = float(fake.expected(SENTENCES[0]) @ fake.expected(SENTENCES[1]))
        assert sim.data[0].score == pytest.approx(want, abs=1e-6) and sim.data[1].score == pytest.approx(1.0, abs=1e-6)
        assert sim.usage.tokens == sum(len(fake.token_ids(s)) for s in SENTENCES[:3])  # each distinct text once
        with pytest.raises(InvalidInput) as e:
            await scoring.similarity(pairs=[["a", "b"]], source="a", targets=["b"], model="tiny")
        assert e.value.field == "pairs"
        ranked = await scoring.rerank(
            query=SENTENCES[0], documents=SENTENCES[:4], top_n=2, return_documents=True, model="tiny", mode="dense"
        )
        scores = [float(fake.expected(SENTENCES[0]) @ fake.expected(d)) for d in SENTENCES[:4]]
        order = sorted(range(4), key=lambda i: -scores[i])[:2]
        assert [r.index for r in ranked.results] == order and ranked.results[0].document == SENTENCES[order[0]]
        assert [r.raw for r in ranked.results] == pytest.approx([scores[i] for i in order], abs=1e-6)
        assert [r.score for r in ranked.results] == pytest.approx([(1 + scores[i]) / 2 for i in order], abs=1e-6)
        assert ranked.mode == "dense"
        with pytest.raises(InvalidInput) as e:
            await scoring.rerank(query="a", documents=["b"], top_n=0, model="tiny")
        assert e.value.field == "top_n"


QUERY = "where did the cat sleep"
DOCS = ["the cat slept on the warm sofa", "stocks fell sharply today", "a dog and a cat slept in the sun", "the sofa was red"]


def test_candidate_bm25_is_bm25_over_the_documents_sent_alone():
    search = SearchSettings(Analyzer("porter", "en"), BM25("atire", 0.9, 0.5))
    got = candidate_bm25(QUERY, DOCS, search)
    index = LexicalIndex(search.analyzer, search.bm25)  # an index holding exactly these documents scores the same
    index.add([str(i) for i in range(len(DOCS))], DOCS)
    want = dict(index.search(QUERY, len(DOCS)))
    assert got == pytest.approx([want.get(str(i), 0.0) for i in range(len(DOCS))])
    assert got[1] == 0.0 and got[0] > got[3] == 0.0  # no shared term: 0; "sofa" is not in the query


def test_fused_relevance_by_hand():
    search = SearchSettings()
    cos = np.array([0.9, 0.1, 0.5, 0.3])
    bm25 = candidate_bm25(QUERY, DOCS, search)

    def z(xs):
        mean, sd = statistics.fmean(xs), statistics.pstdev(xs)
        return [(x - mean) / sd for x in xs]

    fused = [a + 0.5 * b for a, b in zip(z(list(cos)), z(list(bm25)))]
    relevance, raw = fused_relevance(QUERY, DOCS, cos, search, Fusion("zscore", 0.5))
    assert raw == pytest.approx(fused)
    assert relevance == pytest.approx([1 / (1 + math.exp(-f / 1.5)) for f in fused])
    one, _ = fused_relevance(QUERY, DOCS[:1], cos[:1], search, Fusion("zscore", 0.5))
    assert one == pytest.approx([0.5])  # one document: the mean of itself on both signals


async def test_rerank_in_hybrid_mode_fuses_the_cosine_and_bm25_over_the_documents(services):
    async with services() as (emb, _, fakes):
        scoring = ScoringService(emb, SearchSettings(rerank=Fusion("minmax", 2.0)))
        fake = fakes["tiny"]
        q = fake.expected(QUERY)
        cos = np.array([float(q @ fake.expected(d)) / float(np.linalg.norm(q) * np.linalg.norm(fake.expected(d))) for d in DOCS])
        relevance, raw = fused_relevance(QUERY, DOCS, cos, scoring.search, scoring.rerank_fusion(emb.model("tiny")))
        ranked = await scoring.rerank(query=QUERY, documents=DOCS, model="tiny")
        assert ranked.mode == "hybrid" and [r.index for r in ranked.results] == list(np.lexsort((np.arange(4), -raw)))
        assert [r.score for r in ranked.results] == pytest.approx([relevance[r.index] for r in ranked.results], abs=1e-6)
        assert all(0.0 <= r.score <= 1.0 for r in ranked.results)
        # tiny is not a bundle the guide measured: its fusion is the fallback, whatever the guide's
        assert scoring.rerank_fusion(emb.model("tiny")) == FALLBACK_RERANK
        with pytest.raises(InvalidInput) as e:
            await scoring.rerank(query="a", documents=["b"], model="tiny", mode="lexical")  # type: ignore[arg-type]
        assert e.value.field == "mode"


async def test_rerank_with_the_best_sentence_fuses_it_as_a_third_signal(services):
    docs = [
        "Stocks fell sharply today. The cat slept on the warm sofa. Markets were closed.",
        "A dog and a cat slept in the sun.",
        "The sofa was red. Stocks fell sharply today.",  # shares a sentence with the first: embedded once
    ]
    async with services() as (emb, _, fakes):
        fusion = RerankFusion("zscore", 0.5, sentence_weight=2.0)
        scoring = ScoringService(emb)
        scoring.rerank_fusion = lambda model: fusion  # type: ignore[method-assign]  # as the guide would for a measured bundle
        fake = fakes["tiny"]

        def cos(a: str, b: str) -> float:
            u, v = fake.expected(a), fake.expected(b)
            return float(u @ v / (np.linalg.norm(u) * np.linalg.norm(v)))

        split = [sentences(d) for d in docs]
        assert [len(s) for s in split] == [3, 1, 2]
        whole = np.array([cos(QUERY, d) for d in docs])
        best = np.array([max(cos(QUERY, s) for s in parts) for parts in split])
        assert best[0] > whole[0]  # one sentence answers; the whole document's vector averages it away
        bm25 = candidate_bm25(QUERY, docs, scoring.search)

        def z(xs):
            return (xs - xs.mean()) / xs.std()

        want = z(whole) + 2.0 * z(best) + 0.5 * z(bm25)
        relevance, raw = fused_relevance(QUERY, docs, whole, scoring.search, fusion, best)
        assert raw == pytest.approx(want) and relevance == pytest.approx(1 / (1 + np.exp(-want / 3.5)))
        ranked = await scoring.rerank(query=QUERY, documents=docs, model="tiny")
        assert [r.index for r in ranked.results] == list(np.lexsort((np.arange(3), -raw)))
        assert [r.raw for r in ranked.results] == pytest.approx([raw[r.index] for r in ranked.results], abs=1e-5)
        assert [r.score for r in ranked.results] == pytest.approx([relevance[r.index] for r in ranked.results], abs=1e-5)
        distinct = {QUERY, *docs, *(s for parts in split for s in parts)}  # the second document is its own sentence
        assert ranked.usage.tokens == sum(len(fake.token_ids(s)) for s in distinct)
        with pytest.raises(ValueError, match="best_sentences"):
            fused_relevance(QUERY, docs, whole, scoring.search, fusion)
        with pytest.raises(InvalidInput) as e:  # the documents are checked as any rerank's
            await scoring.rerank(query=QUERY, documents=["fine", "   "], model="tiny")
        assert e.value.field == "documents[1]"


async def test_rerank_fusion_applies_to_the_bundles_it_was_chosen_on_alone(services):
    """Rerank's fusion was chosen on the bundles with a rerank record (the guide's ``rerank_models``): another bundle
    the guide measured, or the same name under another export, reranks by the fallback."""
    async with services() as (emb, _, _fakes):
        chosen = RerankFusion("zscore", 1.0, sentence_weight=2.0)
        scoring = ScoringService(emb, SearchSettings(rerank=chosen))
        names = sorted(emb.registry.models)
        assert len(names) >= 2
        first, other = (emb.model(n) for n in names[:2])
        entries = {m.name: {"fingerprint": m.encoder.fingerprint()} for m in (first, other)}
        emb.registry.guide = Guide({"models": entries, "choices": {"rerank_models": [first.name]}})
        assert scoring.rerank_fusion(first) == chosen
        assert scoring.rerank_fusion(other) == FALLBACK_RERANK  # measured, but not for rerank
        entries[first.name]["fingerprint"] = "another export"
        assert scoring.rerank_fusion(first) == FALLBACK_RERANK


async def test_the_sentence_pass_counts_toward_the_requests_token_limit(services):
    docs = ["Stocks fell sharply today. The cat slept on the warm sofa.", "A dog and a cat slept in the sun."]
    async with services() as (_, _, fakes):
        fake = fakes["tiny"]
        first = sum(len(fake.token_ids(t)) for t in [QUERY, *docs])  # the query and documents, embedded whole
        more = sum(len(fake.token_ids(s)) for s in sentences(docs[0]))  # the first document's sentences, again
    for limit in (first + more - 1, first + more):
        async with services(max_request_tokens=limit) as (emb, _, _):
            scoring = ScoringService(emb)
            scoring.rerank_fusion = lambda model: RerankFusion("zscore", 1.0, sentence_weight=2.0)  # type: ignore[method-assign]
            assert (await scoring.rerank(query=QUERY, documents=docs, model="tiny", mode="dense")).usage.tokens == first
            if limit < first + more:
                with pytest.raises(RequestTooLarge) as e:
                    await scoring.rerank(query=QUERY, documents=docs, model="tiny")
                assert e.value.field == "documents[0]" and f"to {first + more} tokens" in str(e.value)
            else:
                assert (await scoring.rerank(query=QUERY, documents=docs, model="tiny")).usage.tokens == first + more


def test_rerank_by_reciprocal_rank_reads_each_signals_order_not_the_order_the_documents_came_in():
    cos = np.array([0.1, 0.9, 0.5, 0.3])
    bm25 = np.array([0.0, 2.0, 3.0, 1.0])
    _, raw = fuse_scores(cos, bm25, Fusion("rrf", 0.5, 60))
    dense_rank, lexical_rank = [4, 1, 2, 3], [4, 2, 1, 3]  # by score, best first
    assert raw == pytest.approx([1 / (60 + d) + 0.5 / (60 + lx) for d, lx in zip(dense_rank, lexical_rank)])
