"""The Python API (``thoughtvec.service.api``) is the server in process: the same vectors as ``POST /v1/embeddings``
and the embedding service for the same bundle and texts, in any batch; ``dimensions``, ``normalize`` and every
``embedding_type`` as the route gives them; similarity and rerank as their routes score; an index it writes is the
one a server then serves; errors name the argument; closing lets go of everything."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from tests.service.conftest import SENTENCES, serve_test, settings_for
from tests.tiny_bundle import make_tiny_bundle
from thoughtvec.paths import DOCS, MODELS
from thoughtvec.service import api
from thoughtvec.service.bundle import postprocess as pp
from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.core.metrics import Metrics
from thoughtvec.service.errors import BundleError, Conflict, EmptyInput, InputTooLong, InvalidInput, UnknownModel, UnknownView

AXES = "tiny16"  # a tiny bundle of 16 dimensions with 12 principal axes on its default view: `dimensions` from 8 to 12


@pytest.fixture(scope="module")
def models(models_dir, tmp_path_factory):
    """``tiny`` (dim 8, a relatedness head) and :data:`AXES`."""
    root = tmp_path_factory.mktemp("api-models")
    shutil.copytree(models_dir / "tiny", root / "tiny")
    make_tiny_bundle(root / AXES, name=AXES, dim=16, seed=5)
    x = np.random.default_rng(0).standard_normal((300, 16)) * np.linspace(3, 1, 16)
    pp.save(root / AXES / "axes.npz", {}, {"mean": pp.fit_axes(x, 12)})
    meta = json.loads((root / AXES / "bundle.json").read_text())
    meta["views"]["mean"]["axes"] = {"file": "axes.npz", "key": "mean", "count": 12}
    (root / AXES / "bundle.json").write_text(json.dumps(meta))
    return root


@pytest.fixture(scope="module")
def tiny(models):
    with api.load("tiny", models_dir=models, max_wait_ms=1.0) as m:
        yield m


@pytest.fixture(scope="module")
def tiny16(models):
    with api.load(AXES, models_dir=models, max_wait_ms=1.0) as m:
        yield m


@pytest.fixture(scope="module")
def http(models, tmp_path_factory):
    with serve_test(settings_for(models, tmp_path_factory.mktemp("http-indexes"))) as client:
        yield client


def route(http, **body) -> np.ndarray:
    r = http.post("/v1/embeddings", json=body)
    assert r.status_code == 200, r.text
    return np.array([d["embedding"] for d in r.json()["data"]])


def service_vectors(models, tmp_path, model: str, texts: list[str], **kw) -> np.ndarray:
    """The embedding service's own vectors, from a service of its own."""

    async def main():
        emb = EmbeddingService(settings_for(models, tmp_path / "idx"), Metrics())
        await emb.start()
        try:
            return (await emb.embeddings(texts, model, kw.get("view"), kw.get("normalize", True), kw.get("dimensions"))).vectors
        finally:
            await emb.stop()

    return asyncio.run(main())


# -- vectors ---------------------------------------------------------------------------------------
def test_the_same_vectors_as_the_route_and_the_embedding_service(tiny, http, models, tmp_path):
    got = tiny.encode(SENTENCES)
    assert got.shape == (len(SENTENCES), 8) and got.dtype == np.float32
    np.testing.assert_allclose(got, route(http, input=SENTENCES, model="tiny"), atol=1e-6)
    np.testing.assert_allclose(got, service_vectors(models, tmp_path, "tiny", SENTENCES), atol=1e-6)
    raw = tiny.encode(SENTENCES, view="meanmax", normalize=False)
    np.testing.assert_allclose(raw, route(http, input=SENTENCES, model="tiny", view="meanmax", normalize=False), atol=1e-5)
    assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0)


def test_a_texts_vector_does_not_depend_on_its_batch_or_its_padding(tiny):
    together = tiny.encode(SENTENCES)
    alone = np.stack([tiny.encode(s) for s in SENTENCES])
    np.testing.assert_allclose(alone, together, atol=1e-6)
    np.testing.assert_allclose(tiny.encode(SENTENCES, batch_size=1), together, atol=1e-6)
    mixed = tiny.encode([SENTENCES[2], "i", *SENTENCES, SENTENCES[4]], batch_size=3)  # with longer and shorter texts
    np.testing.assert_allclose(mixed[2:-1], together, atol=1e-6)


def test_one_string_gives_one_vector_and_an_empty_list_none(tiny):
    one = tiny.encode(SENTENCES[0])
    assert one.shape == (8,) and abs(np.linalg.norm(one) - 1) < 1e-6
    np.testing.assert_allclose(one, tiny.encode([SENTENCES[0]])[0], atol=1e-7)
    assert tiny.encode([]).shape == (0, 8) and tiny.encode((), embedding_type="binary").shape == (0, 1)
    assert tiny.encode(np.array(SENTENCES[:2])).shape == (2, 8)  # any iterable of texts


def test_dimensions_as_the_route_and_the_service_give_them(tiny16, http, models, tmp_path):
    got = tiny16.encode(SENTENCES, dimensions=10)
    assert got.shape == (len(SENTENCES), 10)
    np.testing.assert_allclose(got, route(http, input=SENTENCES, model=AXES, dimensions=10), atol=1e-6)
    np.testing.assert_allclose(got, service_vectors(models, tmp_path, AXES, SENTENCES, dimensions=10), atol=1e-6)
    assert tiny16.encode(SENTENCES[0], dimensions=16).shape == (16,)  # the view's own size: the full vector
    with pytest.raises(InvalidInput, match="dimensions is 13; .* keeps 12 principal axes") as e:
        tiny16.encode("hello", dimensions=13)
    assert e.value.field == "dimensions"


@pytest.mark.parametrize("precision", ["int8", "uint8", "binary", "ubinary"])
def test_every_embedding_type_as_the_route_codes_it(tiny16, http, precision):
    texts = [*SENTENCES, "the dog"]
    for kw in ({}, {"dimensions": 8}, {"normalize": False}):
        codes = tiny16.encode(texts, embedding_type=precision, batch_size=3, **kw)
        width = (16 if not kw.get("dimensions") else 8) // (8 if precision in ("binary", "ubinary") else 1)
        assert codes.shape == (len(texts), width) and codes.dtype == (np.uint8 if precision.startswith("u") else np.int8)
        np.testing.assert_array_equal(codes, route(http, input=texts, model=AXES, embedding_type=precision, **kw))
    floats = tiny16.encode(texts)
    if precision == "ubinary":
        np.testing.assert_array_equal(codes, np.packbits(tiny16.encode(texts, normalize=False) > 0, axis=1))
    assert tiny16.encode(texts[0], embedding_type=precision).shape == (codes.shape[1],) and floats.shape == (len(texts), 16)


def test_long_inputs_as_the_server_handles_them(tiny, http):
    long = " ".join(["the cat sat on the table ."] * 12)  # 84 tokens; the limit is 32: split into sentences, pooled
    np.testing.assert_allclose(tiny.encode(long), route(http, input=[long], model="tiny")[0], atol=1e-6)
    np.testing.assert_allclose(
        tiny.encode(long, truncation="truncate"), route(http, input=[long], model="tiny", truncation="truncate")[0], atol=1e-6
    )
    with pytest.raises(InputTooLong) as e:
        tiny.encode(["ok", long], truncation="reject")
    assert e.value.field == "texts[1]"


def test_bad_arguments_are_refused_by_name(tiny, models):
    cases = [
        (dict(texts=["ok", 3]), InvalidInput, "texts[1]"),
        (dict(texts=["ok", "  "]), EmptyInput, "texts[1]"),
        (dict(texts="ok", embedding_type="int4"), InvalidInput, "embedding_type"),
        (dict(texts="ok", truncation="cut"), InvalidInput, "truncation"),
        (dict(texts="ok", batch_size=0), InvalidInput, "batch_size"),
        (dict(texts="ok", dimensions=2.5), InvalidInput, "dimensions"),
        (dict(texts="ok", view="nope"), UnknownView, "view"),
        (dict(texts=b"bytes"), InvalidInput, "texts"),
    ]
    for kw, kind, field in cases:
        with pytest.raises(kind) as e:
            tiny.encode(**kw)
        assert e.value.field == field, (kw, e.value)
    with pytest.raises(UnknownModel, match=r"no bundle 'nope' in .*; the bundles there are \['tiny', 'tiny16'\]"):
        api.load("nope", models_dir=models)
    with pytest.raises(ValueError, match="max_bach_size"):  # a setting misspelt is an error, as for the server
        api.load("tiny", models_dir=models, max_bach_size=3)


def test_a_bundle_by_path_and_the_models_folder_by_variable(models, monkeypatch, tmp_path):
    with api.load(models / "tiny") as m:
        assert m.name == "tiny" and m.dimension == 8 and m.views == {"mean": 8, "meanmax": 16} and m.describe().name == "tiny"
    monkeypatch.setenv("THOUGHTVEC_MODELS_DIR", str(models))
    monkeypatch.setenv("THOUGHTVEC_DEFAULT_MODEL", "tiny")  # a server's default model: not the one loaded here
    monkeypatch.chdir(tmp_path)
    with api.load(AXES) as m:
        assert m.name == AXES and m.default_view == "mean" and m.max_input_tokens == 32 and m.encode("the cat").shape == (16,)
    shutil.copytree(models / "tiny", tmp_path / "broken")
    (tmp_path / "broken" / "model.onnx").write_bytes(b"not a graph")
    with pytest.raises(BundleError, match="bundle 'broken'"):
        api.load(tmp_path / "broken")


def test_calls_from_many_threads_at_once_share_the_engine(tiny):
    texts = [f"{s} {i}" for i in range(40) for s in SENTENCES[:3]]
    alone = tiny.encode(texts)
    with ThreadPoolExecutor(4) as pool:
        parts = list(pool.map(lambda i: tiny.encode(texts[i::4], batch_size=5), range(4)))
    for i, part in enumerate(parts):
        np.testing.assert_allclose(part, alone[i::4], atol=1e-6)


# -- similarity, rerank --------------------------------------------------------------------------------
def test_similarity_and_rerank_score_as_their_routes(tiny, http):
    a, b = SENTENCES[:2], SENTENCES[2:5]
    matrix = tiny.similarity(a, b)
    assert matrix.shape == (2, 3)
    r = http.post("/v1/similarity", json={"model": "tiny", "pairs": [[x, y] for x in a for y in b]})
    np.testing.assert_allclose(matrix.ravel(), [d["score"] for d in r.json()["data"]], atol=1e-6)
    assert isinstance(tiny.similarity(a[0], b[0]), float) and tiny.similarity(a[0], a[0]) == pytest.approx(1.0, abs=1e-6)
    np.testing.assert_allclose(tiny.similarity(tiny.encode(a), b), matrix, atol=1e-6)  # vectors and texts alike
    ranked = tiny.rerank(SENTENCES[0], SENTENCES[1:], top_n=3)
    r = http.post("/v1/rerank", json={"model": "tiny", "query": SENTENCES[0], "documents": SENTENCES[1:], "top_n": 3}).json()
    assert [x.index for x in ranked] == [x["index"] for x in r["results"]]
    assert [x.document for x in ranked] == [SENTENCES[1:][x["index"]] for x in r["results"]]
    np.testing.assert_allclose([x.score for x in ranked], [x["relevance_score"] for x in r["results"]], atol=1e-6)
    dense = tiny.rerank(SENTENCES[0], SENTENCES[1:], mode="dense")
    d = http.post("/v1/rerank", json={"model": "tiny", "query": SENTENCES[0], "documents": SENTENCES[1:], "mode": "dense"}).json()
    assert [(x.index, x.score) for x in dense] == [(x["index"], pytest.approx(x["relevance_score"], abs=1e-6)) for x in d["results"]]
    with pytest.raises(InvalidInput) as e:
        tiny.similarity(["ok", 7], "x")
    assert e.value.field == "a[1]"


def test_generate_needs_a_bundle_with_a_decoder(tiny):
    with pytest.raises(InvalidInput, match="model 'tiny' has no decoder") as e:
        tiny.generate("the cat sat")
    assert e.value.field == "model"


# -- indexes ---------------------------------------------------------------------------------------
def test_an_index_written_here_is_searched_here_and_served_by_a_server(models, tmp_path):
    folder = tmp_path / "indexes"
    docs = ["the cat sat on the table .", "a dog ran in the city", "she read a letter by the river", "the old man drove a red car"]
    with api.load("tiny", models_dir=models) as m:
        index = api.Index.create(m, folder, "notes", mode="hybrid")
        ids = index.add(docs, ids=[f"d{i}" for i in range(4)], metadata=[{"n": i} for i in range(4)], batch_size=3)
        assert ids == ["d0", "d1", "d2", "d3"] and len(index) == 4
        for mode in ("dense", "lexical", "hybrid"):
            hits = index.search("a dog ran in the city", k=2, mode=mode)
            assert hits[0].id == "d1" and hits[0].metadata == {"n": 1} and 1 <= len(hits) <= 2, mode
        dense = [h.id for h in index.search(docs[3], k=4, mode="dense")]
        assert [h.id for h in index.search(m.encode(docs[3]), k=4)] == dense  # a vector query: by vector
        assert [[h.id for h in hs] for hs in index.search(docs[:2], k=1, mode="dense")] == [["d0"], ["d1"]]
        assert index.add(["the happy woman sleeps"])[0] and len(index) == 5  # an id made where none is given
        assert index.delete(["d2", "zz"]) == ["d2"] and len(index) == 4
        assert api.Index.create(m, folder, "notes", exist_ok=True).stats().documents == 4
        here = [(h.id, h.score) for h in index.search(docs[3], k=4, mode="hybrid")]
    r = http_search(models, folder, {"index": "notes", "query": docs[3], "k": 4, "mode": "hybrid"})  # the folder, served
    assert [(h["id"], pytest.approx(h["score"], abs=1e-6)) for h in r["results"][0]] == here
    with api.load("tiny", models_dir=models) as m:  # the server closed: the folder is this process's again
        assert len(api.Index.open(m, folder, "notes")) == 4


def http_search(models, folder, body: dict) -> dict:
    with serve_test(settings_for(models, folder)) as client:
        r = client.post("/v1/search", json=body)
        assert r.status_code == 200, r.text
        return r.json()


def test_index_arguments_are_checked_before_anything_is_written_and_named_as_given(tiny, tmp_path):
    index = api.Index.create(tiny, tmp_path / "idx", "checks", mode="dense")
    cases = [
        (dict(texts=["a", "b"], ids=["x"]), InvalidInput, "ids"),
        (dict(texts=["a", "b"], ids=["x", "x"]), Conflict, "ids[1]"),
        (dict(texts=["a", " "]), EmptyInput, "texts[1]"),
        (dict(texts=["a", "b"], metadata=[None, {"v": float("nan")}]), InvalidInput, "metadata[1].v"),
        (dict(texts=["a", "b"], ids=["x", ""]), InvalidInput, "ids[1]"),
        (dict(texts=["a", "b"], truncation="cut"), InvalidInput, "truncation"),
        (dict(texts="a"), InvalidInput, "texts"),
    ]
    for kw, kind, field in cases:
        with pytest.raises(kind) as e:
            index.add(**kw)
        assert e.value.field == field, (kw, e.value)
    assert len(index) == 0
    index.add(["the cat", "the dog", "a tree"], ids=["a", "b", "c"])
    with pytest.raises(Conflict) as e:  # an id already in the index stops the call at its batch, named as given
        index.add(["one", "two", "three"], ids=["p", "q", "b"], batch_size=2)
    assert e.value.field == "ids[2]" and "ids[2]" in e.value.message
    assert len(index) == 5  # the first batch was written
    with pytest.raises(InvalidInput) as e:
        api.Index.create(tiny, tmp_path / "idx", "Bad Name")
    assert e.value.field == "name"
    with pytest.raises(Conflict):
        api.Index.create(tiny, tmp_path / "idx", "checks")


# -- closing ----------------------------------------------------------------------------------------
def test_closing_stops_the_engine_and_lets_go_of_the_index_folder(models, tmp_path):
    before = set(threading.enumerate())
    m = api.load("tiny", models_dir=models)
    api.Index.create(m, tmp_path / "idx", "x").add(["the cat"])
    m.close()
    m.close()  # again: nothing
    assert m.closed
    with pytest.raises(RuntimeError, match="closed"):
        m.encode("the cat")
    with api.load("tiny", models_dir=models) as again:  # the folder's lock was let go of
        assert len(api.Index.open(again, tmp_path / "idx", "x")) == 1
    # the engine's loop and the batchers' threads end (tqdm's monitor and an idle default executor may linger); an
    # executor shut down without waiting lets its idle threads go a moment later, so each is joined first
    ours = [t for t in set(threading.enumerate()) - before if t.name.startswith(("thoughtvec-", "ort-"))]
    for t in ours:
        t.join(timeout=60)
    assert not [t.name for t in ours if t.is_alive()]


def test_import_thoughtvec_stays_light_and_names_the_api():
    code = "import sys, thoughtvec; assert 'onnxruntime' not in sys.modules; assert callable(thoughtvec.load); print(thoughtvec.Index.__name__)"
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == "Index", run.stderr


@pytest.mark.skipif(not (MODELS / "mean-max-aae").is_dir(), reason="the bundled models are not in this checkout")
def test_a_bundled_model_by_name_from_the_checkout(monkeypatch, tmp_path):
    import thoughtvec

    monkeypatch.delenv("THOUGHTVEC_MODELS_DIR", raising=False)
    monkeypatch.chdir(tmp_path)  # the checkout's models/, wherever the caller is
    with thoughtvec.load("mean-max-aae", warmup=False) as m:
        assert m.encode("The cat sat on the mat.", dimensions=64).shape == (64,)
        assert m.similarity("A man plays a guitar.", "A person plays an instrument.") > m.similarity(
            "A man plays a guitar.", "Stocks fell."
        )
        words = m.generate("the cat sat on the mat .").data[0].text
        raw = m.encode("the cat sat on the mat .", view="mean_max", normalize=False)  # the view its decoder reads
        assert words and words == m.generate(raw).data[0].text


def printed(text: str) -> list[str]:
    """Printed lines in shape: numbers blanked, numpy's padding of them dropped."""
    return [
        re.sub(r"\s+", " ", re.sub(r"-?\d+(\.\d+)?(e-?\d+)?", "0", line)).replace("[ ", "[").strip() for line in text.strip().splitlines()
    ]


@pytest.mark.skipif(not (MODELS / "mean-max-aae").is_dir(), reason="the bundled models are not in this checkout")
def test_the_quick_start_runs_as_pasted(tmp_path):
    page = (DOCS / "python.md").read_text(encoding="utf-8")
    code, shown = re.search(r"## Quick start\n\n```python\n(.*?)\n```\n```\n(.*?)\n```", page, re.S).groups()  # type: ignore[union-attr]
    env = {k: v for k, v in os.environ.items() if not k.startswith("THOUGHTVEC_")}
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    assert printed(run.stdout) == printed(shown), run.stdout
