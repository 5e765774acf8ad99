"""Bulk index builds: ``thoughtvec index build`` and the default index built on first start.

Both read a document file and embed it with an ``encode`` callable they are given (the command passes
the bundle's ``Encoder``, the server its batcher: this layer knows no model), with a progress bar on
stderr and a log line every 10 %.

* :func:`build_index` (the command) starts from the index's config, made (and its factory checked) by the store
  that will hold it (``IndexBackend.new_config``), and returns a :class:`BuiltIndex` (documents and vectors, no
  backend's structure) that a store installs with one atomic snapshot: an interrupted build leaves nothing half-made.
* :func:`fill_index` (the default index) adds to an index in a store (made once its first batch is embedded),
  a small batch first and then larger ones, so the index answers searches seconds after its model is loaded,
  over what is added so far.
  An interrupted fill is resumed at the next start (``resume``: the documents already there are skipped).

Input formats, chosen by extension (``.gz`` is decompressed first):

* ``.txt``   one text per line; ids are line numbers (1-based)
* ``.tsv``   ``[source<TAB>]text``: the last column is the text, a first one is kept as
  ``metadata.source`` (the corpus sample's format); ids are line numbers
* ``.jsonl`` one object per line: ``{"text": ..., "id"?: ..., "metadata"?: {...}}``

Blank lines and blank texts are skipped.
"""

from __future__ import annotations

import gzip
import json
import logging
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tqdm import tqdm

from thoughtvec.service.index.contents import BuiltIndex, Doc, IndexConfig

if TYPE_CHECKING:
    from thoughtvec.service.index.backend import IndexBackend

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]
Encode = Callable[[list[str]], np.ndarray]  # texts -> raw vectors (n, dim), in order


def read_documents(path: str | Path, limit: int | None = None) -> list[Doc]:
    """Documents from a .txt / .tsv / .jsonl file (optionally .gz), at most ``limit``."""
    path = Path(path)
    suffixes = [s.lower() for s in path.suffixes]
    kind = suffixes[-2] if suffixes and suffixes[-1] == ".gz" and len(suffixes) > 1 else (suffixes[-1] if suffixes else "")
    if kind not in (".txt", ".tsv", ".jsonl"):
        raise ValueError(f"{path}: unknown format {kind or '(no extension)'}; use .txt, .tsv or .jsonl (optionally .gz)")
    opener = gzip.open if suffixes and suffixes[-1] == ".gz" else open
    docs: list[Doc] = []
    with opener(path, "rt", encoding="utf-8") as f:
        for _lineno, doc in _parse(f, kind, path):
            if doc.text.strip():
                docs.append(doc)
                if limit is not None and len(docs) >= limit:
                    break
    return docs


def _parse(lines, kind: str, path: Path) -> Iterator[tuple[int, Doc]]:
    for lineno, line in enumerate(lines, 1):
        line = line.rstrip("\n")
        if not line.strip():
            continue
        if kind == ".jsonl":
            try:
                r = json.loads(line)
                yield lineno, Doc(str(r.get("id", lineno)), str(r["text"]), r.get("metadata"))
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                raise ValueError(f'{path}:{lineno}: not a {{"text": ...}} object ({e})') from None
        elif kind == ".tsv":
            cols = line.split("\t")
            yield lineno, Doc(str(lineno), cols[-1], {"source": cols[0]} if len(cols) > 1 else None)
        else:
            yield lineno, Doc(str(lineno), line)


def build_index(encode: Encode, config: IndexConfig, docs: list[Doc], *, chunk: int = 2048, progress: Progress | None = None) -> BuiltIndex:
    """Embed ``docs`` with ``encode`` (texts -> raw vectors ``(n, config.dim)``): the index to install (not yet in any store).

    ``config``'s model, view, dim and fingerprint describe what ``encode`` produces. ``encode`` is called on
    ``chunk`` texts at a time (it plans its own batches), then progress is reported. A lexical-only index
    (``config.embedded`` false) is never embedded: BM25 needs the words alone, and zero rows fill the vectors' place
    (as the server's adds to one).
    """
    seen: set[str] = set()
    for d in docs:
        if d.id in seen:
            raise ValueError(f"document id {d.id!r} appears twice")
        seen.add(d.id)
    name = config.name
    vectors = np.zeros((len(docs), config.dim), np.float32)
    if not config.embedded:
        log.info("index %s: %d documents, lexical-only (not embedded)", name, len(docs))
        return BuiltIndex(config, docs, vectors)
    step = max(1, len(docs) // 10)
    next_log = step
    with tqdm(total=len(docs), desc=f"index {name}", unit="sent", file=sys.stderr, mininterval=1.0, disable=None) as bar:
        for start in range(0, len(docs), chunk):
            part = docs[start : start + chunk]
            vectors[start : start + len(part)] = encode([d.text for d in part])
            done = start + len(part)
            bar.update(len(part))
            if progress:
                progress(done, len(docs))
            if done >= next_log or done == len(docs):
                log.info("index %s: %d/%d sentences embedded", name, done, len(docs))
                next_log += step
    return BuiltIndex(config, docs, vectors)


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
