"""How FAISS builds the factory strings of the grammar (:mod:`thoughtvec.service.index.factory_grammar`), checked
before FAISS ever sees one.

``faiss.index_factory`` accepts strings that crash the process later (``HNSW1`` and ``RR0,Flat``
abort at the first add, ``NSG32`` fails every add, ``PRQ2x4x8`` writes files it cannot read back,
``IVF0,Flat`` fails every search). A crash there is a crash loop, since the write that caused it
is replayed from the log at every start. So FAISS gets only the grammar's strings, whose every
family is tested end to end (create, add, search, delete, snapshot, restart) in
``tests/service/index/test_factories.py``; anything else is a 422 naming ``factory``.

How each family keeps string ids stable across deletes (``Family.ids``):

* ``idmap``: ``IndexIDMap2`` around a flat-codes index, whose ``remove_ids`` compacts storage in
  the same order as the map does;
* ``native``: IVF stores the ids it is given and removes by id itself. Wrapped in ``IndexIDMap2``
  it stored ordinals that a delete shifted (kept documents unfindable, then a FAISS assertion);
* ``tombstone``: HNSW cannot remove at all; deleted labels are hidden at search time and the
  graph is rebuilt without them once they are a quarter of it (``VectorIndex.delete``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from thoughtvec.service.index.factory_grammar import FactoryKind, factory_kind

IdsKind = Literal["idmap", "native", "tombstone"]
_IDS: dict[FactoryKind, IdsKind] = {"flat": "idmap", "hnsw": "tombstone", "ivf": "native"}


@dataclass(frozen=True)
class Family:
    name: FactoryKind
    ids: IdsKind


def check_factory(factory: str, dim: int) -> Family:
    """The FAISS family of a factory string in the grammar for vectors of ``dim``; ``ValueError`` naming the problem
    otherwise."""
    kind = factory_kind(factory, dim)
    return Family(kind, _IDS[kind])
