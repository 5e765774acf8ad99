"""What an index's ``factory`` string may look like, in no backend's terms: the one grammar every backend reads.

A factory names an index type in FAISS's words (``Flat``, ``HNSW32``, ``IVF256,PQ16``); each backend maps the
strings it can build onto its own structures (FAISS: ``thoughtvec.service.index.factory``; Milvus:
``thoughtvec.service.index.milvus_schema``). The grammar is narrow on purpose: FAISS accepts strings that crash the
process later (see ``factory.py``), so only the families tested end to end are accepted, by every backend::

    Flat                                  exact
    PQ<m>[x<b>]  SQ4|SQ6|SQ8|SQfp16       flat codes (exhaustive search over compressed vectors)
    HNSW<M>[,Flat]                        graph, 4 <= M <= 256
    [PCA<d>,]IVF<n>,Flat|PQ<m>[x<b>]|SQ…  inverted lists, 1 <= n <= 65536

with ``m`` dividing the dimension (after PCA), ``4 <= b <= 8`` and ``d`` at most the dimension. Anything else is a
``ValueError`` naming the problem (the backends answer it as a 422 naming ``factory``).
"""

from __future__ import annotations

import re
from typing import Literal

FactoryKind = Literal["flat", "hnsw", "ivf"]

MIN_HNSW_M = 4  # M=2 builds graphs whose searches miss stored vectors (10 of 298 not in their own top 3)
MAX_HNSW_M = 256
MAX_NLIST = 65536
_SQ = r"SQ(?:4|6|8|fp16)"
_PQ = r"PQ(?P<m>\d+)(?:x(?P<b>\d+))?"
_CODES = rf"(?:Flat|{_PQ}|{_SQ})"
_FLAT_CODES = re.compile(rf"^(?:Flat|{_PQ}|{_SQ})$")
_HNSW = re.compile(r"^HNSW(?P<M>\d+)(?:,Flat)?$")
_IVF = re.compile(rf"^(?:PCA(?P<d>\d+),)?IVF(?P<n>\d+),{_CODES}$")

# Search-time knobs where the factory has them, every backend's (FAISS's names; Milvus's ``ef`` and ``nprobe`` take
# the same values). FAISS's defaults (nprobe=1, efSearch=16) trade too much recall for speed. efSearch 384: the least of those
# measured keeping HNSW32's dense recall@10 at or above 0.95 of exact on a million documents (0.966, 5.5 ms a
# query; 128 gave 0.896; python -m thoughtvec.bench.ann_bench, docs/scale.md#approximate-indexes).
SEARCH_PARAMS = (("nprobe", 16), ("efSearch", 384))

# The grammar's shape for the OpenAPI schema (the numbers' ranges are checked by factory_kind).
SCHEMA_PATTERN = r"^(Flat|PQ\d+(x\d+)?|SQ(4|6|8|fp16)|HNSW\d+(,Flat)?|(PCA\d+,)?IVF\d+,(Flat|PQ\d+(x\d+)?|SQ(4|6|8|fp16)))$"
# The grammar in words, for messages and help (FAISS builds all of it; Milvus a part: milvus_schema.SUPPORTED).
GRAMMAR = (
    "Flat, PQ<m>[x<b>], SQ4/SQ6/SQ8/SQfp16, HNSW<M>[,Flat] (4 <= M <= 256), [PCA<d>,]IVF<n>,Flat|PQ<m>[x<b>]|SQ8 ... (1 <= n <= 65536)"
)


def factory_kind(factory: str, dim: int) -> FactoryKind:
    """The kind of index a factory string in the grammar makes for vectors of ``dim``; ``ValueError`` naming the
    problem otherwise."""
    if m := _FLAT_CODES.match(factory):
        _check_pq(m, dim, factory)
        return "flat"
    if m := _HNSW.match(factory):
        if not MIN_HNSW_M <= int(m["M"]) <= MAX_HNSW_M:
            raise ValueError(f"factory {factory!r}: HNSW's M is {int(m['M'])}; it must be between {MIN_HNSW_M} and {MAX_HNSW_M}")
        return "hnsw"
    if m := _IVF.match(factory):
        if not 1 <= int(m["n"]) <= MAX_NLIST:
            raise ValueError(f"factory {factory!r}: IVF's list count is {int(m['n'])}; it must be between 1 and {MAX_NLIST}")
        inner = dim
        if m["d"] is not None:
            inner = int(m["d"])
            if not 1 <= inner <= dim:
                raise ValueError(f"factory {factory!r}: PCA{inner} must output between 1 and {dim} dimensions (the vectors' dimension)")
        _check_pq(m, inner, factory)
        return "ivf"
    raise ValueError(f"factory {factory!r} is not supported; the supported factories are {GRAMMAR}")


def _check_pq(m: re.Match, dim: int, factory: str) -> None:
    if m["m"] is None:
        return
    sub, bits = int(m["m"]), int(m["b"] or 8)
    if sub < 1 or dim % sub:
        raise ValueError(f"factory {factory!r}: PQ{sub} needs a dimension divisible by {sub}; it is {dim}")
    if not 4 <= bits <= 8:
        raise ValueError(f"factory {factory!r}: PQ codes of {bits} bits; they must have 4 to 8")
