"""A search index in an index folder, written and searched through an :class:`~thoughtvec.service.api.embedder.Embedder`'s
engine by the server's own index services (``IndexAdmin``, ``IngestService``, ``SearchService``): the same store
(FAISS, a write-ahead log and snapshots on disk), the same checks, the same BM25 and fusion.

A folder is the ``index_dir`` of a server: it holds any number of named indexes, and one process writes it at a
time (its lock). ``thoughtvec serve --index-dir FOLDER`` serves what the Python API wrote there, once the API's
model is closed.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast, overload

import numpy as np
from tqdm import tqdm

from thoughtvec.service.api.embedder import PROGRESS_FROM, TRUNCATIONS, Embedder, _as_list, _choice, _positive
from thoughtvec.service.core.results import Hit
from thoughtvec.service.errors import Conflict, InvalidInput, ThoughtvecError
from thoughtvec.service.index.contents import NAME_PATTERN, IndexStats, Metric
from thoughtvec.service.index.jsonvalues import check_metadata
from thoughtvec.service.settings import SearchMode, Truncation

ADD_BATCH = 1000  # documents a call writes at a time: each batch embedded in bulk, logged and durable
MAX_ID_CHARS = 256  # a document id's characters, as POST /v1/indexes/{name}/documents allows


@dataclass
class _NewDocument:
    """What ``IngestService.add_documents`` reads of each document."""

    text: str
    id: str | None
    metadata: dict[str, Any] | None


class Index:
    """A named index in an index folder, over the model that embeds its documents and queries. Made by
    :meth:`create` or :meth:`open`; it lives as long as its model (closing the model closes its folder)."""

    def __init__(self, model: Embedder, folder: str | os.PathLike[str], name: str):
        self.model = model
        self.folder = Path(folder).resolve()
        self.name = name
        self._services = model._folder(self.folder)

    @classmethod
    def create(
        cls,
        model: Embedder,
        folder: str | os.PathLike[str],
        name: str = "default",
        *,
        view: str | None = None,
        mode: SearchMode | None = None,
        factory: str = "Flat",
        metric: Metric = "cosine",
        exist_ok: bool = False,
    ) -> Index:
        """A new empty index ``name`` in ``folder`` (made if missing) over ``model``'s ``view``. ``mode``: how a search
        that names none is answered (``dense``, ``lexical`` or ``hybrid``; default the dev rule's choice for the model,
        as a server's; ``lexical`` named makes a lexical-only index, whose documents are not embedded); ``factory``: a
        FAISS factory (``docs/search.md``); ``exist_ok``: an index already there is opened instead (409 otherwise)."""
        if not isinstance(name, str) or not re.fullmatch(NAME_PATTERN, name):
            raise InvalidInput(f"name is {name!r}; an index name is 1-64 of a-z 0-9 . _ - and starts with a letter or digit", field="name")
        index = cls(model, folder, name)
        admin = index._services.admin
        if exist_ok and model._on_loop(admin.store.__contains__, name):
            return cls.open(model, folder, name)
        model._run(lambda: admin.create_index(name=name, model=model.name, view=view, mode=mode, factory=factory, metric=metric))
        return index

    @classmethod
    def open(cls, model: Embedder, folder: str | os.PathLike[str], name: str = "default") -> Index:
        """Index ``name`` of ``folder``, as a server would serve it (``UnknownIndex`` where the folder has none by that
        name; ``Conflict`` where its vectors came from another export of the model)."""
        index = cls(model, folder, name)
        state = index._services.admin.state
        model._on_loop(lambda: state.index_model(name, state.config(name)))
        return index

    # -- documents -------------------------------------------------------------------------------
    def add(
        self,
        texts: Iterable[str],
        ids: Iterable[str] | None = None,
        metadata: Iterable[dict[str, Any] | None] | None = None,
        *,
        batch_size: int = ADD_BATCH,
        truncation: Truncation | None = None,
        show_progress_bar: bool | None = None,
    ) -> list[str]:
        """Add documents: ``texts``, with their ``ids`` (generated where not given) and ``metadata`` (a dict each, or
        None). Every argument is checked before anything is written; then each batch of ``batch_size`` is embedded in
        bulk, logged and durable, in order (an id already in the index stops the call at its batch). Returns the ids."""
        docs, fields = self._documents(texts, ids, metadata)
        batch_size = _positive(batch_size, "batch_size")
        truncation = _truncation(truncation)
        step = min(batch_size, self.model.settings.max_inputs)
        ingest, emb = self._services.ingest, self.model._core.embedding
        starts = range(0, len(docs), step)
        for start in starts:  # the texts' character limits, and blank texts, before any batch is written
            emb.texts([d.text for d in docs[start : start + step]], fields[start : start + step], truncation)
        added: list[str] = []
        show = len(docs) >= PROGRESS_FROM if show_progress_bar is None else show_progress_bar
        with tqdm(total=len(docs), desc=f"index {self.name}", unit="doc", disable=not show, mininterval=0.5) as bar:
            for start in starts:
                batch = docs[start : start + step]
                with _named(start):
                    added += self.model._run(functools.partial(ingest.add_documents, self.name, batch, truncation)).ids
                bar.update(len(batch))
        return added

    def delete(self, ids: Iterable[str]) -> list[str]:
        """Delete documents by id; returns those that were there."""
        wanted = _as_list(ids, "ids")
        if not wanted:
            return []
        return self.model._run(lambda: self._services.ingest.delete_documents(self.name, wanted)).deleted

    def _documents(self, texts: Any, ids: Any, metadata: Any) -> tuple[list[_NewDocument], list[str]]:
        """The documents to add, each part checked and named by its argument (``texts[i]``, ``ids[i]``, ``metadata[i]``)."""
        items = _as_list(texts, "texts")
        id_list = [None] * len(items) if ids is None else _as_list(ids, "ids")
        meta = [None] * len(items) if metadata is None else _as_list(metadata, "metadata")
        for name, given in (("ids", id_list), ("metadata", meta)):
            if len(given) != len(items):
                raise InvalidInput(f"{name} has {len(given)} items and texts has {len(items)}; give one for each text", field=name)
        seen: dict[str, int] = {}
        s = self.model.settings
        for i, (doc_id, md) in enumerate(zip(id_list, meta)):
            if doc_id is not None:
                if not isinstance(doc_id, str) or not 1 <= len(doc_id) <= MAX_ID_CHARS:
                    raise InvalidInput(f"ids[{i}] is {doc_id!r}; an id is a string of 1 to {MAX_ID_CHARS} characters", field=f"ids[{i}]")
                if doc_id in seen:
                    raise Conflict(f"ids[{i}] '{doc_id}' is ids[{seen[doc_id]}] too; each document needs its own id", field=f"ids[{i}]")
                seen[doc_id] = i
            if md is not None and not isinstance(md, dict):
                raise InvalidInput(f"metadata[{i}] must be a dict or None, got {type(md).__name__}", field=f"metadata[{i}]")
            check_metadata(md, f"metadata[{i}]", s.max_metadata_bytes, s.max_metadata_depth)
        docs = [_NewDocument(t, d, m) for t, d, m in zip(items, id_list, meta)]
        return docs, [f"texts[{i}]" for i in range(len(items))]

    # -- search ----------------------------------------------------------------------------------
    @overload
    def search(  # type: ignore[overload-overlap]  # a str is a Sequence[str] too: this one is tried first
        self, query: str | np.ndarray, k: int = 10, *, mode: SearchMode | None = None, truncation: Truncation | None = None
    ) -> list[Hit]: ...
    @overload
    def search(
        self, query: Sequence[str], k: int = 10, *, mode: SearchMode | None = None, truncation: Truncation | None = None
    ) -> list[list[Hit]]: ...
    def search(
        self,
        query: str | Sequence[str] | np.ndarray,
        k: int = 10,
        *,
        mode: SearchMode | None = None,
        truncation: Truncation | None = None,
    ) -> list[Hit] | list[list[Hit]]:
        """The ``k`` best documents for ``query``, best first: a text, or a vector (``(dim,)``, searched by vector only),
        gives a list of :class:`~thoughtvec.service.core.results.Hit` (``id``, ``text``, ``score``, ``metadata``;
        hybrid: each side's rank, its own score and what it added to ``score``, as ``explain`` shows them over HTTP); a list
        of texts gives one such list each. ``mode``: ``dense``, ``lexical`` or
        ``hybrid`` (BM25 and the vectors fused); default the index's."""
        search, truncation = self._services.search, _truncation(truncation)
        if isinstance(query, np.ndarray):
            if query.ndim != 1:
                raise InvalidInput(f"a vector query has shape (dim,); got {query.shape}", field="query")
            vector = query.tolist()
            return self.model._run(lambda: search.search(query=vector, index=self.name, k=k, mode=mode, truncation=truncation)).results[0]
        if isinstance(query, str):
            return self.model._run(lambda: search.search(query=query, index=self.name, k=k, mode=mode, truncation=truncation)).results[0]
        queries = _as_list(query, "query")
        if not queries:
            return []
        step, results = self.model.settings.max_inputs, []
        for start in range(0, len(queries), step):
            part = queries[start : start + step]
            with _named(start):
                found = self.model._run(
                    functools.partial(search.search, query=part, index=self.name, k=k, mode=mode, truncation=truncation)
                )
            results += found.results
        return results

    # -- the index itself ----------------------------------------------------------------------
    def stats(self) -> IndexStats:
        """What the store says of the index: its model, view, metric, mode, factory, documents."""
        return self.model._on_loop(self._services.admin.index_stats, self.name)

    def __len__(self) -> int:
        return self.stats().documents

    def drop(self) -> None:
        """Delete the index and its files."""
        self.model._run(lambda: self._services.admin.drop_index(self.name))

    def __repr__(self) -> str:
        return f"Index({self.name!r}, folder={str(self.folder)!r}, model={self.model.name!r})"


def _truncation(value: Any) -> Truncation | None:
    return None if value is None else cast(Truncation, _choice(value, TRUNCATIONS, "truncation"))


# The fields the core names for a batch's items, and the argument each is in a call of this API.
_BATCH_FIELDS = re.compile(r"documents\[(\d+)\]\.(text|id|metadata)|query\[(\d+)\]")
_ARGUMENTS = {"text": "texts", "id": "ids", "metadata": "metadata"}


@contextlib.contextmanager
def _named(start: int) -> Iterator[None]:
    """Errors of the batch that starts at item ``start`` named as the call's arguments: the core's
    ``documents[3].text`` of the batch from 1000 is the call's ``texts[1003]``."""

    def rename(m: re.Match[str]) -> str:
        if m[3] is not None:
            return f"query[{start + int(m[3])}]"
        return f"{_ARGUMENTS[m[2]]}[{start + int(m[1])}]"

    try:
        yield
    except ThoughtvecError as e:
        e.message = _BATCH_FIELDS.sub(rename, e.message)
        e.args = (e.message, *e.args[1:])
        e.field = e.field and _BATCH_FIELDS.sub(rename, e.field)
        raise
