"""Sparse vectors for BM25 in another vector database: TEI's ``POST /embed_sparse``, made by the server's own BM25
analyser (``index/lexical.py``) with the search settings' ``k1`` and ``b`` (the model guide's, else the fallback).

BM25 splits into a document half and a query half whose inner product, with each term's idf, is BM25 itself, as
fastembed's ``Qdrant/bm25`` and Milvus's BM25 split it:

* the **document** side weighs each analysed term by BM25's saturated term frequency with length normalisation,
  ``tf·(k1+1) / (tf + k1·(1 − b + b·len/avgdl))`` (``len``: the text's terms once stop words are out; ``avgdl``: the
  corpus's mean of it, :data:`AVGDL` where a client gives none);
* the **query** side weighs each term by its count in the query (a repeated query term counts again, as in the
  server's own lexical search and ``bm25s``; fastembed's gives every distinct term 1).

The vector database supplies idf (Qdrant's ``modifier: idf``), or the client multiplies the query's weights by it
(:func:`idf_of` a corpus's document vectors, :func:`weighted`): ``Σ idf(t)·q(t)·d(t)`` is then ``(k1+1)`` times the
lexical index's BM25 for the variants ``lucene`` and ``robertson`` (whose ``tf`` part leaves out ``k1+1``, which
changes no ranking) and equal to it for ``atire``. ``tests/service/core/test_sparse.py`` checks it against
:class:`~thoughtvec.service.index.lexical.LexicalIndex` on a fixed corpus.

A term's **index** is MurmurHash3 (x86, 32 bits, seed 0) of its UTF-8 bytes read as a signed int, made non-negative
by its absolute value: ``abs(mmh3.hash(term))``, fastembed's ``Bm25.compute_token_id``, so 0 ≤ index ≤ 2³¹. It is
written here in pure Python (no dependency), the same in every process and version (the tests pin fixed values). Two
terms may share an index (a collision: about one pair in 4 billion draws); their weights are then summed in a vector.
"""

from __future__ import annotations

import asyncio
import math
import struct
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, get_args

import numpy as np

from thoughtvec.service.core.limits import OFFLOAD_CHARS, SPARSE_JSON_BYTES, check_answer, check_count, check_texts
from thoughtvec.service.errors import InvalidInput
from thoughtvec.service.index.lexical import BM25, Analyzer
from thoughtvec.service.index.search_settings import SearchSettings
from thoughtvec.service.settings import Settings, Truncation

Side = Literal["document", "query"]
SIDES: tuple[Side, ...] = get_args(Side)
# The mean document length, in analysed terms, where a client gives none: fastembed's Qdrant/bm25 default (avg_len),
# so that the same text weighs alike in both. A client that knows its corpus's mean sends it (``avgdl``).
AVGDL = 256.0

_M32 = 0xFFFFFFFF
_C1, _C2 = 0xCC9E2D51, 0x1B873593


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def murmur3_32(data: bytes, seed: int = 0) -> int:
    """MurmurHash3_x86_32 of ``data`` (Appleby's reference), unsigned: what ``mmh3.hash(data, seed, signed=False)`` gives."""
    n = len(data)
    h = seed & _M32
    for (k,) in struct.iter_unpack("<I", data[: n - n % 4]):  # the 4-byte blocks, little-endian
        k = _rotl((k * _C1) & _M32, 15) * _C2 & _M32
        h = (_rotl(h ^ k, 13) * 5 + 0xE6546B64) & _M32
    tail = data[n - n % 4 :]
    if tail:
        k = int.from_bytes(tail, "little")
        h ^= _rotl((k * _C1) & _M32, 15) * _C2 & _M32
    h ^= n  # finalisation: mix the length in, then avalanche (fmix32)
    h = ((h ^ (h >> 16)) * 0x85EBCA6B) & _M32
    h = ((h ^ (h >> 13)) * 0xC2B2AE35) & _M32
    return h ^ (h >> 16)


@lru_cache(maxsize=1 << 18)
def term_index(term: str) -> int:
    """A term's index: ``abs`` of the signed MurmurHash3 of its UTF-8 bytes (fastembed's ``abs(mmh3.hash(term))``)."""
    h = murmur3_32(term.encode("utf-8"))
    return abs(h - (1 << 32) if h >= 1 << 31 else h)


@dataclass(frozen=True, slots=True)
class SparseVector:
    """One text's vector: ``indices`` ascending and distinct, with their ``values``; both ``(nnz,)`` (empty: no term)."""

    indices: np.ndarray  # (nnz,) int64
    values: np.ndarray  # (nnz,) float64

    def __len__(self) -> int:
        return len(self.indices)

    def as_dict(self) -> dict[int, float]:
        """``{index: value}``, as Milvus's ``SPARSE_FLOAT_VECTOR`` takes a row."""
        return dict(zip(self.indices.tolist(), self.values.tolist()))


def vector_of(weights: Mapping[str, float]) -> SparseVector:
    """The vector of terms' weights: each term at its index, colliding terms' weights summed, indices ascending."""
    by_index: dict[int, float] = {}
    for term, w in weights.items():
        i = term_index(term)
        by_index[i] = by_index.get(i, 0.0) + w
    indices = np.fromiter(sorted(by_index), np.int64, len(by_index))
    return SparseVector(indices, np.array([by_index[i] for i in indices.tolist()], np.float64))


def document_vector(terms: Sequence[str], bm25: BM25, avgdl: float = AVGDL) -> SparseVector:
    """A document's analysed ``terms`` weighed by BM25's saturated, length-normalised term frequency."""
    norm = bm25.k1 * (1 - bm25.b + bm25.b * len(terms) / avgdl)  # the same for every term of the document
    return vector_of({t: tf * (bm25.k1 + 1) / (tf + norm) for t, tf in Counter(terms).items()})


def query_vector(terms: Sequence[str]) -> SparseVector:
    """A query's analysed ``terms`` weighed by their counts."""
    return vector_of(Counter(terms))


def vectors(texts: Sequence[str], side: Side, analyzer: Analyzer, bm25: BM25, avgdl: float = AVGDL) -> list[SparseVector]:
    """Each text's vector of ``side``, analysed as the server's lexical index analyses it."""
    terms = analyzer.terms(texts)
    if side == "query":
        return [query_vector(t) for t in terms]
    return [document_vector(t, bm25, avgdl) for t in terms]


def idf_of(documents: Sequence[SparseVector], bm25: BM25) -> dict[int, float]:
    """Each index's idf over a corpus's document vectors (its document frequency: the vectors holding it), by the
    variant's own formula: what a query's weights are multiplied by where the vector database computes no idf."""
    df: Counter[int] = Counter()
    for d in documents:
        df.update(d.indices.tolist())
    return {i: bm25.idf(n, len(documents)) for i, n in df.items()}


def weighted(query: SparseVector, idf: Mapping[int, float]) -> SparseVector:
    """A query vector's values times each index's idf; an index no document holds (no idf) is left out."""
    keep = [j for j, i in enumerate(query.indices.tolist()) if i in idf]
    indices = query.indices[keep]
    return SparseVector(indices, query.values[keep] * np.array([idf[i] for i in indices.tolist()], np.float64))


def check_avgdl(avgdl: Any, field: str = "avgdl") -> float:
    """A mean document length, in terms: a finite number of at least 1 (a 422 naming ``field`` otherwise)."""
    if isinstance(avgdl, bool) or not isinstance(avgdl, (int, float)) or not math.isfinite(avgdl) or avgdl < 1:
        raise InvalidInput(f"{field} is {avgdl!r}; send the mean document length in terms, a number of at least 1", field=field)
    return float(avgdl)


def texts_of(raw: Any, field: str) -> tuple[list[Any], list[str]]:
    """A string or a list of items, and the field name of each (each item is checked as a text afterwards: BM25 reads
    words, so token ids are not taken)."""
    if isinstance(raw, str):
        return [raw], [field]
    if not isinstance(raw, list):
        raise InvalidInput(f"{field} must be a string or a list of strings, got {type(raw).__name__}", field=field)
    return list(raw), [f"{field}[{i}]" for i in range(len(raw))]


class SparseService:
    """Sparse BM25 vectors of a request's texts, bounded as an embedding request is (no model runs: nothing queues)."""

    def __init__(self, settings: Settings, search: SearchSettings):
        self.settings = settings
        self.analyzer, self.bm25 = search.analyzer, search.bm25

    async def embed_sparse(
        self, raw: Any, side: Side = "document", avgdl: float = AVGDL, truncation: Truncation | None = None, field: str = "inputs"
    ) -> list[SparseVector]:
        """One vector per input, in order. Checked in this order: the side, ``avgdl``, the count of inputs
        (``max_inputs``), each text (a string, not blank, within ``max_input_chars``: cut there under
        ``truncation`` ``truncate``, else a 413) and all of them (``max_request_chars``), then the answer's size
        (``max_response_bytes``). A text of stop words only has no term: its vector is empty."""
        if side not in SIDES:
            raise InvalidInput(f"side is {side!r}; one of {list(SIDES)}", field="side")
        avgdl = check_avgdl(avgdl)
        s = self.settings
        items, fields = texts_of(raw, field)
        check_count(len(items), s.max_inputs, field)
        cut = (truncation or s.truncation) == "truncate"
        checked = check_texts(items, fields, cut, s.max_input_chars, "max_input_chars", s.max_request_chars)
        if checked.chars > OFFLOAD_CHARS:  # analysing long texts stays off the event loop
            out = await asyncio.get_running_loop().run_in_executor(None, self._vectors, checked.texts, side, avgdl)
        else:
            out = self._vectors(checked.texts, side, avgdl)
        nnz = sum(map(len, out))
        check_answer(nnz * SPARSE_JSON_BYTES, s.max_response_bytes, field, f"{nnz} terms")
        return out

    def describe(self) -> dict[str, Any]:
        """How the vectors are made (``/info``'s ``sparse``): the analyser, the BM25 variant, the default ``avgdl``,
        the hash of a term."""
        a, b = self.analyzer, self.bm25
        return {"stemmer": a.stemmer, "stopwords": a.stopwords, "method": b.method, "k1": b.k1, "b": b.b, "avgdl": AVGDL,
                "index": "abs(MurmurHash3_x86_32(UTF-8 term, seed 0) as a signed int): fastembed's abs(mmh3.hash(term))"}  # fmt: skip

    def _vectors(self, texts: list[str], side: Side, avgdl: float) -> list[SparseVector]:
        return vectors(texts, side, self.analyzer, self.bm25, avgdl)
