"""What the index services share: the store, the indexes being built here, and the checks every request makes of an
index before any work (it exists and answers, its model is the export of its vectors, it may be written, the
backend serves the mode asked).

The store (:func:`thoughtvec.service.index.backend.open_backend`: FAISS or Milvus) is known here only through the
:class:`~thoughtvec.service.index.backend.IndexBackend` contract. Its calls block (disk, FAISS, network): the
services run them on the executor (:meth:`IndexState.run`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.registry import Model
from thoughtvec.service.errors import Conflict, IndexesReadOnly, InvalidInput, NotReady
from thoughtvec.service.index.backend import IndexBackend, open_backend
from thoughtvec.service.index.contents import Capabilities, IndexConfig
from thoughtvec.service.index.fusion import Fusion
from thoughtvec.service.index.search_settings import FALLBACK_FUSION, SearchSettings
from thoughtvec.service.model_guide import Guide
from thoughtvec.service.settings import SearchMode, Settings


def default_search_mode(guide: Guide, model: str, fingerprint: str, modes: tuple[SearchMode, ...]) -> SearchMode:
    """A new index's mode when its creator names none: hybrid over a bundle whose hybrid beat BM25 alone on dev (the
    guide's ``hybrid_models``, measured on this very bundle), lexical over any other (on dev, each trained-here bundle's
    hybrid falls below BM25 alone, and an unmeasured one's is unknown); dense where the backend (``modes``) has nothing
    else."""
    best: SearchMode = "hybrid" if guide.hybrid(model, fingerprint) else "lexical"
    return best if best in modes else "dense"


def check_mode(capabilities: Capabilities, mode: SearchMode) -> None:
    """A 422 naming ``mode`` where the backend does not serve it, with the backend's reason: the one place a mode is
    held to what the backend can do (a new index's, a search's, ``thoughtvec index build --mode``)."""
    if mode not in capabilities.modes:
        raise InvalidInput(
            f"mode '{mode}' is not available with index_backend={capabilities.backend}: {capabilities.unserved}", field="mode"
        )


class IndexState:
    """The store and what the index services read of it together."""

    def __init__(self, settings: Settings, embedding: EmbeddingService):
        self.settings = settings
        self.embedding = embedding
        self.guide = embedding.registry.guide
        self.search_settings = SearchSettings.of(self.guide)  # the lexical halves' analyser and BM25, hybrid's fusion
        self.store: IndexBackend = open_backend(settings, on_size=embedding.metrics.index_documents, search=self.search_settings)
        self.building: dict[str, str] = {}  # name -> progress, for indexes being built in the background (the default)

    def fusion(self, config: IndexConfig) -> Fusion:
        """How a hybrid search of an index fuses: the guide's fusion where the index's vectors are those of a bundle it
        measured (its default view, the same export), else the fallback."""
        measured = config.fingerprint and self.guide.measured(config.model, config.fingerprint)
        return self.search_settings.fusion if measured else FALLBACK_FUSION

    @staticmethod
    async def run(fn: Callable[..., Any], *args: Any) -> Any:
        """A blocking store call, on the executor."""
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    def searchable(self, name: str) -> None:
        """503 for an index being built that the store does not hold yet (the default index before its first batch is
        in); once it does, it answers over the documents added so far."""
        if name in self.building and name not in self.store:
            raise NotReady(f"index '{name}' is being built ({self.building[name]})", field="index")

    def config(self, name: str) -> IndexConfig:
        """Index ``name``'s config: 503 until a building index holds its first documents, else as the store answers
        (404, 503 quarantined)."""
        self.searchable(name)
        return self.store.config(name)

    def not_building(self, name: str) -> None:
        """503 for an index still being built here (dropping it mid-build)."""
        if name in self.building:
            raise NotReady(f"index '{name}' is being built ({self.building[name]})", field="index")

    def writable(self) -> None:
        """Refuse a write before any work where this process may not write its indexes (``workers`` over a folder)."""
        why = self.store.capabilities.read_only
        if why is not None:
            raise IndexesReadOnly(why, field="index")

    def index_model(self, name: str, config: IndexConfig) -> Model:
        """The model that embeds texts for index ``name``: 409 if its bundle is not the export the index's
        vectors came from (a re-exported bundle keeps its name but not its vectors; mixing the two would
        rank by numbers that mean nothing). Indexes made before fingerprints were kept are not checked."""
        model = self.embedding.model(config.model, field_name="index")
        now = model.encoder.fingerprint(config.view)
        if config.fingerprint and config.fingerprint != now:
            raise Conflict(
                f"index '{name}' holds vectors of an earlier export of model '{config.model}' (view '{config.view}', "
                f"fingerprint {config.fingerprint}; the loaded bundle's is {now}), so new queries and documents would not "
                "be comparable with them: drop the index and add its documents again, or serve the bundle it was made with"
                + (" (the default index is built again from the sample at the next start)" if name == self.settings.default_index else ""),
                field="index",
            )
        return model
