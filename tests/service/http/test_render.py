"""The embeddings answers are written by hand (``routes/embeddings.py``): the same JSON values as the standard
``json`` module and the schema would give, float and base64 alike."""

from __future__ import annotations

import base64
import json

import numpy as np

from thoughtvec.service.core.results import Encoded
from thoughtvec.service.http.routes.embeddings import render, render_list
from thoughtvec.service.http.schemas import EmbeddingsResponse, Usage

rng = np.random.default_rng(0)
# every magnitude a vector may hold, exponents included (json writes 1e-05 where orjson writes 1e-5)
VECTORS = (rng.standard_normal((6, 64)) * rng.choice([1e-9, 1e-5, 1e-3, 1.0, 1e4], (6, 1))).astype(np.float32)
ENC = Encoded("tiny", "mean", VECTORS, 40, split=1, truncated=2)


def test_floats_are_the_numbers_json_writes():
    body = json.loads(render(ENC, "float"))
    EmbeddingsResponse.model_validate(body)
    assert [d["embedding"] for d in body["data"]] == [json.loads(json.dumps(r.tolist())) for r in VECTORS]
    assert [d["index"] for d in body["data"]] == list(range(6))
    assert body["usage"] == json.loads(Usage.of(ENC.usage).model_dump_json())
    assert body["usage"] == {"prompt_tokens": 40, "total_tokens": 40, "split_inputs": 1, "truncated_inputs": 2}
    assert json.loads(render_list(ENC)) == VECTORS.tolist()


def test_base64_is_the_float32_bytes():
    body = json.loads(render(ENC, "base64"))
    EmbeddingsResponse.model_validate(body)
    rows = [np.frombuffer(base64.b64decode(d["embedding"]), "<f4") for d in body["data"]]
    assert np.array_equal(np.stack(rows), VECTORS) and body["model"] == "tiny"
