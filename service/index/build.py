"""Bulk index builds: ``thoughtvec index build`` and the default index built on first start.

Both embed documents with an ``encode`` callable they are given (the command and the server pass their embedding
service's batcher: this layer knows no model) and add them to an index of a store through the contract, a chunk at a
time, each chunk durable once added (FAISS: its log record, fsynced), with a progress bar on stderr.

* :class:`Ingestion` (the command) streams documents (:mod:`~thoughtvec.service.index.inputs`) into an index, new or
  already there: the documents whose ids the index holds are skipped, not embedded, and each chunk is embedded
  while the one before is being written. Stopped anyhow (Ctrl-C, ``kill -9``), the same build run again goes on
  where the index stands: ids decide, so nothing is added twice and nothing acknowledged is lost.
* :func:`fill_index` (the default index) adds to an index in a store (made once its first batch is embedded),
  a small batch first and then larger ones, so the index answers searches seconds after its model is loaded,
  over what is added so far.
  An interrupted fill is resumed at the next start (``resume``: the documents already there are skipped).

The input formats and the id rule: :mod:`~thoughtvec.service.index.inputs`.
"""

from __future__ import annotations

import itertools
import logging
import sys
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING

import numpy as np
from tqdm import tqdm

from thoughtvec.service.index.contents import Doc, IndexConfig
from thoughtvec.service.index.inputs import read_documents as read_documents  # the default index's sample, and the benches'

if TYPE_CHECKING:
    from thoughtvec.service.index.backend import IndexBackend

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
Encode = Callable[[list[str]], np.ndarray]  # texts -> raw vectors (n, dim), in order


class Ingestion:
    """Documents into the index ``name`` of ``store``, ``chunk`` at a time, resumable: run it again on the same
    documents and it adds what the index lacks.

    ``create``: the index is new, made with this config before its first chunk is written (so a build stopped at
    once leaves an index that the next run fills). Else the index exists and its config says what it holds: a
    chunk's documents already in it are skipped (asked of the store only where it held documents when the run
    began). A chunk is embedded with ``encode`` (``encode`` plans its own batches; a lexical-only index is never
    embedded: zero rows fill the vectors' place, as the server's adds to one), then handed to one writer thread
    while the next chunk is read and embedded; at most one write is in flight, and it is waited for whatever stops
    the run, so each chunk is in the index whole or not at all. The counts (``read``, ``added``, ``present``) are
    those of the chunks settled so far, also after an interruption.
    """

    def __init__(
        self,
        store: IndexBackend,
        encode: Encode,
        name: str,
        *,
        create: IndexConfig | None = None,
        chunk: int = 2048,
        total: int | None = None,
        bar: bool = True,
    ):
        self.store, self.encode, self.name, self.create, self.chunk = store, encode, name, create, chunk
        self.total, self.bar = total, bar
        self.config = create or store.config(name)
        self.resume = create is None and store.count(name) > 0
        self.read = self.added = self.present = 0  # documents read; added by this run; skipped, already in the index

    def run(self, docs: Iterable[Doc]) -> Ingestion:
        """Add ``docs`` (read as they are needed); returns itself, its counts final."""
        writing: tuple[Future[list[str]], int] | None = None  # the write in flight, and its chunk's size
        tty = sys.stderr.isatty()
        with (
            ThreadPoolExecutor(1, thread_name_prefix=f"index-{self.name}-write") as writer,
            tqdm(total=self.total, desc=f"index {self.name}", unit="doc", file=sys.stderr, disable=not self.bar,
                 mininterval=1.0 if tty else 30.0, smoothing=0.1, dynamic_ncols=True) as bar,
        ):  # fmt: skip
            try:
                for part in _chunks(docs, self.chunk):
                    todo = self._new(part)
                    vectors = self._embed(todo)  # while the chunk before is being written
                    if writing is not None:
                        self._settled(writing, bar)
                        writing = None
                    self.read += len(part)
                    self.present += len(part) - len(todo)
                    if todo:
                        writing = (writer.submit(self.store.add, self.name, todo, vectors), len(part))
                    else:
                        bar.set_postfix(added=str(self.added), skipped=str(self.present), refresh=False)  # str: tqdm writes 20000 as 2e+4
                        bar.update(len(part))
                if self.create is not None:  # an input without a document: the index, empty
                    self.store.create(self.create)
                    self.create = None
                if writing is not None:
                    self._settled(writing, bar)
                    writing = None
                if bar.total is not None and bar.n < bar.total:
                    bar.total = bar.n  # blank lines and a header counted in the total are not documents
            finally:
                if writing is not None:  # stopped meanwhile: the write goes on to its end (in whole, or not at all)
                    wait([writing[0]])
                    if writing[0].exception() is None:
                        self._settled(writing, bar)
        return self

    def _new(self, part: list[Doc]) -> list[Doc]:
        """The documents of ``part`` the index lacks; the index made first where it is new."""
        if self.create is not None:
            self.store.create(self.create)
            self.create = None
            return part
        if not self.resume:
            return part  # the index was empty when the run began: only this run's own documents are in it
        have = {d.id for d in self.store.documents(self.name, len(part), [d.id for d in part])}
        return [d for d in part if d.id not in have]

    def _embed(self, docs: list[Doc]) -> np.ndarray:
        if not docs or not self.config.embedded:
            return np.zeros((len(docs), self.config.dim), np.float32)
        return self.encode([d.text for d in docs])

    def _settled(self, writing: tuple[Future[list[str]], int], bar: tqdm) -> None:
        """Wait for the write in flight (its error raised here), and count it."""
        future, size = writing
        self.added += len(future.result())
        bar.set_postfix(added=str(self.added), skipped=str(self.present), refresh=False)  # str: tqdm writes 20000 as 2e+4
        bar.update(size)


def _chunks(docs: Iterable[Doc], size: int) -> Iterator[list[Doc]]:
    it = iter(docs)
    while part := list(itertools.islice(it, size)):
        yield part


def fill_index(
    store: IndexBackend,
    encode: Encode,
    name: str,
    docs: list[Doc],
    *,
    first: int = 256,
    chunk: int = 2048,
    resume: bool = False,
    progress: Progress | None = None,
    create: IndexConfig | None = None,
) -> int:
    """Embed ``docs`` with ``encode`` and add them to the index ``name`` of ``store``: ``first`` documents, then
    ``chunk`` at a time, each batch searchable once added. ``create``: the index is new, made with this config once
    the first batch is embedded (so it never answers empty). ``resume``: skip the documents already there (a fill
    interrupted before). Returns how many were added."""
    if create is not None and not docs:
        store.create(create)
    added = 0
    step = max(1, len(docs) // 10)
    next_log = step
    with tqdm(total=len(docs), desc=f"index {name}", unit="sent", file=sys.stderr, mininterval=1.0, disable=None) as bar:
        start = 0
        while start < len(docs):
            part = docs[start : start + (first if start == 0 else chunk)]
            if resume:
                have = {d.id for d in store.documents(name, len(part), [d.id for d in part])}
                part = [d for d in part if d.id not in have]
            if part:
                vectors = encode([d.text for d in part])
                if create is not None and added == 0:
                    store.create(create)
                store.add(name, part, vectors)
                added += len(part)
            start += first if start == 0 else chunk
            done = min(start, len(docs))
            bar.update(done - bar.n)
            if progress:
                progress(done, len(docs))
            if done >= next_log or done == len(docs):
                log.info("index %s: %d/%d sentences embedded and added", name, done, len(docs))
                next_log += step
    return added


def is_filled(store: IndexBackend, name: str, docs: list[Doc]) -> bool:
    """Whether a fill of ``docs`` into ``name`` finished: its last document is there (documents go in in order)."""
    if not docs:
        return True
    last = docs[-1].id
    return any(d.id == last for d in store.documents(name, 1, [last]))
