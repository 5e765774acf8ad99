"""An index remembers which export of its model made its vectors: after the bundle is re-exported under
the same name, the index is refused (409 naming ``index``), never searched with incomparable vectors;
BM25 alone (mode lexical) uses no vectors and still serves."""

from __future__ import annotations

import shutil

import numpy as np

from tests.service.conftest import serve_test, settings_for
from tests.tiny_bundle import make_tiny_bundle
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.index.contents import IndexConfig


def test_fingerprint_follows_the_vectors_not_the_folder(tmp_path):
    make_tiny_bundle(tmp_path / "a", name="tiny", seed=0)
    shutil.copytree(tmp_path / "a", tmp_path / "copy")
    make_tiny_bundle(tmp_path / "b", name="tiny", seed=5)  # same name and shape, other weights
    a, copy, b = (Encoder.load(tmp_path / n) for n in ("a", "copy", "b"))
    assert a.fingerprint() == copy.fingerprint() == a.fingerprint(a.spec.default_view)  # where it lies does not matter
    assert a.fingerprint() != b.fingerprint()
    assert len({a.fingerprint(v) for v in a.spec.views}) == len(a.spec.views)  # each view its own


def test_an_index_of_an_earlier_export_is_refused_until_rebuilt(tmp_path):
    models = tmp_path / "models"
    make_tiny_bundle(models / "tiny", name="tiny", seed=0)
    settings = settings_for(models, tmp_path / "idx")
    docs = [
        {"id": "d1", "text": "the cat sat on the table ."},
        {"id": "d2", "text": "a dog ran in the city"},
        {"id": "d3", "text": "she walked"},
    ]
    with serve_test(settings) as c:
        made = c.post("/v1/indexes", json={"name": "notes", "model": "tiny", "mode": "hybrid"})
        assert made.status_code == 201, made.text
        assert c.post("/v1/indexes/notes/documents", json={"documents": docs}).status_code == 200
        assert c.post("/v1/search", json={"index": "notes", "query": "a cat", "k": 1}).status_code == 200

    shutil.rmtree(models / "tiny")
    make_tiny_bundle(models / "tiny", name="tiny", seed=5)  # re-exported: same name, same dimension, new vectors
    with serve_test(settings) as c:
        refused = [
            c.post("/v1/search", json={"index": "notes", "query": "a cat", "k": 1}),
            c.post("/v1/search", json={"index": "notes", "query": np.ones(8).tolist(), "k": 1}),
            c.post("/v1/indexes/notes/documents", json={"documents": [{"text": "the happy woman sleeps"}]}),
            c.post("/v1/indexes/notes/map", json={"query": "a kitten"}),
        ]
        for r in refused:
            assert r.status_code == 409, r.text
            error = r.json()["error"]
            assert error["code"] == "conflict" and error["field"] == "index"
            assert "earlier export of model 'tiny'" in error["message"] and "drop the index" in error["message"]
        assert c.get("/v1/indexes/notes").json()["documents"] == 3  # nothing was added; it can still be read and dropped
        bm25 = c.post("/v1/search", json={"index": "notes", "query": "a cat", "k": 1, "mode": "lexical"})
        assert bm25.status_code == 200 and bm25.json()["results"][0][0]["id"] == "d1"  # no vectors involved
        assert c.delete("/v1/indexes/notes").status_code == 204
        assert c.post("/v1/indexes", json={"name": "notes", "model": "tiny"}).status_code == 201
        assert c.post("/v1/indexes/notes/documents", json={"documents": docs}).status_code == 200
        assert c.post("/v1/search", json={"index": "notes", "query": "a cat", "k": 1}).status_code == 200


def test_an_index_made_before_fingerprints_were_kept_still_serves():
    old = IndexConfig.model_validate_json('{"name": "x", "model": "tiny", "view": "mean", "dim": 8}')
    assert old.fingerprint == ""  # unknown: served as before
