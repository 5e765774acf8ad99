"""How an index's name and factory (the grammar of ``factory_grammar``, in FAISS's words) and metric map onto a
Milvus collection and its index.

Supported, a part of the grammar (anything else is a 422 naming ``factory``)::

    FAISS factory            Milvus index                  search parameters
    Flat                     FLAT                          -
    HNSW<M>[,Flat]           HNSW M, efConstruction 200    ef = max(384, k)      (server only)
    IVF<n>,Flat              IVF_FLAT nlist n              nprobe = min(16, n)
    IVF<n>,SQ8               IVF_SQ8 nlist n               nprobe = min(16, n)   (server only)
    IVF<n>,PQ<m>[x<b>]       IVF_PQ nlist n, m, nbits b    nprobe = min(16, n)   (server only)

Milvus Lite builds only FLAT and IVF_FLAT. Metrics: ``cosine`` and ``ip`` are Milvus ``IP`` (cosine
on vectors made unit length first, as FAISS does), ``l2`` is ``L2`` (squared distance, as FAISS).
The search parameters are those FAISS's indexes use here (``SEARCH_PARAMS`` in factory_grammar.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from thoughtvec.service.index.contents import IndexConfig
from thoughtvec.service.index.factory_grammar import SEARCH_PARAMS, factory_kind
from thoughtvec.service.index.lexical import BM25
from thoughtvec.service.settings import Settings

ID_MAX_BYTES = 1024  # UTF-8 bytes of an id: the API's ids are at most 256 characters of at most 4 bytes
TEXT_MAX_BYTES = 65535  # Milvus's largest VARCHAR
_ESCAPES = {"_": "_u", "-": "_h", ".": "_d"}
_UNESCAPE = {v[1]: k for k, v in _ESCAPES.items()}
SUPPORTED = "Flat, HNSW<M>[,Flat], IVF<n>,Flat, IVF<n>,SQ8, IVF<n>,PQ<m>[x<b>] (Milvus Lite: Flat and IVF<n>,Flat)"


def collection_name(prefix: str, name: str) -> str:
    """``notes.v2-x`` -> ``<prefix>notes_dv2_hx``: Milvus names allow only letters, digits and ``_``; the escape is reversible."""
    return prefix + "".join(_ESCAPES.get(ch, ch) for ch in name)


def index_name(prefix: str, collection: str) -> str | None:
    """The index name of one of our collections; ``None`` for any other collection."""
    if not collection.startswith(prefix):
        return None
    out, it = [], iter(collection[len(prefix) :])
    for ch in it:
        if ch == "_":
            ch = _UNESCAPE.get(next(it, ""), "")
            if not ch:
                return None
        out.append(ch)
    return "".join(out) or None


def milvus_metric(metric: str) -> str:
    return "L2" if metric == "l2" else "IP"


def index_params(config: IndexConfig, lite: bool) -> dict[str, Any]:
    """``add_index`` arguments for the config's factory; ``ValueError`` naming the factory where Milvus has none."""
    factory, metric = config.factory, milvus_metric(config.metric)
    factory_kind(factory, config.dim)  # the grammar first: its messages name the problem
    if factory == "Flat":
        return {"index_type": "FLAT", "metric_type": metric}
    if m := re.fullmatch(r"IVF(\d+),Flat", factory):
        return {"index_type": "IVF_FLAT", "metric_type": metric, "params": {"nlist": int(m[1])}}
    if lite:
        raise ValueError(f"factory {factory!r}: Milvus Lite builds only Flat and IVF<n>,Flat; use a Milvus server for {factory}")
    if m := re.fullmatch(r"HNSW(\d+)(?:,Flat)?", factory):
        return {"index_type": "HNSW", "metric_type": metric, "params": {"M": int(m[1]), "efConstruction": 200}}
    if m := re.fullmatch(r"IVF(\d+),SQ8", factory):
        return {"index_type": "IVF_SQ8", "metric_type": metric, "params": {"nlist": int(m[1])}}
    if m := re.fullmatch(r"IVF(\d+),PQ(\d+)(?:x(\d+))?", factory):
        return {"index_type": "IVF_PQ", "metric_type": metric, "params": {"nlist": int(m[1]), "m": int(m[2]), "nbits": int(m[3] or 8)}}
    raise ValueError(f"factory {factory!r} has no Milvus index here; with index_backend=milvus the supported factories are {SUPPORTED}")


def search_params(config: IndexConfig, k: int) -> dict[str, Any]:
    params: dict[str, Any] = {}
    if m := re.match(r"IVF(\d+)", config.factory):
        params["nprobe"] = min(dict(SEARCH_PARAMS)["nprobe"], int(m[1]))
    elif config.factory.startswith("HNSW"):
        params["ef"] = max(dict(SEARCH_PARAMS)["efSearch"], k)
    return {"metric_type": milvus_metric(config.metric), "params": params}


# -- BM25 (Milvus 2.5 and later) ---------------------------------------------------------------
SPARSE_FIELD = "sparse"  # BM25's term weights of `text`, filled by Milvus's BM25 function at every write
# Milvus's built-in English analyser: its standard tokenizer, lower-casing, English stop words and the Snowball
# English stemmer. The FAISS store's (lexical.Analyzer: Porter, bm25s's stop words) was chosen on dev, where
# Porter and Snowball English, with or without stop words, were within 0.002 nDCG@10.
ANALYZER = {"type": "english"}
BM25_MIN_VERSION = (2, 5)


def bm25_capable(version: str) -> bool:
    """Whether a Milvus of this version (``2.5.1``, ``v2.3.5``) has BM25 full-text search."""
    parts = re.findall(r"\d+", version)[:2]
    return len(parts) == 2 and (int(parts[0]), int(parts[1])) >= BM25_MIN_VERSION


def no_bm25(where: str, version: str) -> str:
    """Why a Milvus (``where``: "the Milvus server", "Milvus Lite") serves no lexical or hybrid search, for the 422 that
    refuses one."""
    return (
        f"{where} is version {version or 'unknown'}, which has no BM25 full-text search (it came in Milvus 2.5), "
        "so its indexes are searched by vector only (mode 'dense'); use Milvus 2.5 or later, or index_backend=faiss, "
        "for lexical and hybrid search"
    )


def analysed() -> dict[str, Any]:
    """``add_field`` arguments that make ``text`` analysed for BM25."""
    return {"enable_analyzer": True, "analyzer_params": ANALYZER}


def add_bm25(schema: Any, index_params: Any, bm25: BM25 | None = None) -> None:
    """The sparse field, the BM25 function that fills it from ``text``, and its index (k1, b as the FAISS store's)."""
    from pymilvus import DataType, Function, FunctionType  # noqa: PLC0415  # the milvus extra, loaded with the first call

    bm25 = bm25 or BM25()
    schema.add_field(SPARSE_FIELD, DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(
        Function(name="bm25", function_type=FunctionType.BM25, input_field_names=["text"], output_field_names=[SPARSE_FIELD])
    )
    index_params.add_index(
        SPARSE_FIELD, index_type="SPARSE_INVERTED_INDEX", metric_type="BM25", params={"bm25_k1": bm25.k1, "bm25_b": bm25.b}
    )


def bm25_search_params() -> dict[str, Any]:
    return {"metric_type": "BM25", "params": {"drop_ratio_search": 0.0}}  # every query term counts


@dataclass(frozen=True)
class MilvusOptions:
    uri: str = "data/milvus.db"  # a file path: Milvus Lite in this process; http://host:port: a Milvus server
    token: str = ""
    prefix: str = "thoughtvec_"  # collection names are <prefix><index name, escaped>
    timeout_s: int = 3  # per call (a float deadline per RPC; pymilvus's own retries bounded by count: milvus.PYMILVUS_RETRIES)
    retries: int = 1  # extra attempts when Milvus is unreachable, before a 503

    @classmethod
    def of(cls, settings: Settings) -> MilvusOptions:
        """The ``milvus_*`` settings."""
        return cls(
            settings.milvus_uri,
            settings.milvus_token,
            settings.milvus_collection_prefix,
            settings.milvus_timeout_s,
            settings.milvus_retries,
        )
