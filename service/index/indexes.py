"""A FAISS index with string ids, texts and metadata, and its snapshot on disk.

FAISS sees int64 *labels* we hand out in order; callers see string ids. Only the factory strings
of the grammar (:mod:`thoughtvec.service.index.factory_grammar`) reach FAISS, and each family keeps labels stable
across deletes in its own way (:mod:`thoughtvec.service.index.factory`: ``IndexIDMap2`` around flat codes, IVF's own
ids, tombstones for HNSW, which cannot remove). Indexes that need training (IVF, PQ) keep their vectors in a plain
buffer, searched exactly, until ``train_size`` vectors have arrived; then they train on that buffer and move it in.

With GPU FAISS (faiss-gpu-cu12 and a visible GPU), :meth:`VectorIndex.use_gpu` keeps a copy of the
index on the GPU(s) for searches; the CPU index stays the one of record (snapshots, deletes,
training) and the copy is remade after a delete or a training. HNSW has no GPU version and stays
on the CPU.

Not thread-safe: :class:`thoughtvec.service.index.store.IndexStore` holds a lock around every call.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import faiss
import numpy as np

from thoughtvec.service.bundle.atomic import atomic_dir
from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.index.contents import Doc, IndexConfig, IndexStats, Metric, NewIndex
from thoughtvec.service.index.factory import Family, check_factory
from thoughtvec.service.index.factory_grammar import SEARCH_PARAMS
from thoughtvec.service.index.lexical import LEXICAL_FILE, LexicalIndex

log = logging.getLogger(__name__)

FORMAT_VERSION = 1
# GPU FAISS selects at most this many neighbours per query; larger searches run on the CPU index.
GPU_MAX_K = 2048


@dataclass(frozen=True)
class Growth:
    """An index made without a named factory starts exact (``Flat``) and, once an exact search would read more than
    ``scan_bytes`` of vectors, is rebuilt as ``factory`` while it serves
    (:meth:`thoughtvec.service.index.store.IndexStore.grow`): at :meth:`at` documents, fewer the wider its vectors."""

    scan_bytes: int
    factory: str

    def at(self, dim: int) -> int:
        """The documents at which an index of ``dim``-dimensional float32 vectors grows."""
        return max(1, -(-self.scan_bytes // (4 * dim)))


# Measured on a million-document index of 256-d vectors (python -m thoughtvec.bench.ann_bench; docs/scale.md): Flat
# reads its 1,028 MB in 150 ms a query (p50, 2 cores), about 4.7 ms per 32 MiB; HNSW32 at the served efSearch takes
# 5.5 ms with dense recall@10 0.966 of exact (hybrid top 10: 0.979 the same), for 26 % more memory and 448 s of
# graph building. Below 32 MiB the exact scan is as fast as the graph and exact; past it the scan grows with the
# index and the graph hardly does. 32 768 documents at 256 dimensions, 21 846 at 384.
GROWTH = Growth(scan_bytes=32 * 2**20, factory="HNSW32")


def default_train_size(factory: str) -> int:
    """FAISS wants ~39 points per IVF centroid and ≥ 256 per PQ/SQ codebook."""
    m = re.search(r"IVF(\d+)", factory)
    return max(39 * int(m.group(1)) if m else 0, 1024)


# How FAISS begins an error: the C++ function and its source file ("Error in <function> at <file>:<line>: "), then,
# for a failed check, the check itself ("Error: '<condition>' failed: "); the reason follows.
_FAISS_WHERE = re.compile(r"^Error in .*? at \S+:\d+: (?:Error: '.*?' failed: )?")
_PATH = re.compile(r"(?<![\w.])/[^\s:'\"]+")  # an absolute path (FAISS names the file it could not open)


def faiss_said(e: BaseException) -> str:
    """FAISS's reason for an error, for a client to read: its last line without the C++ function, the source file and
    the failed check before it, and without the path of a file it names."""
    text = (str(e).strip().splitlines() or [type(e).__name__])[-1]
    return _PATH.sub("a file", _FAISS_WHERE.sub("", text))[:300]


def make_faiss(dim: int, factory: str, metric: Metric) -> faiss.Index:
    """The FAISS index for a supported factory string; ``ValueError`` naming the problem otherwise.

    IVF takes our labels itself; every other family is wrapped in ``IndexIDMap2``.
    """
    family = check_factory(factory, dim)
    fmetric = faiss.METRIC_L2 if metric == "l2" else faiss.METRIC_INNER_PRODUCT
    try:
        base = faiss.index_factory(dim, factory, fmetric)
    except RuntimeError as e:
        raise ValueError(f"FAISS cannot build {factory!r} for dim {dim}: {faiss_said(e)}") from None
    return base if family.ids == "native" else faiss.IndexIDMap2(base)


def gpu_count() -> int:
    """GPUs FAISS can use: 0 with faiss-cpu, with faiss-gpu on a machine without a visible GPU, or where FAISS's GPU
    code does not run on the GPU there (:func:`gpu_kernels_run`)."""
    try:
        n = int(faiss.get_num_gpus())
    except (AttributeError, RuntimeError):
        return 0
    return n if n and gpu_kernels_run() else 0


# A GPU index's add and search, in a child process: what gpu_kernels_run tries before any index goes to a GPU
# (at start-up: Core.start asks for the devices first).
GPU_PROBE = (
    "import faiss, numpy as np\n"
    "x = np.eye(8, dtype='float32')\n"
    "index = faiss.GpuIndexFlatIP(faiss.StandardGpuResources(), 8)\n"
    "index.add(x)\n"
    "assert (index.search(x, 1)[1].ravel() == np.arange(8)).all(), 'wrong neighbours'\n"
)
GPU_PROBE_TIMEOUT_S = 90  # a first run may compile PTX for this GPU; longer, and the CPU it is (within the GPU compose start period)


@functools.cache
def gpu_kernels_run() -> bool:
    """Whether FAISS's GPU code runs on this machine's GPU: a small GPU index added to and searched in a child
    process, once per process. A FAISS built without the GPU's architecture (PyPI's faiss-gpu-cu12 has code for
    sm_70 and sm_80 only, nothing an H100 or H200 runs) aborts the process at its first GPU kernel ("CUDA error 209
    no kernel image is available"), so the server must not be the process that finds out. Where it does not run,
    indexes stay on the CPU and a warning says why."""
    try:
        done = subprocess.run([sys.executable, "-c", GPU_PROBE], capture_output=True, text=True, timeout=GPU_PROBE_TIMEOUT_S)
        ok, why = done.returncode == 0, (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
    except (OSError, subprocess.TimeoutExpired) as e:
        ok, why = False, str(e)
    if not ok:
        log.warning("FAISS sees a GPU, but FAISS's GPU code does not run here (%s): indexes stay on the CPU", why[:300])
    return ok


def _set_search_params(index: faiss.Index, space: Any) -> None:
    for param, value in SEARCH_PARAMS:
        try:
            space.set_index_parameter(index, param, value)
        except RuntimeError:  # this factory has no such knob
            pass


class VectorIndex:
    """Vectors (FAISS) + documents, in memory."""

    def __init__(self, config: IndexConfig, index: faiss.Index | None = None):
        self.config = config
        self.family: Family = check_factory(config.factory, config.dim)
        # The CPU index is the one of record: writes, training, deletes and snapshots go to it.
        self.index = index if index is not None else make_faiss(config.dim, config.factory, config.metric)
        _set_search_params(self.index, faiss.ParameterSpace())
        # With GPU FAISS (use_gpu), a copy on the GPU(s) answers searches and takes adds; deletes and
        # training mark it stale and it is copied again at the next search.
        self.gpu_index: faiss.Index | None = None
        self.gpu_wanted = False
        self.gpu_stale = False
        self.docs: dict[int, Doc] = {}  # label -> document
        self.labels: dict[str, int] = {}  # id -> label
        self.tombstones: set[int] = set()  # labels deleted from an index that cannot remove
        self.pending_labels: list[int] = []  # waiting for training
        self.pending = np.zeros((0, config.dim), np.float32)
        self.next_label = 0
        self.seq = 0  # last write-ahead-log record applied
        self.train_error: str | None = None

    # -- reads ---------------------------------------------------------------------------
    @property
    def count(self) -> int:
        return len(self.docs)

    @property
    def trained(self) -> bool:
        return bool(self.index.is_trained)

    @property
    def on_gpu(self) -> bool:
        return self.gpu_wanted

    # -- GPU -----------------------------------------------------------------------------
    def use_gpu(self) -> bool:
        """Search on the GPU(s) from now on if FAISS has one and this index type runs there."""
        if gpu_count() == 0:
            return False
        self.gpu_wanted = True
        return self._copy_to_gpu()

    def _copy_to_gpu(self) -> bool:
        try:
            gpu = faiss.index_cpu_to_all_gpus(self.index)  # IDMap2 stays on the host, its index moves
            _set_search_params(gpu, getattr(faiss, "GpuParameterSpace", faiss.ParameterSpace)())
        except (AttributeError, RuntimeError) as e:  # a type the GPU lacks (HNSW), or out of memory
            log.info("index %s: searched on the CPU (%s)", self.config.name, str(e).strip().splitlines()[-1][:200])
            self.gpu_index, self.gpu_wanted = None, False
            return False
        self.gpu_index, self.gpu_stale = gpu, False
        return True

    def _searcher(self, k: int) -> faiss.Index:
        """The index to search: the GPU copy (fresh) where there is one and k fits the GPU's limit."""
        if not self.gpu_wanted or k > GPU_MAX_K:
            return self.index
        if self.gpu_index is None or self.gpu_stale:
            self._copy_to_gpu()  # where it fails, gpu_index is None: the CPU index is searched
        return self.gpu_index if self.gpu_index is not None else self.index

    def stats(self, wal_bytes: int = 0) -> IndexStats:
        """Its stats, with FAISS's own state (``IndexStats.backend``); ``wal_bytes``: its log's, which the store keeps."""
        state = {
            "trained": self.trained,
            "pending_training": len(self.pending_labels),
            "train_error": self.train_error,
            "wal_bytes": wal_bytes,
            "gpu": self.on_gpu,
            "grows": {"at": self.config.grow_at, "to": self.config.grow_factory} if self.config.grow_at else None,
        }
        return IndexStats.of(self.config, self.count, state)

    def prepare(self, vectors: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(vectors, dtype=np.float32)
        return l2_normalize(x) if self.config.normalize or self.config.metric == "cosine" else x

    def search(self, queries: np.ndarray, k: int) -> list[list[tuple[Doc, float]]]:
        """Nearest ``k`` documents per query row, best first. Scores: similarity (cosine/ip), squared distance (l2)."""
        q = self.prepare(queries)
        if self.pending_labels:
            scores, labels = self._search_pending(q, k)
        elif self.index.ntotal:
            kk = min(self.index.ntotal, k + len(self.tombstones))
            scores, labels = self._searcher(kk).search(q, kk)
        else:
            return [[] for _ in range(len(q))]
        if self.config.metric == "cosine":
            scores = np.clip(scores, -1.0, 1.0)  # float32 rounding can step past 1 for a text and itself
        out = []
        for srow, lrow in zip(scores, labels):
            hits = [(self.docs[int(lb)], float(s)) for s, lb in zip(srow, lrow) if lb >= 0 and int(lb) in self.docs]
            out.append(hits[:k])
        return out

    def _search_pending(self, q: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        # Exact search over the not-yet-trained buffer (small: below train_size).
        if self.config.metric == "l2":
            d = (q * q).sum(1)[:, None] - 2 * q @ self.pending.T + (self.pending * self.pending).sum(1)[None, :]
            order = np.argsort(d, axis=1, kind="stable")[:, :k]
        else:
            d = q @ self.pending.T
            order = np.argsort(-d, axis=1, kind="stable")[:, :k]
        labels = np.asarray(self.pending_labels, np.int64)[order]
        return np.take_along_axis(d, order, axis=1), labels

    # -- writes --------------------------------------------------------------------------
    def add(self, docs: list[Doc], vectors: np.ndarray, labels: list[int]) -> None:
        """Add prepared vectors under the given labels (the caller checked the ids are new).

        FAISS goes first: if it refuses, the documents were not added either.
        """
        x = self.prepare(vectors)
        lab = np.asarray(labels, np.int64)
        if self.trained:
            self.index.add_with_ids(x, lab)
        else:
            self.pending = np.concatenate([self.pending, x])
            self.pending_labels.extend(labels)
        for label, doc in zip(labels, docs):
            self.docs[label] = doc
            self.labels[doc.id] = label
        self.next_label = max(self.next_label, int(lab.max()) + 1) if len(lab) else self.next_label
        if not self.trained:
            if len(self.pending_labels) >= max(1, self.config.train_size):
                self._train()
        elif self.gpu_index is not None and not self.gpu_stale:
            try:
                self.gpu_index.add_with_ids(x, lab)
            except RuntimeError as e:  # e.g. GPU memory: copy again (or fall back) at the next search
                log.warning("index %s: GPU add failed (%s); the GPU copy will be remade", self.config.name, e)
                self.gpu_stale = True

    def _train(self) -> None:
        log.info("index %s: training %s on %d vectors", self.config.name, self.config.factory, len(self.pending))
        try:
            self.index.train(self.pending)
        except RuntimeError as e:
            # Too few points for this factory: keep buffering (searched exactly) and retry on the next
            # add. Raising would also make the logged add fail again at every replay.
            self.train_error = faiss_said(e)
            log.warning("index %s: training postponed: %s", self.config.name, self.train_error)
            return
        self.train_error = None
        self.gpu_stale = True
        self.index.add_with_ids(self.pending, np.asarray(self.pending_labels, np.int64))
        self.pending = np.zeros((0, self.config.dim), np.float32)
        self.pending_labels = []

    def delete(self, ids: list[str]) -> list[str]:
        """Remove the documents with these ids; returns the ids that existed."""
        found = [i for i in ids if i in self.labels]
        labels = [self.labels.pop(i) for i in found]
        for label in labels:
            del self.docs[label]
        if not labels:
            return found
        drop = set(labels)
        if self.pending_labels:
            keep = [j for j, lb in enumerate(self.pending_labels) if lb not in drop]
            self.pending = self.pending[keep]
            self.pending_labels = [self.pending_labels[j] for j in keep]
        if self.index.ntotal:
            if self.family.ids == "tombstone":  # HNSW cannot remove: hide them, rebuild when they pile up
                self.tombstones.update(drop)
                if len(self.tombstones) * 4 > self.index.ntotal:
                    self._rebuild_without_tombstones()
            else:
                # faiss's stubs give Index.remove_ids an IDSelector only; its Python wrapper also takes an id array
                self.index.remove_ids(np.asarray(labels, np.int64))  # type: ignore[arg-type]
                self.gpu_stale = True  # GPU indexes cannot remove ids: copy the CPU one again
        return found

    def vectors_of(self, labels: np.ndarray) -> np.ndarray:
        """The stored vectors of these labels, (n, dim): a family storing them exactly (``Flat``, ``HNSW<M>``)."""
        if not len(labels):
            return np.zeros((0, self.config.dim), np.float32)
        return self._idmap().reconstruct_batch(np.ascontiguousarray(labels, np.int64))

    def grown(self, index: faiss.Index, factory: str, removed: set[int]) -> None:
        """Become an index of ``factory`` (its ``grow_factory``): ``index`` holds every live label's vector (and
        ``removed``'s, hidden as tombstones); its config says so and grows no more."""
        self.config = self.config.model_copy(update={"factory": factory, "grow_at": 0, "grow_factory": ""})
        self.family = check_factory(self.config.factory, self.config.dim)
        _set_search_params(index, faiss.ParameterSpace())
        self.index, self.tombstones, self.gpu_stale = index, set(removed), True

    def _idmap(self) -> faiss.IndexIDMap2:
        """The index of a family without native ids: ``make_faiss`` wraps those in an ``IndexIDMap2``."""
        return cast(faiss.IndexIDMap2, self.index)

    def _faiss_labels(self) -> np.ndarray:
        """The labels in an ``IndexIDMap2``, in FAISS's storage order."""
        return faiss.vector_to_array(self._idmap().id_map)

    def _rebuild_without_tombstones(self) -> None:
        """A fresh HNSW graph over the live vectors (HNSW stores them exactly: ``HNSW<M>[,Flat]`` only)."""
        labels = self._faiss_labels()
        x = faiss.downcast_index(self._idmap().index).reconstruct_n(0, self.index.ntotal)  # (ntotal, dim)
        keep = ~np.isin(labels, np.fromiter(self.tombstones, np.int64, len(self.tombstones)))
        fresh = make_faiss(self.config.dim, self.config.factory, self.config.metric)
        _set_search_params(fresh, faiss.ParameterSpace())
        fresh.add_with_ids(np.ascontiguousarray(x[keep]), labels[keep])
        log.info("index %s: HNSW rebuilt without %d deleted documents", self.config.name, len(self.tombstones))
        self.index, self.tombstones, self.gpu_stale = fresh, set(), True

    # -- snapshot ------------------------------------------------------------------------
    def write_snapshot(self, folder: Path, lexical: LexicalIndex | None = None) -> None:
        """Write everything atomically to ``folder`` (the old snapshot stays until the new one is whole), with the
        BM25 half of the same documents where given (``LEXICAL_FILE``: a load reads it instead of analysing every
        text again)."""
        with atomic_dir(folder) as tmp:
            if lexical is not None:
                lexical.save(tmp / LEXICAL_FILE, [d.id for d in self.docs.values()])
            faiss.write_index(self.index, str(tmp / "index.faiss"))
            np.save(tmp / "pending.npy", self.pending)
            with open(tmp / "docs.jsonl", "w", encoding="utf-8") as f:
                for label, d in self.docs.items():
                    f.write(json.dumps({"label": label, "id": d.id, "text": d.text, "metadata": d.metadata}, ensure_ascii=False) + "\n")
            state = {
                "documents": self.count,
                "seq": self.seq,
                "next_label": self.next_label,
                "tombstones": sorted(self.tombstones),
                "pending_labels": self.pending_labels,
            }
            meta = {"format_version": FORMAT_VERSION, "config": self.config.model_dump(), "state": state}
            (tmp / "meta.json").write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")

    @classmethod
    def read_snapshot(cls, folder: Path) -> VectorIndex:
        meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
        if meta.get("format_version") != FORMAT_VERSION:
            raise ValueError(f"its snapshot has format_version {meta.get('format_version')!r}; this server reads {FORMAT_VERSION}")
        config = IndexConfig.model_validate(meta["config"])
        family = check_factory(config.factory, config.dim)  # before FAISS reads a file it could crash on
        index = faiss.read_index(str(folder / "index.faiss"))
        if family.ids == "native" and isinstance(index, faiss.IndexIDMap2):
            index = _unwrap_ivf(index)  # written before IVF took its own ids
        vi = cls(config, index)
        state = meta["state"]
        vi.seq, vi.next_label = state["seq"], state["next_label"]
        vi.tombstones = set(state["tombstones"])
        vi.pending_labels = list(state["pending_labels"])
        vi.pending = np.load(folder / "pending.npy")
        with open(folder / "docs.jsonl", encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                vi.docs[r["label"]] = Doc(r["id"], r["text"], r["metadata"])
                vi.labels[r["id"]] = r["label"]
        return vi


def _unwrap_ivf(idmap: faiss.IndexIDMap2) -> faiss.Index:
    """The IVF inside an older snapshot's ``IndexIDMap2``, storing our labels instead of ordinals.

    The IVF holds ordinals and the map the labels of the survivors in order. That pairing is right
    while the ordinals are distinct and as many as the labels (no delete, or one delete and no add
    since); otherwise an earlier delete already scrambled them and the index must be rebuilt.
    """
    inner = faiss.clone_index(faiss.downcast_index(idmap.index))  # owned here; the map frees its own
    ivf = faiss.extract_index_ivf(inner)
    lists = ivf.invlists
    if lists is None:  # an IVF always has them; a file without would be damaged
        raise ValueError("an IVF snapshot without inverted lists; rebuild the index (thoughtvec index build --overwrite) or drop it")
    labels = faiss.vector_to_array(idmap.id_map)
    sizes = [lists.list_size(i) for i in range(ivf.nlist)]
    stored = [faiss.rev_swig_ptr(lists.get_ids(i), n).copy() for i, n in enumerate(sizes) if n]
    ordinals = np.concatenate(stored) if stored else np.zeros(0, np.int64)
    if len(np.unique(ordinals)) != len(ordinals) or len(ordinals) != len(labels):
        raise ValueError(
            "an IVF snapshot written before deletes were fixed, already scrambled by a delete; rebuild the index (thoughtvec index build --overwrite) or drop it"
        )
    rank = np.sort(ordinals)
    for i, n in enumerate(sizes):
        if n:
            ids = labels[np.searchsorted(rank, faiss.rev_swig_ptr(lists.get_ids(i), n))].astype(np.int64)
            codes = faiss.rev_swig_ptr(lists.get_codes(i), n * lists.code_size).copy()
            lists.update_entries(i, 0, n, faiss.swig_ptr(ids), faiss.swig_ptr(codes))
    return inner


def new_config(new: NewIndex, growth: Growth | None = GROWTH) -> IndexConfig:
    """A new index's config, its factory string checked with FAISS now rather than at the first add; ``train_size``
    where the factory needs training (``new.train_size``, else :func:`default_train_size`), else 0. Made without a
    named factory: ``Flat``, rebuilt as ``growth.factory`` at ``growth.at(dim)`` documents (None: never; nor a
    lexical-only index)."""
    factory = new.factory or "Flat"
    probe = make_faiss(new.dim, factory, new.metric)
    needs_training = not probe.is_trained
    size = (new.train_size if new.train_size is not None else default_train_size(factory)) if needs_training else 0
    if new.factory is None and growth is not None and new.embedded:  # a lexical-only index's vectors are zeros
        check_factory(growth.factory, new.dim)
        return new.config(train_size=size, factory=factory, grow_at=growth.at(new.dim), grow_factory=growth.factory)
    return new.config(train_size=size, factory=factory)
