"""The FAISS factory strings the service accepts, checked before FAISS ever sees one.

``faiss.index_factory`` accepts strings that crash the process later (``HNSW1`` and ``RR0,Flat``
abort at the first add, ``NSG32`` fails every add, ``PRQ2x4x8`` writes files it cannot read back,
``IVF0,Flat`` fails every search). A crash there is a crash loop, since the write that caused it
is replayed from the log at every start. So the service accepts only this grammar, whose every
family is tested end to end (create, add, search, delete, snapshot, restart) in
``tests/service/index/test_factories.py``; anything else is a 422 naming ``factory``::

    Flat                                  exact
    PQ<m>[x<b>]  SQ4|SQ6|SQ8|SQfp16       flat codes (exhaustive search over compressed vectors)
    HNSW<M>[,Flat]                        graph, 4 <= M <= 256
    [PCA<d>,]IVF<n>,Flat|PQ<m>[x<b>]|SQ…  inverted lists, 1 <= n <= 65536

with ``m`` dividing the dimension (after PCA), ``4 <= b <= 8`` and ``d`` at most the dimension.

How each family keeps string ids stable across deletes (``Family.ids``):

* ``idmap``: ``IndexIDMap2`` around a flat-codes index, whose ``remove_ids`` compacts storage in
  the same order as the map does;
* ``native``: IVF stores the ids it is given and removes by id itself. Wrapped in ``IndexIDMap2``
  it stored ordinals that a delete shifted (kept documents unfindable, then a FAISS assertion);
* ``tombstone``: HNSW cannot remove at all; deleted labels are hidden at search time and the
  graph is rebuilt without them once they are a quarter of it (``VectorIndex.delete``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

MIN_HNSW_M = 4  # M=2 builds graphs whose searches miss stored vectors (10 of 298 not in their own top 3)
MAX_HNSW_M = 256
MAX_NLIST = 65536
_SQ = r"SQ(?:4|6|8|fp16)"
_PQ = r"PQ(?P<m>\d+)(?:x(?P<b>\d+))?"
_CODES = rf"(?:Flat|{_PQ}|{_SQ})"
_FLAT_CODES = re.compile(rf"^(?:Flat|{_PQ}|{_SQ})$")
_HNSW = re.compile(r"^HNSW(?P<M>\d+)(?:,Flat)?$")
_IVF = re.compile(rf"^(?:PCA(?P<d>\d+),)?IVF(?P<n>\d+),{_CODES}$")

# The grammar's shape for the OpenAPI schema (the numbers' ranges are checked by check_factory).
SCHEMA_PATTERN = r"^(Flat|PQ\d+(x\d+)?|SQ(4|6|8|fp16)|HNSW\d+(,Flat)?|(PCA\d+,)?IVF\d+,(Flat|PQ\d+(x\d+)?|SQ(4|6|8|fp16)))$"
SUPPORTED = (
    "Flat, PQ<m>[x<b>], SQ4/SQ6/SQ8/SQfp16, HNSW<M>[,Flat] (4 <= M <= 256), [PCA<d>,]IVF<n>,Flat|PQ<m>[x<b>]|SQ8 ... (1 <= n <= 65536)"
)


@dataclass(frozen=True)
class Family:
    name: Literal["flat", "hnsw", "ivf"]
    ids: Literal["idmap", "native", "tombstone"]


def check_factory(factory: str, dim: int) -> Family:
    """The family of a supported factory string for vectors of ``dim``; ``ValueError`` naming the problem otherwise."""
    if m := _FLAT_CODES.match(factory):
        _check_pq(m, dim, factory)
        return Family("flat", "idmap")
    if m := _HNSW.match(factory):
        if not MIN_HNSW_M <= int(m["M"]) <= MAX_HNSW_M:
            raise ValueError(f"factory {factory!r}: HNSW's M is {int(m['M'])}; it must be between {MIN_HNSW_M} and {MAX_HNSW_M}")
        return Family("hnsw", "tombstone")
    if m := _IVF.match(factory):
        if not 1 <= int(m["n"]) <= MAX_NLIST:
            raise ValueError(f"factory {factory!r}: IVF's list count is {int(m['n'])}; it must be between 1 and {MAX_NLIST}")
        inner = dim
        if m["d"] is not None:
            inner = int(m["d"])
            if not 1 <= inner <= dim:
                raise ValueError(f"factory {factory!r}: PCA{inner} must output between 1 and {dim} dimensions (the vectors' dimension)")
        _check_pq(m, inner, factory)
        return Family("ivf", "native")
    raise ValueError(f"factory {factory!r} is not supported; the supported factories are {SUPPORTED}")


def _check_pq(m: re.Match, dim: int, factory: str) -> None:
    if m["m"] is None:
        return
    sub, bits = int(m["m"]), int(m["b"] or 8)
    if sub < 1 or dim % sub:
        raise ValueError(f"factory {factory!r}: PQ{sub} needs a dimension divisible by {sub}; it is {dim}")
    if not 4 <= bits <= 8:
        raise ValueError(f"factory {factory!r}: PQ codes of {bits} bits; they must have 4 to 8")
