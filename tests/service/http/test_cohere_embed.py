"""Cohere's embed (``/v1/embed``, ``/v2/embed``), compact vectors on every embeddings route, and Cohere v1's rerank
document objects, over the tiny bundle: the shapes, the same vectors as ``/v1/embeddings``, the errors in Cohere's shape."""

from __future__ import annotations

import base64

import numpy as np
import pytest

from tests.service.core.test_longinput import LONG

TEXTS = ["the cat sat on the table .", "a dog ran in the city"]
COMPACT = ("int8", "uint8", "binary", "ubinary")


def openai(client, texts, **body) -> list:
    r = client.post("/v1/embeddings", json={"input": texts, "model": "tiny"} | body)
    assert r.status_code == 200, r.text
    return [d["embedding"] for d in r.json()["data"]]


def test_v1_answers_floats_and_by_type_with_v1_embeddings_vectors(client):
    floats = client.post("/v1/embed", json={"texts": TEXTS, "model": "embed-english-v3.0", "input_type": "search_document"})
    assert floats.status_code == 200, floats.text
    body = floats.json()
    assert set(body) == {"id", "response_type", "embeddings", "texts", "meta"} and body["response_type"] == "embeddings_floats"
    assert body["embeddings"] == openai(client, TEXTS) and body["texts"] == TEXTS  # the same numbers, written alike
    usage = client.post("/v1/embeddings", json={"input": TEXTS}).json()["usage"]
    assert body["meta"] == {"api_version": {"version": "1"}, "billed_units": {"input_tokens": usage["prompt_tokens"]}}
    typed = client.post("/v1/embed", json={"texts": TEXTS, "embedding_types": ["ubinary", "float", "int8", "int8"]}).json()
    assert typed["response_type"] == "embeddings_by_type" and list(typed["embeddings"]) == ["ubinary", "float", "int8"]
    assert typed["embeddings"]["float"] == body["embeddings"]
    for t in ("ubinary", "int8"):
        assert typed["embeddings"][t] == openai(client, TEXTS, embedding_type=t), t


@pytest.mark.parametrize("kind", [*COMPACT, "float", "base64"])
def test_v2_answers_each_type_the_same_from_texts_and_inputs(client, kind):
    by_texts = client.post(
        "/v2/embed", json={"texts": TEXTS, "model": "embed-v4.0", "input_type": "search_query", "embedding_types": [kind]}
    )
    assert by_texts.status_code == 200, by_texts.text
    body = by_texts.json()
    assert body["response_type"] == "embeddings_by_type" and body["meta"]["api_version"] == {"version": "2"}
    got = body["embeddings"][kind]
    if kind == "base64":  # the float32 vector's little-endian bytes
        floats = [np.frombuffer(base64.b64decode(s), "<f4").tolist() for s in got]
        np.testing.assert_array_equal(floats, np.asarray(openai(client, TEXTS), np.float32))
    else:
        assert got == openai(client, TEXTS, embedding_type=kind)
    inputs = [{"content": [{"type": "text", "text": t}]} for t in TEXTS]
    assert client.post("/v2/embed", json={"inputs": inputs, "embedding_types": [kind]}).json()["embeddings"] == body["embeddings"]
    split = [{"content": [{"type": "text", "text": "the cat sat"}, {"type": "text", "text": "on the table ."}]}]  # joined by a space
    assert client.post("/v2/embed", json={"inputs": split}).json()["embeddings"]["float"] == openai(client, [TEXTS[0]])


def test_v2_defaults_to_floats_and_every_input_type_embeds_alike(client):
    want = openai(client, TEXTS)
    for input_type in ("search_document", "search_query", "classification", "clustering", None):
        body = {"texts": TEXTS} | ({"input_type": input_type} if input_type else {})
        assert client.post("/v2/embed", json=body).json()["embeddings"] == {"float": want}, input_type


def test_compact_vectors_on_the_openai_and_tei_routes(client):
    floats = np.asarray(openai(client, TEXTS))
    bits = openai(client, TEXTS, embedding_type="ubinary")
    np.testing.assert_array_equal(bits, np.packbits(floats > 0, axis=-1))  # 8 dimensions: one byte
    assert openai(client, TEXTS, embedding_type="binary") == [[b - 128 for b in row] for row in bits]
    for kind, dtype in (("int8", np.int8), ("uint8", np.uint8), ("binary", np.int8)):
        packed = openai(client, TEXTS, embedding_type=kind, encoding_format="base64")  # a byte a code
        assert [np.frombuffer(base64.b64decode(s), dtype).tolist() for s in packed] == openai(client, TEXTS, embedding_type=kind)
    for kind in COMPACT:
        r = client.post("/embed", json={"inputs": TEXTS, "model": "tiny", "embedding_type": kind})
        assert r.json() == openai(client, TEXTS, embedding_type=kind), kind
    ids = [[t["id"] for t in toks] for toks in client.post("/tokenize", json={"inputs": TEXTS}).json()]
    assert client.post("/embed", json={"inputs": ids, "embedding_type": "int8"}).json() == openai(client, TEXTS, embedding_type="int8")


def test_a_texts_codes_are_the_same_alone_and_in_a_batch(client):
    for kind in COMPACT:
        batch = openai(client, [*TEXTS, "she walked", "i"], embedding_type=kind)
        assert openai(client, "she walked", embedding_type=kind) == [batch[2]], kind


def test_truncate_and_max_tokens(client):
    cut = client.post("/v1/embed", json={"texts": [LONG], "truncate": "END"})
    assert cut.status_code == 200 and cut.headers["x-truncated-inputs"] == "1"
    assert cut.json()["embeddings"] == openai(client, [LONG], truncation="truncate")
    split = client.post("/v1/embed", json={"texts": [LONG]})  # absent: the server's setting (split)
    assert split.headers["x-split-inputs"] == "1" and split.json()["embeddings"] == openai(client, [LONG])
    refused = client.post("/v2/embed", json={"texts": ["ok", LONG], "truncate": "NONE"})
    assert refused.status_code == 400 and refused.json()["message"].startswith("texts[1] has ")
    capped = client.post("/v2/embed", json={"texts": [LONG], "max_tokens": 32})  # at the model's limit: cut there
    assert capped.status_code == 200 and capped.headers["x-truncated-inputs"] == "1"
    assert client.post("/v2/embed", json={"texts": [LONG], "max_tokens": 40, "truncate": "NONE"}).status_code == 400


@pytest.mark.parametrize(
    ("path", "body", "status", "message"),
    [
        ("/v1/embed", {"texts": ["x"], "images": ["data:image/png;base64,AAAA"]}, 422, "images has 1 item(s); no image model is served"),
        (
            "/v2/embed",
            {"inputs": [{"content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
            422,
            "inputs[0].content[0] is an image",
        ),
        ("/v2/embed", {"texts": ["x"], "input_type": "image"}, 422, "input_type is 'image'; no image model is served"),
        ("/v2/embed", {"texts": ["x"], "truncate": "START"}, 422, "truncate is 'START'; the server cuts a long text at its end"),
        ("/v2/embed", {"texts": ["x"], "max_tokens": 8}, 400, "max_tokens is 8; texts are cut only at the model's limit, 32 tokens"),
        ("/v2/embed", {"texts": ["x"], "output_dimension": 4}, 400, "output_dimension is 4; the smallest is 8"),
        ("/v2/embed", {"texts": ["x"], "model": "embed-nope"}, 404, "no model 'embed-nope'"),
        ("/v2/embed", {"texts": ["x"], "inputs": [{"content": [{"type": "text", "text": "y"}]}]}, 422, "send texts or inputs"),
        ("/v2/embed", {"inputs": [{"content": [{"type": "text", "text": 5}]}]}, 400, "inputs[0].content[0].text must be a string, got int"),
        ("/v2/embed", {"inputs": [{"content": []}]}, 422, "inputs[0] must be {content: [{type: text, text}, ...]}"),
        ("/v1/embed", {"texts": []}, 400, "texts is empty"),
        ("/v1/embed", {"texts": ["ok", " "]}, 400, "texts[1] is empty or only whitespace"),
        ("/v1/embed", {"texts": ["x"], "embedding_types": ["int4"]}, 422, "embedding_types[0]: Input should be"),
        ("/v1/embed", {"texts": ["x"], "priority": 1}, 422, "priority: is not a field of this request"),  # v2's alone
        ("/v1/embeddings", {"input": "x", "embedding_type": "int4"}, 422, "embedding_type: Input should be"),
    ],
)
def test_errors_name_the_field(client, path, body, status, message):
    r = client.post(path, json=body)
    said = r.json()["message"] if path != "/v1/embeddings" else r.json()["error"]["message"]
    assert (r.status_code, said[: len(message)]) == (status, message), r.text


def test_cohere_v1_rerank_takes_document_objects_and_returns_them_whole(client):
    docs = [{"text": "the dog ran in the city", "title": "dogs"}, "the cat sat on the table .", {"text": "a red car"}]
    r = client.post("/v1/rerank", json={"query": "the cat sat", "documents": docs, "return_documents": True, "rank_fields": ["text"]})
    assert r.status_code == 200, r.text
    texts = [d["text"] if isinstance(d, dict) else d for d in docs]
    plain = client.post("/v1/rerank", json={"query": "the cat sat", "documents": texts, "return_documents": True}).json()
    results = r.json()["results"]
    assert [x["index"] for x in results] == [x["index"] for x in plain["results"]]  # ranked by their text alone
    assert [x["document"] for x in results] == [
        docs[x["index"]] if isinstance(docs[x["index"]], dict) else {"text": texts[x["index"]]} for x in results
    ]
    for body, status, message in (
        ({"documents": [{"title": "no text"}]}, 400, "documents[0] has no text"),
        ({"documents": [{"text": "x", "year": 2024}]}, 400, "documents[0].year must be a string, got int"),
        ({"documents": ["x"], "rank_fields": ["title", "text"]}, 422, "rank_fields names ['title']; only a document's text is ranked"),
    ):
        bad = client.post("/v1/rerank", json={"query": "q"} | body)
        assert (bad.status_code, bad.json()["message"][: len(message)]) == (status, message), bad.text
