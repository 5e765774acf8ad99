"""A bounded schemathesis run against a live uvicorn server.

Every operation of the OpenAPI schema is fed generated requests, valid by the schema and (where it
has a body) not; every check runs: no 5xx, a documented status, content type and headers, a body
matching the documented schema (errors included), valid requests accepted and invalid ones refused.
The served schema states the server's limits (``max_inputs``, ``max_input_chars``, ``max_k``), so a
request within them is valid data. What no schema can state, because it depends on the model or index
named, is set right in valid requests before they are sent (:func:`within_the_model`): ``dimensions`` and
``output_dimension`` (8 up to the view's), a query vector's length (the index's), token ids (the model's vocabulary and token limit; cl100k ids that decode to whitespace only, which no
model embeds), ``max_tokens_per_doc`` and ``max_tokens`` (at least the model's
limit), a factory's numbers (PQ's divisor of the dimension, PCA's size; IVF's 1..65536 lists and HNSW's
4..256 links, which docs/search.md states), a text's tokens beyond the model's limit under ``truncation:
reject`` (``truncate: NONE``), and a map's ``k`` (at most its ``limit``); each of those answers a 422 naming the field (``test_errors.py``).
Reproduce with more cases: ``FUZZ_EXAMPLES=200 pytest tests/service/http/test_schema_fuzz.py``.
"""

from __future__ import annotations

import os
import re

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402  (schemathesis brings hypothesis)
from schemathesis.config import SchemathesisConfig  # noqa: E402
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
# An invalid request may be refused with 413 too (a text over max_input_chars, more items than max_inputs).
CONFIG = SchemathesisConfig.from_dict({"checks": {"negative_data_rejection": {"expected-statuses": [
    "400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]}}})  # fmt: skip
DIM, MAX_TOKENS, VOCAB = 8, 32, 20  # the tiny bundle's dimension, token limit and (at least) vocabulary size


def fit_ids(ids: list) -> list:
    """Token ids made the tiny model's (its vocabulary has VOCAB ids; MAX_TOKENS of them at most): texts stay texts."""
    if not all(isinstance(i, (int, float)) and not isinstance(i, bool) for i in ids):
        return ids
    return [i % VOCAB for i in ids[:MAX_TOKENS]]


def visible_ids(ids: list) -> list:
    """cl100k ids of printable ASCII (ids 0..93): some ids are only whitespace, a text the server refuses to embed."""
    if not all(isinstance(i, (int, float)) and not isinstance(i, bool) for i in ids):
        return ids
    return [i % 94 for i in ids]


def within_the_model(case):
    """A valid request with what depends on the model or index set to fit them (the rest as generated)."""
    body = case.body
    if not isinstance(body, dict):
        return case
    body.pop("dimensions", None), body.pop("output_dimension", None)
    if body.get("truncation") == "reject" or body.get("truncate") in (False, "NONE"):  # a text over the model's token limit: 413
        body.pop("truncation", None), body.pop("truncate", None)
    for cap in ("max_tokens_per_doc", "max_tokens"):
        if isinstance(body.get(cap), (int, float)):
            body[cap] = max(body[cap], MAX_TOKENS)
    if case.path == "/embed" and isinstance(body.get("inputs"), list):  # the model's own token ids: within its vocabulary
        body["inputs"] = [fit_ids(x) if isinstance(x, list) else x for x in body["inputs"]] if any(
            isinstance(x, list) for x in body["inputs"]) else fit_ids(body["inputs"])  # fmt: skip
    if case.path in ("/v1/embeddings", "/tokenize") and isinstance(body.get("input"), list):  # cl100k ids of visible text
        body["input"] = [visible_ids(x) if isinstance(x, list) else x for x in body["input"]] if any(
            isinstance(x, list) for x in body["input"]) else visible_ids(body["input"])  # fmt: skip
    query = body.get("query")
    if isinstance(query, list) and query and all(isinstance(x, (int, float)) for x in query):
        body["query"] = [0.5] * DIM
    if isinstance(body.get("factory"), str):  # sizes inside the factory that must fit the dimension
        for numbered, fitting in ((r"PQ\d+(x\d+)?", "PQ2"), (r"PCA\d+", "PCA4"), (r"IVF\d+", "IVF4"), (r"HNSW\d+", "HNSW32")):
            body["factory"] = re.sub(numbered, fitting, body["factory"])
    if case.path.endswith("/map") and isinstance(body.get("k"), (int, float)):
        body["k"] = min(body["k"], body.get("limit") or 64)
    return case


@pytest.fixture(scope="module")
def api(models_dir, tmp_path_factory):
    s = settings_for(models_dir, tmp_path_factory.mktemp("fuzz-idx"), max_inputs=64, max_k=50, max_input_chars=2000)
    with live_server(s) as (base, _app):
        import httpx

        httpx.post(base + "/v1/indexes", json={"name": "default", "model": "tiny"}).raise_for_status()
        httpx.post(base + "/v1/indexes/default/documents", json={"documents": [{"text": "the cat sat", "id": "a"}]}).raise_for_status()
        yield schemathesis.openapi.from_url(base + "/openapi.json", config=CONFIG)


@pytest.mark.parametrize("path, method, mode", CASES, ids=[f"{m} {p} {mode.value}" for p, m, mode in CASES])
def test_every_answer_conforms_to_the_schema(api, path, method, mode):
    operation = api[path][method]
    strategy = operation.as_strategy(generation_mode=mode)

    @given(case=strategy.map(within_the_model) if mode == GenerationMode.POSITIVE else strategy)
    @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True, database=None)
    def run(case):
        if path == "/v1/generate" and mode == GenerationMode.POSITIVE:
            # The fuzz serves the tiny bundles, none of which carries a decoder: every valid generate request is the
            # 422 naming `model` (tests/service/http/test_generate.py sends valid ones to bundles that can generate).
            r = case.call_and_validate(excluded_checks=[positive_data_acceptance])
            assert r.status_code != 422 or r.json()["error"]["field"] == "model", r.text
            return
        case.call_and_validate()

    run()
