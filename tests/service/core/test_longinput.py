"""Long inputs: split into sentences and pooled (the default), truncated, or rejected; same on every route."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from tests.service.http.test_auth_metrics import metric
from thoughtvec.service.bundle.postprocess import l2_normalize
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.core.longinput import pack, pool, prepare, sentences, split_parts, windows
from thoughtvec.service.errors import InputTooLong

# tiny's limit is 32 tokens (with <eos>); each sentence here is well under it, together far over.
SENTS = [
    "the old man read a letter by the river .",
    "she walked to the big green tree in the new city .",
    "a dog ran fast from the house .",
    "the happy woman sleeps .",
    "they drove a red car to the city .",
]
LONG = " ".join(SENTS)


@pytest.fixture(scope="module")
def tiny(models_dir) -> Encoder:
    return Encoder.load(models_dir / "tiny")


def test_windows_cover_every_id_and_end_in_eos():
    assert windows([5, 6, 7, 8, 9, 2], 3, suffix=[2]) == [[5, 6, 2], [7, 8, 2], [9, 2]]
    assert windows([5, 6, 7, 8, 9], 2) == [[5, 6], [7, 8], [9]]
    # a BERT-style frame: every window carries [CLS] ... [SEP]
    assert windows([101, 5, 6, 7, 8, 9, 102], 4, prefix=[101], suffix=[102]) == [[101, 5, 6, 102], [101, 7, 8, 102], [101, 9, 102]]


def test_pack_joins_consecutive_parts_within_the_limit_and_keeps_their_frame():
    framed = [[101, 5, 6, 102], [101, 7, 102], [101, 8, 9, 10, 102], [101, 11, 102]]
    assert pack(framed, 6, [101], [102]) == [[101, 5, 6, 7, 102], [101, 8, 9, 10, 11, 102]]
    assert pack(framed, 4, [101], [102]) == [[101, 5, 6, 102], [101, 7, 102], [101, 8, 9, 10, 102], [101, 11, 102]]  # no room to join
    assert pack([[5, 2], [6, 7, 2]], 32, (), [2]) == [[5, 6, 7, 2]]  # <eos>-framed parts
    assert pack([], 8) == []


def test_a_passage_bundle_packs_its_sentences_a_sentence_bundle_does_not(tiny, monkeypatch):
    sentence_parts = split_parts(tiny, LONG)
    assert sentence_parts == [tiny.token_ids(s) for s in SENTS]
    monkeypatch.setattr(type(tiny), "long_inputs", property(lambda self: "passages"))
    passages = split_parts(tiny, LONG)
    assert 1 < len(passages) < len(SENTS) and all(len(p) <= tiny.max_tokens for p in passages)
    eos = tiny.token_ids("x")[-1]
    assert [i for p in passages for i in p if i != eos] == [i for p in sentence_parts for i in p if i != eos]  # every token once, in order
    assert all(p[-1] == eos for p in passages)


def test_how_long_inputs_are_cut_is_part_of_the_fingerprint_except_at_its_default(models_dir, tmp_path):
    import json
    import shutil

    shutil.copytree(models_dir / "tiny", tmp_path / "tiny")
    before = Encoder.load(tmp_path / "tiny").fingerprint()
    meta = json.loads((tmp_path / "tiny" / "bundle.json").read_text())
    (tmp_path / "tiny" / "bundle.json").write_text(json.dumps(meta | {"long_inputs": "sentences"}))
    assert Encoder.load(tmp_path / "tiny").fingerprint() == before
    (tmp_path / "tiny" / "bundle.json").write_text(json.dumps(meta | {"long_inputs": "passages"}))
    assert Encoder.load(tmp_path / "tiny").fingerprint() != before


def test_sentences_use_punkt():
    assert sentences("Mr. Smith went to Washington. He said hi!\nNext line") == [
        "Mr. Smith went to Washington.",
        "He said hi!",
        "Next line",
    ]


def test_prepare_modes(tiny):
    assert len(tiny.token_ids(LONG)) > tiny.max_tokens
    split = prepare(tiny, [LONG, "a cat"], ["input[0]", "input[1]"], "split")
    assert split.owner == [0] * len(SENTS) + [1] and split.split == 1 and split.truncated == 0
    assert split.parts[:-1] == [tiny.token_ids(s) for s in SENTS]  # each sentence exactly as if sent alone
    cut = prepare(tiny, [LONG], ["input"], "truncate")
    assert cut.truncated == 1 and len(cut.parts[0]) == tiny.max_tokens
    with pytest.raises(InputTooLong, match=r"input has \d+ tokens; the limit is 32"):
        prepare(tiny, [LONG], ["input"], "reject")
    short = [prepare(tiny, ["a cat sat"], ["input"], m).parts for m in ("split", "truncate", "reject")]
    assert short[0] == short[1] == short[2]


def test_pool_is_the_mean_of_unit_part_vectors(tiny):
    prep = prepare(tiny, ["a cat", LONG], ["input[0]", "input[1]"], "split")
    raw = tiny.run_ids(prep.parts)
    pooled = pool(raw, prep, 2)
    np.testing.assert_allclose(pooled[0], raw[0], atol=1e-7)  # an unsplit input keeps its vector
    np.testing.assert_allclose(pooled[1], l2_normalize(raw[1:]).mean(0), atol=1e-6)


def test_split_is_the_default_and_is_reported(client, tiny):
    before = client.get("/metrics").text
    r = client.post("/v1/embeddings", json={"input": [LONG, "a cat"]})
    assert r.status_code == 200, r.text
    body = r.json()
    want = l2_normalize(l2_normalize(tiny.encode(SENTS, normalize=False)).mean(0, keepdims=True))[0]
    np.testing.assert_allclose(body["data"][0]["embedding"], want, atol=1e-5)
    np.testing.assert_allclose(body["data"][1]["embedding"], tiny.encode(["a cat"])[0], atol=1e-6)
    tokens = sum(len(tiny.token_ids(s)) for s in SENTS) + len(tiny.token_ids("a cat"))
    assert body["usage"] == {"prompt_tokens": tokens, "total_tokens": tokens, "split_inputs": 1, "truncated_inputs": 0}
    assert r.headers["X-Split-Inputs"] == "1" and r.headers["X-Truncated-Inputs"] == "0"
    after = client.get("/metrics").text
    assert (
        metric(after, "thoughtvec_long_inputs_total", model="tiny", action="split")
        == metric(before, "thoughtvec_long_inputs_total", model="tiny", action="split") + 1
    )
    assert (
        metric(after, "thoughtvec_sentences_total", model="tiny") - metric(before, "thoughtvec_sentences_total", model="tiny")
        == len(SENTS) + 1
    )
    assert metric(after, "thoughtvec_inputs_total", model="tiny") - metric(before, "thoughtvec_inputs_total", model="tiny") == 2
    assert metric(after, "thoughtvec_tokens_total", model="tiny") - metric(before, "thoughtvec_tokens_total", model="tiny") == tokens


def test_per_request_mode_overrides_the_setting(make_client, caplog):
    caplog.set_level(logging.INFO, logger="thoughtvec.service.core.embedding")
    client = make_client(truncation="reject")
    assert client.post("/v1/embeddings", json={"input": LONG}).status_code == 413
    r = client.post("/v1/embeddings", json={"input": LONG, "truncation": "truncate"})
    assert r.status_code == 200 and r.json()["usage"]["truncated_inputs"] == 1 and r.json()["usage"]["prompt_tokens"] == 32
    assert "tiny: 1 input(s) over 32 tokens truncated" in caplog.text
    assert client.post("/v1/embeddings", json={"input": LONG, "truncation": "split"}).json()["usage"]["split_inputs"] == 1


def test_search_similarity_documents_split_too(client):
    client.post("/v1/indexes", json={"name": "long", "model": "tiny", "mode": "dense"})  # the vectors are what is tested
    r = client.post("/v1/indexes/long/documents", json={"documents": [{"text": LONG, "id": "p"}, {"text": "stocks fell", "id": "q"}]})
    assert r.status_code == 200 and r.json()["usage"]["split_inputs"] == 1 and r.headers["X-Split-Inputs"] == "1"
    r = client.post("/v1/search", json={"index": "long", "query": LONG, "k": 1})
    assert r.status_code == 200 and r.json()["results"][0][0]["id"] == "p" and r.json()["usage"]["split_inputs"] == 1
    assert r.json()["results"][0][0]["score"] == pytest.approx(1.0, abs=1e-5)  # the same text pools to the same vector
    r = client.post("/v1/similarity", json={"pairs": [[LONG, LONG]]})
    assert r.status_code == 200 and r.json()["data"][0]["score"] == pytest.approx(1.0, abs=1e-5) and r.headers["X-Split-Inputs"] == "1"


def test_offline_encoder_splits_like_the_server(client, tiny):
    """``thoughtvec index build`` (Encoder.encode_views with truncation=split) pools as the server does."""
    served = np.array([d["embedding"] for d in client.post("/v1/embeddings", json={"input": [LONG, "a cat", LONG]}).json()["data"]])
    seen: list[int] = []
    offline = tiny.encode_views([LONG, "a cat", LONG], ["mean"], truncation="split", batch_size=2, progress=seen.append)["mean"]
    np.testing.assert_allclose(offline, served, atol=1e-5)
    assert sum(seen) == 3  # progress counts texts, not parts


def test_pooling_check_runs_on_a_tiny_bundle(models_dir, tmp_path, capsys):
    from tests.service.conftest import write_sample
    from thoughtvec.bench import pooling_check

    sample = write_sample(tmp_path / "s.tsv.gz", n=120)
    pooling_check.main(["--model", str(models_dir / "tiny"), "--sample", str(sample), "--per-source", "4", "--part", "held-out"])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| split") or line.startswith("| truncate")]
    assert len(rows) == 5 and "mean-unit (default)" in rows[0]
    assert all(0 <= float(c) <= 1 for r in rows for c in r.strip("|").split("|")[1:])


def test_pooling_check_defaults_to_the_servers_default_model(models_dir, tmp_path, monkeypatch, capsys):
    """It defaulted to a fixed bundle, which stopped being the default model when dev chose another."""
    from tests.service.conftest import write_sample
    from thoughtvec.bench import pooling_check

    monkeypatch.setenv("THOUGHTVEC_MODELS_DIR", str(models_dir))
    monkeypatch.setenv("THOUGHTVEC_MODEL_PREFERENCE", "not-here,tiny2,tiny")
    assert pooling_check.default_model() == models_dir / "tiny2"
    sample = write_sample(tmp_path / "s.tsv.gz", n=120)
    pooling_check.main(["--sample", str(sample), "--per-source", "4", "--part", "dev"])
    assert capsys.readouterr().out.startswith("tiny2, dev: ")
