"""Storage faults: an acknowledged write is never lost and a refused one never appears.

Faults are injected where the log meets the OS (a short write then ENOSPC, an fsync that fails, a
truncation that fails too), and made real on a small tmpfs (root only). After each fault the log
on disk is exactly as it was before the refused write, and the next write lands after it.
"""

from __future__ import annotations

import errno
import os
import subprocess

import numpy as np
import pytest

from tests.service.index.stores import restart
from thoughtvec.service.errors import StorageUnavailable
from thoughtvec.service.index import wal as wal_module
from thoughtvec.service.index.contents import Doc, NewIndex
from thoughtvec.service.index.indexes import VectorIndex, new_config
from thoughtvec.service.index.store import WAL_FILE, IndexStore

DIM = 8


def vecs(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((n, DIM)).astype(np.float32)


def docs(lo: int, hi: int) -> list[Doc]:
    return [Doc(f"d{i}", f"text {i}", {"i": i}) for i in range(lo, hi)]


def store_at(root, wal_mb: int = 64) -> IndexStore:
    store = IndexStore(root, wal_max_bytes=wal_mb * 2**20)
    store.create(new_config(NewIndex("x", "tiny", "mean", DIM)))
    return store


def recovered(died: IndexStore) -> set[str]:
    """The ids a fresh process finds (the old one "died": nothing was closed or snapshotted)."""
    store = restart(died)
    assert not store.quarantined, store.quarantined
    entry = store.entry("x")
    ids = set(entry.index.labels)
    assert len(entry.lexical) == len(ids) and all(i in entry.lexical for i in ids)  # the BM25 half: the same documents
    return ids


class Faults:
    """Replaces os.write / os.fsync / os.ftruncate for the log's descriptor only."""

    def __init__(self, monkeypatch, store: IndexStore):
        self.store, self.plan = store, {}
        real = {name: getattr(os, name) for name in ("write", "fsync", "ftruncate")}
        for name, fn in real.items():
            monkeypatch.setattr(wal_module.os, name, self._wrap(name, fn))

    def _wrap(self, name, real):
        def call(fd, *args):
            todo = self.plan.get(name)
            if todo and fd == self.store.entry("x").wal._fd:
                return todo.pop(0)(real, fd, *args)
            return real(fd, *args)

        return call


def enospc(*_a):
    raise OSError(errno.ENOSPC, "No space left on device")


def half_then_enospc():
    """A short write (half the record reaches the file), then ENOSPC for the rest."""
    return [lambda real, fd, data: real(fd, bytes(data[: len(data) // 2])), lambda *_a: enospc()]


def test_short_write_then_enospc_leaves_the_log_as_it_was(tmp_path, monkeypatch):
    store = store_at(tmp_path)
    store.add("x", docs(0, 3), vecs(3))
    size = (tmp_path / "x" / WAL_FILE).stat().st_size
    faults = Faults(monkeypatch, store)
    faults.plan["write"] = half_then_enospc()
    with pytest.raises(StorageUnavailable, match="No space left"):
        store.add("x", docs(3, 6), vecs(3, 1))
    assert (tmp_path / "x" / WAL_FILE).stat().st_size == size  # the half record was cut off
    store.add("x", docs(6, 8), vecs(2, 2))  # space is back
    assert recovered(store) == {f"d{i}" for i in [0, 1, 2, 6, 7]}


def test_failed_fsync_refuses_the_write_and_removes_it(tmp_path, monkeypatch):
    store = store_at(tmp_path)
    store.add("x", docs(0, 2), vecs(2))
    faults = Faults(monkeypatch, store)
    faults.plan["fsync"] = [lambda *_a: (_ for _ in ()).throw(OSError(errno.EIO, "Input/output error"))]
    with pytest.raises(StorageUnavailable, match="Input/output error"):
        store.add("x", docs(2, 4), vecs(2, 1))  # whole record written, not known to be on disk: refused
    with pytest.raises(StorageUnavailable):
        faults.plan["fsync"] = [lambda *_a: (_ for _ in ()).throw(OSError(errno.EIO, "Input/output error"))]
        store.delete("x", ["d0"])
    assert set(store.entry("x").index.labels) == {"d0", "d1"}
    store.add("x", docs(4, 5), vecs(1, 2))
    assert recovered(store) == {"d0", "d1", "d4"}


def test_a_failed_rollback_blocks_appends_until_the_log_is_clean(tmp_path, monkeypatch):
    store = store_at(tmp_path)
    store.add("x", docs(0, 2), vecs(2))
    size = (tmp_path / "x" / WAL_FILE).stat().st_size
    faults = Faults(monkeypatch, store)
    faults.plan["write"] = half_then_enospc()
    faults.plan["ftruncate"] = [lambda *_a: enospc(), lambda *_a: enospc()]  # the cut fails, and again at the next write
    with pytest.raises(StorageUnavailable):
        store.add("x", docs(2, 4), vecs(2, 1))
    with pytest.raises(StorageUnavailable):  # not appended after the torn half record
        store.add("x", docs(4, 5), vecs(1, 2))
    store.add("x", docs(5, 6), vecs(1, 3))  # the cut succeeds first, then the record
    assert (tmp_path / "x" / WAL_FILE).stat().st_size > size
    assert recovered(store) == {"d0", "d1", "d5"}


def test_a_failed_snapshot_after_an_acknowledged_write_does_not_refuse_it(tmp_path, monkeypatch):
    store = store_at(tmp_path)
    store.wal_max_bytes = 10  # every write is followed by a snapshot attempt

    def disk_full(*_a, **_k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(VectorIndex, "write_snapshot", disk_full)
    assert store.add("x", docs(0, 2), vecs(2)) == ["d0", "d1"]  # durable in the log: acknowledged
    monkeypatch.undo()
    assert recovered(store) == {"d0", "d1"}


@pytest.fixture
def tiny_fs(tmp_path):
    """A 1 MiB tmpfs (needs root and mount); skipped where it cannot be made."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("needs root and mount -t tmpfs to make a full filesystem")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(path) -> None:
    """Write zeros until the filesystem is full (unbuffered: nothing is left to flush at close)."""
    with open(path, "wb", buffering=0) as f:
        for chunk in (65536, 4096, 1):
            try:
                while True:
                    f.write(b"\0" * chunk)
            except OSError:
                pass


def test_a_really_full_disk_loses_no_acknowledged_write(tiny_fs):
    """Disk full -> writes refused -> space freed -> writes acknowledged (twice) -> crash -> exactly the acknowledged ones."""
    root = tiny_fs / "idx"
    store = store_at(root)
    acked: set[str] = set()
    n = 0
    for _round in range(2):
        fill(tiny_fs / "filler")
        refused = 0
        while refused < 3:  # the log's last page may still take a record or two, then part of one
            try:
                acked |= set(store.add("x", docs(n, n + 20), vecs(20, n)))
            except StorageUnavailable as e:
                assert "No space left" in e.message
                refused += 1
            n += 20
        (tiny_fs / "filler").unlink()  # space is back
        for _ in range(3):
            acked |= set(store.add("x", docs(n, n + 20), vecs(20, n)))
            n += 20
    assert recovered(store) == acked
