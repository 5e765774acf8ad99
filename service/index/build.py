"""Bulk index builds: ``thoughtvec index build`` and the default index built on first start.

Both read a document file, embed it with an ``encode`` callable they are given (the command passes
the bundle's ``Encoder``, the server its batcher: this layer knows no model), with a progress bar on
stderr and a log line every 10 %, and install the finished index with one atomic snapshot: an
interrupted build leaves nothing half-made behind. A build starts from the index's config, made (and its
factory checked) by the store that will hold it (``IndexBackend.new_config``), and returns a
:class:`BuiltIndex` (documents and vectors, no backend's structure): each store makes its own index of it.

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

import numpy as np
from tqdm import tqdm

from thoughtvec.service.index.contents import BuiltIndex, Doc, IndexConfig

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
    ``chunk`` texts at a time (it plans its own batches), then progress is reported.
    """
    seen: set[str] = set()
    for d in docs:
        if d.id in seen:
            raise ValueError(f"document id {d.id!r} appears twice")
        seen.add(d.id)
    name = config.name
    vectors = np.zeros((len(docs), config.dim), np.float32)
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
