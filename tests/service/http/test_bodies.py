"""``bodies.scan``: a body's JSON is held to its route's shape and the JSON limits before anything parses it, and the
walk stops at the first problem, naming its field (no timing here: ``bench/hostile_bench.py`` prints the figures)."""

from __future__ import annotations

import json

import pytest

from thoughtvec.service.errors import InvalidRequest, RequestTooLarge, ThoughtvecError, TooManyInputs
from thoughtvec.service.http.bodies import MAX_SCALAR, RUN_MAX, SLICE, JsonLimits, Shape, scan, shape_of
from thoughtvec.service.http.peer_schemas import EmbedForms, RerankForms
from thoughtvec.service.http.schemas import AddDocumentsRequest, EmbeddingsRequest, SimilarityRequest

LIMITS = JsonLimits(depth=8, keys=20, items=50)


def problem(raw: bytes | str, model=None, limits: JsonLimits = LIMITS) -> ThoughtvecError | None:
    raw = raw.encode() if isinstance(raw, str) else raw
    try:
        for _ in scan(raw, limits, shape_of(model) if model is not None else None):
            pass
    except ThoughtvecError as e:
        return e
    return None


def test_the_shape_of_a_body_is_its_models_keys_all_the_way_down():
    docs = shape_of(AddDocumentsRequest)
    assert docs is not None and docs.keys is not None and set(docs.keys) == {"documents", "truncation"}
    document = docs.keys["documents"]
    assert document == Shape(item=Shape(keys={"text": None, "id": None, "metadata": None}))  # metadata: any keys
    assert shape_of(dict) is None and shape_of(str | list[int]) is None


def test_a_body_of_two_forms_has_the_keys_of_both():
    forms = shape_of(RerankForms)
    assert forms is not None and forms.keys is not None and {"texts", "documents", "raw_scores", "top_n"} <= set(forms.keys)
    embed = shape_of(EmbedForms)
    assert embed is not None and embed.keys is not None and "inputs" in embed.keys


@pytest.mark.parametrize(
    ("body", "model", "kind", "field"),
    [
        ({"input": "x", "modle": "m"}, EmbeddingsRequest, InvalidRequest, "modle"),
        ({"documents": [{"text": "a"}, {"text": "b", "colour": 1}]}, AddDocumentsRequest, InvalidRequest, "documents[1].colour"),
        (
            {"documents": [{"text": "a", "metadata": {f"k{i}": i for i in range(21)}}]},
            AddDocumentsRequest,
            RequestTooLarge,
            "documents[0].metadata",
        ),
        ({"input": list(range(51))}, EmbeddingsRequest, TooManyInputs, "input"),
        ({"pairs": [["a", "b"], ["c", list(range(60))]]}, SimilarityRequest, TooManyInputs, "pairs[1][1]"),
        (
            {"documents": [{"text": "a", "metadata": {"a": [[[[[[1]]]]]]}}]},
            AddDocumentsRequest,
            InvalidRequest,
            "documents[0].metadata.a[0][0][0][0]",
        ),  # the ninth level
    ],
)
def test_the_first_problem_is_raised_naming_its_field(body, model, kind, field):
    found = problem(json.dumps(body), model)
    assert isinstance(found, kind) and found.field == field, found


def test_keys_are_checked_as_json_spells_them():
    assert problem(r'{"inp\u0075t": "x"}', EmbeddingsRequest) is None
    found = problem(r'{"inp\u0075tt": "x"}', EmbeddingsRequest)
    assert isinstance(found, InvalidRequest) and found.field == "inputt"
    assert problem('{"input": "a \\"quoted\\" key: {not a key}, [nor this]"}', EmbeddingsRequest) is None  # brackets in strings
    assert problem('{"input": "ends in a backslash \\\\", "model": "m"}', EmbeddingsRequest) is None


def test_a_million_unknown_keys_cost_what_the_first_does():
    body = ("{" + ",".join(f'"k{i}":1' for i in range(1_000_000)) + ',"input":"x"}').encode()
    steps = 0
    try:
        for _ in scan(body, LIMITS, shape_of(EmbeddingsRequest)):
            steps += 1
    except InvalidRequest as e:
        assert e.field == "k0" and "more" not in e.message  # one problem, not a count of them all
    assert steps == 0  # refused before the first slice ended


def test_a_long_number_is_refused_before_a_parser_sees_it():
    found = problem('{"input": "x", "dimensions": 1' + "0" * 5000 + "}", EmbeddingsRequest)
    assert isinstance(found, InvalidRequest) and found.field == "dimensions" and f"at most {MAX_SCALAR}" in found.message
    found = problem('{"input": [1, 2, 3' + "0" * 200 + "]}", EmbeddingsRequest)
    assert isinstance(found, InvalidRequest) and found.field == "input[2]"
    assert problem('{"input": [' + ",".join(["1.2345678901234567e-308"] * 40) + "]}", EmbeddingsRequest) is None


def test_a_run_longer_than_a_token_is_cut_at_a_separator_and_still_counted():
    ids = ",".join(["12345"] * (RUN_MAX // 3))  # one run of scalars over RUN_MAX bytes
    limits = JsonLimits(depth=8, keys=20, items=RUN_MAX)
    assert problem("[" + ids + "]", limits=limits) is None
    found = problem("[" + ids + "," + "9" * 300 + "]", limits=limits)
    assert isinstance(found, InvalidRequest) and found.field == f"[{RUN_MAX // 3}]"
    found = problem("[" + ids + "]", limits=JsonLimits(depth=8, keys=20, items=RUN_MAX // 4))
    assert isinstance(found, TooManyInputs)


def test_the_walk_hands_the_loop_back_every_slice():
    body = json.dumps({"documents": [{"text": "a", "metadata": {"k": [1]}} for _ in range(SLICE)]}).encode()
    steps = sum(1 for _ in scan(body, JsonLimits(depth=8, keys=20, items=10 * SLICE), shape_of(AddDocumentsRequest)))
    assert steps >= 10  # about 12 tokens a document


def test_malformed_json_is_left_to_the_parser():
    for raw in ('{"input": "x",', "{{{", '"unterminated', "]]]", '{"input": "x"}}}', ""):
        assert problem(raw, EmbeddingsRequest) is None, raw


def test_the_limits_leave_room_above_every_setting_they_follow():
    from thoughtvec.service.settings import Settings

    limits = JsonLimits.of(Settings(max_metadata_depth=16, max_metadata_bytes=4096, max_inputs=2048, max_request_tokens=300_000))
    assert limits.depth > 16 + 3 and limits.keys > 4096 // 5 and limits.items >= 300_000
