"""Every compute route is bounded and admitted like ``/v1/embeddings``: the characters and tokens of a request in
all, a search query's characters and the size of the answer have limits (413 naming the field and the limit),
and every route that tokenizes or runs a model shares the model's queue (429 with ``Retry-After``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from thoughtvec.service.errors import RequestTooLarge
from thoughtvec.service.http.error_answers import family, status_of

INDEX = {"name": "notes", "model": "tiny"}
DOCS = {"documents": [{"id": f"d{i}", "text": t} for i, t in enumerate(["the cat sat", "a dog ran", "she walked", "the old man"])]}


def routes(text: str, n: int) -> list[tuple[str, dict, str]]:
    """(path, body with ``n`` copies of ``text`` where the route takes a list, the field of the n-th) per compute route."""
    texts = [text] * n
    return [
        ("/v1/embeddings", {"input": texts}, f"input[{n - 1}]"),
        ("/embed", {"inputs": texts}, f"inputs[{n - 1}]"),
        ("/", {"inputs": texts}, f"inputs[{n - 1}]"),
        ("/tokenize", {"input": texts}, f"input[{n - 1}]"),
        ("/tokenize", {"inputs": texts}, f"inputs[{n - 1}]"),
        ("/v1/similarity", {"source": "x", "targets": [f"{text} {i}" for i in range(n)]}, f"targets[{n - 1}]"),
        ("/v1/rerank", {"query": "x", "documents": [f"{text} {i}" for i in range(n)]}, f"documents[{n - 1}]"),
        ("/rerank", {"query": "x", "texts": [f"{text} {i}" for i in range(n)]}, f"texts[{n - 1}]"),
        ("/v2/rerank", {"query": "x", "documents": [f"{text} {i}" for i in range(n)]}, f"documents[{n - 1}]"),
        ("/v1/embed", {"texts": texts}, f"texts[{n - 1}]"),
        ("/v2/embed", {"texts": texts, "embedding_types": ["int8"]}, f"texts[{n - 1}]"),
        ("/v1/search", {"index": "notes", "query": texts, "mode": "lexical"}, f"query[{n - 1}]"),
        ("/v1/search", {"index": "notes", "query": texts, "mode": "dense"}, f"query[{n - 1}]"),
        ("/v1/indexes/notes/documents", {"documents": [{"text": f"{text} {i}"} for i in range(n)]}, f"documents[{n - 1}].text"),
    ]


def said(r, path: str) -> SimpleNamespace:
    """The error of answer ``r`` to ``path``, whichever API's shape it is in: ours and OpenAI's carry a code and a
    field; TEI's and Cohere's only the message (which names the field), so those read as ``None`` there."""
    body = r.json()
    fam = family({"path": path})
    if fam == "tei":
        return SimpleNamespace(code=None, field=None, message=body["error"])
    if fam == "cohere":
        return SimpleNamespace(code=None, field=None, message=body["message"])
    return SimpleNamespace(**{k: body["error"][k] for k in ("code", "field", "message")})


def too_large(path: str) -> int:
    """The status of a request over a limit: 413, or Cohere's 400 for a value it refuses."""
    return status_of(RequestTooLarge("x")).cohere if family({"path": path}) == "cohere" else 413


def names(error: SimpleNamespace, field: str) -> bool:
    """``error`` names ``field``: as its field where its API has one, else in its message."""
    return error.field == field if error.field is not None else field in error.message


@pytest.fixture
def make_indexed(make_client):
    def make(**settings):
        c = make_client(**settings)
        assert c.post("/v1/indexes", json=INDEX).status_code == 201
        assert c.post("/v1/indexes/notes/documents", json=DOCS).status_code == 200
        return c

    return make


def test_the_characters_of_a_request_in_all_are_bounded_before_tokenizing(make_indexed):
    c = make_indexed(max_request_chars=100)
    for path, body, _ in routes("cat " * 5, 4):  # 20 (22) characters each, and "x": within 100 in all
        assert c.post(path, json=body).status_code == 200, (path, c.post(path, json=body).text)
    for path, body, field in routes("cat " * 10, 3):  # 40 (42) each: the third takes the request over 100
        r = c.post(path, json=body)
        error = said(r, path)
        assert r.status_code == too_large(path) and error.code in (None, "request_too_large"), (path, r.text)
        assert names(error, field) and "the limit is 100 in all (max_request_chars)" in error.message, (path, error)


def test_the_tokens_of_a_request_in_all_are_bounded(make_indexed):
    c = make_indexed(max_request_tokens=30)  # "cat cat cat cat cat " is 5 words, 6 tokens with <eos>
    for path, body, _ in routes("cat " * 5, 4):
        assert c.post(path, json=body).status_code == 200, (path, c.post(path, json=body).text)
    for path, body, field in routes("cat " * 5, 6):
        if path == "/v1/search" and body["mode"] == "lexical":
            continue  # BM25 alone: no model tokenizes the query (its characters are bounded)
        r = c.post(path, json=body)
        error = said(r, path)
        assert r.status_code == too_large(path) and error.code in (None, "request_too_large"), (path, r.text)
        assert "the limit is 30 in all (max_request_tokens)" in error.message, (path, error)
        assert names(error, field.split("[")[0]) if error.field is None else error.field.split("[")[0] == field.split("[")[0], (path, error)


def test_a_long_split_text_counts_every_part(make_client):
    c = make_client(max_request_tokens=100)  # tiny takes 32 tokens at once: 60 words are split into parts
    assert c.post("/v1/embeddings", json={"input": "the cat sat . " * 15}).status_code == 200
    r = c.post("/v1/embeddings", json={"input": ["a dog ran", "the cat sat . " * 30]})
    assert r.status_code == 413 and r.json()["error"]["field"] == "input[1]", r.text


def test_the_size_of_the_answer_is_bounded(make_indexed):
    c = make_indexed(max_response_bytes=1024)
    # tiny's vectors have 8 values: 25 bytes each as JSON at most, 200 a vector
    assert c.post("/v1/embeddings", json={"input": ["cat"] * 5}).status_code == 200
    for path, field in (("/v1/embeddings", "input"), ("/embed", "inputs"), ("/", "inputs")):
        r = c.post(path, json={field: ["cat"] * 6})
        error = said(r, path)
        assert r.status_code == 413 and names(error, field), (path, r.text)
        assert "6 vectors of 8 values" in error.message and "max_response_bytes" in error.message
    # /tokenize: about 100 bytes a token
    assert c.post("/tokenize", json={"input": "cat " * 5}).status_code == 200
    for body, field in (({"input": ["cat " * 6] * 2}, "input"), ({"inputs": ["cat " * 6] * 2}, "inputs")):
        r = c.post("/tokenize", json=body)
        error = said(r, "/tokenize")
        assert r.status_code == 413 and names(error, field) and "14 tokens" in error.message, r.text
    # search: about 160 bytes a hit before its text and metadata, refused before any search runs
    assert c.post("/v1/search", json={"index": "notes", "query": "cat", "k": 4}).status_code == 200
    r = c.post("/v1/search", json={"index": "notes", "query": ["cat", "dog"], "k": 4})
    assert r.status_code == 413 and r.json()["error"]["field"] == "k" and "2 queries x k 4" in r.json()["error"]["message"]


def test_the_answer_counts_the_hits_text_and_metadata(make_client):
    c = make_client(max_response_bytes=2048, max_metadata_bytes=4096)
    assert c.post("/v1/indexes", json=INDEX).status_code == 201
    docs = [{"id": f"d{i}", "text": f"the cat sat {i}", "metadata": {"note": "x" * 300}} for i in range(8)]
    assert c.post("/v1/indexes/notes/documents", json={"documents": docs}).status_code == 200
    assert c.post("/v1/search", json={"index": "notes", "query": "cat", "k": 3}).status_code == 200
    r = c.post("/v1/search", json={"index": "notes", "query": "cat", "k": 8})  # 8 x 160 fits; with 300-byte notes it does not
    assert r.status_code == 413 and "8 hits with their text and metadata" in r.json()["error"]["message"], r.text


def test_a_search_query_is_bounded_by_max_query_chars(make_indexed):
    c = make_indexed(max_query_chars=40)
    long = "the cat sat " * 4  # 48 characters
    for body in ({"index": "notes", "query": long}, {"index": "notes", "query": ["cat", long], "mode": "lexical"}):
        r = c.post("/v1/search", json=body)
        error = r.json()["error"]
        assert r.status_code == 413 and error["code"] == "input_too_long", r.text
        assert error["message"].endswith("has 48 characters; the limit is 40 (max_query_chars)")
    assert c.post("/v1/search", json={"index": "notes", "query": long, "truncation": "truncate"}).status_code == 200
    r = c.post("/v1/indexes/notes/map", json={"query": long, "limit": 3})
    assert r.status_code == 413 and r.json()["error"]["field"] == "query", r.text
    assert c.post("/v1/embeddings", json={"input": long}).status_code == 200  # other texts: max_input_chars


def test_the_hostile_requests_are_refused_cheaply_with_the_defaults(make_indexed):
    c = make_indexed()
    r = c.post("/tokenize", json={"inputs": ["a " * 3900] * 800, "model": "tiny"})  # a 6.2 MB body, 3.1 million tokens
    assert r.status_code == 413 and names(said(r, "/tokenize"), "inputs[128]"), r.text
    assert "max_request_chars" in said(r, "/tokenize").message
    r = c.post("/v1/search", json={"index": "notes", "query": "word " * 4000})  # 20,000 characters
    assert r.status_code == 413 and "max_query_chars" in r.json()["error"]["message"], r.text


def test_every_compute_route_shares_the_models_queue(make_indexed):
    c = make_indexed(max_queue_size=64, retry_after_s=3)
    batcher = c.app.state.core.embedding.model("tiny").batcher
    calls = routes("the cat sat", 2)
    with batcher.admit(64):  # requests admitted before these hold every place in the queue
        for path, body, _ in calls:
            r = c.post(path, json=body)
            assert r.status_code == 429 and r.headers["retry-after"] == "3", (path, r.status_code, r.text)
            error = said(r, path)
            assert error.code in (None, "queue_full") and "64" in error.message, (path, r.text)
    for path, body, _ in calls:  # the room held is given back
        assert c.post(path, json=body).status_code == 200, (path, c.post(path, json=body).text)
    assert batcher.depth == 0 and batcher.check_room() is None


def test_room_is_given_back_when_a_request_fails(make_client):
    c = make_client(max_queue_size=64, max_request_tokens=10)
    batcher = c.app.state.core.embedding.model("tiny").batcher
    for _ in range(70):  # each held room for its texts while it was refused: none is kept
        assert c.post("/v1/embeddings", json={"input": ["cat " * 20]}).status_code == 413
        assert c.post("/tokenize", json={"input": ["cat " * 20]}).status_code == 413
    with batcher.admit(63):
        assert c.post("/tokenize", json={"input": "the cat"}).status_code == 200
        assert c.post("/v1/embeddings", json={"input": "the cat"}).status_code == 200
    with batcher.admit(64):
        assert c.post("/v1/embeddings", json={"input": "the cat"}).status_code == 429


def test_long_texts_hold_room_for_the_parts_they_can_make(make_indexed, monkeypatch):
    c = make_indexed(max_queue_size=64)
    batcher = c.app.state.core.embedding.model("tiny").batcher
    held: list[int] = []
    admit = batcher.admit
    monkeypatch.setattr(batcher, "admit", lambda n: held.append(n) or admit(n))
    long = "cat " * 160  # 640 characters: up to 20 parts of tiny's 32 tokens
    for path, body in (
        ("/tokenize", {"input": [long, "a dog"]}),
        ("/v1/embeddings", {"input": [long, "a dog"]}),
        ("/v1/search", {"index": "notes", "query": ["cat " * 8, "a dog"], "mode": "lexical"}),
        ("/v1/embeddings", {"input": ["a cat", "a dog", "she walked"]}),
    ):
        assert c.post(path, json=body).status_code == 200, path
    assert held == [21, 21, 2, 3]  # (640 + 5) / 32 rounded up; 37 characters make at most 2 parts; 3 short texts
    assert batcher.check_room() is None and batcher.depth == 0


def test_info_lists_the_limits(client):
    limits = client.get("/info").json()["limits"]
    for name in ("max_request_chars", "max_request_tokens", "max_query_chars", "max_response_bytes"):
        assert limits[name] == getattr(client.app.state.settings, name), name
