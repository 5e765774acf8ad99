"""The indexes themselves, without HTTP: the store taken, loaded and closed; each index's readiness; an index made,
dropped, listed and described; and the default index, built on first start from the search sample.

A new index's model, view and mode follow the dev rule where the request names none (:meth:`IndexAdmin.new_index_search`).
The default index is built in the background as soon as its own model is loaded, a small batch first, so that it
answers searches within seconds over the documents added so far; until then a search of it is a 503 with its
progress (``IndexState.building``), never a 404.
"""

from __future__ import annotations

import asyncio
import logging

import numpy as np

from thoughtvec.service.core.index_state import IndexState, check_mode, default_search_mode
from thoughtvec.service.core.registry import Model
from thoughtvec.service.core.results import IndexListing, IndexStats
from thoughtvec.service.errors import Conflict, NotReady
from thoughtvec.service.index.backend import IndexBackend
from thoughtvec.service.index.build import fill_index, is_filled, read_documents
from thoughtvec.service.index.contents import Doc, IndexConfig, Metric, NewIndex
from thoughtvec.service.settings import SearchMode

log = logging.getLogger(__name__)


class IndexAdmin:
    """Every index in the store as a whole: its lifecycle, its making and dropping, what is said of it."""

    def __init__(self, state: IndexState):
        self.state = state
        self.settings = state.settings
        self.embedding = state.embedding

    @property
    def store(self) -> IndexBackend:
        return self.state.store

    @property
    def building(self) -> dict[str, str]:
        """name -> progress, for the indexes being built in the background (the default index)."""
        return self.state.building

    # -- lifecycle -----------------------------------------------------------------------
    def open(self) -> None:
        """Take the store for this process now (a FAISS folder's lock: a second writer is refused here, at start-up,
        with :class:`~thoughtvec.service.errors.IndexFolderLocked`); quick, so on the event loop."""
        self.store.open()

    async def load(self) -> None:
        """Load every index the store holds (a broken one is quarantined, never fatal)."""
        await self.state.run(self.store.load_all)

    async def close(self) -> None:
        await self.state.run(self.store.close)

    def readiness(self) -> tuple[dict[str, str], list[str]]:
        """Each index's state (ready, building with its progress, or quarantined with why), and the indexes being
        built that no search can use yet (the default index before its first documents are in)."""
        store = self.store
        names = store.names()
        states = (
            {n: "ready" for n in names}
            | {n: f"building: {p}" for n, p in self.building.items()}
            | {n: f"quarantined: {why}" for n, why in store.quarantined.items()}
        )
        return states, [n for n in self.building if n not in names]

    # -- making, dropping, describing ----------------------------------------------------
    def new_index_search(self, model: str | None, view: str | None, mode: SearchMode | None) -> tuple[Model, str, SearchMode]:
        """A new index's model, view and default mode: those named, the others by the dev rule
        (the model OpenAI's names get, the model guide's ``retrieval_models``, when none is named; the mode that
        scored best on dev for the model, of those the backend serves: ``index_state.default_search_mode``)."""
        if mode is not None:
            check_mode(self.store.capabilities, mode)
        if model is None:
            model = self.embedding.registry.retrieval_model
        m = self.embedding.model(model)  # None: the server's default model
        modes = self.store.capabilities.modes
        return m, m.encoder.view(view), mode or default_search_mode(self.state.guide, m.name, m.encoder.fingerprint(), modes)

    async def create_index(
        self,
        *,
        name: str,
        model: str | None = None,
        view: str | None = None,
        mode: SearchMode | None = None,
        factory: str | None = None,
        metric: Metric = "cosine",
        normalize: bool = True,
        train_size: int | None = None,
    ) -> IndexStats:
        """A new empty index for one model's view, searched in ``mode`` unless a search names another. Named
        ``mode`` ``lexical``, it is lexical-only: its documents are not embedded (BM25 alone, no model runs); a
        lexical mode chosen by the dev rule (no ``mode`` named) keeps the vectors, for dense search on request."""
        self.state.writable()
        m, view, searched = self.new_index_search(model, view, mode)
        if name in self.building:
            raise Conflict(f"index '{name}' already exists (it is being built)", field="name")
        new = NewIndex(
            name=name,
            model=m.name,
            view=view,
            dim=m.encoder.dim(view),
            factory=factory,
            metric=metric,
            normalize=normalize,
            train_size=train_size,
            fingerprint=m.encoder.fingerprint(view),
            mode=searched,
            embedded=mode != "lexical",  # lexical named: lexical-only, no model runs for its documents
        )
        await self.state.run(self.store.create, self.store.new_config(new))
        return self.index_stats(name)

    async def drop_index(self, name: str) -> None:
        self.state.not_building(name)
        self.state.writable()
        await self.state.run(self.store.drop, name)

    def index_stats(self, name: str) -> IndexStats:
        self.state.searchable(name)
        return self.store.stats(name)

    def list_indexes(self) -> IndexListing:
        return IndexListing([self.store.stats(n) for n in self.store.names()], dict(self.building), dict(self.store.quarantined))

    # -- the default index ---------------------------------------------------------------
    def expect_default_index(self) -> None:
        """Mark the default index as coming (503 with its progress, never 404) until :meth:`ensure_default_index`
        has found it or built it: called before anything loads."""
        s = self.settings
        if self._builds_default_index() and s.search_sample.is_file():
            self.building.setdefault(s.default_index, "loading the indexes")

    async def default_index_needed(self) -> bool:
        """Whether :meth:`ensure_default_index` would build or resume the default index (after :meth:`load`): the
        supervisor of several workers loads the models to build it only then."""
        s = self.settings
        return self._builds_default_index() and s.search_sample.is_file() and not (await self._default_index_state())[2]

    async def ensure_default_index(self) -> None:
        """Build the default search index on first start, in the background, if it can and must: as soon as its own
        model is loaded (not every model), a small batch first, so that it answers searches within seconds over the
        documents added so far; an interrupted build goes on where it stopped at the next start."""
        s = self.settings
        name = s.default_index
        if not self._builds_default_index() or not s.search_sample.is_file():
            if not s.search_sample.is_file() and self._builds_default_index():
                log.info("default index '%s' not built: no sample at %s", name, s.search_sample)
            self.building.pop(name, None)
            return
        self.building[name] = "reading the sample"
        try:
            exists, docs, filled = await self._default_index_state()
            if not filled:
                await self._fill_default_index(name, exists, docs)
        except Exception as e:  # noqa: BLE001 - the server runs on without it
            log.error("default index '%s' not built: %s", name, e)
        finally:
            self.building.pop(name, None)

    async def _fill_default_index(self, name: str, exists: bool, docs: list[Doc]) -> None:
        """Embed the sample's ``docs`` into the default index (made with the first batch, or gone on with where
        it ``exists``), through the batcher on the loop; each batch searchable once added."""
        s, store, loop = self.settings, self.store, asyncio.get_running_loop()
        made = await self.state.run(store.config, name) if exists else None
        model, view, mode = await self._default_index_model(name, made)
        new = NewIndex(name, model.name, view, model.encoder.dim(view), fingerprint=model.encoder.fingerprint(view), mode=mode)
        config = None if exists else store.new_config(new)
        where = s.index_dir if s.index_backend == "faiss" else s.milvus_uri
        log.info(
            "%s default index '%s' from %d sentences of %s with %s/%s, searched %s (searchable as it grows; kept in %s)",
            "resuming" if exists else "building",
            name,
            len(docs),
            s.search_sample,
            model.name,
            view,
            mode,
            where,
        )

        def progress(done: int, total: int) -> None:
            self.building[name] = f"{done}/{total} sentences embedded" + ("; searchable over those" if done else ": the first batch")

        def encode(texts: list[str]) -> np.ndarray:  # on an executor thread: through the batcher on the loop
            return asyncio.run_coroutine_threadsafe(self.embedding.embed_bulk(model, view, texts), loop).result()

        progress(0, len(docs))
        await loop.run_in_executor(None, lambda: fill_index(store, encode, name, docs, resume=exists, progress=progress, create=config))
        log.info("default index '%s' ready: %d documents", name, len(docs))

    async def _default_index_state(self) -> tuple[bool, list[Doc], bool]:
        """(in the store, the sample's documents, all of them in it) for the default index."""
        s, run = self.settings, self.state.run
        exists = await run(self.store.__contains__, s.default_index)
        docs = await run(read_documents, s.search_sample, s.default_index_max_docs)
        return exists, docs, exists and await run(is_filled, self.store, s.default_index, docs)

    def _builds_default_index(self) -> bool:
        """Whether this server builds the default index where it is missing: asked to, and writing its store."""
        return self.settings.build_default_index and not self.settings.index_read_only

    async def _default_index_model(self, name: str, made: IndexConfig | None) -> tuple[Model, str, SearchMode]:
        """The default index's model, view and mode (by the dev rule; those it was ``made`` with when a stopped build
        goes on, 409 if its bundle is no longer that export), once that model is loaded and warmed (the others may
        still be loading); a model that will never load raises."""
        while True:
            try:
                if made is not None:
                    return self.state.index_model(name, made), made.view, made.mode
                return self.new_index_search(None, None, None)
            except NotReady as e:
                if self.embedding.registry.started:  # every bundle loaded or failed: it will not come
                    raise
                self.building[name] = f"waiting for its model ({e})"
                await asyncio.sleep(0.1)
