"""/docs and /redoc work offline, and every request example in the schema succeeds against a real bundle."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from tests.service.conftest import serve_test, settings_for, write_sample
from tests.service.http.test_auth_metrics import metric

ROOT = Path(__file__).resolve().parents[3]


def test_docs_pages_load_their_assets_from_the_app(client):
    for page, assets in (("/docs", ("swagger-ui-bundle.js", "swagger-ui.css")), ("/redoc", ("redoc.standalone.js",))):
        html = client.get(page).text
        urls = re.findall(r'(?:src|href)="([^"]+)"', html)
        assert urls and all(u.startswith("/") for u in urls), urls  # nothing from a CDN
        for name in assets:
            r = client.get(f"/docs-assets/{name}")
            assert r.status_code == 200 and len(r.content) > 100_000, name
    assert client.get("/docs-assets/nope.js").status_code == 404


def test_metrics_is_text_and_docs_are_labelled_by_route(client):
    spec = client.get("/openapi.json").json()
    assert list(spec["paths"]["/metrics"]["get"]["responses"]["200"]["content"]) == ["text/plain"]
    client.get("/docs")
    client.get("/docs-assets/swagger-ui.css")
    text = client.get("/metrics").text
    assert metric(text, "thoughtvec_requests_total", route="/docs", status="200") == 1
    assert metric(text, "thoughtvec_requests_total", route="/docs-assets/{name}", status="200") == 1
    assert "_created" not in text
    assert 'thoughtvec_long_inputs_total{action="truncated",model="tiny2"} 0.0' in text  # series exist before any traffic
    assert 'thoughtvec_requests_total{method="POST",route="/v1/rerank",status="200"} 0.0' in text


def _calls(spec: dict) -> list[tuple[str, str, dict | None]]:
    """(method, path with its parameters' examples filled in, body example) for every operation, as "Try it out" sends them."""
    out = []
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            filled = path
            for param in op.get("parameters", []):
                examples = param["schema"].get("examples") or param.get("examples")
                assert examples, f"{method.upper()} {path}: parameter {param['name']} has no example"
                filled = filled.replace(
                    "{" + param["name"] + "}", str(examples[0] if isinstance(examples, list) else next(iter(examples.values()))["value"])
                )
            body = op.get("requestBody")
            if body is None:
                out.append((method, filled, None))
                continue
            schema = body["content"]["application/json"]["schema"]
            for form in schema.get("oneOf", [schema]):  # a body of two forms (TEI's and ours): each form's examples
                ref = form["$ref"].rsplit("/", 1)[1]
                examples = spec["components"]["schemas"][ref].get("examples")
                assert examples, f"{method.upper()} {path} ({ref}) has no request example"
                out += [(method, filled, ex) for ex in examples]
    # dropping the examples' index goes last
    return sorted(out, key=lambda c: c[0] == "delete" and c[1] == "/v1/indexes/notes")


@pytest.mark.slow
def test_every_example_runs_against_the_default_bundle(tmp_path):
    from thoughtvec.service.model_guide import default_model

    name = default_model()  # the default model (chosen on dev), which the examples name
    bundle = ROOT / "models" / name
    if not (bundle / "bundle.json").exists():
        pytest.skip(f"models/{name} is not in this checkout")
    models = tmp_path / "models"
    models.mkdir()
    (models / name).symlink_to(bundle)
    settings = settings_for(
        models, tmp_path / "indexes", default_model=None, build_default_index=True, search_sample=write_sample(tmp_path / "sample.tsv.gz")
    )
    with serve_test(settings) as client:
        deadline = time.time() + 30
        while "default" not in client.app.state.core.indexes.store.names() and time.time() < deadline:  # built after /ready
            time.sleep(0.05)
        calls = _calls(client.get("/openapi.json").json())
        assert len(calls) >= 20
        for method, path, example in calls:
            if path == "/v1/generate":  # the default model is an invertible decoder, which generates nothing: a 422 says so
                r = client.request(method, path, json={k: v for k, v in example.items() if k != "model"})
                assert r.status_code == 422 and r.json()["error"]["field"] == "model", r.text
                continue
            r = client.request(method, path, json=example)
            assert r.status_code in (200, 201, 204), (method, path, example, r.text)
