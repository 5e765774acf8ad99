"""The index services without HTTP (admin, search, ingest), over a fake runtime and the FAISS store in a temporary folder: every operation
(create, add, search in each mode, map, delete, drop, list, stats, readiness, the default index, load and close),
and each one's domain errors."""

from __future__ import annotations

import asyncio
import dataclasses
from types import SimpleNamespace

import numpy as np
import pytest

from tests.service.conftest import SENTENCES, write_sample
from tests.service.core.fake_runtime import fake_services
from thoughtvec.service.core.batcher import LOOKAHEAD
from thoughtvec.service.core.embedding import BULK_IN_FLIGHT
from thoughtvec.service.core.results import DocumentsAdded, IndexListing, IndexStats, SearchResult
from thoughtvec.service.errors import Conflict, InvalidInput, NotReady, TooManyInputs, UnknownIndex, UnknownModel
from thoughtvec.service.index.contents import BuiltIndex, NewIndex

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def services(models_dir, tmp_path):
    return lambda **settings: fake_services(models_dir, tmp_path / "indexes", **settings)


def docs(texts, ids=None, metadata=None):
    """What ``POST /v1/indexes/{name}/documents`` carries for each document."""
    ids = ids or [None] * len(texts)
    metadata = metadata or [None] * len(texts)
    return [SimpleNamespace(text=t, id=i, metadata=m) for t, i, m in zip(texts, ids, metadata)]


async def filled(ix, name="docs", **create) -> DocumentsAdded:
    await ix.admin.create_index(name=name, model="tiny", **create)
    return await ix.ingest.add_documents(
        name, docs(SENTENCES, [f"d{i}" for i in range(len(SENTENCES))], [{"i": i} for i in range(len(SENTENCES))])
    )


async def test_create_index_takes_the_dev_defaults_and_refuses_what_the_backend_cannot_build(services):
    async with services() as (_, ix, fakes):
        stats = await ix.admin.create_index(name="a")
        assert isinstance(stats, IndexStats)
        assert (stats.model, stats.view, stats.mode, stats.dim, stats.documents, stats.factory) == ("tiny", "mean", "lexical", 8, 0, "Flat")
        assert ix.admin.store.config("a").fingerprint == fakes["tiny"].fingerprint("mean")
        ivf = await ix.admin.create_index(name="b", model="tiny2", view="meanmax", mode="dense", factory="IVF2,Flat", train_size=4)
        assert (ivf.dim, ivf.mode, ivf.train_size, ivf.backend["trained"]) == (8, "dense", 4, False)
        for kw, error, fld in [
            (dict(name="a"), Conflict, "name"),
            (dict(name="c", factory="HNSW1"), InvalidInput, "factory"),
            (dict(name="c", factory="PQ3"), InvalidInput, "factory"),
            (dict(name="c", model="nope"), UnknownModel, "model"),
        ]:
            with pytest.raises(error) as e:
                await ix.admin.create_index(**kw)
            assert e.value.field == fld, kw
        assert "c" not in ix.admin.store


async def test_a_new_index_gets_the_best_mode_the_backend_serves(services, monkeypatch):
    async with services() as (_, ix, _fakes):
        assert ix.admin.new_index_search(None, None, None)[2] == "lexical"  # the dev rule over tiny, on FAISS
        await filled(ix, mode="dense")
        dense_only = dataclasses.replace(ix.admin.store.capabilities, modes=("dense",), unserved="this store keeps no BM25")
        monkeypatch.setattr(type(ix.admin.store), "capabilities", property(lambda self: dense_only))
        assert ix.admin.new_index_search(None, None, None)[2] == "dense"
        for refused in (
            ix.admin.create_index(name="h", model="tiny", mode="hybrid"),
            ix.search.search(query="the cat", index="docs", mode="lexical"),
            ix.search.index_map("docs", "the cat", limit=5, k=2, mode="hybrid"),
        ):
            with pytest.raises(InvalidInput) as e:  # the backend's capabilities, checked in the core, with its reason
                await refused
            assert e.value.field == "mode" and str(e.value).endswith("index_backend=faiss: this store keeps no BM25")
        assert (await ix.search.search(query=[0.1] * 8, index="docs", k=1)).mode == "dense"


async def test_a_search_is_refused_for_its_first_problem_in_order(services):
    """Checked once, in order: the index, k, the query's form, the mode, the texts; a request with several problems
    is refused for the first."""
    async with services(max_k=5) as (_, ix, _fakes):
        await filled(ix, name="words", mode="lexical")
        await filled(ix, mode="dense")
        for kw, fld in [
            (dict(index="nope", k=0, query=[]), "index"),
            (dict(k=0, query=[], mode="hybrid"), "k"),
            (dict(query=[0.1, 0.2], mode="lexical"), "query"),
            (dict(query=[0.1] * 8, mode="lexical"), "mode"),
            (dict(index="words", query=" ", mode="dense"), "mode"),
            (dict(query=["ok", " "]), "query[1]"),
        ]:
            with pytest.raises(InvalidInput if fld != "index" else UnknownIndex) as e:
                await ix.search.search(**({"index": "docs", "k": 1} | kw))
            assert e.value.field == fld, kw


async def test_add_documents_embeds_stores_and_counts(services):
    async with services() as (_, ix, fakes):
        await ix.admin.create_index(name="docs", model="tiny", mode="dense")
        added = await ix.ingest.add_documents("docs", docs(SENTENCES[:3], ["x", None, None]))
        assert added.ids[0] == "x" and all(len(i) == 32 for i in added.ids[1:]) and added.documents == 3
        assert added.usage.tokens == sum(len(fakes["tiny"].token_ids(s)) for s in SENTENCES[:3])
        assert [d.id for d in ix.admin.store.documents("docs", 10)] == added.ids
        for batch, error, fld in [
            (docs(["again"], ["x"]), Conflict, "documents[0].id"),
            (docs(["ok", " "]), InvalidInput, "documents[1].text"),
            (docs(["ok"], metadata=[{"n": float("nan")}]), InvalidInput, "documents[0].metadata.n"),
        ]:
            with pytest.raises(error) as e:
                await ix.ingest.add_documents("docs", batch)
            assert e.value.field == fld
        with pytest.raises(UnknownIndex) as e:
            await ix.ingest.add_documents("nope", docs(["x"]))
        assert e.value.field == "index" and ix.admin.store.count("docs") == 3


async def test_a_lexical_only_index_adds_documents_without_running_the_model(services):
    """Mode lexical: the documents' words are indexed, no model runs (nothing reaches the encoder, usage 0), and a
    search needing vectors (a vector query, mode dense or hybrid) is a 422 naming the field, not a wrong answer."""
    async with services() as (_, ix, fakes):
        await ix.admin.create_index(name="docs", model="tiny", mode="lexical")
        runs = {name: list(f.batches) for name, f in fakes.items()}
        added = await ix.ingest.add_documents("docs", docs(SENTENCES, [f"d{i}" for i in range(len(SENTENCES))]))
        assert {name: f.batches for name, f in fakes.items()} == runs  # the encoder never ran
        assert added.documents == len(SENTENCES) and added.usage.tokens == 0
        found = await ix.search.search(query="the happy woman", index="docs", k=3)
        assert found.mode == "lexical" and found.results[0][0].id == "d6" and found.usage.tokens == 0
        assert {name: f.batches for name, f in fakes.items()} == runs
        for kw, fld in [(dict(mode="dense"), "mode"), (dict(mode="hybrid"), "mode"), (dict(query=[0.1] * 8), "query")]:
            with pytest.raises(InvalidInput) as e:
                await ix.search.search(**({"query": "the happy woman", "index": "docs"} | kw))
            assert e.value.field == fld and "lexical-only" in str(e.value)
        with pytest.raises(InvalidInput) as e:  # a bad document is still named
            await ix.ingest.add_documents("docs", docs(["ok", " "]))
        assert e.value.field == "documents[1].text" and ix.admin.store.count("docs") == len(SENTENCES)


async def test_documents_added_in_bulk_get_the_vectors_the_embeddings_route_gives(services):
    """Many documents in one add (several batches, lengths mixed): each stored vector is the one the embeddings
    route returns for its text alone, whatever it was batched with."""
    async with services() as (embedding, ix, _fakes):
        texts = [s * (1 + i % 4) for i, s in enumerate(SENTENCES * 12)]  # more than a batch, lengths varied
        await ix.admin.create_index(name="docs", model="tiny", mode="dense", normalize=False, metric="ip")
        await ix.ingest.add_documents("docs", docs(texts, [f"d{i}" for i in range(len(texts))]))
        vi = ix.admin.store.entry("docs").index
        stored = np.stack([vi.index.reconstruct(vi.labels[f"d{i}"]) for i in range(len(texts))])
        alone = np.concatenate([(await embedding.embeddings([t], "tiny", None, normalize=False)).vectors for t in texts])
        np.testing.assert_allclose(stored, alone, rtol=1e-5, atol=1e-6)


async def test_add_documents_limits(services):
    async with services(max_inputs=2, max_metadata_depth=2) as (_, ix, _fakes):
        await ix.admin.create_index(name="docs", model="tiny")
        with pytest.raises(TooManyInputs) as e:
            await ix.ingest.add_documents("docs", docs(["a", "b", "c"]))
        assert e.value.field == "documents"
        with pytest.raises(InvalidInput) as e:
            await ix.ingest.add_documents("docs", docs(["ok"], metadata=[{"a": {"b": {"c": 1}}}]))
        assert e.value.field == "documents[0].metadata"
        with pytest.raises(TooManyInputs) as e:
            await ix.ingest.delete_documents("docs", ["a", "b", "c"])
        assert e.value.field == "ids"
        assert ix.admin.store.count("docs") == 0


async def test_search_dense_by_text_texts_and_vector(services):
    async with services() as (_, ix, fakes):
        await filled(ix, mode="dense")
        found = await ix.search.search(query=SENTENCES[2], index="docs", k=3)
        assert isinstance(found, SearchResult) and (found.index, found.model, found.metric, found.mode) == (
            "docs",
            "tiny",
            "cosine",
            "dense",
        )
        best = found.results[0][0]
        assert (best.id, best.text, best.metadata) == ("d2", SENTENCES[2], {"i": 2}) and best.score == pytest.approx(1.0, abs=1e-5)
        assert len(found.results[0]) == 3 and found.usage.tokens == len(fakes["tiny"].token_ids(SENTENCES[2]))
        many = await ix.search.search(query=[SENTENCES[0], SENTENCES[4]], index="docs", k=1)
        assert [r[0].id for r in many.results] == ["d0", "d4"]
        by_vector = await ix.search.search(query=[float(v) for v in fakes["tiny"].expected(SENTENCES[5])], index="docs", k=1)
        assert by_vector.results[0][0].id == "d5" and by_vector.usage.tokens == 0 and by_vector.mode == "dense"


async def test_a_big_add_does_not_starve_a_request_arriving_meanwhile(services):
    """A big add queues a few batches at a time: a request arriving while it runs is served after those few
    batches, not after the whole add, and is not refused for a queue the add filled."""
    async with services(max_batch_size=2) as (embedding, ix, fakes):
        fake, batcher = fakes["tiny"], embedding.registry.models["tiny"].batcher
        await ix.admin.create_index(name="docs", model="tiny", mode="dense")
        texts = SENTENCES * 20
        fake.gate.clear()  # the worker is held inside its first run
        add = asyncio.create_task(ix.ingest.add_documents("docs", docs(texts)))
        assert await asyncio.to_thread(fake.entered.wait, 10)
        await asyncio.sleep(0.05)  # room for the add to queue whatever it would
        assert batcher.depth <= BULK_IN_FLIGHT * LOOKAHEAD * 2 < len(texts)
        late = asyncio.create_task(embedding.embeddings("a late request", "tiny", None, normalize=True))
        fake.gate.set()
        await late
        # served after the few batches queued before it (the worker may have run a few more since), not after
        # the add's len(texts) / 2 batches
        assert len(fake.batches) < len(texts) // 4
        assert (await add).documents == len(texts)


async def test_search_lexical_and_hybrid(services):
    async with services() as (_, ix, _fakes):
        await filled(ix, mode="hybrid")
        lexical = await ix.search.search(query="the happy woman", index="docs", k=3, mode="lexical")
        assert lexical.mode == "lexical" and lexical.results[0][0].id == "d6" and lexical.usage.tokens == 0  # no model runs
        hybrid = await ix.search.search(query="the happy woman sleeps", index="docs", k=3, mode="hybrid")
        top = hybrid.results[0][0]
        assert hybrid.mode == "hybrid" and top.id == "d6" and top.dense_rank == 1 and top.lexical_rank == 1
        assert hybrid.usage.tokens > 0


async def test_search_errors_name_the_field(services):
    async with services(max_k=5) as (_, ix, _fakes):
        await filled(ix, mode="dense")
        cases = [
            (dict(query="x", index="nope"), UnknownIndex, "index"),
            (dict(query="x", index="docs", k=0), InvalidInput, "k"),
            (dict(query="x", index="docs", k=6), InvalidInput, "k"),
            (dict(query=[0.1, 0.2], index="docs"), InvalidInput, "query"),
            (dict(query=[float("nan")] * 8, index="docs"), InvalidInput, "query"),
            (dict(query=[0.1] * 8, index="docs", mode="lexical"), InvalidInput, "mode"),
            (dict(query=[], index="docs"), InvalidInput, "query"),
            (dict(query=["ok", " "], index="docs"), InvalidInput, "query[1]"),
            (dict(query=" ", index="docs"), InvalidInput, "query"),
        ]
        for kw, error, fld in cases:
            with pytest.raises(error) as e:
                await ix.search.search(**({"k": 1} | kw))
            assert e.value.field == fld, kw
        with pytest.raises(UnknownIndex):  # the default index, not built here
            await ix.search.search(query="x")


async def test_an_index_of_an_earlier_export_is_a_conflict_not_a_wrong_answer(services):
    async with services() as (_, ix, fakes):
        store = ix.admin.store
        config = store.new_config(NewIndex("old", "tiny", "mean", 8, fingerprint="an-earlier-export", mode="dense"))
        store.install(BuiltIndex(config, [], np.zeros((0, 8), np.float32)))
        for call in (
            ix.search.search(query="the cat", index="old"),
            ix.search.search(query=[0.1] * 8, index="old"),
            ix.ingest.add_documents("old", docs(["x"])),
        ):
            with pytest.raises(Conflict) as e:
                await call
            assert e.value.field == "index" and "earlier export" in str(e.value)


async def test_index_map_places_documents_and_the_query(services):
    async with services() as (_, ix, _fakes):
        await filled(ix, mode="dense")
        plain = await ix.search.index_map("docs", None, limit=5)
        assert [p.id for p in plain.points] == ["d0", "d1", "d2", "d3", "d4"] and plain.query is None and plain.hits is None
        assert len(plain.explained_variance) == 2
        marked = await ix.search.index_map("docs", SENTENCES[3], limit=4, include=["d6"], k=2)
        assert marked.hits and marked.hits[0] == "d3" and marked.mode == "dense" and marked.query.text == SENTENCES[3]
        assert [p.id for p in marked.points][:3] == [*marked.hits, "d6"] and len(marked.points) == 4
        for kw, fld in [(dict(limit=2), "limit"), (dict(query=None, limit=5, k=2), "k"), (dict(query="x", limit=5, mode="dense"), "mode")]:
            with pytest.raises(InvalidInput) as e:
                await ix.search.index_map("docs", kw.pop("query", "x"), **kw)
            assert e.value.field == fld
        await ix.admin.create_index(name="small", model="tiny", mode="dense")
        added = await ix.ingest.add_documents("small", docs(["a", "b"]))
        small = await ix.search.index_map("small", None, limit=5)  # fewer documents than a plane needs: still drawn
        assert sorted(p.id for p in small.points) == sorted(added.ids)


async def test_delete_drop_list_and_stats(services):
    async with services() as (_, ix, _fakes):
        await filled(ix, mode="dense")
        gone = await ix.ingest.delete_documents("docs", ["d1", "d9", "d2"])
        assert (gone.deleted, gone.not_found, gone.documents) == (["d1", "d2"], ["d9"], len(SENTENCES) - 2)
        found = await ix.search.search(query=SENTENCES[1], index="docs", k=len(SENTENCES), mode="dense")
        assert {h.id for h in found.results[0]}.isdisjoint({"d1", "d2"})
        assert ix.admin.index_stats("docs").documents == len(SENTENCES) - 2
        await ix.admin.create_index(name="other", model="tiny2")
        listing = ix.admin.list_indexes()
        assert isinstance(listing, IndexListing) and [s.name for s in listing.data] == ["docs", "other"]
        await ix.admin.drop_index("docs")
        with pytest.raises(UnknownIndex):
            ix.admin.index_stats("docs")
        with pytest.raises(UnknownIndex):
            await ix.admin.drop_index("docs")
        with pytest.raises(UnknownIndex):
            await ix.ingest.delete_documents("docs", ["d0"])
        assert [s.name for s in ix.admin.list_indexes().data] == ["other"] and ix.admin.readiness() == ({"other": "ready"}, [])


async def test_an_index_being_built_is_not_ready_and_cannot_be_taken(services):
    async with services() as (_, ix, _fakes):
        ix.admin.building["default"] = "10/50 sentences embedded"
        assert ix.admin.readiness() == ({"default": "building: 10/50 sentences embedded"}, ["default"])
        assert ix.admin.list_indexes().building == {"default": "10/50 sentences embedded"}
        with pytest.raises(NotReady) as e:
            await ix.search.search(query="x")
        assert e.value.field == "index" and "being built (10/50" in str(e.value)
        with pytest.raises(NotReady):
            await ix.admin.drop_index("default")
        with pytest.raises(Conflict):
            await ix.admin.create_index(name="default")


async def test_the_default_index_is_built_from_the_sample_once(services, tmp_path):
    sample = write_sample(tmp_path / "sample.tsv.gz", n=30)
    async with services(build_default_index=True, search_sample=sample, default_index_max_docs=20) as (_, ix, fakes):
        await ix.admin.ensure_default_index()
        stats = ix.admin.index_stats("default")
        assert (stats.documents, stats.model, stats.view, stats.mode) == (20, "tiny", "mean", "lexical")
        assert ix.admin.store.config("default").fingerprint == fakes["tiny"].fingerprint("mean") and ix.admin.building == {}
        batches = len(fakes["tiny"].batches)
        await ix.admin.ensure_default_index()  # there already: nothing is embedded again
        assert len(fakes["tiny"].batches) == batches
    async with services(build_default_index=True, search_sample=tmp_path / "missing.tsv.gz") as (_, ix, _fakes):
        await ix.admin.ensure_default_index()  # no sample: no index, no error
        assert "default" in ix.admin.store  # the first one was kept in the folder


async def test_indexes_outlive_the_service(services):
    async with services() as (_, ix, _fakes):
        await filled(ix, mode="dense")
        await ix.ingest.delete_documents("docs", ["d0"])
    async with services() as (_, ix, _fakes):  # load() at start, close() at the end
        assert ix.admin.readiness() == ({"docs": "ready"}, []) and ix.admin.index_stats("docs").documents == len(SENTENCES) - 1
        assert (await ix.search.search(query=SENTENCES[3], index="docs", k=1, mode="dense")).results[0][0].id == "d3"


def test_devices_are_read_from_the_backends_capabilities(models_dir, tmp_path, monkeypatch):
    from tests.service.conftest import settings_for
    from thoughtvec.service.core.engine import Core

    core = Core(settings_for(models_dir, tmp_path / "indexes"))
    store = core.indexes.store
    assert store.capabilities.backend == "faiss" and core.devices()["indexes_on_gpu"] is store.capabilities.on_gpu
    on_gpu = dataclasses.replace(store.capabilities, gpus=2, on_gpu=True)
    monkeypatch.setattr(type(store), "capabilities", property(lambda self: on_gpu))
    assert (core.devices()["faiss_gpus"], core.devices()["indexes_on_gpu"]) == (2, True)


async def test_only_a_named_lexical_mode_makes_an_index_lexical_only(services):
    """The dev rule's lexical default keeps the vectors (dense on request); a creator's `mode: lexical` keeps none."""
    async with services() as (_, ix, fakes):
        await ix.admin.create_index(name="ruled", model="tiny")  # the rule: lexical for tiny
        await ix.admin.create_index(name="named", model="tiny", mode="lexical")
        assert ix.admin.store.config("ruled").mode == ix.admin.store.config("named").mode == "lexical"
        assert ix.admin.store.config("ruled").embedded and not ix.admin.store.config("named").embedded
        for name in ("ruled", "named"):
            await ix.ingest.add_documents(name, docs(SENTENCES[:4]))
        assert (await ix.search.search(query=SENTENCES[1], index="ruled", k=2, mode="dense")).results[0]
        with pytest.raises(InvalidInput) as e:
            await ix.search.search(query=SENTENCES[1], index="named", k=2, mode="dense")
        assert e.value.field == "mode"
