"""Indexes in Milvus: the same interface and errors as the FAISS :class:`~thoughtvec.service.index.store.IndexStore`.

One collection per index, named ``<prefix><name>`` (``_`` ``-`` ``.`` escaped as ``_u`` ``_h``
``_d``: Milvus allows letters, digits and ``_``). Its description holds the :class:`IndexConfig`
as JSON, so every replica pointed at the same Milvus lists and serves the indexes any of them
created. Fields::

    id        VARCHAR(3072)  primary key: the API's id percent-encoded (at most 1024 UTF-8 bytes, 3 characters
                             each): filter expressions then hold only [A-Za-z0-9_.~%-], which Milvus Lite and
                             the server parse alike (Lite found no id written with an escape such as \n)
    text      VARCHAR(65535) the document's text (Milvus's largest VARCHAR, in UTF-8 bytes)
    metadata  VARCHAR(65535) the metadata as JSON text: Milvus's JSON type re-encodes numbers
                             (int64 / float64), this round-trips exactly what was stored
    vector    FLOAT_VECTOR   prepared as FAISS prepares it (unit length for cosine / normalize)
    sparse    SPARSE_FLOAT_VECTOR  BM25's weights of ``text``, written by Milvus (2.5 and later; see below)

Reads use consistency level ``Strong``: a search waits until Milvus has applied every write
acknowledged before it began, through any replica, so an add answered 200 is found by the next
search anywhere. (``Session`` only covers one client's own writes; ``Bounded`` may miss them.)
Writes to a server are upserts: retrying one after a lost connection, or a race between two
replicas adding the same new id, leaves one document, never two rows under one id. (Milvus Lite's
upsert cannot take an id with a quote; it has one process, which checks and inserts under a lock.)

A Milvus that cannot be reached is retried ``retries`` times per call (each RPC bounded by ``timeout_s``, a new
connection by at most ``CONNECT_TIMEOUT_S``), then answered 503 ``storage_unavailable``; for
``timeout_s`` after that, calls fail at once while one call at a time asks again (the core reads configs on its
event loop). Every other failure of a call is a 503 ``index_unavailable`` with what Milvus said: never a 500. A
client reads "the Milvus server" or "Milvus Lite", never the URI (a Lite URI is a path on the server, a server's an
address of the deployment's): the log names it beside every failure. A call whose
channel another thread closed (it dropped the client after its own failure) connects again at once. The client
is made again at the next call, and a collection a restarted Milvus has not loaded yet is loaded, so the
service recovers by itself when Milvus returns.

Lexical and hybrid search need BM25 in Milvus (2.5 and later: :attr:`MilvusStore.search_modes` asks the
server's version): ``text`` is then analysed (Milvus's ``english`` analyser) and a sparse field beside the
vectors is filled by Milvus's BM25 function at every write, so every replica searches the same statistics
(the number of documents, each term's document frequency, the mean length) as they move with any replica's
writes. The core fuses the dense and BM25 rankings as it does the FAISS store's. On a Milvus before 2.5
(the 2.3 server) indexes are dense only: its capabilities say so (``modes``, and ``unserved``: why), and the core
answers ``lexical`` or ``hybrid`` with a 422 naming ``mode`` that says why; a lexical search of an index made without
the sparse field is refused here, the same way.

Not atomic across replicas: the duplicate-id check and the write, and the name check and the
creation, are serialised per index within one process only. Two replicas adding the same new id
at the same moment both answer 200 and leave one document (the later upsert); two creating the
same name with the same settings both answer 201 (Milvus creates a same-schema collection once).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

import numpy as np

from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.errors import Conflict, IndexUnavailable, InvalidInput, StorageUnavailable, UnknownIndex
from thoughtvec.service.index.contents import BuiltIndex, Capabilities, Doc, IndexConfig, IndexStats, NewIndex
from thoughtvec.service.index.lexical import BM25
from thoughtvec.service.index.milvus_schema import (
    ID_MAX_BYTES,
    SPARSE_FIELD,
    SUPPORTED,
    TEXT_MAX_BYTES,
    MilvusOptions,
    add_bm25,
    analysed,
    bm25_capable,
    bm25_search_params,
    collection_name,
    index_name,
    index_params,
    no_bm25,
    search_params,
)
from thoughtvec.service.settings import SEARCH_MODES, SearchMode, is_lite

log = logging.getLogger(__name__)

CHUNK = 512  # ids per `id in [...]` expression, rows per upsert
LOAD_TIMEOUT_S = 600  # the start's longest wait for Milvus to load a collection (10 s at 100,000 documents, 2 cores)
CONNECT_TIMEOUT_S = 2  # the longest wait for a new connection's channel (a Milvus that is away is found out this fast)
PYMILVUS_RETRIES = 1  # pymilvus's own retries of an RPC Milvus did not take; ours (MilvusOptions.retries) reconnect first
_COUNT = "count(*)"


class MilvusStore:
    """Every index in one Milvus (Lite file or server), shared by every process pointed at it."""

    def __init__(self, options: MilvusOptions, on_size: Callable[[str, int | None], None] | None = None, bm25: BM25 | None = None):
        self.options = options
        self.bm25 = bm25 or BM25()  # k1 and b of every BM25 function it makes (search_settings: the guide's, else the fallback)
        self.uri = options.uri
        self.where = "Milvus Lite" if is_lite(options.uri) else "the Milvus server"  # what a client reads, not the URI
        self.on_size = on_size or (lambda name, n: None)
        self.quarantined: dict[str, str] = {}
        self._client: Any = None
        self._client_lock = threading.Lock()
        self._write_locks: dict[str, threading.Lock] = {}
        self._modes: tuple[SearchMode, ...] | None = None  # found out at the first need (search_modes)
        self._version = ""
        self._known: list[str] = []  # the last list Milvus gave (readiness shows it while Milvus is away)
        # After a call gave up on an unreachable Milvus, calls fail at once for timeout_s: some reads
        # (readiness, an index's config) run on the event loop, which must not wait out every retry.
        self._down_until = 0.0
        # Milvus Lite 2.4's upsert puts the id unescaped into SQL (an id with ' fails); one process owns a Lite
        # file and writes under its lock after the duplicate check, so a plain insert is as safe there
        self._write = "insert" if is_lite(options.uri) else "upsert"

    @property
    def capabilities(self) -> Capabilities:
        """The modes this Milvus serves (:attr:`search_modes`, and why not the others), Milvus's factories, no GPU of
        ours; shared by every replica."""
        modes = self.search_modes
        unserved = no_bm25(self.where, self._version) if modes != SEARCH_MODES else ""
        return Capabilities("milvus", modes, SUPPORTED, shared=True, unserved=unserved)

    # -- the connection --------------------------------------------------------------------
    def _connect(self) -> Any:
        with self._client_lock:
            if self._client is None:
                self._client = self._new_client()
            return self._client

    def _new_client(self) -> Any:
        from pymilvus import MilvusClient  # noqa: PLC0415  # the milvus extra, loaded with the first call

        # a short wait for the channel: a Milvus that is away costs each call this much, not timeout_s
        wait = min(self.options.timeout_s, CONNECT_TIMEOUT_S)
        # a connection of its own (pymilvus shares one per URI by default): dropping it closes no other's channel
        alias = f"thoughtvec-{uuid.uuid4().hex}"
        if is_lite(self.uri):  # its database file's folder, made as a FAISS index folder is
            with contextlib.suppress(OSError):  # else Milvus Lite says what it cannot open
                Path(self.uri).parent.mkdir(parents=True, exist_ok=True)
        return MilvusClient(uri=self.uri, token=self.options.token, timeout=wait, alias=alias)

    def _forget_client(self) -> None:
        with self._client_lock:
            client, self._client = self._client, None
        if client is not None:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - it is being dropped because it is broken
                pass

    def _call(self, op: str, name: str, method: str, *args: Any, timeout: int | None = None, passthrough: bool = False, **kw: Any) -> Any:
        """``client.<method>(...)`` with a deadline; retried while Milvus is unreachable, then a 503. Any other
        failure of the call is a 503 ``index_unavailable`` naming it (``passthrough``: raised as it is, for a
        caller that tells its own cases apart)."""
        what = f"index '{name}'" if name else "the indexes"
        if self._down_until:
            now = time.monotonic()
            if now < self._down_until:
                raise StorageUnavailable(
                    f"cannot {op} {what}: {self.where} is unavailable (it did not answer a moment ago; "
                    f"tried again within {self.options.timeout_s} s)",
                    field="index",
                )
            self._down_until = now + self.options.timeout_s  # this call asks again; the others still fail at once meanwhile
        last: BaseException | None = None
        attempt = reconnects = 0
        while attempt <= self.options.retries:
            try:
                # a float deadline per RPC, and pymilvus's own retries of an unreachable Milvus bounded by count: with an
                # int deadline it retries until the deadline (every call to a stopped Milvus would wait it out)
                deadline = float(timeout or self.options.timeout_s)
                result = getattr(self._connect(), method)(*args, timeout=deadline, retry_times=PYMILVUS_RETRIES, **kw)
                self._down_until = 0.0
                return result
            except Exception as e:
                if _not_loaded(e) and attempt == 0:  # a restarted Milvus reloads collections by itself, slowly
                    self._load(name, args[0])
                    attempt += 1
                    continue
                if _closed_here(e) and reconnects < 2:
                    # another thread dropped the shared client and closed its channel under this call: Milvus
                    # itself may be fine, so connect again at once (not an attempt against Milvus)
                    reconnects += 1
                    self._forget_client()
                    continue
                if not _unreachable(e):
                    self._down_until = 0.0  # Milvus answered (with a refusal)
                    if passthrough:
                        raise
                    log.warning("milvus %s: %s %s refused: %s", self.uri, op, name, _short(e))
                    raise IndexUnavailable(f"cannot {op} {what} in {self.where}: {_said(e)}", field="index") from e
                last = e
                log.warning(
                    "milvus %s: %s %s failed (attempt %d of %d): %s", self.uri, op, name, attempt + 1, self.options.retries + 1, _short(e)
                )
                self._forget_client()
                if attempt < self.options.retries:
                    time.sleep(min(0.25 * 2**attempt, 2.0))
                attempt += 1
        self._down_until = time.monotonic() + self.options.timeout_s
        raise StorageUnavailable(
            f"cannot {op} {what}: {self.where} is unavailable (it did not answer); the server log has the details", field="index"
        ) from last

    def _load(self, name: str, coll: str, wait: int = 30, client: Any = None) -> None:
        """Load a collection Milvus has not (yet) loaded, e.g. after its restart, waiting at most ``wait`` seconds
        (a request's call: 30; the start's :meth:`load_all`: ``LOAD_TIMEOUT_S``, on a ``client`` of its own, which a
        call that times out meanwhile and drops the shared one cannot close under it); 503 if it cannot."""
        log.info("milvus %s: loading collection %s (index %s)", self.uri, coll, name)
        try:
            (client or self._connect()).load_collection(coll, timeout=max(wait, self.options.timeout_s))
        except Exception as e:  # named in the 503
            log.warning("milvus %s: collection %s could not be loaded: %s", self.uri, coll, _short(e))
            raise IndexUnavailable(
                f"index '{name}' is not loaded in {self.where} and could not be loaded: {_said(e)}", field="index"
            ) from e

    def _coll(self, name: str) -> str:
        return collection_name(self.options.prefix, name)

    # -- reads -------------------------------------------------------------------------------
    def open(self) -> None:
        """Nothing to take: a Milvus server keeps its indexes for every process pointed at it, and Milvus Lite refuses
        a second process on its file itself (at that process's first call, which then answers 503)."""

    def load_all(self) -> list[str]:
        """Connect, list, and load every collection not loaded yet (a reopened Milvus Lite loads none: the first
        search or count of one would wait out its deadline while Milvus loads it, 10 s at 100,000 documents); a
        Milvus that is away now, or a collection that cannot be loaded, is not fatal (the calls retry it later)."""
        try:
            names = self.names()
        except StorageUnavailable as e:
            log.error("%s; indexes answer 503 until it is back", e)
            return []
        loader = None
        try:
            for name in names:
                try:
                    state = self._call("check", name, "get_load_state", self._coll(name))
                    if "NotLoad" in str(state.get("state")):  # pymilvus's LoadState.NotLoad (Loading: Milvus is at it)
                        loader = loader or self._new_client()
                        self._load(name, self._coll(name), wait=LOAD_TIMEOUT_S, client=loader)
                except Exception as e:  # noqa: BLE001 - not fatal: its calls load it, or answer 503, later
                    log.error("index %s: %s; it answers 503 until it is loaded", name, getattr(e, "message", e))
        finally:
            if loader is not None:
                with contextlib.suppress(Exception):
                    loader.close()
        return names

    def load(self, name: str) -> bool:
        """Whether Milvus holds the index ``name`` (its collections are Milvus's to load)."""
        return name in self

    def names(self) -> list[str]:
        try:
            colls = self._call("list", "", "list_collections")
        except StorageUnavailable:
            if self._known:
                return list(self._known)
            raise
        names = sorted(n for c in colls if (n := index_name(self.options.prefix, c)) is not None)
        self._known = names
        return names

    def __contains__(self, name: str) -> bool:
        return bool(self._call("find", name, "has_collection", self._coll(name)))

    def config(self, name: str) -> IndexConfig:
        return self._describe(name)[0]

    def _describe(self, name: str) -> tuple[IndexConfig, bool]:
        """The index's config, and whether its collection holds BM25 (an analysed text and its sparse field)."""
        try:
            desc = self._call("read", name, "describe_collection", self._coll(name), passthrough=True)
        except StorageUnavailable:
            raise
        except Exception as e:  # not found is the common one; anything else is named
            if not self._call("find", name, "has_collection", self._coll(name)):
                raise UnknownIndex(f"no index '{name}'; the indexes are {self.names()}", field="index") from None
            log.warning("milvus %s: collection %s cannot be described: %s", self.uri, self._coll(name), _short(e))
            raise IndexUnavailable(f"index '{name}' cannot be read from {self.where}: {_said(e)}", field="index") from e
        try:
            config = IndexConfig.model_validate_json(desc.get("description") or "")
        except ValueError as e:
            log.error("milvus %s: collection %s: its description is no index config: %s", self.uri, self._coll(name), e)
            why = f"collection {self._coll(name)} has no thoughtvec index config in its description"
            self.quarantined[name] = why
            raise IndexUnavailable(f"index '{name}' is quarantined: {why}; drop it", field="index") from None
        return config, any(f.get("name") == SPARSE_FIELD for f in desc.get("fields", ()))

    def count(self, name: str) -> int:
        self.config(name)  # 404 / 503 as the FAISS store answers
        rows = self._call("count", name, "query", self._coll(name), filter="", output_fields=[_COUNT], consistency_level="Strong")
        n = int(rows[0][_COUNT]) if rows else 0
        self.on_size(name, n)  # the documents gauge follows every count (the core counts after each write)
        return n

    def stats(self, name: str) -> IndexStats:
        n = self.count(name)
        return IndexStats.of(self.config(name), n)  # Milvus trains, logs and places its indexes itself

    def inventory(self) -> list[IndexStats]:
        return [self.stats(n) for n in self.names()]

    def search(self, name: str, queries: np.ndarray, k: int) -> list[list[tuple[Doc, float]]]:
        """Nearest ``k`` per query row, best first; scores as FAISS gives them (similarity, or squared L2)."""
        c = self.config(name)
        q = _prepare(c, queries)
        res = self._call(
            "search",
            name,
            "search",
            self._coll(name),
            data=q.tolist(),
            limit=k,
            anns_field="vector",
            output_fields=["text", "metadata"],
            search_params=search_params(c, k),
            consistency_level="Strong",
        )
        out = []
        for row in res:
            hits = []
            for h in row:
                s = float(h["distance"])
                if c.metric == "cosine":
                    s = min(1.0, max(-1.0, s))  # float32 rounding can step past 1 for a text and itself
                hits.append((_doc(_unpk(h["id"]), h["entity"]), s))
            out.append(hits)
        return out

    @property
    def search_modes(self) -> tuple[SearchMode, ...]:
        """What this Milvus can serve: every mode on one with BM25 (2.5 and later), by vector only before."""
        if self._modes is None:
            self._version = self._server_version()
            self._modes = SEARCH_MODES if bm25_capable(self._version) else ("dense",)
            log.info("milvus %s: version %s; search modes %s", self.uri, self._version, ", ".join(self._modes))
        return self._modes

    @search_modes.setter
    def search_modes(self, modes: tuple[SearchMode, ...]) -> None:  # pinned (the protocol's attribute is settable)
        self._modes = modes

    def _server_version(self) -> str:
        if is_lite(self.uri):  # Milvus Lite has no GetVersion: its package's version is the server's
            from importlib.metadata import version  # noqa: PLC0415  # once, for Milvus's version

            return version("milvus-lite")
        return str(self._call("read the version of", "", "get_server_version")).lstrip("v")

    def lexical_search(self, name: str, queries: Sequence[str], k: int) -> list[list[tuple[Doc, float]]]:
        """BM25 in Milvus: its ``english`` analyser on ``text``, the sparse field its BM25 function fills (k1, b as
        the FAISS store's); best first, only documents sharing a term with the query."""
        _, has_bm25 = self._describe(name)
        if not has_bm25:
            raise InvalidInput(
                f"index '{name}' was made without BM25 (on a Milvus before 2.5, or by an earlier version of this server), so it is "
                "searched by vector only (mode 'dense'); add its documents to a new index for lexical and hybrid search",
                field="mode",
            )
        res = self._call(
            "search",
            name,
            "search",
            self._coll(name),
            data=list(queries),
            limit=k,
            anns_field=SPARSE_FIELD,
            output_fields=["text", "metadata"],
            search_params=bm25_search_params(),
            consistency_level="Strong",
        )
        return [[(_doc(_unpk(h["id"]), h["entity"]), float(h["distance"])) for h in row] for row in res]

    def documents(self, name: str, limit: int, include: Sequence[str] = ()) -> list[Doc]:
        self.config(name)
        first = [d for d in self._get(name, list(dict.fromkeys(include))) if d is not None][:limit]
        seen = {d.id for d in first}
        rows = self._call(
            "read",
            name,
            "query",
            self._coll(name),
            filter='id != ""',
            limit=limit + len(first),
            output_fields=["id", "text", "metadata"],
            consistency_level="Strong",
        )
        return first + [d for r in rows if (d := _doc(_unpk(r["id"]), r)).id not in seen][: limit - len(first)]

    def _get(self, name: str, ids: list[str]) -> list[Doc | None]:
        """The documents with these ids (``None`` where there is none), in order."""
        found: dict[str, Doc] = {}
        for start in range(0, len(ids), CHUNK):
            part = ids[start : start + CHUNK]
            rows = self._call(
                "read",
                name,
                "query",
                self._coll(name),
                filter=_id_in(part),
                output_fields=["id", "text", "metadata"],
                consistency_level="Strong",
            )
            found.update((d.id, d) for r in rows if (d := _doc(_unpk(r["id"]), r)))
        return [found.get(i) for i in ids]

    def _existing(self, name: str, ids: list[str]) -> set[str]:
        have: set[str] = set()
        for start in range(0, len(ids), CHUNK):
            rows = self._call(
                "read",
                name,
                "query",
                self._coll(name),
                filter=_id_in(ids[start : start + CHUNK]),
                output_fields=["id"],
                consistency_level="Strong",
            )
            have.update(_unpk(r["id"]) for r in rows)
        return have

    # -- writes ------------------------------------------------------------------------------
    def new_config(self, new: NewIndex) -> IndexConfig:
        """A new index's config, its factory checked against this Milvus's indexes now (Milvus trains an index
        itself: nothing is buffered, ``train_size`` is 0)."""
        config = new.config(train_size=0)
        self._index_params(config)
        return config

    def _index_params(self, config: IndexConfig) -> dict[str, Any]:
        """The collection's vector index for ``config``'s factory: a 422 naming ``factory`` where Milvus has none."""
        try:
            return index_params(config, lite=is_lite(self.uri))
        except ValueError as e:
            raise InvalidInput(str(e), field="factory") from None

    def create(self, config: IndexConfig) -> IndexStats:
        self._create_collection(config, overwrite=False)
        return self.stats(config.name)

    def _create_collection(self, config: IndexConfig, overwrite: bool) -> None:
        from pymilvus import DataType, MilvusClient  # noqa: PLC0415  # the milvus extra, loaded with the first call

        name, coll = config.name, self._coll(config.name)
        params = self._index_params(config)
        with self._lock(name):
            if self._call("find", name, "has_collection", coll):
                if not overwrite:
                    raise Conflict(f"index '{name}' already exists", field="name")
                self._call("drop", name, "drop_collection", coll)
            schema = MilvusClient.create_schema(auto_id=False, enable_dynamic_field=False, description=config.model_dump_json())
            schema.add_field("id", DataType.VARCHAR, is_primary=True, max_length=3 * ID_MAX_BYTES)  # percent-encoded
            bm25 = "lexical" in self.search_modes
            schema.add_field("text", DataType.VARCHAR, max_length=TEXT_MAX_BYTES, **analysed() if bm25 else {})
            schema.add_field("metadata", DataType.VARCHAR, max_length=TEXT_MAX_BYTES)
            schema.add_field("vector", DataType.FLOAT_VECTOR, dim=config.dim)
            ip = MilvusClient.prepare_index_params()
            ip.add_index("vector", **params)
            if bm25:
                add_bm25(schema, ip, self.bm25)
            # a server loads the new collection before answering (seconds): a longer deadline than other calls
            self._call(
                "create",
                name,
                "create_collection",
                coll,
                schema=schema,
                index_params=ip,
                consistency_level="Strong",
                timeout=max(30, self.options.timeout_s),
            )
            self.quarantined.pop(name, None)

    def install(self, built: BuiltIndex, overwrite: bool = False) -> IndexStats:
        """Store a whole index built offline (``thoughtvec index build``, the default index) in Milvus."""
        config = built.config
        self._create_collection(config, overwrite)
        try:
            self._upsert(config.name, config, built.docs, built.vectors)
        except Exception:
            self._call("drop", config.name, "drop_collection", self._coll(config.name))  # no half-made index left behind
            raise
        return self.stats(config.name)

    def add(self, name: str, docs: list[Doc], vectors: np.ndarray) -> list[str]:
        """Ids must be new (409 otherwise); checked and written under this process's lock for the index."""
        config = self.config(name)
        _check_fields(docs)
        seen: set[str] = set()
        for i, d in enumerate(docs):
            if d.id in seen:
                raise Conflict(f"documents[{i}].id '{d.id}' already exists in index '{name}'", field=f"documents[{i}].id")
            seen.add(d.id)
        with self._lock(name):
            have = self._existing(name, [d.id for d in docs])
            for i, d in enumerate(docs):
                if d.id in have:
                    raise Conflict(f"documents[{i}].id '{d.id}' already exists in index '{name}'", field=f"documents[{i}].id")
            self._upsert(name, config, docs, vectors, chunk=len(docs))  # one request: Milvus applies it whole or not at all
        return [d.id for d in docs]

    def _upsert(self, name: str, config: IndexConfig, docs: list[Doc], vectors: np.ndarray, chunk: int = CHUNK) -> None:
        x = _prepare(config, vectors)  # (n, dim)
        for start in range(0, len(docs), max(1, chunk)):
            rows = [
                {
                    "id": _pk(d.id),
                    "text": d.text,
                    "metadata": json.dumps(d.metadata, ensure_ascii=False, separators=(",", ":")),
                    "vector": v.tolist(),
                }
                for d, v in zip(docs[start : start + chunk], x[start : start + chunk])
            ]
            self._call("add documents to", name, self._write, self._coll(name), rows)

    def delete(self, name: str, ids: list[str]) -> list[str]:
        self.config(name)
        with self._lock(name):
            have = self._existing(name, list(dict.fromkeys(ids)))
            found = [i for i in dict.fromkeys(ids) if i in have]
            for start in range(0, len(found), CHUNK):
                self._call("delete documents from", name, "delete", self._coll(name), filter=_id_in(found[start : start + CHUNK]))
        return found

    def drop(self, name: str) -> None:
        coll = self._coll(name)
        if not self._call("find", name, "has_collection", coll):
            raise UnknownIndex(f"no index '{name}'; the indexes are {self.names()}", field="index")
        self._call("drop", name, "drop_collection", coll)
        self.quarantined.pop(name, None)
        self.on_size(name, None)

    def _lock(self, name: str) -> threading.Lock:
        with self._client_lock:
            return self._write_locks.setdefault(name, threading.Lock())

    def close(self) -> None:
        self._forget_client()


# -- helpers ---------------------------------------------------------------------------------
def _unreachable(e: BaseException) -> bool:
    """Milvus could not be reached or did not answer in time (worth a retry), as opposed to refusing a call."""
    from pymilvus.exceptions import MilvusException, MilvusUnavailableException  # noqa: PLC0415  # the milvus extra, loaded with the first call

    if isinstance(e, MilvusUnavailableException | TimeoutError | ConnectionError):
        return True
    try:
        import grpc  # noqa: PLC0415  # pymilvus's transport: the milvus extra

        if isinstance(e, grpc.RpcError) or isinstance(e.__cause__, grpc.RpcError):  # pymilvus's own retries gave up
            return True
        if isinstance(e, grpc.FutureTimeoutError):
            return True
    except ImportError:  # pragma: no cover - pymilvus depends on grpcio
        pass
    if isinstance(e, MilvusException):
        text = str(e)
        return any(
            s in text
            for s in (
                "UNAVAILABLE",
                "DEADLINE_EXCEEDED",
                "Fail connecting",
                "failed to connect",
                "Connection refused",
                "timeout",
                "Timeout",
                "not ready",
                "server unavailable",
            )
        )
    return False


_CLOSED = ("closed channel", "Channel closed", "should create connection first")


def _closed_here(e: BaseException) -> bool:
    """The client's channel was closed in this process (another call dropped the client), or its connection was
    removed: pymilvus says "Cannot invoke RPC on closed channel!" (wrapped as "Unexpected error"), gRPC "Channel
    closed!", and a removed connection ``ConnectionNotExistException``."""
    from pymilvus.exceptions import ConnectionNotExistException  # noqa: PLC0415  # the milvus extra, loaded with the first call

    chain = [e, e.__cause__, e.__context__]
    return any(isinstance(x, ConnectionNotExistException) or any(s in str(x) for s in _CLOSED) for x in chain if x is not None)


def _not_loaded(e: BaseException) -> bool:
    return "not loaded" in str(e)


def _said(e: BaseException) -> str:
    """What Milvus answered, for a client to read: a MilvusException's message (Milvus's words, or pymilvus's about the
    call), never a Python class name; anything else raised in the client is the log's to tell."""
    from pymilvus.exceptions import MilvusException  # noqa: PLC0415  # the milvus extra, loaded with the first call

    if isinstance(e, MilvusException):
        lines = str(e.message or "").strip().splitlines()
        return f"Milvus said: {lines[0][:200]}" if lines else "Milvus refused it"
    return "an unexpected error in the Milvus client; the server log has the details"


def _short(e: BaseException | None) -> str:
    """An error as the log shows it: its class and first line, or a gRPC status and its details."""
    if callable(getattr(e, "code", None)) and callable(getattr(e, "details", None)):  # a grpc.RpcError
        try:
            return f"gRPC {e.code().name}: {str(e.details()).strip()[:200]}"  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001 - fall back to its text
            pass
    msg = getattr(e, "message", None) or str(e)
    return f"{type(e).__name__}: {str(msg).strip().splitlines()[0][:200]}" if msg else type(e).__name__


def _prepare(config: IndexConfig, vectors: np.ndarray) -> np.ndarray:
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    return l2_normalize(x) if config.normalize or config.metric == "cosine" else x


def _doc(doc_id: str, entity: dict) -> Doc:
    return Doc(doc_id, entity["text"], json.loads(entity["metadata"]))


def _pk(doc_id: str) -> str:
    return quote(doc_id, safe="")  # only A-Za-z0-9_.~- and %XX: nothing to escape in an expression


def _unpk(pk: str) -> str:
    return unquote(pk)


def _id_in(ids: Sequence[str]) -> str:
    return "id in [" + ",".join(f'"{_pk(i)}"' for i in ids) + "]"


def _check_fields(docs: list[Doc]) -> None:
    """Milvus's field limits as 422s naming the field (the HTTP checks allow more than Milvus stores)."""
    for i, d in enumerate(docs):
        for fld, value, limit in (
            ("id", d.id, ID_MAX_BYTES),
            ("text", d.text, TEXT_MAX_BYTES),
            ("metadata", json.dumps(d.metadata, ensure_ascii=False, separators=(",", ":")), TEXT_MAX_BYTES),
        ):
            size = len(value.encode("utf-8"))
            if size > limit:
                raise InvalidInput(
                    f"documents[{i}].{fld} is {size} bytes of UTF-8; Milvus stores at most {limit}", field=f"documents[{i}].{fld}"
                )
