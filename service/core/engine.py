"""The service without HTTP: an embedding service, the index services and a generation service over it (the bundles'
decoders: ``core.generation``), started and stopped together.

:class:`Core` is what the app holds. Routes call the service they need (``core.embedding`` for models,
embeddings, similarity, rerank, tokenize and info; ``core.indexes`` for index management, ``core.search`` for
search and the map, ``core.ingest`` for documents added and deleted: ``core.indexing``; ``core.sparse`` for BM25's
sparse vectors), serialise what it returns, and never reach past it; tests call the services directly too.
"""

from __future__ import annotations

import asyncio
import gc
import logging

from thoughtvec.service.core import memory
from thoughtvec.service.core.catalog import Catalog
from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.encoder import available_providers
from thoughtvec.service.core.generation import GenerationService
from thoughtvec.service.core.indexing import IndexServices
from thoughtvec.service.core.metrics import Metrics, merge_expositions
from thoughtvec.service.core.runtime import openvino_version
from thoughtvec.service.core.scoring import ScoringService
from thoughtvec.service.core.sparse import SparseService
from thoughtvec.service.core.worker_group import PUBLISH_EVERY_S, WorkerGroup
from thoughtvec.service.settings import Settings

log = logging.getLogger(__name__)


class Core:
    def __init__(self, settings: Settings, metrics: Metrics | None = None, group: WorkerGroup | None = None):
        self.settings = settings
        self.metrics = metrics or Metrics()
        self.group = group  # the other worker processes on this port, where there are (settings.workers)
        self.embedding = EmbeddingService(settings, self.metrics)
        self.catalog = Catalog(self.embedding, self.devices)  # what is served: /v1/models, /info, /tokenize
        # the index services, over one store: its lifecycle and the indexes themselves, search, documents in and out
        self.indexes, self.search, self.ingest = IndexServices.over(settings, self.embedding)
        self.scoring = ScoringService(self.embedding, self.search.state.search_settings)  # similarity and rerank (BM25 as indexes)
        self.sparse = SparseService(settings, self.search.state.search_settings)  # BM25's sparse vectors: POST /embed_sparse
        self.generation = GenerationService(self.embedding, settings.ort_threads or None)  # the decoders: POST /v1/generate
        self._tasks: list[asyncio.Task] = []

    async def start(self, settle: bool = False) -> None:
        """Load indexes, then models (warm-up) while the default index is built (if it is missing) as soon as its
        own model is loaded; then, with ``settle``, :func:`settle_heap`. Large buffers go back to the system when freed
        from the first (``memory.configure``)."""
        memory.configure()
        log.info("devices: %s", self.devices())
        self.indexes.expect_default_index()
        await self.indexes.load()
        await self.start_models()
        if settle:
            settle_heap()

    async def start_models(self) -> None:
        """The models (warm-up), and the default index built as soon as its own model is loaded (if it is missing);
        the indexes already loaded."""
        async with asyncio.TaskGroup() as tasks:  # a failed start cancels the build
            tasks.create_task(self.embedding.start())
            tasks.create_task(self.indexes.ensure_default_index())

    def start_background(self, settle: bool = False) -> None:
        """:meth:`start` in a task of its own: the server answers meanwhile (``/health``; ``/ready`` says when). The
        index store is taken first, here: a folder another process holds stops the start-up (``IndexFolderLocked``)."""
        self.indexes.open()
        self.indexes.expect_default_index()  # before the first request: a search of it is a 503 until it is there
        task = asyncio.get_running_loop().create_task(self.start(settle), name="thoughtvec-start")

        def report(t: asyncio.Task) -> None:
            if not t.cancelled() and t.exception() is not None:
                log.error("start-up failed: %r", t.exception())

        task.add_done_callback(report)
        self._tasks.append(task)
        if self.group is not None:
            self._tasks.append(asyncio.get_running_loop().create_task(self._publish_every(PUBLISH_EVERY_S), name="thoughtvec-publish"))

    async def _publish_every(self, seconds: float) -> None:
        """This worker's readiness and metrics for the others' /ready and /metrics, while it runs."""
        loop = asyncio.get_running_loop()
        while True:
            ok, _ = self._own_readiness()
            data, _ = self.metrics.exposition()  # on the loop, where the series are updated
            await loop.run_in_executor(None, self.group.publish, ok, data)  # type: ignore[union-attr]
            await asyncio.sleep(seconds)

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            try:
                await t
            except (asyncio.CancelledError, Exception):  # noqa: BLE001 - already logged
                pass
        await self.embedding.stop()
        await self.indexes.close()

    def devices(self) -> dict:
        """What runs where: ONNX Runtime's providers on this machine, OpenVINO's version (None: not installed; each
        model's ``runtime`` says whether it runs there), the index backend's GPUs (FAISS's; none of ours with Milvus) and
        whether indexes are searched there (its capabilities)."""
        caps = self.indexes.store.capabilities
        return {
            "onnxruntime_providers": available_providers(self.settings.prefer_cuda),
            "openvino": openvino_version(),
            "faiss_gpus": caps.gpus,
            "indexes_on_gpu": caps.on_gpu,
        }

    def readiness(self) -> tuple[bool, dict]:
        """(ready, body): the models' readiness (``Registry.readiness``) and each index's state; not ready either
        while an index being built answers no search yet (the default index until its first documents are in).
        One of several workers is ready when every worker is (``workers``: how many are)."""
        ok, body = self._own_readiness()
        if self.group is not None:  # this worker's state as it is now, the others' as they last published it
            if ok != self.group.published_ready:  # a change the others must not wait a second for (no 200, then 503)
                self.group.publish(ok, self.metrics.exposition()[0])
            ready = ok + sum(p.ready for p in self.group.others())
            body["workers"] = {"processes": self.group.size, "ready": ready}
            body["ready"] = ok = ok and ready >= self.group.size
        return ok, body

    def _own_readiness(self) -> tuple[bool, dict]:
        ok, body = self.embedding.registry.readiness()
        body["indexes"], awaited = self.indexes.readiness()
        body["ready"] = ok = ok and not awaited
        return ok, body

    def exposition(self) -> tuple[bytes, str]:
        """``GET /metrics``: this process's series, or, one of several workers, every worker's summed."""
        data, content_type = self.metrics.exposition()
        if self.group is None:
            return data, content_type
        return merge_expositions([data.decode(), *(p.metrics for p in self.group.others())]), content_type


def settle_heap() -> None:
    """Collect once, then move every object alive into the collector's permanent generation (``gc.freeze``).

    What start-up loaded (bundles, vocabularies, indexes: millions of objects) then stays out of every later
    collection: a full collection walked all of it every few thousand requests, stalling the event loop long
    enough to double the p99 of small requests (docs/BENCHMARKS.md). Frozen objects are still freed when
    nothing refers to them; only a cycle among them would stay. For a server process, once, after start-up."""
    gc.collect()
    gc.freeze()
