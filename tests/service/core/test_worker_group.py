"""Several workers on one port, in one process: what each publishes and how any answers for all (readiness,
metrics), the settings each runs with, what is refused (index writes over one folder, Milvus Lite)."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import time

import numpy as np
import pytest
from fastapi.testclient import TestClient

from tests.service.conftest import settings_for
from tests.service.index.stores import crash
from thoughtvec.service.core.metrics import Metrics, merge_expositions
from thoughtvec.service.core.registry import default_ort_threads
from thoughtvec.service.core.worker_group import WorkerGroup
from thoughtvec.service.errors import IndexesReadOnly
from thoughtvec.service.http.app import create_app
from thoughtvec.service.http.transport import http_protocol
from thoughtvec.service.http.worker_processes import worker_settings
from thoughtvec.service.index.contents import Doc, NewIndex
from thoughtvec.service.index.indexes import new_config
from thoughtvec.service.index.store import IndexStore
from thoughtvec.service.settings import WORKER_GROUP_VARIABLE, WORKER_SETTINGS_VARIABLE, Settings, check_environment


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def served(metrics: Metrics, route: str, n: int) -> Metrics:
    for _ in range(n):
        metrics.request_done(route, "POST", 200, 0.004)
    return metrics


def test_the_others_are_the_other_live_workers_publications(tmp_path):
    me = WorkerGroup(tmp_path, 3)
    other = WorkerGroup(tmp_path, 3, pid=os.getppid())  # alive
    gone = WorkerGroup(tmp_path, 3, pid=dead_pid())
    assert me.others() == []
    me.publish(True, b"a 1.0\n")
    other.publish(False, b"b 2.0\n")
    gone.publish(True, b"c 3.0\n")
    (tmp_path / "123.json").write_text("{half a file")  # being replaced: skipped this time
    others = me.others()
    assert [(p.pid, p.ready, p.metrics) for p in others] == [(os.getppid(), False, "b 2.0\n")]
    assert [p.pid for p in other.others()] == [os.getpid()]  # this one's publication, as the others read it
    me.publish(False, b"a 2.0\n")  # replaced whole
    assert json.loads((tmp_path / f"{os.getpid()}.json").read_text())["metrics"] == "a 2.0\n"


def test_expositions_merge_into_sums_but_an_index_every_worker_holds_is_counted_once():
    a, b = served(Metrics(), "/v1/embeddings", 3), served(Metrics(), "/v1/embeddings", 4)
    for m, docs, depth in ((a, 100, 2), (b, 100, 5)):
        m.batch_done("tiny", 8, 64, 0.01, [0.002] * 8)
        m.index_documents("default", docs)
        m.queue_depth("tiny", depth)
    merged = merge_expositions([a.exposition()[0].decode(), b.exposition()[0].decode()]).decode()
    lines = dict(line.rsplit(" ", 1) for line in merged.splitlines() if not line.startswith("#"))
    assert float(lines['thoughtvec_requests_total{method="POST",route="/v1/embeddings",status="200"}']) == 7
    assert float(lines['thoughtvec_request_seconds_count{method="POST",route="/v1/embeddings",status="200"}']) == 7
    assert float(lines['thoughtvec_request_seconds_bucket{le="0.005",method="POST",route="/v1/embeddings",status="200"}']) == 7
    assert float(lines['thoughtvec_batch_size_sum{model="tiny"}']) == 16 and float(lines['thoughtvec_queue_depth{model="tiny"}']) == 7
    assert float(lines['thoughtvec_index_documents{index="default"}']) == 100
    assert "# TYPE thoughtvec_requests_total counter" in merged and "# TYPE thoughtvec_request_seconds histogram" in merged


def test_a_worker_is_ready_when_every_worker_is_and_its_metrics_are_everyones(models_dir, tmp_path):
    group = tmp_path / "group"
    group.mkdir()
    other = WorkerGroup(group, 2, pid=os.getppid())
    other.publish(False, served(Metrics(), "/v1/embeddings", 5).exposition()[0])
    with TestClient(create_app(settings_for(models_dir, tmp_path / "idx"), group=WorkerGroup(group, 2))) as c:
        core = c.app.state.core
        deadline = time.monotonic() + 30
        while not core._own_readiness()[0] and time.monotonic() < deadline:
            time.sleep(0.02)
        r = c.get("/ready")
        assert r.status_code == 503 and r.json()["workers"] == {"processes": 2, "ready": 1}
        # its turn to ready is published as it answers, not a second later: no other worker says 503 after its 200
        assert json.loads((group / f"{os.getpid()}.json").read_text())["ready"] is True
        other.publish(True, served(Metrics(), "/v1/embeddings", 5).exposition()[0])
        r = c.get("/ready")
        assert r.status_code == 200 and r.json()["workers"] == {"processes": 2, "ready": 2}
        assert c.post("/v1/embeddings", json={"model": "tiny", "input": "the cat sat"}).status_code == 200
        text = c.get("/metrics").text
    line = next(x for x in text.splitlines() if x.startswith('thoughtvec_requests_total{method="POST",route="/v1/embeddings"'))
    assert float(line.rsplit(" ", 1)[1]) == 6  # the other worker's 5 and this one's


def test_each_worker_runs_without_a_build_and_with_its_share_of_the_cores(tmp_path):
    cores = default_ort_threads()
    s = worker_settings(Settings(workers=2, index_dir=tmp_path))
    assert not s.build_default_index and s.ort_threads == max(1, cores // 2) and s.workers == 2
    assert worker_settings(Settings(workers=64, ort_threads=3, index_dir=tmp_path)).ort_threads == 3
    check_environment({WORKER_SETTINGS_VARIABLE: s.model_dump_json(), WORKER_GROUP_VARIABLE: str(tmp_path)})  # known names
    assert Settings.model_validate_json(s.model_dump_json()) == s  # what a worker reads back


def test_workers_cannot_share_milvus_lite_but_can_a_milvus_server():
    with pytest.raises(ValueError, match="cannot share Milvus Lite"):
        Settings(workers=2, index_backend="milvus", milvus_uri="data/milvus.db")
    assert Settings(workers=2, index_backend="milvus", milvus_uri="http://127.0.0.1:19530").workers == 2
    assert Settings(workers=1, index_backend="milvus", milvus_uri="data/milvus.db").workers == 1


def test_the_protocol_class_travels_to_worker_processes():
    protocol = http_protocol()
    assert pickle.loads(pickle.dumps(protocol)) is protocol  # uvicorn pickles its config, this class in it


def test_a_read_only_store_refuses_every_write_and_folds_nothing_at_close(tmp_path):
    writer = IndexStore(tmp_path)
    writer.create(new_config(NewIndex("kept", "tiny", "mean", 4)))
    writer.add("kept", [Doc("a", "first"), Doc("b", "second")], np.eye(2, 4, dtype=np.float32))
    writer.close()
    writer = IndexStore(tmp_path)
    writer.load_all()
    writer.add("kept", [Doc("c", "third")], np.eye(1, 4, k=2, dtype=np.float32))  # in the log, not the snapshot
    log_size = (tmp_path / "kept" / "wal.log").stat().st_size
    assert log_size > 0
    crash(writer)  # the writer stops without folding its log (a reader beside a live writer is refused: test_folder_lock.py)

    reader = IndexStore(tmp_path, read_only="one process writes a folder")
    reader.load_all()
    assert reader.capabilities.read_only == "one process writes a folder"
    assert [d.id for d, _ in reader.search("kept", np.eye(1, 4, k=2, dtype=np.float32), 1)[0]] == ["c"]
    writes = (
        lambda: reader.create(new_config(NewIndex("new", "tiny", "mean", 4))),
        lambda: reader.add("kept", [Doc("d", "fourth")], np.ones((1, 4), np.float32)),
        lambda: reader.delete("kept", ["a"]),
        lambda: reader.drop("kept"),
    )
    for write in writes:
        with pytest.raises(IndexesReadOnly, match="one process writes a folder"):
            write()
    reader.close()
    assert (tmp_path / "kept" / "wal.log").stat().st_size == log_size and not (tmp_path / "new").exists()
    assert IndexStore(tmp_path).capabilities.read_only is None
