"""The core's start-up: settling the heap after it (what ``thoughtvec serve`` asks for)."""

from __future__ import annotations

import gc

from fastapi.testclient import TestClient

from tests.service.conftest import settings_for, wait_ready
from thoughtvec.service.http.app import create_app


def test_a_settled_start_freezes_what_it_loaded(models_dir, tmp_path):
    gc.unfreeze()
    try:
        with TestClient(create_app(settings_for(models_dir, tmp_path), settle_heap=True)) as client:
            wait_ready(client)
            for _ in range(100):  # start-up settles after it is ready
                if gc.get_freeze_count():
                    break
                client.get("/health")
            assert gc.get_freeze_count() > 0
            assert client.post("/v1/embeddings", json={"input": "a cat"}).status_code == 200
    finally:
        gc.unfreeze()


def test_apps_do_not_settle_unless_asked(models_dir, tmp_path):
    gc.unfreeze()
    with TestClient(create_app(settings_for(models_dir, tmp_path))) as client:
        wait_ready(client)
        assert client.post("/v1/embeddings", json={"input": "a cat"}).status_code == 200
        assert gc.get_freeze_count() == 0
