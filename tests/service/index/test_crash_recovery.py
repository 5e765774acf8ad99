"""kill -9 a real server while clients write, restart it, and compare: every acknowledged write is
there, nothing refused is, and the server starts every time.

Each round starts ``python -m thoughtvec.service.cli serve`` on the tiny bundles, lets four clients add
(and delete) documents, SIGKILLs the process mid-stream, then loads the index folder the way the
next start does, both halves of it (the vectors and the BM25 index beside them). Requests that were in flight at the kill have no answer, so they may or may not
be there (as with any database); answered ones must be exactly as answered. More rounds:
``CRASH_ROUNDS=20 pytest tests/service/index/test_crash_recovery.py -s`` (prints the figures).
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx

from tests.service.conftest import serve_process
from tests.service.index.stores import crash
from thoughtvec.service.index.store import IndexStore

ROUNDS = int(os.environ.get("CRASH_ROUNDS", "3"))


def start(models_dir: Path, index_dir: Path) -> tuple[subprocess.Popen, str]:
    return serve_process(models_dir, "--index-dir", str(index_dir))


def writer(base: str, client_id: int, rnd: int, stop: threading.Event, log: list) -> None:
    """Add batches of 3 documents, deleting one of its own acknowledged ones every third batch."""
    n = 0
    with httpx.Client(base_url=base, timeout=10) as c:
        while not stop.is_set():
            ids = [f"r{rnd}c{client_id}n{n + i}" for i in range(3)]
            n += 3
            body = {"documents": [{"id": i, "text": f"the cat sat on mat {i}", "metadata": {"client": client_id}} for i in ids]}
            try:
                r = c.post("/v1/indexes/crash/documents", json=body)
            except httpx.HTTPError:
                log.append(("add", ids, None))  # in flight at the kill: unknown
                return
            log.append(("add", ids, r.status_code))
            if n % 9 == 0:
                victim = [ids[0]]
                try:
                    r = c.post("/v1/indexes/crash/documents/delete", json={"ids": victim})
                except httpx.HTTPError:
                    log.append(("delete", victim, None))
                    return
                log.append(("delete", victim, r.status_code))


def test_kill_9_rounds_keep_every_acknowledged_write(models_dir, tmp_path):
    index_dir = tmp_path / "idx"
    proc, base = start(models_dir, index_dir)
    assert httpx.post(base + "/v1/indexes", json={"name": "crash", "model": "tiny"}).status_code == 201
    present: set[str] = set()  # what must be there after the kills: acknowledged adds minus acknowledged deletes
    unknown: set[str] = set()  # in flight at a kill
    acked_total = 0
    for rnd in range(ROUNDS):
        if rnd:
            proc, base = start(models_dir, index_dir)
        stop, log = threading.Event(), []
        threads = [threading.Thread(target=writer, args=(base, i, rnd, stop, log)) for i in range(4)]
        for t in threads:
            t.start()
        deadline = time.time() + 60  # some adds and deletes answered first, whatever the machine's load
        while sum(op == "delete" and status == 200 for op, _, status in list(log)) < 2 and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(0.2 + 0.37 * rnd)  # then kill at a different point each round
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        stop.set()
        for t in threads:
            t.join()
        acked = {"add": 0, "delete": 0}  # writes answered 200 before the kill: what this round checks
        for op, ids, status in log:
            if status is None:
                unknown |= set(ids)
            elif status != 200:
                raise AssertionError(f"{op} {ids} answered {status}")
            elif op == "add":
                present |= set(ids)
                acked["add"] += len(ids)
            else:
                present -= set(ids)
                acked["delete"] += len(ids)
        # a round whose writes were never answered (a server that died before them) would check nothing
        assert acked["add"] > 0 and acked["delete"] > 0, f"round {rnd}: acknowledged before the kill: {acked}"
        acked_total += acked["add"]
        store = IndexStore(index_dir)  # what the next start will load
        assert store.load_all() == ["crash"] and not store.quarantined
        entry = store.entry("crash")
        found = set(entry.index.labels)
        assert len(entry.lexical) == len(found) and all(i in entry.lexical for i in found), f"round {rnd}: the BM25 half differs"
        some = sorted(found)[:: max(1, len(found) // 20)]  # each text holds its id, a term only it has
        assert [[d.id for d, _ in hits] for hits in store.lexical_search("crash", some, 1)] == [[i] for i in some]
        assert present - unknown <= found, f"round {rnd}: acknowledged but lost: {sorted(present - unknown - found)[:5]}"
        assert found <= present | unknown, f"round {rnd}: never acknowledged but there: {sorted(found - present - unknown)[:5]}"
        present = (present | (found & unknown)) - (unknown - found)  # the in-flight ones are settled now
        unknown = set()
        if rnd % 2:
            store.close()  # every other round starts from a fresh snapshot, the others from a growing log
        else:
            crash(store)  # this process lets go of the folder as the killed server did: the next server takes it
    print(f"\n{ROUNDS} kill -9 rounds: {acked_total} documents acknowledged, all recovered; {len(present)} in the index at the end")
    proc, base = start(models_dir, index_dir)  # and it still starts and serves
    try:
        assert httpx.get(base + "/v1/indexes/crash").json()["documents"] == len(present)
    finally:
        proc.kill()
        proc.wait()
