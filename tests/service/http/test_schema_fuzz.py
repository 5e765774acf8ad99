"""A bounded schemathesis run against a live uvicorn server.

Every operation of the OpenAPI schema is fed generated requests, valid by the schema and (where it
has a body) not; each answer must be no 5xx, a documented status and content type, and a body
matching the documented schema (errors included); invalid requests must be refused. Not checked:
that every schema-valid request is accepted (``positive_data_acceptance``): some limits depend on
the model or index named (a query vector's dimension, PQ's divisor of it), which no static schema
states; those answer 422 naming the field. Reproduce with more cases:
``FUZZ_EXAMPLES=200 pytest tests/service/http/test_schema_fuzz.py``.
"""

from __future__ import annotations

import os

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402  (schemathesis brings hypothesis)
from schemathesis.generation.modes import GenerationMode  # noqa: E402
from schemathesis.specs.openapi.checks import positive_data_acceptance  # noqa: E402

from tests.service.conftest import live_server, settings_for  # noqa: E402
from thoughtvec.service.http.app import create_app  # noqa: E402
from thoughtvec.service.settings import Settings  # noqa: E402

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "50"))  # per operation and mode: ~25 s on the shared 2-core box
_PATHS = create_app(Settings(build_default_index=False)).openapi()["paths"]
CASES = sorted(
    (path, method.upper(), mode)
    for path, item in _PATHS.items()
    for method, op in item.items()
    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
    if mode == GenerationMode.POSITIVE or "requestBody" in op
)


@pytest.fixture(scope="module")
def api(models_dir, tmp_path_factory):
    s = settings_for(models_dir, tmp_path_factory.mktemp("fuzz-idx"), max_inputs=64, max_k=50)
    with live_server(s) as (base, _app):
        import httpx

        httpx.post(base + "/v1/indexes", json={"name": "default", "model": "tiny"}).raise_for_status()
        httpx.post(base + "/v1/indexes/default/documents", json={"documents": [{"text": "the cat sat", "id": "a"}]}).raise_for_status()
        yield schemathesis.openapi.from_url(base + "/openapi.json")


@pytest.mark.parametrize("path, method, mode", CASES, ids=[f"{m} {p} {mode.value}" for p, m, mode in CASES])
def test_every_answer_conforms_to_the_schema(api, path, method, mode):
    operation = api[path][method]

    @given(case=operation.as_strategy(generation_mode=mode))
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
    def run(case):
        case.call_and_validate(excluded_checks=[positive_data_acceptance])

    run()
