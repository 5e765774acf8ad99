"""What the core returns: small typed results. The HTTP layer turns them into the wire schemas.

Nothing here knows JSON: vectors stay numpy arrays, absent values are ``None``, and each route
(``service/http/routes``) decides how its answer is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from thoughtvec.service.core.runtime import RuntimeDescription

# An index's stats are the index contract's own type (what every backend answers), returned as they are.
from thoughtvec.service.index.contents import IndexStats as IndexStats
from thoughtvec.service.settings import SearchMode


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens embedded (all the parts of a split input), and how many inputs were split or truncated."""

    tokens: int = 0
    split: int = 0
    truncated: int = 0


@dataclass(slots=True)
class Encoded:
    model: str
    view: str
    vectors: np.ndarray  # (n, dim)
    tokens: int  # every token embedded (all parts of a split input)
    split: int = 0  # inputs over the token limit split into sentences and pooled
    truncated: int = 0  # inputs cut to the token (or character) limit

    @property
    def usage(self) -> Usage:
        return Usage(self.tokens, self.split, self.truncated)


# -- similarity and rerank ------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PairScore:
    index: int
    score: float  # cosine in [-1, 1]
    relatedness: float | None = None  # the bundle's SICK head, when it has one


@dataclass(frozen=True, slots=True)
class Similarity:
    model: str
    view: str
    data: list[PairScore]
    usage: Usage


@dataclass(frozen=True, slots=True)
class Ranked:
    index: int  # position in the request's documents
    score: float  # relevance on [0, 1] (scoring.ScoringService.rerank)
    raw: float  # the mode's own score: the cosine (dense), the fused score (hybrid)
    document: str | None = None  # only when the request asked for the documents back


@dataclass(frozen=True, slots=True)
class Reranked:
    model: str
    results: list[Ranked]  # best first
    usage: Usage
    mode: str = "hybrid"  # scoring.RERANK_MODES


# -- info and tokenize ----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ModelInfo:
    id: str
    dimension: int
    views: dict[str, int]
    max_input_tokens: int
    family: str
    pooling: str  # TEI's name for how the default view pools a text (``catalog.tei_pooling``)
    default: bool
    best_for: list[str]  # uses it is the dev pick for (thoughtvec.service.core.guide)
    best_trained_here_for: list[str]
    dev: dict[str, Any] | None  # its dev figures


@dataclass(frozen=True, slots=True)
class ViewDescription:
    dim: int
    pooling: str
    description: str
    axes: int  # ``dimensions`` from 8 up to this are served besides dim (0: only dim)


@dataclass(frozen=True, slots=True)
class ModelDescription:
    """A served model as ``/v1/models`` describes it: what the bundle says of itself, where it runs, what it is
    chosen for on dev (``thoughtvec.service.core.guide``), and, asked for alone, its training record."""

    id: str  # the name asked for: the bundle's, or an alias's
    name: str  # the bundle's
    family: str
    variant: str
    description: str
    dimension: int  # of the default view
    default_view: str
    views: dict[str, ViewDescription]
    max_input_tokens: int
    relatedness_head: bool
    providers: list[str]  # ONNX Runtime's, as its session uses them (none where OpenVINO runs the graph)
    runtime: RuntimeDescription  # what runs the graph, at which precision, and why
    default: bool  # the model a request naming none gets
    best_for: list[str]
    best_trained_here_for: list[str]
    dev: dict[str, Any] | None
    training: dict[str, Any] | None = None  # the bundle's training record (provenance; kilobytes: single-model answers only)
    alias_of: str | None = None  # where ``id`` is an alias: the bundle it names now


@dataclass(frozen=True, slots=True)
class ModelList:
    models: list[ModelDescription]  # by name
    aliases: list[ModelDescription]  # by alias, each the model it names under the alias's id
    devices: dict[str, Any]  # what runs where (``Core.devices``)


@dataclass(frozen=True, slots=True)
class Info:
    name: str
    version: str
    default_model: str | None
    models: list[ModelInfo]
    aliases: dict[str, str]
    default_index: str
    limits: dict[str, Any]
    devices: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Token:
    text: str
    id: int
    oov: bool
    special: bool = False
    start: int | None = None  # character offsets in the input, where the tokenizer keeps them
    stop: int | None = None


@dataclass(frozen=True, slots=True)
class Tokenized:
    index: int
    tokens: list[Token]
    oov: list[str]
    over_limit: bool
    text: str = ""  # the input as it was tokenized (cut to max_input_chars)


@dataclass(frozen=True, slots=True)
class Tokenization:
    model: str
    max_input_tokens: int
    data: list[Tokenized]


# -- search and indexes -----------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Hit:
    id: str
    text: str
    score: float | None  # None where the index gave a non-finite score
    metadata: dict[str, Any] | None = None
    # hybrid only: the hit's place (from 1) in the dense and in the lexical ranking fused; None where that side
    # did not return it among its ``Fusion.depth`` best
    dense_rank: int | None = None
    lexical_rank: int | None = None
    # hybrid only: each side's own score (None where it did not return the hit) and what it added to ``score``
    # (the two parts sum to it): the answer's ``explain``
    dense_score: float | None = None
    lexical_score: float | None = None
    dense_part: float = 0.0
    lexical_part: float = 0.0


@dataclass(frozen=True, slots=True)
class SearchResult:
    index: str
    model: str
    metric: str
    mode: SearchMode  # the mode that answered
    results: list[list[Hit]]  # one list per query, best first
    usage: Usage


@dataclass(frozen=True, slots=True)
class IndexListing:
    data: list[IndexStats]
    building: dict[str, str]  # name -> progress
    quarantined: dict[str, str]  # name -> why it cannot be served


@dataclass(frozen=True, slots=True)
class DocumentsAdded:
    index: str
    ids: list[str]
    documents: int  # in the index after the add
    usage: Usage


@dataclass(frozen=True, slots=True)
class DocumentsDeleted:
    index: str
    deleted: list[str]
    not_found: list[str]
    documents: int


@dataclass(frozen=True, slots=True)
class MapPoint:
    text: str
    x: float
    y: float
    id: str | None = None  # None for the query


@dataclass(frozen=True, slots=True)
class IndexMap:
    index: str
    model: str
    points: list[MapPoint]
    query: MapPoint | None
    explained_variance: list[float]
    usage: Usage
    hits: list[str] | None = None  # the query's best ids by the index's search (None: no search asked)
    mode: SearchMode | None = None  # the mode that search answered in
