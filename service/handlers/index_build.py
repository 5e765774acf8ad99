"""``thoughtvec index build``: a file of documents embedded into an index, resumable (its parser: ``service/cli.py``).

The documents stream from the file (``thoughtvec.service.index.inputs``: the formats and the id rule) through the
embedding service's batcher, in this process (the server's batching: its planner and concurrent runs), into the index,
a chunk at a time, each chunk durable once written (``thoughtvec.service.index.build.Ingestion``: the next chunk is
embedded while one is written). The index may exist already: its model, view, factory, metric and mode must then be
those asked for, and the documents whose ids it holds are skipped, so the same command run again after an
interruption (Ctrl-C, ``kill -9``) goes on where the index stands.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import threading
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from thoughtvec.service.bundle.fingerprint import fingerprint
from thoughtvec.service.bundle.format import Bundle, load_bundle
from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.index_state import check_mode, default_search_mode
from thoughtvec.service.core.metrics import Metrics
from thoughtvec.service.core.registry import WARMUP_TEXTS, Model
from thoughtvec.service.errors import IndexFolderLocked, ThoughtvecError, UnknownView
from thoughtvec.service.handlers.index_list import index_settings, where_stored
from thoughtvec.service.index.backend import IndexBackend, open_backend
from thoughtvec.service.index.build import Ingestion
from thoughtvec.service.index.contents import IndexConfig, NewIndex
from thoughtvec.service.index.inputs import MetadataLimits, count_documents, input_format, iter_documents
from thoughtvec.service.index.search_settings import SearchSettings
from thoughtvec.service.model_guide import Guide
from thoughtvec.service.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")


class Embedder:
    """One bundle served by an :class:`EmbeddingService` (loaded and batched as the server does it: its planner, its
    concurrent runs) on an event loop of its own thread, warmed on the one ``view`` the build embeds (the server warms
    every view); :meth:`encode` is called from the build's thread."""

    def __init__(self, settings: Settings, bundle: Path, view: str):
        self.view = view
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="thoughtvec-embedding", daemon=True)
        self.thread.start()
        self.service = EmbeddingService(settings.model_copy(update={"warmup": False}), Metrics())  # warmed below, one view
        self.service.registry.bundles = [bundle]  # this bundle alone, whatever lies beside it
        try:
            self.call(self.service.start())
            models = list(self.service.registry.models.values())
            if not models:
                why = next(iter(self.service.registry.failed.values()), "it could not be loaded")
                raise ValueError(f"model {bundle}: {why}")
            self.model: Model = models[0]
            if settings.warmup:
                self.call(self.model.batcher.warm_up(view, WARMUP_TEXTS))
                if settings.batch_planning == "cost":
                    self.call(self.model.batcher.calibrate(view, WARMUP_TEXTS))
        except BaseException:
            self.close()
            raise

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the service's loop and wait for it; an interruption here cancels it."""
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()
            raise

    def encode(self, texts: list[str]) -> np.ndarray:
        """Raw vectors of the view for a chunk's texts: long ones split and pooled, as the server's bulk adds do."""
        return self.call(self.service.embed_bulk(self.model, self.view, texts))

    def close(self) -> None:
        if self.loop.is_running():
            asyncio.run_coroutine_threadsafe(self.service.stop(), self.loop).result()
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join()
        self.loop.close()


def cmd_index_build(args: argparse.Namespace) -> int:
    ours, level = logging.getLogger("thoughtvec"), logging.getLogger("thoughtvec").level
    if args.quiet:  # the summary line alone: scripts read it
        ours.setLevel(logging.WARNING)
    store: IndexBackend | None = None
    embedder: Embedder | None = None
    job: Ingestion | None = None
    try:
        settings = index_settings(args, max_batch_size=args.batch_size)
        folder = Path(args.model) if Path(args.model).is_dir() else (args.models_dir or settings.models_dir) / args.model
        input_format(args.input)  # an unknown format is refused before anything is loaded
        if not args.input.is_file():
            raise ValueError(f"{args.input}: no such file")
        bundle = load_bundle(folder)  # its spec and files: enough to check an index against, before its model loads
        guide = Guide.load(folder.parent)  # the dev choices of the bundles beside this one: its default mode, the BM25 half
        store = _open_store(settings, guide)  # refused now where another process holds it, before anything is loaded
        where = where_stored(settings) if store.capabilities.shared else Path(settings.index_dir) / args.name
        config, create = _target(args, store, bundle, guide)
        if config.embedded:  # a lexical-only index runs no model
            embedder = Embedder(settings.model_copy(update={"models_dir": folder.parent}), folder, config.view)
        _announce(args, store, config, create is not None)
        encode = embedder.encode if embedder is not None else _no_model
        job = Ingestion(store, encode, args.name, create=create, chunk=args.chunk, total=_total(args), bar=not args.quiet)
        limits = MetadataLimits(settings.max_metadata_bytes, settings.max_metadata_depth)
        started = time.perf_counter()
        job.run(iter_documents(args.input, args.limit, metadata=limits))
        count = store.count(args.name)
        store.close()  # a FAISS index folded into its snapshot: part of the build's time
        store, seconds = None, time.perf_counter() - started
    except KeyboardInterrupt:
        added = f"{job.added} documents added" if job else "nothing added"
        print(f"thoughtvec index build: interrupted ({added}); run the same command again to go on", file=sys.stderr)
        return 130
    except (ThoughtvecError, IndexFolderLocked, ValueError, OSError) as e:
        print(f"thoughtvec index build: {getattr(e, 'message', e)}{_so_far(job)}", file=sys.stderr)
        return 1
    finally:
        if embedder is not None:
            embedder.close()
        if store is not None:
            store.close()  # a FAISS index folded into its snapshot
        ours.setLevel(level)
    rate = f" in {seconds:.1f} s, {job.added / seconds:.0f} documents/s" if job.added else ""
    print(
        f"index '{args.name}': {job.added} documents added ({job.present} already there){rate}; {count} documents, "
        f"{config.factory} {config.metric}, model {config.model}/{config.view} (dim {config.dim}), searched {config.mode} -> {where}"
    )
    return 0


def _total(args: argparse.Namespace) -> int | None:
    """The progress bar's total, where the file says it cheaply (``count_documents``); none for a quiet run."""
    total = None if args.quiet else count_documents(args.input)
    return min(total, args.limit) if total is not None and args.limit is not None else total


def _announce(args: argparse.Namespace, store: IndexBackend, config: IndexConfig, new: bool) -> None:
    log.info(
        "index %s%s: documents from %s, model %s view %s, searched %s%s",
        args.name,
        "" if new else f" ({store.count(args.name)} documents)",
        args.input,
        config.model,
        config.view,
        config.mode,
        "" if config.embedded else " (lexical-only: not embedded)",
    )


def _no_model(texts: list[str]) -> np.ndarray:
    raise AssertionError("a lexical-only index embeds nothing")


def _open_store(settings: Settings, guide: Guide) -> IndexBackend:
    """The store the settings name as a bulk build's (``open_backend``'s ``bulk``: FAISS searches nothing here, so it
    keeps no BM25 half or GPU copy, and folds its log seldom), taken for this command until it ends (a FAISS folder:
    its lock)."""
    store = open_backend(settings, search=SearchSettings.of(guide), bulk=True)
    store.open()
    return store


def _so_far(job: Ingestion | None) -> str:
    """What a failed run leaves: the chunks written before it stay, and the same command goes on from them."""
    if job is None or not job.added:
        return ""
    return f" ({job.added} documents were added before it: fix it and run the same command again to go on)"


def _target(args: argparse.Namespace, store: IndexBackend, bundle: Bundle, guide: Guide) -> tuple[IndexConfig, IndexConfig | None]:
    """(the index's config, the same where it is to be made, else None): an index of that name is added to where it was
    made as asked (refused otherwise), or dropped first with ``--overwrite``; a new one is checked before anything is
    embedded (its mode served by the backend, its factory one the backend builds). All from the bundle's files: no
    model is loaded yet."""
    spec = bundle.spec
    exists = store.load(args.name)
    if exists and args.overwrite:
        store.drop(args.name)
        exists = False
    if exists:
        config = store.config(args.name)
        _check_same(config, args, spec.name, fingerprint(bundle, config.view) if config.view in spec.views else "")
        return config, None
    view = args.view or spec.default_view
    if view not in spec.views:
        raise UnknownView(f"model '{spec.name}' has no view '{view}'; its views are {sorted(spec.views)}", field="view")
    mode = args.mode or default_search_mode(guide, spec.name, fingerprint(bundle, spec.default_view), store.capabilities.modes)
    check_mode(store.capabilities, mode)
    new = NewIndex(
        name=args.name,
        model=spec.name,
        view=view,
        dim=spec.views[view].dim,
        factory=args.factory,
        metric=args.metric or "cosine",
        normalize=args.normalize is not False,
        fingerprint=fingerprint(bundle, view),
        mode=mode,
        embedded=args.mode != "lexical",  # named, as by a POST /v1/indexes: lexical-only, no model runs for its documents
    )
    config = store.new_config(new)  # a factory the store cannot build: refused here
    return config, config


def _check_same(config: IndexConfig, args: argparse.Namespace, model: str, fingerprint: str) -> None:
    """Refuse to add to an index made otherwise than this build asks: another model (or another export of it: its
    fingerprint), view, factory, metric, normalisation or mode. What the build leaves unnamed is the index's."""
    asked = {
        "model": model,
        "view": args.view,
        "factory": args.factory,
        "metric": args.metric,
        "normalize": args.normalize,
        "mode": args.mode,
    }
    differ = [f"{k} {getattr(config, k)} (this build: {v})" for k, v in asked.items() if v is not None and getattr(config, k) != v]
    if not differ and config.embedded and config.fingerprint and fingerprint != config.fingerprint:
        differ = [f"vectors of another export of {model} (fingerprint {config.fingerprint}; this bundle's is {fingerprint or 'unknown'})"]
    if differ:
        raise ValueError(
            f"index '{config.name}' exists with {'; '.join(differ)}. A build adds to an index only as it was made: "
            f"name another index (--name), or replace this one (--overwrite)"
        )
