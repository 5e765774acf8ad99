"""Documents added in bulk through the API, on the real (tiny) ONNX bundle: each stored vector is the one
``/v1/embeddings`` gives its text, whatever it was batched with, long texts split and pooled alike."""

from __future__ import annotations

import base64

import numpy as np

from tests.service.conftest import SENTENCES, serve_test, settings_for

LONG = " ".join(["the cat sat on the table ."] * 8)  # over the tiny bundle's 32 tokens: split into sentences


def test_vectors_added_in_bulk_are_those_of_the_embeddings_route(models_dir, tmp_path):
    texts = [s * (1 + i % 3) for i, s in enumerate(SENTENCES * 10)] + [LONG, f"{LONG} the dog ran ."]
    with serve_test(settings_for(models_dir, tmp_path / "idx", max_batch_size=4)) as c:
        made = c.post("/v1/indexes", json={"name": "m", "model": "tiny", "mode": "dense", "metric": "ip", "normalize": False})
        assert made.status_code == 201, made.text
        added = c.post("/v1/indexes/m/documents", json={"documents": [{"id": f"d{i}", "text": t} for i, t in enumerate(texts)]})
        assert added.status_code == 200, added.text
        vi = c.app.state.core.indexes.store.entry("m").index
        stored = np.stack([vi.index.reconstruct(vi.labels[f"d{i}"]) for i in range(len(texts))])  # (n, dim)
        alone = []
        for t in texts:  # one request per text: batched with nothing
            r = c.post("/v1/embeddings", json={"model": "tiny", "input": t, "encoding_format": "base64", "normalize": False})
            assert r.status_code == 200, r.text
            alone.append(np.frombuffer(base64.b64decode(r.json()["data"][0]["embedding"]), np.float32))
        np.testing.assert_allclose(stored, np.stack(alone), rtol=1e-5, atol=1e-5)
