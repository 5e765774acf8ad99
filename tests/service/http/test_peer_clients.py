"""Each API family's clients against a live server: their calls, and the errors they parse, in their API's shape.

OpenAI's ``/v1/*`` errors are ``{"error": {"code", "message", "field"}}``; TEI's routes answer
``{"error", "error_type"}`` with TEI's statuses; Cohere's ``{"message"}``. huggingface_hub's
``sentence_similarity`` and ``get_endpoint_info``, Cohere's v1 client with ``return_documents`` (strings and document
objects) and Cohere's model names, Cohere's v1 and v2 embed with every embedding type, each as the library sends them."""

from __future__ import annotations

import base64
import json

import httpx
import numpy as np
import pytest

from tests.service.conftest import live_server, settings_for
from tests.service.core.test_longinput import LONG

PAIRS = ("the cat sat on the table .", ["a cat sat", "stocks fell sharply", "the dog ran in the city"])


@pytest.fixture(scope="module")
def server(models_dir, tmp_path_factory):
    with live_server(settings_for(models_dir, tmp_path_factory.mktemp("idx"), max_inputs=8)) as (base, _):
        yield base


# -- errors, parsed by each client -------------------------------------------------------------------------------
def test_openai_client_parses_errors_on_v1(server):
    openai = pytest.importorskip("openai")
    client = openai.OpenAI(base_url=server + "/v1", api_key="unused", max_retries=0, timeout=10)
    with pytest.raises(openai.UnprocessableEntityError) as e:
        client.embeddings.create(model="tiny", input=["ok", " "])
    assert e.value.code == "invalid_input" and "input[1] is empty" in e.value.message
    with pytest.raises(openai.NotFoundError) as nf:
        client.embeddings.create(model="nope", input="x")
    assert nf.value.code == "unknown_model"


def test_huggingface_hub_parses_teis_errors(server):
    hub = pytest.importorskip("huggingface_hub")
    client = hub.InferenceClient(base_url=server, api_key="unused", timeout=10)
    with pytest.raises(hub.errors.HfHubHTTPError) as empty:
        client.feature_extraction(" ")
    assert empty.value.response.status_code == 400 and "inputs is empty or only whitespace" in str(empty.value)
    assert empty.value.response.json() == {"error": empty.value.response.json()["error"], "error_type": "Empty"}
    with pytest.raises(hub.errors.HfHubHTTPError) as long:  # truncate=False: TEI's 413 Validation
        client.feature_extraction(LONG, truncate=False)
    assert long.value.response.status_code == 413 and long.value.response.json()["error_type"] == "Validation"
    assert "the limit is 32" in str(long.value)
    with pytest.raises(hub.errors.HfHubHTTPError) as many:  # more inputs than max_client_batch_size
        client.feature_extraction(["x"] * 9)
    assert many.value.response.status_code == 413 and "has 9 items; the limit is 8" in str(many.value)


def test_cohere_clients_parse_cohere_errors(server):
    cohere = pytest.importorskip("cohere")
    v2 = cohere.ClientV2(api_key="unused", base_url=server, timeout=10)
    with pytest.raises(cohere.errors.BadRequestError) as e:
        v2.rerank(model="rerank-v3.5", query="x", documents=[])
    assert e.value.status_code == 400 and e.value.body == {"message": "documents is empty; send at least one item"}
    with pytest.raises(cohere.errors.NotFoundError) as nf:
        v2.rerank(model="rerank-nope", query="x", documents=["y"])
    assert "no model 'rerank-nope'" in nf.value.body["message"]
    v1 = cohere.Client(api_key="unused", base_url=server, timeout=10)
    with pytest.raises(cohere.errors.BadRequestError) as low:
        v1.rerank(query="x", documents=["y"], top_n=0)
    assert low.value.body["message"].startswith("top_n")


# -- the calls themselves ------------------------------------------------------------------------------------------
def test_huggingface_hub_sentence_similarity_at_the_base_url_and_similarity(server):
    hub = pytest.importorskip("huggingface_hub")
    source, sentences = PAIRS
    ours = httpx.post(server + "/v1/similarity", json={"source": source, "targets": sentences}).json()["data"]
    for base in (server, server + "/similarity"):
        got = hub.InferenceClient(base_url=base, api_key="unused", timeout=10).sentence_similarity(source, other_sentences=sentences)
        np.testing.assert_allclose(got, [d["score"] for d in ours], atol=1e-6)
    bad = httpx.post(server + "/similarity", json={"inputs": {"source_sentence": source, "sentences": ["ok", ""]}})
    assert bad.status_code == 400 and bad.json()["error"].startswith("inputs.sentences[1]")
    cut = httpx.post(
        server + "/similarity", json={"inputs": {"source_sentence": LONG, "sentences": ["x"]}, "parameters": {"truncate": True}}
    )
    assert cut.status_code == 200 and cut.headers["x-truncated-inputs"] == "1"


def test_huggingface_hub_endpoint_info_has_teis_fields(server):
    hub = pytest.importorskip("huggingface_hub")
    endpoint = hub.InferenceClient(model=server, provider="hf-inference", timeout=10)  # as docs/stack/tei_cohere_clients.py
    assert endpoint.health_check() is True  # GET /health
    info = endpoint.get_endpoint_info()  # GET /info
    with pytest.raises(ValueError, match="not supported"):  # without the provider, refused before anything is sent
        hub.InferenceClient(model=server, timeout=10).get_endpoint_info()
    assert info["model_id"] == "tiny" and info["max_input_length"] == 32 and info["max_client_batch_size"] == 8
    assert info["model_type"] == {"embedding": {"pooling": "mean"}} and info["model_dtype"] == "float32"  # tiny's view: a mean
    assert info["auto_truncate"] is True and info["max_batch_requests"] > 0 and info["version"]


def test_huggingface_hub_prompt_name_and_truncation_direction(server):
    hub = pytest.importorskip("huggingface_hub")
    client = hub.InferenceClient(base_url=server, api_key="unused", timeout=10)
    plain = client.feature_extraction("the cat sat")
    np.testing.assert_allclose(client.feature_extraction("the cat sat", truncation_direction="right"), plain)
    np.testing.assert_allclose(client.feature_extraction("the cat sat", prompt_name=""), plain)  # no prompt
    with pytest.raises(hub.errors.HfHubHTTPError) as named:
        client.feature_extraction("the cat sat", prompt_name="query")
    assert named.value.response.status_code == 422 and "define no prompts" in str(named.value)
    with pytest.raises(hub.errors.HfHubHTTPError) as left:
        client.feature_extraction("the cat sat", truncation_direction="left")
    assert left.value.response.status_code == 422 and "truncation_direction" in str(left.value)


def test_cohere_v1_client_reads_documents_and_cohere_names(server):
    cohere = pytest.importorskip("cohere")
    docs = ["the dog ran in the city", "the cat sat on the table .", "a red car"]
    v1 = cohere.Client(api_key="unused", base_url=server, timeout=10)
    res = v1.rerank(model="rerank-english-v3.0", query="the cat sat", documents=docs, top_n=2, return_documents=True)
    assert [r.document.text for r in res.results] == [docs[r.index] for r in res.results]
    v2 = cohere.ClientV2(api_key="unused", base_url=server, timeout=10)
    assert [r.index for r in v2.rerank(model="rerank-v3.5", query="the cat sat", documents=docs).results] == [
        r.index for r in res.results
    ] + [next(i for i in range(3) if i not in {r.index for r in res.results})]
    assert httpx.post(server + "/v1/embeddings", json={"input": "x", "model": "embed-english-v3.0"}).json()["model"] == "tiny"


def test_cohere_clients_embed_each_type_as_v1_embeddings_does(server):
    cohere = pytest.importorskip("cohere")
    texts = ["the cat sat on the table .", "a dog ran in the city", "she walked"]

    def ours(**body) -> list:
        return [d["embedding"] for d in httpx.post(server + "/v1/embeddings", json={"input": texts, "model": "tiny"} | body).json()["data"]]

    floats = ours()
    v1 = cohere.Client(api_key="unused", base_url=server, timeout=10)
    v2 = cohere.ClientV2(api_key="unused", base_url=server, timeout=10)
    plain = v1.embed(texts=texts, model="embed-english-v3.0", input_type="search_document")
    assert plain.response_type == "embeddings_floats" and plain.embeddings == floats and plain.texts == texts
    inputs = [cohere.EmbedInput(content=[cohere.TextEmbedContent(text=t)]) for t in texts]
    assert v2.embed(model="embed-v4.0", input_type="search_query", inputs=inputs).embeddings.float_ == floats
    for kind in ("float", "int8", "uint8", "binary", "ubinary", "base64"):
        by_v1 = v1.embed(texts=texts, model="embed-english-v3.0", input_type="search_document", embedding_types=[kind]).embeddings
        by_v2 = v2.embed(texts=texts, model="embed-v4.0", input_type="search_query", embedding_types=[kind]).embeddings
        got = getattr(by_v1, "float_" if kind == "float" else kind)
        assert got == getattr(by_v2, "float_" if kind == "float" else kind), kind
        if kind == "base64":
            got = [np.frombuffer(base64.b64decode(s), "<f4").astype(np.float64).tolist() for s in got]
        assert got == (floats if kind in ("float", "base64") else ours(embedding_type=kind)), kind
    with pytest.raises(cohere.errors.UnprocessableEntityError) as image:
        v2.embed(model="embed-v4.0", input_type="image", images=["data:image/png;base64,AAAA"])
    assert "no image model is served" in image.value.body["message"]
    with pytest.raises(cohere.errors.BadRequestError) as long:
        v1.embed(texts=[LONG], truncate="NONE")
    assert "the limit is 32" in long.value.body["message"]
    cut = httpx.post(server + "/v1/embeddings", json={"input": [LONG], "model": "tiny", "truncation": "truncate"}).json()["data"]
    assert v1.embed(texts=[LONG], truncate="END").embeddings == [cut[0]["embedding"]]


def test_cohere_v1_client_reranks_document_objects(server):
    cohere = pytest.importorskip("cohere")
    docs = [{"text": "the dog ran in the city", "title": "dogs"}, {"text": "the cat sat on the table ."}]
    v1 = cohere.Client(api_key="unused", base_url=server, timeout=10)
    res = v1.rerank(model="rerank-english-v3.0", query="the cat sat", documents=docs, return_documents=True, rank_fields=["text"])
    assert [r.index for r in res.results] == [1, 0]
    assert [r.document.text for r in res.results] == [docs[1]["text"], docs[0]["text"]] and res.results[1].document.title == "dogs"


# -- malformed HTTP: refused by uvicorn's parser, before the app, answered in the API's error shape (transport.py) ----
MALFORMED = {
    "negative length": b"Content-Length: -1\r\n\r\n",
    "two lengths": b"Content-Length: 15\r\nContent-Length: 16\r\n\r\n",
    "length and chunked": b"Content-Length: 15\r\nTransfer-Encoding: chunked\r\n\r\nf\r\n",
}


@pytest.mark.parametrize("headers", MALFORMED.values(), ids=MALFORMED.keys())
def test_malformed_http_is_a_json_400_and_the_connection_closes(server, headers):
    import socket

    host, port = server.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as s:
        s.sendall(b"POST /v1/embeddings HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + headers + b'{"input": "x"}\r\n\r\n')
        answer = b""
        while chunk := s.recv(65536):  # the server closes the connection
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ") and b"content-type: application/json" in head.lower() and b"connection: close" in head.lower()
    error = json.loads(body)["error"]
    assert error["code"] == "malformed_http" and "Content-Length" in error["message"] and error["field"] is None


def test_tei_token_id_inputs_are_the_models_own_ids(server):
    """TEI's /embed takes the model's ids as its /tokenize gives them: the same vectors as the texts."""
    texts = ["the cat sat on the table .", "a dog ran in the city"]
    ids = [[t["id"] for t in toks] for toks in httpx.post(server + "/tokenize", json={"inputs": texts}).json()]
    by_text = httpx.post(server + "/embed", json={"inputs": texts}).json()
    np.testing.assert_allclose(httpx.post(server + "/embed", json={"inputs": ids}).json(), by_text, atol=1e-6)
    np.testing.assert_allclose(httpx.post(server + "/embed", json={"inputs": ids[0]}).json(), by_text[:1], atol=1e-6)
    bad = httpx.post(server + "/embed", json={"inputs": [ids[0], [1, 10**6]]})
    assert bad.status_code == 422 and bad.json()["error"].startswith("inputs[1][1] is 1000000; model 'tiny' has token ids 0..")
    mixed = httpx.post(server + "/embed", json={"inputs": ["the cat", ids[0]]})
    assert mixed.status_code == 422 and mixed.json()["error"].startswith("inputs[1] is a list of token ids")
    long = [ids[0][0]] * 40  # over tiny's 32 tokens
    refused = httpx.post(server + "/embed", json={"inputs": [long]})
    assert refused.status_code == 413 and refused.json()["error_type"] == "Validation"
    cut = httpx.post(server + "/embed", json={"inputs": [long], "truncate": True})
    assert cut.status_code == 200 and cut.headers["x-truncated-inputs"] == "1"
