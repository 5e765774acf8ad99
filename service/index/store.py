"""The folder of persistent indexes: create, add, delete, search (by vector or by BM25), drop, reload at start.

Layout of one index::

    <index_dir>/<name>/snapshot/{meta.json, index.faiss, docs.jsonl, pending.npy}   atomic_dir
    <index_dir>/<name>/wal.log                                                      appends, fsync'd

A write is acknowledged after its log record is on disk; the in-memory index changes only after
that; if applying it fails anyway, the record is cut off the log and the index reloaded from disk.
An index that cannot be loaded (a log record that cannot be replayed, an unsupported factory) is
*quarantined*: it answers 503 naming the reason while every other index serves, and it can be
dropped. When the log outgrows ``wal_max_bytes`` the index is written as a new snapshot (atomically:
the old one stays whole until the new one is) and the log is emptied; records already in a
snapshot are recognised by their sequence number and skipped on replay, so a crash between the
two steps is harmless. Methods are blocking (FAISS, fsync): call them from a worker thread.

Each index keeps a BM25 index (:class:`~thoughtvec.service.index.lexical.LexicalIndex`) beside its vectors,
over the same documents, changed by every add and delete where the vectors are (in ``_apply``, under the index's
lock, after the log record is on disk), gone with a drop. Each snapshot holds it as of that snapshot
(``bm25.npz``); a load reads it and replays the log into both halves, and builds it from the documents where the
snapshot has none (or one made with another analyser). The log and the snapshot hold every document's text, so it
is exactly as durable as the vectors. A bulk build's store (``lexical=False``), which searches nothing, keeps none
while it writes; its :meth:`~IndexStore.close` makes it once and writes it into the final snapshot.

An index made without a named factory starts exact (``Flat``) and, once it holds its ``grow_at`` documents, is
rebuilt as its ``grow_factory`` on a thread while it serves and takes writes (:meth:`IndexStore.grow`).

One process uses a folder at a time: from :meth:`IndexStore.open` (or its first load or write) until
:meth:`~IndexStore.close`, the store holds the folder's lock (:mod:`~thoughtvec.service.index.folder_lock`),
exclusively where it writes and shared where it is read-only, and a second writer, or a reader beside a writer,
is refused at its start. :meth:`~IndexStore.inventory` reads snapshots alone and takes nothing, so
``thoughtvec index list`` runs beside a server.

What a client reads of a failure names no path of the server and no Python text: a storage error says what failed
and the OS's reason, a quarantined index why in words (:func:`unservable`); the log keeps the file and the exception.
"""

from __future__ import annotations

import contextlib
import json
import logging
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from thoughtvec.service.bundle.atomic import recover_dir
from thoughtvec.service.errors import Conflict, IndexesReadOnly, IndexUnavailable, InvalidInput, StorageUnavailable, UnknownIndex
from thoughtvec.service.index.contents import BuiltIndex, Capabilities, Doc, IndexConfig, IndexStats, NewIndex
from thoughtvec.service.index.factory import check_factory
from thoughtvec.service.index.factory_grammar import GRAMMAR
from thoughtvec.service.index.folder_lock import FolderLock
from thoughtvec.service.index.indexes import VectorIndex, faiss_said, gpu_count, make_faiss, new_config
from thoughtvec.service.index.lexical import BM25, LEXICAL_FILE, Analyzer, LexicalIndex
from thoughtvec.service.index.wal import Wal
from thoughtvec.service.settings import SEARCH_MODES

log = logging.getLogger(__name__)

SNAPSHOT = "snapshot"
WAL_FILE = "wal.log"


@dataclass(eq=False)
class _Entry:
    index: VectorIndex
    wal: Wal
    folder: Path
    lexical: LexicalIndex | None  # BM25 over the same documents as ``index`` (None: not kept, a bulk build's store)
    lock: threading.RLock = field(default_factory=threading.RLock)
    growing: threading.Thread | None = None  # rebuilding it as its grow_factory (IndexStore.grow), while it serves


def lexical_of(vi: VectorIndex, analyzer: Analyzer | None = None, bm25: BM25 | None = None) -> LexicalIndex:
    """The BM25 index of a vector index's documents, in the order they were added (ties rank as they did live)."""
    return LexicalIndex.from_documents(((d.id, d.text) for d in vi.docs.values()), analyzer, bm25)


class IndexStore:
    """Every index under ``root``, loaded, with its log (the FAISS :class:`~thoughtvec.service.index.backend.IndexBackend`)."""

    def __init__(
        self,
        root: Path,
        wal_max_bytes: int = 64 * 2**20,
        on_size: Callable[[str, int | None], None] | None = None,
        gpu: bool = False,
        read_only: str | None = None,
        analyzer: Analyzer | None = None,
        bm25: BM25 | None = None,
        lexical: bool = True,
    ):
        self.root = Path(root)
        self.analyzer, self.bm25 = analyzer or Analyzer(), bm25 or BM25()  # every index's BM25 half (search_settings)
        # Keep each index's BM25 half in memory. A bulk build's store, which searches nothing, does not: the half is
        # derived from the documents and built again by every load, so building it while writing would be all cost.
        self.lexical = lexical
        # Why this process must not write the folder (another process may: workers over one folder), or None.
        # Writes are refused with it (409), and nothing is folded into snapshots at close.
        self.read_only = read_only
        self.gpu = gpu  # search served indexes on the GPU when FAISS has one (VectorIndex.use_gpu)
        self.wal_max_bytes = wal_max_bytes
        self.on_size = on_size or (lambda name, n: None)
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()  # guards the dict itself
        self.quarantined: dict[str, str] = {}  # name -> why it cannot be served
        self._creating: set[str] = set()  # names being written by install()
        self._folder: FolderLock | None = None  # the folder's lock, from open() until close()

    @property
    def capabilities(self) -> Capabilities:
        """Every mode (BM25 is kept beside the vectors), the whole factory grammar, FAISS's GPUs; one process's indexes."""
        gpus = gpu_count()
        return Capabilities(
            "faiss", SEARCH_MODES, GRAMMAR, gpus=gpus, on_gpu=bool(gpus and self.gpu), snapshots=True, read_only=self.read_only
        )

    # -- the folder ----------------------------------------------------------------------
    def open(self) -> None:
        """Take the folder for this process (made if missing): its lock, exclusive where this store writes, shared where
        it is read-only; :class:`~thoughtvec.service.errors.IndexFolderLocked` where another process holds it. Taken
        here, or by the first load or write, not when the store is made: an app made for its OpenAPI schema alone
        holds nothing. Again while held: nothing."""
        with self._lock:  # two first writes at once take it once
            if self._folder is None:
                self._folder = FolderLock.take(self.root, shared=self.read_only is not None)

    # -- loading -------------------------------------------------------------------------
    def load_all(self) -> list[str]:
        """Load every index folder; a broken one is quarantined, never fatal."""
        self.open()
        for folder in sorted(p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")):
            try:
                self._register(self.load_folder(folder))
            except Unfinished as e:
                log.warning("index folder %s skipped: %s", folder, e)
            except Exception as e:  # one bad index must not stop the server: logged whole, quarantined
                log.error("index folder %s cannot be loaded", folder, exc_info=e)
                self.quarantine(folder.name, unservable(e))
        return self.names()

    def load(self, name: str) -> bool:
        """Load the index ``name`` alone (``thoughtvec index build``: one index, however many the folder holds): True,
        or False where its folder holds none (or an unfinished creation). One that cannot be loaded raises."""
        self.open()
        if name in self._entries:
            return True
        folder = self.root / name
        if not folder.is_dir():
            return False
        try:
            self._register(self.load_folder(folder))
        except Unfinished:
            return False
        return True

    def quarantine(self, name: str, why: str) -> None:
        """Serve ``name`` no more: 503 with ``why``, which clients read (words, no path: :func:`unservable`)."""
        log.error("index %s quarantined (it answers 503 until fixed or dropped): %s", name, why)
        with self._lock:
            old = self._entries.pop(name, None)
            self.quarantined[name] = why[:500]
        if old is not None:
            old.wal.close()
        self.on_size(name, None)

    def load_folder(self, folder: Path) -> _Entry:
        snap = folder / SNAPSHOT
        if recover_dir(snap):
            log.warning("index %s: restored the previous snapshot left by an interrupted write", folder.name)
        for tmp in folder.glob(f".{SNAPSHOT}.*"):  # half-written snapshots: never renamed in
            shutil.rmtree(tmp, ignore_errors=True)
        if not (snap / "meta.json").is_file():
            raise Unfinished("no snapshot (an index creation that never finished)")
        vi = VectorIndex.read_snapshot(snap)
        # the snapshot's BM25 half where it has one made with this analyser; else built once the log is replayed
        saved = LexicalIndex.load(snap / LEXICAL_FILE, [d.id for d in vi.docs.values()], self.analyzer, self.bm25) if self.lexical else None
        wal = Wal(folder / WAL_FILE)
        replayed = 0
        for header, blob in wal.replay():
            if header["seq"] <= vi.seq:
                continue  # already in the snapshot
            try:
                _apply(vi, header, blob, saved)
            except Exception as e:
                raise Unreplayable(f"log record {header.get('seq')} ({header.get('op')}) cannot be replayed ({unservable(e)})") from e
            replayed += 1
        # else once, from the final documents: cheaper than replaying the log's deletes into it
        lexical = saved if saved is not None or not self.lexical else lexical_of(vi, self.analyzer, self.bm25)
        log.info(
            "index %s: %d documents (%s, %s), %d log records replayed",
            vi.config.name,
            vi.count,
            vi.config.factory,
            vi.config.model,
            replayed,
        )
        return _Entry(vi, wal, folder, lexical)

    def _register(self, entry: _Entry) -> None:
        if self.gpu:
            entry.index.use_gpu()
        with self._lock:
            self._entries[entry.index.config.name] = entry
        self.on_size(entry.index.config.name, entry.index.count)
        self._maybe_grow(entry)  # loaded past its size (stopped while growing, or a build that grew it not yet done)

    # -- reads ---------------------------------------------------------------------------
    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def entry(self, name: str) -> _Entry:
        try:
            return self._entries[name]
        except KeyError:
            if name in self.quarantined:
                raise IndexUnavailable(
                    f"index '{name}' is quarantined: {self.quarantined[name]}; the other indexes serve. "
                    f"Fix its folder and restart, or drop it",
                    field="index",
                ) from None
            raise UnknownIndex(f"no index '{name}'; the indexes are {self.names()}", field="index") from None

    def config(self, name: str) -> IndexConfig:
        return self.entry(name).index.config

    def stats(self, name: str) -> IndexStats:
        e = self.entry(name)
        with e.lock:
            stats = e.index.stats(wal_bytes=e.wal.size)
        stats.backend["growing"] = e.growing is not None and e.growing.is_alive()
        return stats

    def inventory(self) -> list[IndexStats]:
        """Every index folder's stats read from its snapshot, loading none (another process may be serving them):
        the documents at the last snapshot, and the log's size (writes logged since are counted once loaded)."""
        out = []
        for meta_path in sorted(self.root.glob(f"*/{SNAPSHOT}/meta.json")) if self.root.is_dir() else []:
            meta = json.loads(meta_path.read_text(encoding="utf-8"))
            config, state = IndexConfig.model_validate(meta["config"]), meta["state"]
            wal = meta_path.parent.parent / WAL_FILE
            pending = len(state.get("pending_labels", []))
            trained = config.train_size == 0 or (state.get("documents", 0) > 0 and not pending)
            logged = wal.stat().st_size if wal.exists() else 0
            backend = {"trained": trained, "pending_training": pending, "wal_bytes": logged}
            out.append(IndexStats.of(config, state.get("documents", 0), backend))
        return out

    def count(self, name: str) -> int:
        return self.entry(name).index.count

    def documents(self, name: str, limit: int, include: Sequence[str] = ()) -> list[Doc]:
        """Up to ``limit`` documents: those ``include`` names first (unknown ids skipped), then the first ones added."""
        vi = self.entry(name).index
        wanted = [vi.docs.get(vi.labels.get(i, -1)) for i in include]  # dict reads: atomic under the GIL
        first = [d for d in wanted if d is not None][:limit]
        seen = {d.id for d in first}
        return first + [d for d in list(vi.docs.values())[: limit + len(first)] if d.id not in seen][: limit - len(first)]

    def search(self, name: str, queries: np.ndarray, k: int) -> list[list[tuple[Doc, float]]]:
        e = self.entry(name)
        with e.lock:  # FAISS is not safe to search while another thread adds
            return e.index.search(queries, k)

    def new_config(self, new: NewIndex) -> IndexConfig:
        """A new index's config, its factory checked with FAISS now (a 422 naming ``factory``), not at the first add."""
        try:
            return new_config(new)
        except ValueError as e:
            raise InvalidInput(str(e), field="factory") from None

    def lexical_search(self, name: str, queries: Sequence[str], k: int) -> list[list[tuple[Doc, float]]]:
        """The ``k`` best documents per query text by BM25, best first (only those sharing a term with it)."""
        e = self.entry(name)
        with e.lock:  # the lexical index is not safe to search while another thread adds
            vi = e.index
            if e.lexical is None:
                raise IndexUnavailable(f"index '{name}' keeps no BM25 half in this process (a bulk build's store)", field="index")
            return [[(vi.docs[vi.labels[i]], s) for i, s in e.lexical.search(q, k)] for q in queries]

    # -- writes --------------------------------------------------------------------------
    def _writable(self) -> None:
        if self.read_only is not None:
            raise IndexesReadOnly(self.read_only, field="index")

    def create(self, config: IndexConfig) -> IndexStats:
        """A new empty index, on disk before this returns."""
        return self.install(BuiltIndex(config, [], np.zeros((0, config.dim), np.float32)))

    def install(self, built: BuiltIndex, overwrite: bool = False) -> IndexStats:
        """Make a FAISS index of ``built`` (training it where its factory needs that), persist it and serve it."""
        self._writable()
        self.open()
        name = built.config.name
        folder = self.root / name
        with self._lock:  # the name is taken here: of two concurrent creates, one gets 409
            taken = name in self._entries or name in self._creating or name in self.quarantined or (folder / SNAPSHOT).exists()
            if taken and not overwrite or name in self._creating:
                raise Conflict(f"index '{name}' already exists", field="name")
            self._creating.add(name)
        try:
            vi = VectorIndex(built.config)
            if built.docs:
                vi.add(built.docs, built.vectors, list(range(len(built.docs))))
            lexical = lexical_of(vi, self.analyzer, self.bm25) if self.lexical else None
            with _storage("write", name):
                folder.mkdir(parents=True, exist_ok=True)
                vi.seq = 0
                vi.write_snapshot(folder / SNAPSHOT, lexical)
                wal = Wal(folder / WAL_FILE)
                wal.reset()
            old = self._entries.get(name)
            if old is not None:
                old.wal.close()
            self.quarantined.pop(name, None)
            self._register(_Entry(vi, wal, folder, lexical))
        finally:
            with self._lock:
                self._creating.discard(name)
        return vi.stats()

    def drop(self, name: str) -> None:
        self._writable()
        if name in self.quarantined:
            self._drop_folder(name, self.root / name)
            return
        e = self.entry(name)
        with e.lock, self._lock, _storage("drop", name):
            aside = e.folder.with_name(f".{name}.dropped-{uuid.uuid4().hex[:8]}")
            e.folder.rename(aside)  # one rename: a crash leaves it gone or whole
            e.wal.close()
            self._entries.pop(name, None)
            shutil.rmtree(aside, ignore_errors=True)
        self.on_size(name, None)

    def _drop_folder(self, name: str, folder: Path) -> None:
        with self._lock, _storage("drop", name):
            if folder.exists():
                aside = folder.with_name(f".{name}.dropped-{uuid.uuid4().hex[:8]}")
                folder.rename(aside)
                shutil.rmtree(aside, ignore_errors=True)
            self.quarantined.pop(name, None)

    def add(self, name: str, docs: list[Doc], vectors: np.ndarray) -> list[str]:
        """Log, then apply; ids must be new (409 otherwise). Returns the ids (generated where missing)."""
        self._writable()
        e = self.entry(name)
        with e.lock:
            vi = e.index
            seen: set[str] = set()
            for i, d in enumerate(docs):
                if d.id in vi.labels or d.id in seen:
                    raise Conflict(f"documents[{i}].id '{d.id}' already exists in index '{name}'", field=f"documents[{i}].id")
                seen.add(d.id)
            labels = list(range(vi.next_label, vi.next_label + len(docs)))
            header = {
                "seq": vi.seq + 1,
                "op": "add",
                "labels": labels,
                "docs": [{"id": d.id, "text": d.text, "metadata": d.metadata} for d in docs],
            }
            x = np.ascontiguousarray(vectors, np.float32)
            self._log_and_apply(e, header, x.tobytes(), x, "add documents to")
            self._maybe_compact(e)
        self.on_size(name, e.index.count)
        self._maybe_grow(e)
        return [d.id for d in docs]

    def delete(self, name: str, ids: list[str]) -> list[str]:
        """Delete by id; returns the ids that were there (unknown ids are not an error)."""
        self._writable()
        e = self.entry(name)
        with e.lock:
            vi = e.index
            if not any(i in vi.labels for i in ids):
                return []
            header = {"seq": vi.seq + 1, "op": "delete", "ids": ids}
            found = self._log_and_apply(e, header, b"", b"", "delete documents from")
            self._maybe_compact(e)
        self.on_size(name, e.index.count)
        return found

    def _log_and_apply(self, e: _Entry, header: dict, blob: bytes, data: bytes | np.ndarray, op: str) -> list[str]:
        """Append the record (the write is acknowledged once it is on disk), then apply it in memory.

        Should applying fail after all, the record is cut off the log (the write is refused, never
        half-done) and the index reloaded from its files; if that fails too, it is quarantined.
        """
        name = e.index.config.name
        before = e.wal.size
        with _storage(op, name):
            e.wal.append(header, blob)  # nothing changes in memory unless this succeeds
        try:
            return _apply(e.index, header, data, e.lexical)
        except Exception:
            log.exception("index %s: record %d logged but not applied; cutting it off and reloading", name, header["seq"])
            try:
                e.wal.truncate_to(before)
                fresh = self.load_folder(e.folder)
                fresh.wal.close()
                e.index, e.lexical = fresh.index, fresh.lexical
                if self.gpu:
                    e.index.use_gpu()
            except Exception as reload_err:  # logged whole; its reason in words kept for the 503s
                log.error("index %s: reloading after the failed write failed", name, exc_info=reload_err)
                self.quarantine(name, f"a write failed and the index could not be reloaded from its files ({unservable(reload_err)})")
            raise

    def _maybe_compact(self, e: _Entry) -> None:
        """Fold the log into a snapshot past its size limit. The write is already durable in the log, so a
        failure here is logged, not returned to the client (it would refuse a write that was kept)."""
        if e.wal.size <= self.wal_max_bytes:
            return
        try:
            self.compact_entry(e)
        except OSError as err:
            log.warning("index %s: snapshot failed (%s); the log still holds every write", e.folder.name, err)

    # -- growing -------------------------------------------------------------------------
    def _maybe_grow(self, e: _Entry) -> None:
        """Start :meth:`grow` on a thread once the index holds its ``grow_at`` documents (where this process writes)."""
        c = e.index.config
        if not c.grow_at or e.index.count < c.grow_at or e.growing is not None or self.read_only is not None:
            return
        e.growing = threading.Thread(target=self.grow, args=(e,), name=f"thoughtvec-grow-{c.name}", daemon=True)
        e.growing.start()

    def grow(self, e: _Entry, last_round: int = 4096) -> bool:
        """Rebuild the index of ``e`` as its ``grow_factory`` while it serves and takes writes: the new index is
        built from a copy of the vectors outside the index's lock; the documents added and deleted meanwhile are
        caught up in rounds, the last (under ``last_round`` documents) under the lock, where the new index takes the
        old one's place and is written as the index's snapshot (its log folded in). Searches wait for that last round
        only. Stopped before the snapshot (a crash), the index is what it was and grows again when next loaded.
        True where it grew; a failure is logged and leaves the index as it was."""
        name = e.index.config.name
        started = time.perf_counter()
        try:
            with e.lock:
                vi = e.index
                target = vi.config.grow_factory
                labels = np.fromiter(vi.docs, np.int64, len(vi.docs))
                x = vi.vectors_of(labels)
            log.info("index %s: %d documents, growing from %s to %s while it serves", name, len(labels), vi.config.factory, target)
            fresh = make_faiss(vi.config.dim, target, vi.config.metric)
            if not fresh.is_trained:  # an IVF or PQ: trained on the vectors it is made of
                fresh.train(vi.prepare(x))
            fresh.add_with_ids(vi.prepare(x), labels)
            have = set(labels.tolist())
            while True:
                with e.lock:
                    if e.index is not vi or not vi.config.grow_at:  # reloaded meanwhile (a failed write), or grown
                        return False
                    todo = np.fromiter((lb for lb in vi.docs if lb not in have), np.int64)
                    if len(todo) < last_round:
                        fresh.add_with_ids(vi.prepare(vi.vectors_of(todo)), todo)
                        gone = have - vi.docs.keys()  # deleted meanwhile
                        if gone and check_factory(target, vi.config.dim).ids != "tombstone":
                            fresh.remove_ids(np.fromiter(gone, np.int64, len(gone)))  # type: ignore[arg-type]
                            gone = set()
                        vi.grown(fresh, target, gone)
                        self.compact_entry(e, force=True)
                        break
                    x = vi.vectors_of(todo)
                fresh.add_with_ids(vi.prepare(x), todo)
                have.update(todo.tolist())
        except Exception as err:
            log.error("index %s: growing to %s failed; it serves as it was", name, e.index.config.grow_factory, exc_info=err)
            return False
        finally:
            e.growing = None if e.index.config.grow_at == 0 else e.growing  # failed: not again in this process
        log.info("index %s: now %s, %d documents (grown in %.1f s)", name, target, e.index.count, time.perf_counter() - started)
        self.on_size(name, e.index.count)
        return True

    @staticmethod
    def compact_entry(e: _Entry, force: bool = False) -> None:
        with e.lock:
            if e.wal.size == 0 and not force:
                return
            e.index.write_snapshot(e.folder / SNAPSHOT, e.lexical)
            e.wal.reset()

    def close(self) -> None:
        """Fold every log into its snapshot (a clean shutdown starts faster next time), where this process writes;
        then let go of the folder."""
        try:
            for e in list(self._entries.values()):
                growing = e.growing
                if growing is not None:  # its snapshot is the grown index: wait for it rather than grow again next time
                    growing.join()
                try:
                    stale = e.wal.size > 0 or not (e.folder / SNAPSHOT / LEXICAL_FILE).is_file()  # writes it lacks
                    if self.read_only is None and e.lexical is None and stale:
                        # a bulk build's store: its BM25 half made once, here, of every document (a build that added to
                        # an index too), and kept in the snapshot, so that the server loads it instead of analysing
                        # every text at each start
                        started = time.perf_counter()
                        e.lexical = lexical_of(e.index, self.analyzer, self.bm25)
                        self.compact_entry(e, force=True)
                        log.info(
                            "index %s: BM25 half of %d documents made and written in %.1f s",
                            e.folder.name,
                            e.index.count,
                            time.perf_counter() - started,
                        )
                    elif self.read_only is None:
                        self.compact_entry(e)
                except Exception as err:  # noqa: BLE001 - the log still holds everything
                    log.error("index %s: snapshot at shutdown failed (%s); its log still holds the writes", e.folder.name, err)
                e.wal.close()
        finally:
            if self._folder is not None:
                self._folder.release()
                self._folder = None


@contextlib.contextmanager
def _storage(op: str, name: str) -> Iterator[None]:
    """Disk trouble during a write is the server's state, not a bug: a typed 503 with the OS's reason. The file's path
    is the server's business: the log has it, the client reads "the index folder"."""
    try:
        yield
    except OSError as e:
        log.warning("index %s: cannot %s it: %s", name, op, e)  # an OSError's text names the file
        reason = e.strerror or "an I/O error"
        raise StorageUnavailable(
            f"cannot {op} index '{name}': {reason} (the index folder); the server log has the details", field="index"
        ) from e


class Unfinished(ValueError):
    """An index folder without a snapshot: a creation that never finished, not an index."""


class Unreplayable(ValueError):
    """A log record that cannot be applied at load: its message, in words a client may read, is the quarantine's reason."""


def unservable(e: BaseException) -> str:
    """Why an index cannot be loaded, as a client may read it (a quarantined index's 503, ``/ready``): the OS's reason
    without the file's path, FAISS's words without its source location, this package's own refusals whole; the
    exception itself goes to the log."""
    if isinstance(e, OSError):
        return f"its files cannot be read: {e.strerror or 'an I/O error'}"
    if isinstance(e, RuntimeError):  # FAISS reports through RuntimeError
        return f"FAISS: {faiss_said(e)}"
    if isinstance(e, ValueError):  # ours (a factory, a format, a record), or the JSON or schema of its snapshot
        return str(e).strip().splitlines()[0][:300] if str(e).strip() else "its files are not an index"
    return "it cannot be loaded; the server log has the error"


def _apply(vi: VectorIndex, header: dict, blob: bytes | np.ndarray, lexical: LexicalIndex | None = None) -> list[str]:
    """Apply one log record to the in-memory index and, where given, to its lexical index (at load the
    lexical index is built after the replay instead). Should the lexical half fail after the vectors
    changed, the caller reloads both from disk (``_log_and_apply``)."""
    if header["op"] == "add":
        docs = [Doc(d["id"], d["text"], d["metadata"]) for d in header["docs"]]
        x = blob if isinstance(blob, np.ndarray) else np.frombuffer(blob, np.float32).reshape(len(docs), vi.config.dim)
        vi.add(docs, x, header["labels"])
        if lexical is not None:
            lexical.add([d.id for d in docs], [d.text for d in docs])
        found = [d.id for d in docs]
    elif header["op"] == "delete":
        found = vi.delete(header["ids"])
        if lexical is not None:
            lexical.delete(found)
    else:
        raise ValueError(f"unknown log record op {header['op']!r}")
    vi.seq = header["seq"]
    return found
