"""Bulk index builds: ``thoughtvec index build`` and the default index built on first start.

Both read a document file, embed it with the bundle's :class:`~service.core.encoder.Encoder` in
length-sorted batches (a progress bar on stderr, a log line every 10 %), and install the finished
index with one atomic snapshot: an interrupted build leaves nothing half-made behind.

Input formats, chosen by extension (``.gz`` is decompressed first):

* ``.txt``   one text per line; ids are line numbers (1-based)
* ``.tsv``   ``[source<TAB>]text``: the last column is the text, a first one is kept as
  ``metadata.source`` (the corpus sample's format); ids are line numbers
* ``.jsonl`` one object per line: ``{"text": ..., "id"?: ..., "metadata"?: {...}}``

Blank lines and blank texts are skipped.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import logging
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from tqdm import tqdm

from service.core.encoder import Encoder
from service.index.indexes import Doc, Metric, VectorIndex, new_config

if TYPE_CHECKING:
    from service.core.engine import Core

log = logging.getLogger(__name__)

Progress = Callable[[int, int], None]


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
        for lineno, doc in _parse(f, kind, path):
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
                raise ValueError(f"{path}:{lineno}: not a {{\"text\": ...}} object ({e})") from None
        elif kind == ".tsv":
            cols = line.split("\t")
            yield lineno, Doc(str(lineno), cols[-1], {"source": cols[0]} if len(cols) > 1 else None)
        else:
            yield lineno, Doc(str(lineno), line)


def build_index(
    encoder: Encoder, name: str, docs: list[Doc], *, view: str | None = None, factory: str = "Flat",
    metric: Metric = "cosine", normalize: bool = True, batch_size: int = 128, progress: Progress | None = None,
) -> VectorIndex:
    """Embed ``docs`` and return the filled index (not yet on disk)."""
    view = encoder.view(view)
    seen: set[str] = set()
    for d in docs:
        if d.id in seen:
            raise ValueError(f"document id {d.id!r} appears twice")
        seen.add(d.id)
    vi = VectorIndex(new_config(name, encoder.name, view, encoder.dim(view), factory, metric, normalize))
    vectors = np.zeros((len(docs), vi.config.dim), np.float32)
    chunk = batch_size * 16  # a chunk sorts its own lengths (Encoder.encode), then reports progress
    step = max(1, len(docs) // 10)
    next_log = step
    with tqdm(total=len(docs), desc=f"index {name}", unit="sent", file=sys.stderr, mininterval=1.0, disable=None) as bar:
        for start in range(0, len(docs), chunk):
            part = docs[start : start + chunk]
            vectors[start : start + len(part)] = encoder.encode([d.text for d in part], view, normalize=False, truncation="split", batch_size=batch_size)
            done = start + len(part)
            bar.update(len(part))
            if progress:
                progress(done, len(docs))
            if done >= next_log or done == len(docs):
                log.info("index %s: %d/%d sentences embedded", name, done, len(docs))
                next_log += step
    vi.add(docs, vectors, list(range(len(docs))))
    return vi


async def ensure_default_index(core: "Core") -> None:
    """Build the default search index on first start, in the background, if it can and must."""
    s = core.settings
    name = s.default_index
    if not s.build_default_index or name in core.store:
        return
    if not s.search_sample.is_file():
        log.info("default index '%s' not built: no sample at %s", name, s.search_sample)
        return
    model_name = core.registry.default_model
    model = core.registry.models.get(model_name) if model_name else None
    if model is None:
        log.info("default index '%s' not built: no default model loaded", name)
        return
    loop = asyncio.get_running_loop()
    core.store.building[name] = "reading the sample"
    try:
        docs = await loop.run_in_executor(None, read_documents, s.search_sample, s.default_index_max_docs)
        log.info("building default index '%s' from %d sentences of %s with %s (cached in %s afterwards)", name, len(docs), s.search_sample, model.name, s.index_dir)

        def progress(done: int, total: int) -> None:
            core.store.building[name] = f"{done}/{total} sentences embedded"

        vi = await loop.run_in_executor(None, lambda: build_index(model.encoder, name, docs, progress=progress))
        core.store.building[name] = "writing"
        await loop.run_in_executor(None, core.store.install, vi)
        log.info("default index '%s' ready: %d documents", name, vi.count)
    except Exception as e:  # noqa: BLE001 - the server runs on without it
        log.error("default index '%s' not built: %s", name, e)
    finally:
        core.store.building.pop(name, None)
