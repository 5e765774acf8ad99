"""BM25's sparse vectors (``core/sparse.py``) without HTTP: fixed indices, the two sides' weights, the lexical index's
scores from their inner product with idf, and a request's limits."""

from __future__ import annotations

import os
import subprocess
import sys
from collections import Counter

import numpy as np
import pytest

from thoughtvec.service.core import sparse
from thoughtvec.service.core.sparse import (
    AVGDL,
    SparseService,
    SparseVector,
    document_vector,
    idf_of,
    murmur3_32,
    query_vector,
    term_index,
    vectors,
    weighted,
)
from thoughtvec.service.errors import EmptyInput, InputTooLong, InvalidInput, RequestTooLarge, TooManyInputs
from thoughtvec.service.index.lexical import BM25, METHODS, Analyzer, LexicalIndex
from thoughtvec.service.index.search_settings import SearchSettings
from thoughtvec.service.settings import Settings

pytestmark = pytest.mark.anyio

CORPUS = [
    "The cat slept on the sofa all afternoon.",
    "A cat and a dog played in the garden; the dog barked and the cat ran.",
    "Stocks fell sharply on Monday as markets opened.",
    "The dog barked at the mailman every morning.",
    "Cats sleep most of the day, often on sofas and beds.",
    "Researchers measured how long domestic cats sleep.",
    "The garden was full of roses.",
    "A sofa, a bed and a table were sold.",
]
QUERIES = ["where do cats sleep?", "dog barking at the mailman", "cat cat sofa", "roses in the garden", "quantum chromodynamics"]


@pytest.fixture
def anyio_backend():
    return "asyncio"


# MurmurHash3_x86_32 as mmh3 5.x computes it (mmh3.hash(term), the absolute value for the index): fixed forever
@pytest.mark.parametrize(
    ("term", "index"),
    [("", 0), ("foo", 156908512), ("cat", 1751422759), ("bm25", 1559311872), ("retriev", 1839534477), ("abcde", 392455434),
     ("café", 605818632), ("ünïcödé", 2069557956), ("猫", 1162507245)],
)  # fmt: skip
def test_a_terms_index_is_fastembeds_murmur3_fixed_forever(term, index):
    assert term_index(term) == index


def test_murmur3_is_the_reference_on_its_published_vectors():
    assert murmur3_32(b"") == 0
    assert murmur3_32(b"", 1) == 0x514E28B7
    assert murmur3_32(b"Hello, world!", 0x9747B28C) == 0x24884CBA
    assert murmur3_32(b"The quick brown fox jumps over the lazy dog", 0x9747B28C) == 0x2FA826CD
    assert murmur3_32(b"foo") == (1 << 32) - 156908512  # mmh3.hash("foo") is -156908512


def test_indices_are_the_same_in_another_process_whatever_its_hash_seed():
    code = "from thoughtvec.service.core.sparse import term_index; print([term_index(t) for t in ('cat', 'sofa', 'sleep')])"
    for seed in ("1", "2"):
        run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=os.environ | {"PYTHONHASHSEED": seed})
        assert run.stdout.strip() == str([1751422759, 148241232, 134749957]), run.stderr


def test_the_document_side_is_bm25s_saturated_normalised_tf_and_the_query_side_counts():
    bm25 = BM25(k1=1.2, b=0.75)
    terms = ["cat", "sofa", "cat", "sleep"]
    doc = document_vector(terms, bm25, avgdl=3.0)
    norm = 1.2 * (1 - 0.75 + 0.75 * 4 / 3.0)
    want = {term_index("cat"): 2 * 2.2 / (2 + norm), term_index("sofa"): 2.2 / (1 + norm), term_index("sleep"): 2.2 / (1 + norm)}
    assert doc.as_dict() == pytest.approx(want)
    assert doc.indices.tolist() == sorted(want)  # ascending, each once
    assert query_vector(terms).as_dict() == {term_index("cat"): 2.0, term_index("sofa"): 1.0, term_index("sleep"): 1.0}


def test_the_sides_analyse_as_the_lexical_index_does_and_stop_words_leave_nothing():
    analyzer, bm25 = Analyzer(), BM25()
    doc, query, empty = vectors(["The cats are sleeping on sofas", "the cats sleep", "the of and is"], "query", analyzer, bm25)
    assert set(doc.as_dict()) == {term_index(t) for t in ("cat", "sleep", "sofa")}  # stop words out, stemmed
    assert set(query.as_dict()) == {term_index(t) for t in ("cat", "sleep")}
    assert len(empty) == 0 and empty.indices.dtype == np.int64
    (d,) = vectors(["the of and is"], "document", analyzer, bm25)
    assert len(d) == 0


def test_colliding_terms_share_an_index_and_their_weights_are_summed(monkeypatch):
    monkeypatch.setattr(sparse, "term_index", lambda term: 7)
    v = query_vector(["cat", "dog", "cat"])
    assert v.indices.tolist() == [7] and v.values.tolist() == [3.0]


def dot(q: SparseVector, d: SparseVector) -> float:
    dv = d.as_dict()
    return sum(w * dv.get(i, 0.0) for i, w in q.as_dict().items())


@pytest.mark.parametrize("method", METHODS)
def test_inner_product_with_idf_is_the_lexical_indexs_bm25(method):
    """Query vectors weighted by the corpus's idf against document vectors at the corpus's mean length: the lexical
    index's score of every document, times k1 + 1 where the variant's tf leaves it out (lucene, robertson)."""
    analyzer, bm25 = Analyzer(), BM25(method, k1=0.9, b=0.5)
    index = LexicalIndex.from_documents([(str(i), t) for i, t in enumerate(CORPUS)], analyzer, bm25)
    avgdl = float(np.mean([len(t) for t in analyzer.terms(CORPUS)]))
    docs = vectors(CORPUS, "document", analyzer, bm25, avgdl)
    idf = idf_of(docs, bm25)
    scale = 1.0 if method == "atire" else bm25.k1 + 1
    for q in QUERIES:
        (qv,) = vectors([q], "query", analyzer, bm25)
        got = np.array([dot(weighted(qv, idf), d) for d in docs])
        want = np.zeros(len(CORPUS))
        for doc_id, score in index.search(q, len(CORPUS)):
            want[int(doc_id)] = score * scale
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7, err_msg=q)
    assert dot(weighted(vectors(["cat cat sofa"], "query", analyzer, bm25)[0], idf), docs[0]) > 0  # a repeated term counts again


def test_weighted_leaves_out_terms_no_document_holds():
    docs = [query_vector(["cat"]), query_vector(["cat", "dog"])]
    idf = idf_of(docs, BM25("atire"))
    assert idf == pytest.approx({term_index("cat"): 0.0, term_index("dog"): np.log(2)})
    q = weighted(query_vector(["dog", "zebra"]), idf)
    assert q.as_dict() == pytest.approx({term_index("dog"): np.log(2)})


# -- the service: a request's checks ------------------------------------------------------------
def service(**settings) -> SparseService:
    return SparseService(Settings(**settings), SearchSettings())


async def test_the_service_answers_one_vector_per_input_of_the_side_asked():
    s = service()
    doc, stop = await s.embed_sparse(["The cat slept on the sofa.", "the of and"])
    assert len(stop) == 0 and len(doc) == 3
    (q,) = await s.embed_sparse("cat cat sofa", side="query")
    assert sorted(q.values.tolist()) == [1.0, 2.0]
    (longer,) = await s.embed_sparse("The cat slept on the sofa.", avgdl=2.0)  # a shorter mean: this text is long, weighs less
    assert (longer.values < doc.values).all()
    assert (await s.embed_sparse("The cat slept on the sofa.", avgdl=AVGDL))[0].values.tolist() == doc.values.tolist()


@pytest.mark.parametrize(
    ("kwargs", "settings", "error", "field"),
    [
        ({"raw": []}, {}, EmptyInput, "inputs"),
        ({"raw": ["ok", "  "]}, {}, EmptyInput, "inputs[1]"),
        ({"raw": ["ok"] * 5}, {"max_inputs": 4}, TooManyInputs, "inputs"),
        ({"raw": ["ok", 3]}, {}, InvalidInput, "inputs[1]"),
        ({"raw": [[1, 2]]}, {}, InvalidInput, "inputs[0]"),
        ({"raw": {"text": "x"}}, {}, InvalidInput, "inputs"),
        ({"raw": ["ok", "x" * 11]}, {"max_input_chars": 10}, InputTooLong, "inputs[1]"),
        ({"raw": ["a" * 8, "b" * 8]}, {"max_input_chars": 10, "max_request_chars": 12}, RequestTooLarge, "inputs[1]"),
        ({"raw": [" ".join(f"w{i:03}" for i in range(20))]}, {"max_response_bytes": 1024}, RequestTooLarge, "inputs"),
        ({"raw": "x", "avgdl": 0.5}, {}, InvalidInput, "avgdl"),
        ({"raw": "x", "avgdl": float("inf")}, {}, InvalidInput, "avgdl"),
        ({"raw": "x", "side": "doc"}, {}, InvalidInput, "side"),
    ],
)
async def test_each_limit_is_an_error_naming_its_field(kwargs, settings, error, field):
    with pytest.raises(error) as e:
        await service(**settings).embed_sparse(**kwargs)
    assert e.value.field == field, e.value


async def test_a_text_over_the_character_limit_is_cut_under_truncate():
    s = service(max_input_chars=10)
    (v,) = await s.embed_sparse("sofa " * 2 + "zebra", truncation="truncate")  # "sofa sofa " kept: zebra is cut off
    assert v.as_dict() == {term_index("sofa"): pytest.approx(v.values[0])} and len(v) == 1
    assert Counter(vectors(["sofa sofa"], "query", Analyzer(), BM25())[0].as_dict()) == {term_index("sofa"): 2.0}


def test_describe_names_the_settings_a_client_weighs_queries_with():
    d = SparseService(Settings(), SearchSettings(bm25=BM25("atire", 0.9, 0.5))).describe()
    assert {k: v for k, v in d.items() if k != "index"} == {"stemmer": "english", "stopwords": "en", "method": "atire", "k1": 0.9, "b": 0.5,
                                                             "avgdl": AVGDL}  # fmt: skip
    assert "mmh3" in d["index"]
