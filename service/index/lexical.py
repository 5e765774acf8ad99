"""A BM25 index over documents, kept beside a vector index: incremental adds and deletes by id, search by text.

Analysis is ``bm25s``'s (its scikit-learn token pattern, its stop-word lists, a PyStemmer stemmer); the
scores are BM25 as ``bm25s`` defines each variant (Kamphuis et al., ECIR 2020), computed at query time
from postings, so that one add or delete costs what its own terms cost instead of a re-index
(``bm25s`` precomputes every term-document score, which a single add would invalidate: N and the mean
document length enter every one). ``tests/service/index/test_lexical.py`` checks the scores against
``bm25s``'s own on a fixed corpus, and that adds and deletes end where a fresh build on the survivors does.

Shape of the postings: per term, parallel growable arrays of document *slots*, term frequencies and the documents'
lengths (a copy of each slot's length beside its posting: a query reads them in order instead of gathering them
from every slot; four bytes a posting, which the 32-bit slots pay for). A
deleted document's slot is dead until a compaction (when dead slots are a quarter of all) renumbers them;
its document frequency and length leave the statistics at once, so scores never see it.

The index keeps no text: it is rebuilt from the documents the index store keeps (snapshot and log) with
:meth:`LexicalIndex.from_documents`. Not thread-safe: the store holds a lock around every call.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Literal

import numpy as np
import Stemmer  # PyStemmer

Method = Literal["lucene", "robertson", "atire"]
METHODS: tuple[Method, ...] = ("lucene", "robertson", "atire")
_TOKEN_PATTERN = re.compile(r"(?u)\b\w\w+\b")
LEXICAL_FILE = "bm25.npz"  # the BM25 half in an index's snapshot (LexicalIndex.save)
LEXICAL_FORMAT = 1  # bm25s's default (scikit-learn's CountVectorizer's)


@dataclass(frozen=True)
class Analyzer:
    """Text -> terms: lower-cased words of two or more characters, stop words out, then stemmed.

    ``stemmer``: a Snowball algorithm of PyStemmer (``"english"``, ``"porter"``) or None; ``stopwords``: a
    ``bm25s`` list name (``"en"``, ``"en_plus"``) or None.
    """

    # the fallback (thoughtvec.service.index.search_settings): the model guide's, chosen on the retrieval dev set
    # (python -m thoughtvec.training.evaluation.retrieval_tuning lexical), replace it wherever a guide is read
    stemmer: str | None = "english"
    stopwords: str | None = "en"

    @cached_property
    def _stem(self):
        if self.stemmer is None:
            return None
        return Stemmer.Stemmer(self.stemmer)

    @cached_property
    def _stopwords(self) -> list[str]:
        from bm25s import stopwords  # noqa: PLC0415  # bm25s loads scipy (0.5 s): at the first analysis, not at start

        lists = {"en": stopwords.STOPWORDS_EN, "en_plus": stopwords.STOPWORDS_EN_PLUS}  # bm25s's public lists, by its names
        if self.stopwords is None:
            return []
        if self.stopwords not in lists:
            raise ValueError(f"stopwords {self.stopwords!r}: one of {sorted(lists)} or None")
        return list(lists[self.stopwords])

    @cached_property
    def _stopset(self) -> frozenset[str]:
        return frozenset(self._stopwords)

    def terms(self, texts: Sequence[str]) -> list[list[str]]:
        """The terms of each text, in order (repeats kept: they are the term frequencies).

        ``bm25s.tokenize``'s analysis step for step (lower-case, its scikit-learn token pattern, stop words out,
        each distinct word stemmed once), without its id tables and per-text set building: the same terms
        (``tests/service/index/test_lexical.py`` compares them), in less time."""
        find, stop = _TOKEN_PATTERN.findall, self._stopset
        words = [[w for w in find(t.lower()) if w not in stop] for t in texts]
        if self._stem is None:
            return words
        distinct = list(dict.fromkeys(w for doc in words for w in doc))
        stem = dict(zip(distinct, self._stem.stemWords(distinct)))
        return [[stem[w] for w in doc] for doc in words]


@dataclass(frozen=True)
class BM25:
    """A BM25 variant with its parameters (``bm25s``'s names and definitions)."""

    # the fallback, Lucene's (thoughtvec.service.index.search_settings): the model guide's, the best of the dev grid
    # (variant x k1 x b), replace it wherever a guide is read
    method: Method = "lucene"
    k1: float = 1.2
    b: float = 0.75

    def idf(self, df: int, n: int) -> float:
        if self.method == "lucene":
            return math.log(1 + (n - df + 0.5) / (df + 0.5))
        if self.method == "robertson":
            return math.log(max(1.0, (n - df + 0.5) / (df + 0.5)))  # floored at 0, as bm25s does by default
        return math.log(n / df)  # atire

    def tf(self, tf: np.ndarray, dl: np.ndarray, avgdl: float) -> np.ndarray:
        norm = self.k1 * (1 - self.b + self.b * dl / avgdl)
        if self.method == "atire":
            return tf * (self.k1 + 1) / (tf + norm)
        return tf / (tf + norm)  # lucene and robertson share it


class _Postings:
    """One term's postings: growable (slot, tf, document length) arrays. An add appends to plain lists (an add touches every term
    of its documents, most of them rare: a NumPy call per term would cost more than the term's postings); the
    lists join the arrays when the term is next read (:meth:`flush`)."""

    __slots__ = ("n", "slots", "tfs", "dls", "_new_slots", "_new_tfs", "_new_dls")

    def __init__(self) -> None:
        self.slots = np.zeros(0, np.int32)
        self.tfs = np.zeros(0, np.float32)
        self.dls = np.zeros(0, np.float32)
        self.n = 0
        self._new_slots: list[int] = []
        self._new_tfs: list[int] = []
        self._new_dls: list[float] = []

    def extend(self, slots: list[int], tfs: list[int], dls: list[float]) -> None:
        self._new_slots += slots
        self._new_tfs += tfs
        self._new_dls += dls

    def flush(self) -> _Postings:
        """Move what was added since the last read into the arrays (amortised doubling: O(1) per posting)."""
        if self._new_slots:
            end = self.n + len(self._new_slots)
            if end > len(self.slots):
                size = max(end, 2 * len(self.slots))
                self.slots, self.tfs, self.dls = np.resize(self.slots, size), np.resize(self.tfs, size), np.resize(self.dls, size)
            self.slots[self.n : end], self.tfs[self.n : end], self.dls[self.n : end] = self._new_slots, self._new_tfs, self._new_dls
            self.n = end
            self._new_slots, self._new_tfs, self._new_dls = [], [], []
        return self


class LexicalIndex:
    """BM25 over documents with string ids; see the module docstring."""

    def __init__(self, analyzer: Analyzer | None = None, bm25: BM25 | None = None):
        self.analyzer = analyzer or Analyzer()
        self.bm25 = bm25 or BM25()
        # per term its postings, dead slots included: a term's document frequency is its live postings, counted
        # when a query reads them (a delete marks its slot dead and touches no term)
        self._postings: dict[str, _Postings] = {}
        self._slot: dict[str, int] = {}  # id -> slot
        self._ids: list[str | None] = []  # slot -> id (None: deleted)
        self._len = np.zeros(16, np.float32)  # slot -> document length in terms
        self._alive = np.zeros(16, bool)  # slot -> not deleted
        self._total = 0.0  # summed length of the live documents
        # a query's scores by slot: zero between queries (only its hits are reset); float32 as the scores it answers
        # (half the memory a scatter touches)
        self._acc = np.zeros(0, np.float32)
        self._hit = np.zeros(0, bool)  # the slots a query's terms touched: False between queries

    @classmethod
    def from_documents(cls, docs: Iterable[tuple[str, str]], analyzer: Analyzer | None = None, bm25: BM25 | None = None,
                       batch: int = 50_000) -> LexicalIndex:  # fmt: skip
        """An index over ``(id, text)`` pairs, e.g. the documents of a vector index's snapshot and log."""
        out = cls(analyzer, bm25)
        ids: list[str] = []
        texts: list[str] = []
        for doc_id, text in docs:
            ids.append(doc_id)
            texts.append(text)
            if len(ids) == batch:
                out.add(ids, texts)
                ids, texts = [], []
        out.add(ids, texts)
        return out

    def __len__(self) -> int:
        return len(self._slot)

    # -- on disk -------------------------------------------------------------------------
    def save(self, path: Path, order: Sequence[str]) -> None:
        """Write the index to ``path`` (``.npz``): every term's postings (dead slots included), each slot's length
        and liveness, the slot of each id of ``order`` (the snapshot's documents, in its file's order) and the
        analyser it was made with. A snapshot's writer calls it inside the snapshot's folder (written atomically)."""
        terms = list(self._postings)
        postings = [self._postings[t].flush() for t in terms]
        counts = np.fromiter((p.n for p in postings), np.int64, len(postings))
        offsets = np.concatenate([np.zeros(1, np.int64), np.cumsum(counts)])
        slots = np.concatenate([p.slots[: p.n] for p in postings]).astype(np.int32) if postings else np.zeros(0, np.int32)
        tfs = np.concatenate([p.tfs[: p.n] for p in postings]).astype(np.float32) if postings else np.zeros(0, np.float32)
        meta = {"format": LEXICAL_FORMAT, "analyzer": dataclasses.asdict(self.analyzer), "slots": len(self._ids)}
        with open(path, "wb") as f:
            np.savez(
                f,
                meta=np.frombuffer(json.dumps(meta).encode(), np.uint8),
                terms=np.frombuffer("\n".join(terms).encode(), np.uint8),  # terms are words: no line breaks
                offsets=offsets,
                slots=slots,
                tfs=tfs,
                lengths=self._len[: len(self._ids)],
                alive=self._alive[: len(self._ids)],
                doc_slots=np.fromiter((self._slot[i] for i in order), np.int64, len(order)),
            )

    @classmethod
    def load(cls, path: Path, order: Sequence[str], analyzer: Analyzer | None = None, bm25: BM25 | None = None) -> LexicalIndex | None:
        """The index :meth:`save` wrote at ``path`` for the documents ``order`` (their ids, in the snapshot's order);
        None where there is none, or it was made with another analyser, or for other documents: the caller builds it
        from the documents then."""
        analyzer = analyzer or Analyzer()
        if not path.is_file():
            return None
        with np.load(path) as z:
            meta = json.loads(z["meta"].tobytes())
            if meta.get("format") != LEXICAL_FORMAT or meta.get("analyzer") != dataclasses.asdict(analyzer):
                return None
            doc_slots, alive = z["doc_slots"], z["alive"]
            if len(doc_slots) != len(order) or int(alive.sum()) != len(order):
                return None
            out = cls(analyzer, bm25)
            out._len, out._alive = z["lengths"].astype(np.float32), alive.astype(bool)
            terms = z["terms"].tobytes().decode().split("\n") if len(z["terms"]) else []
            offsets, slots, tfs = z["offsets"], np.asarray(z["slots"], np.int32), z["tfs"]
        dls = out._len[slots]  # each posting's document length, once for all
        out._ids = [None] * int(meta["slots"])
        for doc_id, slot in zip(order, doc_slots.tolist()):
            out._ids[slot] = doc_id
        out._slot = dict(zip(order, doc_slots.tolist()))
        out._total = float(out._len[out._alive].sum())
        for term, a, b in zip(terms, offsets[:-1].tolist(), offsets[1:].tolist()):
            p = out._postings[term] = _Postings()
            p.slots, p.tfs, p.dls, p.n = slots[a:b], tfs[a:b], dls[a:b], b - a
        return out

    def __contains__(self, doc_id: str) -> bool:
        return doc_id in self._slot

    def add(self, ids: Sequence[str], texts: Sequence[str]) -> None:
        """Index new documents; ``ValueError`` naming the first id already here (nothing is added then)."""
        if len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids and {len(texts)} texts")
        seen: set[str] = set()
        for i, doc_id in enumerate(ids):
            if doc_id in self._slot or doc_id in seen:
                raise ValueError(f"documents[{i}].id '{doc_id}' is already in the lexical index")
            seen.add(doc_id)
        if not ids:
            return
        terms = self.analyzer.terms(texts)
        first = len(self._ids)
        lengths = np.fromiter(map(len, terms), np.float32, len(terms))
        self._index_terms(terms, lengths, first)
        self._ids.extend(ids)
        self._slot.update((doc_id, first + i) for i, doc_id in enumerate(ids))
        end = first + len(terms)
        if end > len(self._len):
            size = max(end, 2 * len(self._len))
            self._len, self._alive = np.resize(self._len, size), np.resize(self._alive, size)
        self._len[first:end], self._alive[first:end] = lengths, True
        self._total += float(lengths.sum())

    def _index_terms(self, terms: list[list[str]], lengths: np.ndarray, first: int) -> None:
        """Append the postings of documents ``first, first + 1, ...`` (their terms in ``terms``), all at once:
        one sort of (term, document) pairs instead of a Counter per document (a 50,000-sentence index
        is rebuilt at every load)."""
        vocab: dict[str, int] = {}
        term_of = np.array([vocab.setdefault(t, len(vocab)) for doc in terms for t in doc], np.int64)  # (tokens,)
        doc_of = np.repeat(np.arange(len(terms), dtype=np.int64), [len(doc) for doc in terms])  # (tokens,)
        pairs, tf = np.unique(term_of * len(terms) + doc_of, return_counts=True)  # sorted by term, then document
        term_ids, docs = np.divmod(pairs, len(terms))
        starts = np.flatnonzero(np.diff(term_ids, prepend=-1))  # where each term's run begins
        ends = np.append(starts[1:], len(pairs))
        names = list(vocab)
        slots, tfs, dls = (docs + first).tolist(), tf.tolist(), lengths[docs].tolist()  # plain lists: sliced per term below
        postings = self._postings
        for t, a, b in zip(term_ids[starts].tolist(), starts.tolist(), ends.tolist()):
            term = names[t]
            p = postings.get(term)
            if p is None:
                p = postings[term] = _Postings()
            p.extend(slots[a:b], tfs[a:b], dls[a:b])

    def delete(self, ids: Sequence[str]) -> list[str]:
        """Remove documents by id; returns the ids that were here."""
        found = [i for i in dict.fromkeys(ids) if i in self._slot]
        for doc_id in found:
            slot = self._slot.pop(doc_id)
            self._ids[slot] = None
            self._alive[slot] = False
            self._total -= float(self._len[slot])
        if len(self._ids) - len(self._slot) > max(64, len(self._ids) // 4):
            self._compact()
        return found

    def _compact(self) -> None:
        """Renumber the live slots densely and drop the dead ones from every postings list."""
        live = self._alive[: len(self._ids)]
        new_slot = (np.cumsum(live) - 1).astype(np.int32)  # old slot -> new slot, for live ones
        for term in list(self._postings):
            p = self._postings[term].flush()
            keep = live[p.slots[: p.n]]
            if not keep.any():
                del self._postings[term]
                continue
            p.slots, p.tfs, p.dls = new_slot[p.slots[: p.n][keep]], p.tfs[: p.n][keep], p.dls[: p.n][keep]
            p.n = len(p.slots)
        self._ids = [s for s in self._ids if s is not None]
        self._len = self._len[: len(live)][live].copy()
        self._alive = np.ones(len(self._ids), bool)
        self._slot = {str(doc_id): i for i, doc_id in enumerate(self._ids)}

    def scores(self, query: str) -> tuple[np.ndarray, np.ndarray]:
        """``(slots, scores)`` of the live documents sharing a term with ``query``, in slot order (a repeated query
        term counts again, as in ``bm25s``)."""
        n = len(self._slot)
        if n == 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        avgdl = self._total / n
        dead = len(self._ids) > n
        if len(self._acc) < len(self._ids):
            size = max(len(self._ids), 2 * len(self._acc))
            self._acc, self._hit = np.zeros(size, np.float32), np.zeros(size, bool)
        acc, hit, touched = self._acc, self._hit, 0
        for term, q in Counter(self.analyzer.terms([query])[0]).items():
            p = self._postings.get(term)
            if p is None:
                continue
            p.flush()
            slots, tfs, dls = p.slots[: p.n], p.tfs[: p.n], p.dls[: p.n]
            if dead:
                alive = self._alive[slots]
                slots, tfs, dls = slots[alive], tfs[alive], dls[alive]
            if not len(slots):  # every document with the term deleted
                continue
            acc[slots] += q * self.bm25.idf(len(slots), n) * self.bm25.tf(tfs, dls, avgdl)
            hit[slots] = True
            touched += 1
        if not touched:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        # the slots any term touched, sorted: one pass over a mask (a sort or hash of the postings costs more at 1 M)
        hits = np.flatnonzero(hit[: len(self._ids)])
        scores = acc[hits]
        acc[hits], hit[hits] = 0.0, False
        return hits, scores

    def search(self, query: str, k: int) -> list[tuple[str, float]]:
        """The ``k`` best documents for ``query`` as ``(id, score)``, best first (ties: the earlier added first).
        Only documents sharing a term with the query are returned."""
        slots, scores = self.scores(query)
        if len(scores) > k:  # the k best and every tie of the k-th, then sorted: the same as sorting all
            kth = np.partition(scores, len(scores) - k)[len(scores) - k]
            keep = scores >= kth
            slots, scores = slots[keep], scores[keep]
        order = np.lexsort((slots, -scores))[:k]
        return [(str(self._ids[s]), float(scores[i])) for i, s in zip(order, slots[order])]
