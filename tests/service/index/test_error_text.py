"""What a client reads of a storage fault names no path of the server and no Python text, while the server log keeps
the path: a read-only or full disk under a write, a drop that cannot rename, indexes that cannot be loaded (a log
record that cannot be replayed, a snapshot FAISS cannot read or cannot find, a file that is a folder, another
format), a bundle ONNX Runtime cannot load, the workers' read-only folder, and Milvus Lite away or refusing."""

from __future__ import annotations

import errno
import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from tests.service.conftest import SENTENCES, serve_test, settings_for
from tests.service.index.milvus_support import need
from thoughtvec.service.errors import IndexesReadOnly, IndexUnavailable, StorageUnavailable
from thoughtvec.service.http.app import create_app
from thoughtvec.service.index.backend import open_backend
from thoughtvec.service.index.contents import Doc, NewIndex
from thoughtvec.service.index.indexes import new_config
from thoughtvec.service.index.store import SNAPSHOT, WAL_FILE, IndexStore
from thoughtvec.service.index.wal import Wal, encode_record
from thoughtvec.service.settings import Settings

DIM = 8


def private(text: str, *folders: Path) -> str:
    """``text``, checked: none of ``folders`` in it (as given or resolved), no Python traceback, ``sys.`` or errno."""
    for folder in folders:
        assert str(folder) not in text and str(folder.resolve()) not in text, text
    for hint in ("Traceback", "sys.", "Errno", "Error in "):
        assert hint not in text, text
    return text


def test_a_write_to_a_failing_disk_says_why_and_the_log_says_where(models_dir, tmp_path, monkeypatch, caplog):
    wal = tmp_path / "idx" / "docs" / WAL_FILE
    with serve_test(settings_for(models_dir, tmp_path / "idx")) as c:
        assert c.post("/v1/indexes", json={"name": "docs", "model": "tiny"}).status_code == 201
        for code, reason in ((errno.EROFS, "Read-only file system"), (errno.ENOSPC, "No space left on device")):

            def fails(*_a, code=code, reason=reason, **_k):
                raise OSError(code, reason, str(wal))  # as the kernel's error carries the file

            monkeypatch.setattr(Wal, "append", fails)
            r = c.post("/v1/indexes/docs/documents", json={"documents": [{"text": SENTENCES[0]}]})
            assert r.status_code == 503, r.text
            message = private(r.json()["error"]["message"], tmp_path)
            assert f"cannot add documents to index 'docs': {reason} (the index folder)" in message and "server log" in message
            monkeypatch.undo()

        def cannot_rename(self, target):
            raise OSError(errno.EBUSY, "Device or resource busy", str(self), None, str(target))

        monkeypatch.setattr(Path, "rename", cannot_rename)
        r = c.delete("/v1/indexes/docs")
        monkeypatch.undo()
        assert r.status_code == 503, r.text
        assert "cannot drop index 'docs': Device or resource busy" in private(r.json()["error"]["message"], tmp_path)
    assert str(wal) in caplog.text  # the server's log keeps the file


def broken_folders(root: Path) -> dict[str, str]:
    """Index folders each broken in its own way, and what a client is told of each."""
    store = IndexStore(root)
    for name in ("replay", "garbage", "missing", "folder", "format"):
        store.create(new_config(NewIndex(name, "tiny", "mean", DIM)))
        store.add(name, [Doc("a", "a cat sat")], np.ones((1, DIM), np.float32))
    store.close()
    with open(root / "replay" / WAL_FILE, "ab") as f:  # whole (its checksum fine), but its vectors do not fit
        f.write(encode_record({"seq": 2, "op": "add", "labels": [1], "docs": [{"id": "z", "text": "t", "metadata": None}]}, b"\0" * 12))
    (root / "garbage" / SNAPSHOT / "index.faiss").write_bytes(b"not an index" * 4)
    (root / "missing" / SNAPSHOT / "index.faiss").unlink()
    (root / "folder" / SNAPSHOT / "docs.jsonl").unlink()
    (root / "folder" / SNAPSHOT / "docs.jsonl").mkdir()
    meta = json.loads((root / "format" / SNAPSHOT / "meta.json").read_text())
    (root / "format" / SNAPSHOT / "meta.json").write_text(json.dumps(meta | {"format_version": 99}))
    return {
        "replay": "log record 2 (add) cannot be replayed",
        "garbage": "FAISS: Index type",
        "missing": "FAISS: could not open a file for reading: No such file or directory",
        "folder": "its files cannot be read: Is a directory",
        "format": "its snapshot has format_version 99; this server reads 1",
    }


def test_an_index_that_cannot_be_loaded_is_quarantined_in_words(models_dir, tmp_path, caplog):
    told = broken_folders(tmp_path / "idx")
    with serve_test(settings_for(models_dir, tmp_path / "idx")) as c:
        ready = c.get("/ready").json()["indexes"]
        listing = c.get("/v1/indexes").json()["quarantined"]
        for name, words in told.items():
            assert words in private(ready[name], tmp_path) and words in private(json.dumps(listing), tmp_path), (name, ready[name])
            r = c.post("/v1/search", json={"index": name, "query": [1.0] * DIM})
            assert r.status_code == 503 and words in private(r.json()["error"]["message"], tmp_path), r.text
    assert str(tmp_path / "idx" / "folder") in caplog.text  # the log names the folder, with the exception


def test_a_bundle_that_cannot_be_loaded_is_reported_by_its_name(models_dir, tmp_path):
    models = tmp_path / "models"
    shutil.copytree(models_dir / "tiny", models / "broken")
    onnx_file = json.loads((models / "broken" / "bundle.json").read_text())["onnx"]["file"]
    (models / "broken" / onnx_file).write_bytes(b"not a graph")
    with TestClient(create_app(settings_for(models, tmp_path / "idx", default_model=None))) as c:
        deadline = time.time() + 30
        while "problem" not in c.get("/ready").json() and time.time() < deadline:
            time.sleep(0.05)
        body = c.get("/ready").json()
        assert "onnx.file: ONNX Runtime cannot load it" in private(body["failed"]["broken"], tmp_path)
        assert onnx_file in body["failed"]["broken"] and "models_dir" in private(body["problem"], tmp_path)
        r = c.post("/v1/embeddings", json={"input": "a cat"})
        assert r.status_code == 503 and "models_dir" in private(r.json()["error"]["message"], tmp_path)


def test_the_workers_read_only_folder_is_not_named(tmp_path):
    store = open_backend(Settings(index_dir=tmp_path / "idx", workers=2))
    with pytest.raises(IndexesReadOnly) as e:
        store.create(new_config(NewIndex("x", "tiny", "mean", DIM)))
    assert "--workers 1" in private(str(e.value), tmp_path)


class Refusing:
    """A Milvus client whose every call raises ``error``."""

    def __init__(self, error: BaseException):
        self.error = error

    def __getattr__(self, name):
        def call(*_a, **_k):
            raise self.error

        return call


def test_milvus_lite_errors_name_neither_its_file_nor_the_python_error(tmp_path, monkeypatch):
    need("pymilvus")
    from pymilvus.exceptions import MilvusException

    from thoughtvec.service.index.milvus import MilvusStore
    from thoughtvec.service.index.milvus_schema import MilvusOptions

    lite = tmp_path / "milvus.db"
    store = MilvusStore(MilvusOptions(str(lite), retries=0, timeout_s=1))
    cases = [
        (MilvusException(message=f"Fail connecting to server on unix:{lite}.sock"), StorageUnavailable, "Milvus Lite is unavailable"),
        (MilvusException(message="collection not found[collection=thoughtvec_x]"), IndexUnavailable, "Milvus said: collection not found"),
        (TypeError(f"cannot read {lite}"), IndexUnavailable, "an unexpected error in the Milvus client"),
    ]
    for error, kind, words in cases:
        monkeypatch.setattr(store, "_connect", lambda error=error: Refusing(error))
        store._down_until = 0.0
        with pytest.raises(kind) as e:
            store.count("x")
        assert words in private(str(e.value), tmp_path), e.value
