"""The lexical index: its BM25 scores are bm25s's own on a fixed corpus, adds and deletes end where a
fresh build on the survivors does, and bad input is refused before anything changes."""

from __future__ import annotations

import bm25s
import numpy as np
import pytest

from thoughtvec.service.index.lexical import BM25, METHODS, Analyzer, LexicalIndex

CORPUS = [
    "The cat sat on the mat and the cat purred.",
    "Dogs are running in the city parks every morning.",
    "A dog ran after the cats; the cats ran up a tree.",
    "The king rode into battle with his armies at dawn.",
    "Kings and queens ruled the old kingdoms for centuries.",
    "Running water in the rivers was cold and clear.",
    "The old man read letters by the river.",
    "Letters from the king were read aloud in the city.",
    "Nothing here shares a word with the queries at all, zebra quokka.",
]
QUERIES = ["cat on a mat", "the running dogs", "king's letters", "river water cats cats", "zebra", "unknownword"]


def _bm25s_scores(analyzer: Analyzer, bm25: BM25, corpus: list[str], query: str) -> np.ndarray:
    terms = analyzer.terms(corpus)
    model = bm25s.BM25(method=bm25.method, k1=bm25.k1, b=bm25.b)
    model.index(terms, show_progress=False)
    q = [t for t in analyzer.terms([query])[0] if t in model.vocab_dict]
    return model.get_scores(q) if q else np.zeros(len(corpus))


def _dense(index: LexicalIndex, ids: list[str], query: str) -> np.ndarray:
    got = dict(index.search(query, k=len(ids)))
    return np.array([got.get(i, 0.0) for i in ids])


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("analyzer", [Analyzer(), Analyzer(stemmer=None, stopwords=None)])
def test_scores_equal_bm25s(method, analyzer):
    bm25 = BM25(method, k1=1.3, b=0.6)
    ids = [f"d{i}" for i in range(len(CORPUS))]
    index = LexicalIndex.from_documents(zip(ids, CORPUS), analyzer, bm25)
    for query in QUERIES:
        np.testing.assert_allclose(_dense(index, ids, query), _bm25s_scores(analyzer, bm25, CORPUS, query), rtol=1e-5, atol=1e-6)


def test_adds_and_deletes_end_where_a_fresh_build_does():
    ids = [f"d{i}" for i in range(len(CORPUS))]
    grown = LexicalIndex()
    for i, text in zip(ids, CORPUS):  # one document per add, as a live index gets them
        grown.add([i], [text])
    assert grown.delete(["d2", "d5", "missing", "d2"]) == ["d2", "d5"]
    grown.add(["d2"], [CORPUS[2]])  # an id may come back after its delete
    keep = [i for i in ids if i != "d5"]
    fresh = LexicalIndex.from_documents((i, CORPUS[int(i[1:])]) for i in keep)
    assert len(grown) == len(fresh) == len(keep) and "d5" not in grown
    for query in QUERIES:
        np.testing.assert_allclose(_dense(grown, keep, query), _dense(fresh, keep, query), rtol=1e-6)


def test_compaction_keeps_every_score():
    grown = LexicalIndex()
    n = 400
    texts = [f"{CORPUS[i % len(CORPUS)]} item{i}" for i in range(n)]
    grown.add([str(i) for i in range(n)], texts)
    gone = [str(i) for i in range(0, n, 3)]
    grown.delete(gone)  # a third of the slots: compacted
    assert len(grown._ids) == len(grown) == n - len(gone)
    keep = [str(i) for i in range(n) if str(i) not in set(gone)]
    fresh = LexicalIndex.from_documents((i, texts[int(i)]) for i in keep)
    for query in QUERIES + ["item7 cats", "item9"]:
        np.testing.assert_allclose(_dense(grown, keep, query), _dense(fresh, keep, query), rtol=1e-6)
    assert grown.search("item9", 5) == [] and grown.search("item10", 5)[0][0] == "10"


def test_search_orders_best_first_and_cuts_at_k():
    index = LexicalIndex.from_documents((f"d{i}", t) for i, t in enumerate(CORPUS))
    hits = index.search("cats dogs king", 3)
    assert len(hits) == 3 and [s for _, s in hits] == sorted((s for _, s in hits), reverse=True)
    assert index.search("the of and", 5) == []  # stop words only: nothing shares a term
    assert LexicalIndex().search("cat", 5) == []


def test_a_duplicate_id_adds_nothing():
    index = LexicalIndex.from_documents([("a", "the cat")])
    with pytest.raises(ValueError, match=r"documents\[1\].id 'a'"):
        index.add(["b", "a"], ["a dog", "a bird"])
    with pytest.raises(ValueError, match="ids and 1 texts"):
        index.add(["c", "d"], ["a dog"])
    assert len(index) == 1 and index.search("dog", 5) == []


def test_stemming_joins_word_forms():
    index = LexicalIndex.from_documents([("a", "running dogs"), ("b", "a cat")])
    assert [d for d, _ in index.search("the dog runs", 5)] == ["a"]
    plain = LexicalIndex.from_documents([("a", "running dogs"), ("b", "a cat")], Analyzer(stemmer=None))
    assert plain.search("the dog runs", 5) == []


def test_stop_words_are_bm25s_lists_by_name():
    assert "the" not in Analyzer(stemmer=None, stopwords="en").terms(["the cat"])[0]
    assert Analyzer(stemmer=None, stopwords=None).terms(["the cat"])[0] == ["the", "cat"]
    with pytest.raises(ValueError, match="stopwords 'klingon'"):
        Analyzer(stemmer=None, stopwords="klingon").terms(["the cat"])


@pytest.mark.parametrize("stemmer", ["english", None])
@pytest.mark.parametrize("stopwords", ["en", None])
def test_the_terms_are_bm25s_tokenize_s(stemmer, stopwords):
    """The analysis is bm25s's, done without its id tables: the same terms for every setting."""
    analyzer = Analyzer(stemmer=stemmer, stopwords=stopwords)
    texts = CORPUS + QUERIES + ["", "  ", "I", "don't STOP: naïve façades, Ünïcode ÆON 2x a1", "x" * 300, "résumé résumés"]
    want = bm25s.tokenize(texts, stopwords=analyzer._stopwords, stemmer=analyzer._stem, return_ids=False, show_progress=False)
    assert analyzer.terms(texts) == [list(t) for t in want]


def test_save_and_load_answer_as_the_index_saved_did_and_go_on_taking_writes(tmp_path):
    ids = [f"d{i}" for i in range(len(CORPUS))]
    saved = LexicalIndex.from_documents(zip(ids, CORPUS))
    saved.delete(["d3"])  # a dead slot in what is saved
    order = [i for i in reversed(ids) if i != "d3"]  # the snapshot's order need not be the slots'
    saved.save(tmp_path / "bm25.npz", order)
    loaded = LexicalIndex.load(tmp_path / "bm25.npz", order)
    assert loaded is not None and len(loaded) == len(order) and "d3" not in loaded
    for query in QUERIES + ["cats", "the king"]:
        assert loaded.search(query, 20) == saved.search(query, 20)  # ids, scores and ties alike
    for index in (saved, loaded):
        index.add(["new"], ["a cat and a king by the river"])
        index.delete(["d0"])
    for query in QUERIES:
        assert loaded.search(query, 20) == saved.search(query, 20)


def test_a_loaded_index_compacts_and_grows_as_a_fresh_build(tmp_path):
    """Each posting carries its document's length: read from the saved lengths at a load, renumbered by a compaction."""
    n = 200
    texts = [f"{CORPUS[i % len(CORPUS)]} item{i % 7}" for i in range(n)]
    ids = [str(i) for i in range(n)]
    LexicalIndex.from_documents(zip(ids, texts)).save(tmp_path / "bm25.npz", ids)
    loaded = LexicalIndex.load(tmp_path / "bm25.npz", ids)
    assert loaded is not None
    gone = ids[::2]
    loaded.delete(gone)  # half the slots: compacted
    loaded.add(["new"], ["a cat and a king by the river item3"])
    assert len(loaded._ids) == len(loaded)
    keep = [i for i in ids if i not in set(gone)]
    fresh = LexicalIndex.from_documents([*((i, texts[int(i)]) for i in keep), ("new", "a cat and a king by the river item3")])
    for query in QUERIES + ["item3 cats", "river king"]:
        np.testing.assert_allclose(_dense(loaded, [*keep, "new"], query), _dense(fresh, [*keep, "new"], query), rtol=1e-6)


def test_a_saved_index_of_other_documents_or_another_analyser_is_not_loaded(tmp_path):
    ids = [f"d{i}" for i in range(len(CORPUS))]
    LexicalIndex.from_documents(zip(ids, CORPUS)).save(tmp_path / "bm25.npz", ids)
    assert LexicalIndex.load(tmp_path / "bm25.npz", ids[:-1]) is None  # the snapshot holds other documents
    assert LexicalIndex.load(tmp_path / "bm25.npz", ids, Analyzer(stemmer=None)) is None
    assert LexicalIndex.load(tmp_path / "missing.npz", ids) is None


def test_the_k_best_keep_the_earlier_added_at_a_tie_past_the_cut():
    index = LexicalIndex.from_documents((f"d{i}", "storm at sea") for i in range(50))  # fifty equal scores
    assert [i for i, _ in index.search("storm", 5)] == ["d0", "d1", "d2", "d3", "d4"]
