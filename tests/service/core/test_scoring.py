"""The scoring service without HTTP, over a fake runtime: pair similarity and rerank by the model's cosine."""

from __future__ import annotations

import pytest

from tests.service.conftest import SENTENCES
from tests.service.core.fake_runtime import fake_services
from thoughtvec.service.core.scoring import ScoringService
from thoughtvec.service.errors import InvalidInput

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
        ranked = await scoring.rerank(query=SENTENCES[0], documents=SENTENCES[:4], top_n=2, return_documents=True, model="tiny")
        scores = [float(fake.expected(SENTENCES[0]) @ fake.expected(d)) for d in SENTENCES[:4]]
        order = sorted(range(4), key=lambda i: -scores[i])[:2]
        assert [r.index for r in ranked.results] == order and ranked.results[0].document == SENTENCES[order[0]]
        with pytest.raises(InvalidInput) as e:
            await scoring.rerank(query="a", documents=["b"], top_n=0, model="tiny")
        assert e.value.field == "top_n"
