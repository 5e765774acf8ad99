"""TEI's ``POST /embed_sparse``: the answer's shape, the sides, the limits in TEI's error shape, ``/info``'s ``sparse``,
and BM25 from the vectors: by inner product with idf they rank (and score) as the server's own lexical search does,
computed here and in Milvus Lite (``SPARSE_FLOAT_VECTOR``, metric ``IP``)."""

from __future__ import annotations

from collections import Counter

import pytest

from tests.service.core.test_sparse import CORPUS  # the same small corpus as the core's tests
from thoughtvec.service.core.sparse import AVGDL, term_index
from thoughtvec.service.index.lexical import BM25

QUERIES = ["where do cats sleep?", "dog barking at the mailman", "cat cat sofa", "roses in the garden"]


def sparse(client, texts, **body) -> list[dict[int, float]]:
    r = client.post("/embed_sparse", json={"inputs": texts, **body})
    assert r.status_code == 200, r.text
    return [{x["index"]: x["value"] for x in v} for v in r.json()]


def test_one_list_of_index_value_pairs_per_input_indices_ascending(client):
    r = client.post("/embed_sparse", json={"inputs": ["The cat sat on the mat.", "the of and", "cats cats"]})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    doc, stop, cats = r.json()
    assert [set(x) for x in doc] == [{"index", "value"}] * 3 and stop == []
    assert [x["index"] for x in doc] == sorted(term_index(t) for t in ("cat", "sat", "mat"))
    assert all(isinstance(x["index"], int) and 0 <= x["index"] <= 2**31 and x["value"] > 0 for x in doc)
    (cat,) = cats
    assert cat["index"] == term_index("cat") and cat["value"] > doc[0]["value"]  # two occurrences weigh more than one
    one = client.post("/embed_sparse", json={"inputs": "The cat sat on the mat."}).json()
    assert one == [doc]  # a string: a list of one


def test_the_query_side_counts_terms_and_the_document_side_takes_avgdl(client):
    (q,) = sparse(client, "cat cat sofa", side="query")
    assert q == {term_index("cat"): 2.0, term_index("sofa"): 1.0}
    (short,), (long_,) = sparse(client, "cat sofa", avgdl=2), sparse(client, "cat sofa", avgdl=200)
    assert all(short[i] < long_[i] for i in short)  # the same text, long against a short mean: less weight
    (default,) = sparse(client, "cat sofa")
    assert default == sparse(client, "cat sofa", avgdl=AVGDL)[0]


@pytest.mark.parametrize(
    ("body", "status", "error_type", "said"),
    [
        ({"inputs": ["ok", " "]}, 400, "Empty", "inputs[1] is empty"),
        ({"inputs": []}, 400, "Empty", "inputs is empty"),
        ({"inputs": ["ok"] * 5}, 413, "Validation", "inputs has 5 items; the limit is 4"),
        ({"inputs": ["ok", "x" * 41]}, 413, "Validation", "inputs[1] has 41 characters; the limit is 40"),
        ({"inputs": "ok", "side": "doc"}, 422, "Validation", "side"),
        ({"inputs": "ok", "avgdl": 0}, 422, "Validation", "avgdl"),
        ({"inputs": [[1, 2]]}, 422, "Validation", "inputs[0] must be a string"),
        ({"inputs": "ok", "model": "tiny"}, 422, "Validation", "model: is not a field"),
        ({"inputs": "ok", "prompt_name": "query"}, 422, "Validation", "prompt_name"),
    ],
)
def test_limits_and_invalid_fields_answer_teis_errors_naming_the_field(make_client, body, status, error_type, said):
    client = make_client(max_inputs=4, max_input_chars=40)
    r = client.post("/embed_sparse", json=body)
    assert r.status_code == status and r.json()["error_type"] == error_type and said in r.json()["error"], r.text


def test_truncate_cuts_a_long_text_at_the_character_limit(make_client):
    client = make_client(max_input_chars=10)
    (cut,) = sparse(client, "sofa sofa zebra", side="query", truncate=True)
    assert cut == {term_index("sofa"): 2.0}
    assert client.post("/embed_sparse", json={"inputs": "sofa sofa zebra", "truncate": False}).status_code == 413


def test_info_says_how_the_vectors_are_made_and_the_schema_has_the_route(client):
    info = client.get("/info").json()["sparse"]
    assert info == {"stemmer": "english", "stopwords": "en", "method": "lucene", "k1": 1.2, "b": 0.75, "avgdl": AVGDL,
                    "index": info["index"]} and "mmh3" in info["index"]  # fmt: skip  # the fallback: no model guide here
    op = client.get("/openapi.json").json()["paths"]["/embed_sparse"]["post"]
    assert op["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("TeiEmbedSparseRequest")


# -- BM25 from the vectors, as a client with its own vector database gets it ----------------------
def corpus_vectors(client):
    """The corpus's document vectors at its mean length, and the idf of the server's BM25 variant per index: what a
    client computes once (a query vector's values sum to a text's length in terms, repeats counted)."""
    lengths = [sum(v.values()) for v in sparse(client, CORPUS, side="query")]
    docs = sparse(client, CORPUS, avgdl=sum(lengths) / len(lengths))
    s = client.get("/info").json()["sparse"]
    bm25 = BM25(s["method"], s["k1"], s["b"])
    df = Counter(i for d in docs for i in d)
    return docs, {i: bm25.idf(n, len(docs)) for i, n in df.items()}, bm25


def lexical_search(client, queries):
    assert client.post("/v1/indexes", json={"name": "notes", "model": "tiny", "mode": "lexical"}).status_code == 201
    docs = [{"id": str(i), "text": t} for i, t in enumerate(CORPUS)]
    assert client.post("/v1/indexes/notes/documents", json={"documents": docs}).status_code == 200
    r = client.post("/v1/search", json={"index": "notes", "query": queries, "k": len(CORPUS), "mode": "lexical"})
    assert r.status_code == 200, r.text
    return [[(int(h["id"]), h["score"]) for h in hits] for hits in r.json()["results"]]


def test_query_vectors_weighted_by_idf_score_documents_as_the_lexical_search_does(client):
    docs, idf, bm25 = corpus_vectors(client)
    scale = 1.0 if bm25.method == "atire" else bm25.k1 + 1  # lucene's and robertson's tf leave out k1 + 1
    for query, hits in zip(QUERIES, lexical_search(client, QUERIES)):
        (q,) = sparse(client, query, side="query")
        scores = {j: sum(w * idf.get(i, 0.0) * d.get(i, 0.0) for i, w in q.items()) for j, d in enumerate(docs)}
        assert hits and all(scores[j] == pytest.approx(s * scale, rel=1e-5) for j, s in hits), query
        assert all(scores[j] == 0 for j in set(scores) - {j for j, _ in hits}), query  # no shared term: no hit, no score


def test_milvus_lite_sparse_inner_product_ranks_as_the_lexical_search(client, tmp_path):
    from tests.service.index.milvus_support import need, released_lite

    need("milvus_lite")
    from pymilvus import DataType, MilvusClient

    docs, idf, bm25 = corpus_vectors(client)
    scale = 1.0 if bm25.method == "atire" else bm25.k1 + 1
    uri = str(tmp_path / "sparse.db")
    with released_lite(tmp_path / "sparse.db"):
        milvus = MilvusClient(uri=uri)
        schema = milvus.create_schema(auto_id=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("bm25", DataType.SPARSE_FLOAT_VECTOR)
        index = milvus.prepare_index_params()
        index.add_index("bm25", index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
        milvus.create_collection("sparse_docs", schema=schema, index_params=index)
        milvus.insert("sparse_docs", [{"id": j, "bm25": d} for j, d in enumerate(docs)])
        queries = [{i: w * idf[i] for i, w in q.items() if i in idf} for q in sparse(client, QUERIES, side="query")]
        found = milvus.search("sparse_docs", data=queries, anns_field="bm25", limit=len(CORPUS),
                              search_params={"metric_type": "IP", "params": {"drop_ratio_search": 0.0}})  # fmt: skip
        milvus.close()
    for query, hits, got in zip(QUERIES, lexical_search(client, QUERIES), found):
        assert {h["id"]: h["distance"] for h in got} == pytest.approx({j: s * scale for j, s in hits}, rel=1e-5), query
        # the same order (documents of one score, as 4 and 5 for the first query, in the lexical search's: the earlier first)
        assert [h["id"] for h in sorted(got, key=lambda h: (-round(h["distance"], 4), h["id"]))] == [j for j, _ in hits], query
