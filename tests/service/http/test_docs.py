"""/docs and /redoc work offline, and every request example in the schema succeeds against a real bundle."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.service.conftest import live_server, serve_test, settings_for, write_sample
from tests.service.http.test_auth_metrics import metric
from tests.service.http.test_playground import _browser
from thoughtvec.service.model_guide import Guide

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
    assert b"cdn.redoc.ly" not in client.get("/docs-assets/redoc.standalone.js").content  # ReDoc's logo: see the browser's test


def requested_urls(browser) -> list[str]:
    """Every URL the page asked the network for since the last call (Chromium's DevTools log)."""
    events = (json.loads(entry["message"])["message"] for entry in browser.get_log("performance"))
    return [e["params"]["request"]["url"] for e in events if e["method"] == "Network.requestWillBeSent"]


def test_the_api_docs_ask_no_other_host_in_a_real_browser(models_dir, tmp_path):
    """Swagger UI and ReDoc rendered in Chromium ask this server alone: their scripts, styles, images and the
    schema (ReDoc's own side menu links Redocly with a logo from its CDN, which is not loaded)."""
    browser = _browser(network_log=True)
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        with live_server(settings_for(models_dir, tmp_path / "idx")) as (base, _):
            # each page rendered: Swagger UI's operations; ReDoc's side menu down to its "API docs by Redocly" link,
            # whose logo it would ask Redocly's CDN for
            for page, rendered in (("/docs", ".opblock"), ("/redoc", '.menu-content a[href*="redocly.com"]')):
                browser.get(base + page)
                WebDriverWait(browser, 20).until(lambda b, css=rendered: b.find_elements(By.CSS_SELECTOR, css))
                time.sleep(0.5)  # what the rendered page asks for next (its images) is asked for within this
                urls = requested_urls(browser)
                assert any(u.endswith("/openapi.json") for u in urls), urls  # the log saw the page's own requests
                elsewhere = [u for u in urls if urlsplit(u).hostname != "127.0.0.1" and not u.startswith(("data:", "blob:"))]
                assert not elsewhere, f"{page} asked other hosts: {elsewhere}"
    finally:
        browser.quit()


def test_the_favicon_is_served_to_anyone(make_client):
    client = make_client(api_keys=["k"])
    r = client.get("/favicon.ico")  # no key: a browser asks for it by itself
    assert r.status_code == 200 and r.headers["content-type"] == "image/png" and r.content.startswith(b"\x89PNG")
    assert "/favicon.ico" not in client.get("/openapi.json", headers={"Authorization": "Bearer k"}).json()["paths"]


def test_the_schema_says_what_the_api_does(client):
    text = client.get("/openapi.json").json()["info"]["description"]
    for said in ("/v1/embeddings", "/v1/similarity", "/v2/rerank", "/v1/search", "hybrid", "BM25", "FAISS", "Milvus", "/v1/generate"):
        assert said in text, f"the API's description does not say {said!r}"


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
    name = Guide.load(ROOT / "models").default_models()[0]  # the default model (chosen on dev), which the examples name
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
