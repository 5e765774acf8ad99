"""The one error table: every error has a status in each API family, and each family's routes say it in their shape."""

from __future__ import annotations

import inspect

import pytest

from thoughtvec.service import errors
from thoughtvec.service.http.error_answers import COHERE_PATHS, STATUS, TEI_PATHS, error_body, family, status_of


def test_every_error_has_a_row_and_no_error_carries_a_status():
    classes = [c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, errors.ThoughtvecError)]
    assert len(classes) > 15
    for c in classes:
        assert not hasattr(c, "status"), c  # the HTTP status is the table's, not the error's
        assert c.code and c in STATUS, c  # a row of its own: a new error is given a status per family
    assert status_of(errors.EmptyInput("x")).tei == 400 and status_of(errors.InvalidInput("x")).tei == 422


def test_each_family_has_its_shape():
    exc = errors.InputTooLong("inputs[1] has 41 tokens; the limit is 32", field="inputs[1]")
    assert error_body(exc, "openai") == (413, {"error": {"code": "input_too_long", "message": exc.message, "field": "inputs[1]"}})
    assert error_body(exc, "tei") == (413, {"error": exc.message, "error_type": "Validation"})
    assert error_body(exc, "cohere") == (400, {"message": exc.message})
    assert error_body(errors.QueueFull("busy"), "tei") == (429, {"error": "busy", "error_type": "Overloaded"})
    assert error_body(errors.NotReady("loading"), "tei") == (503, {"error": "loading", "error_type": "Unhealthy"})
    assert error_body(errors.ThoughtvecError("boom"), "tei") == (500, {"error": "boom", "error_type": "Backend"})


@pytest.mark.parametrize("path", sorted(TEI_PATHS | COHERE_PATHS | {"/v1/embeddings", "/v1/similarity", "/health"}))
def test_the_family_is_the_paths(path):
    want = "tei" if path in TEI_PATHS else "cohere" if path in COHERE_PATHS else "openai"
    assert family({"path": path}) == want
    assert family({"path": "/api" + path, "root_path": "/api"}) == want  # behind a root path


def test_the_request_rules_answer_in_each_familys_shape(make_client):
    client = make_client(api_keys="k1")
    for path, body in (("/embed", {"inputs": "x"}), ("/v2/rerank", {"query": "x", "documents": ["y"]}), ("/v1/embeddings", {"input": "x"})):
        r = client.post(path, json=body)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer", (path, r.text)
        shape = {"/embed": {"error", "error_type"}, "/v2/rerank": {"message"}}.get(path, {"error"})
        assert set(r.json()) == shape, (path, r.text)
    too_big = client.post("/embed", content=b"x" * (client.app.state.settings.max_body_bytes + 1), headers={"Authorization": "Bearer k1"})
    assert too_big.status_code == 413 and too_big.json()["error_type"] == "Validation"
    wrong = client.put("/embed", headers={"Authorization": "Bearer k1"})
    assert wrong.status_code == 405 and wrong.json()["error_type"] == "Validation" and wrong.headers["allow"] == "POST"
