"""The registry names the model a request gets: by name, by alias, or the default; while bundles load, the
model a rule names is awaited (503), never stood in for by another one that happens to be loaded first."""

from __future__ import annotations

import pytest

from tests.service.conftest import settings_for, write_guide
from thoughtvec.paths import MODELS
from thoughtvec.service.core.registry import Registry, default_ort_threads, pick_default_model, pick_retrieval_model, run_threads
from thoughtvec.service.errors import NotReady
from thoughtvec.service.model_guide import Guide
from thoughtvec.service.settings import COHERE_MODEL_NAMES, OPENAI_MODEL_NAMES, Settings


def half_loaded(models_dir, tmp_path, loaded: str, guide: Guide | None = None, **settings) -> Registry:
    """A registry that has found both tiny bundles and loaded only ``loaded``, as during start-up (``guide``: its
    model guide, else the folder's)."""
    reg = Registry(settings_for(models_dir, tmp_path, **({"default_model": None} | settings)), guide=guide or Guide())
    reg.discovered = ["tiny", "tiny2"]
    model = reg._load_one(models_dir / loaded)
    model.warmed = True
    reg._check_measured(model)
    reg.models[loaded] = model
    return reg


def guide_of(tmp_path, models_dir, **choices) -> Guide:
    """A guide that measured both tiny bundles, with ``choices``."""
    folder = tmp_path / "guide"
    folder.mkdir(exist_ok=True)
    for name in ("tiny", "tiny2"):
        if not (folder / name).exists():
            (folder / name).symlink_to(models_dir / name)
    write_guide(folder, ["tiny", "tiny2"], **choices)
    return Guide.load(folder)


def test_the_default_model_is_awaited_while_it_loads(models_dir, tmp_path):
    reg = half_loaded(models_dir, tmp_path, "tiny2", model_preference="tiny,tiny2")
    assert reg.default_model == "tiny"
    with pytest.raises(NotReady, match="'tiny' is not loaded yet"):
        reg.get(None)
    reg.started = True  # loading over, tiny never came: the next in the preference serves
    assert reg.default_model == "tiny2" and reg.get(None).name == "tiny2"


def test_retrieval_aliases_name_the_first_served_of_the_retrieval_preference(models_dir, tmp_path):
    guide = guide_of(tmp_path, models_dir, retrieval=["tiny2", "tiny"])
    reg = half_loaded(models_dir, tmp_path, "tiny", guide, model_aliases="openai=retrieval", model_preference="tiny,tiny2")
    with pytest.raises(NotReady):  # tiny2 is still loading: the alias waits for it
        reg.get("openai")
    reg.started = True
    assert reg.get("openai").name == "tiny" and reg.aliases() == {"openai": "tiny"}  # tiny2 failed: the next served
    reg.guide = guide_of(tmp_path, models_dir, retrieval=["elsewhere"])
    reg._picked = None
    assert reg.get("openai").name == "tiny"  # none of the preference served: the default model


def test_the_default_model_follows_the_guide_unless_a_setting_names_one(models_dir, tmp_path):
    guide = guide_of(tmp_path, models_dir, default=["tiny2", "tiny"])
    reg = half_loaded(models_dir, tmp_path, "tiny", guide)
    assert reg.default_model == "tiny2"  # the dev rule's first, awaited while it loads
    reg.started = True
    assert reg.default_model == "tiny"  # tiny2 never came: the next of the rule's order
    assert half_loaded(models_dir, tmp_path, "tiny", model_preference="tiny").default_model == "tiny"
    assert half_loaded(models_dir, tmp_path, "tiny", default_model="tiny2").default_model == "tiny2"


def test_with_every_bundle_served_the_picks_are_the_guides_best_for_similarity_and_search():
    """Over the bundles the guide has figures for, the default model is the guide's pick for similarity (the
    same dev rule) and OpenAI's names get its pick for search, the best dense dev nDCG@10 of its figures."""
    guide = Guide.load(MODELS)
    models = guide.data["models"]
    best_for = {use: [n for n, m in models.items() if use in m["best_for"]] for use in ("similarity", "search")}
    ndcg = {n: m["dev"]["scifact_ndcg10"] for n, m in models.items() if m["dev"]["scifact_ndcg10"] is not None}
    settings = Settings()
    assert [pick_default_model(settings, guide, models)] == best_for["similarity"]
    assert [pick_retrieval_model(settings, guide, models)] == best_for["search"] == [max(ndcg, key=ndcg.__getitem__)]
    assert settings.aliases == {n: "retrieval" for n in (*OPENAI_MODEL_NAMES, *COHERE_MODEL_NAMES)}


def test_openai_and_cohere_names_are_aliases_of_the_retrieval_pick():
    assert "text-embedding-3-small" in OPENAI_MODEL_NAMES and "rerank-v3.5" in COHERE_MODEL_NAMES
    assert Settings().aliases == {n: "retrieval" for n in (*OPENAI_MODEL_NAMES, *COHERE_MODEL_NAMES)}


def test_the_picks_are_made_again_only_when_what_is_served_changes(models_dir, tmp_path, monkeypatch):
    from thoughtvec.service.core import registry as registry_module

    calls: list[int] = []
    original = registry_module.pick_default_model
    monkeypatch.setattr(registry_module, "pick_default_model", lambda *a: calls.append(1) or original(*a))
    reg = half_loaded(models_dir, tmp_path, "tiny2", model_preference="tiny,tiny2", model_aliases="small=tiny2")
    assert reg.default_model == "tiny"
    made = len(calls)
    assert [reg.default_model for _ in range(5)] == ["tiny"] * 5 and len(calls) == made  # not made again
    reg.started = True  # tiny never came
    assert reg.default_model == "tiny2" and len(calls) > made
    assert reg.resolve("small") == "tiny2"
    reg.settings.model_aliases = ["small=tiny"]  # the setting changed: the alias follows
    assert reg.resolve("small") == "tiny"


def test_concurrent_runs_share_onnx_runtimes_threads(tmp_path):
    assert run_threads(Settings(concurrent_runs=1, index_dir=tmp_path)) == default_ort_threads()
    assert run_threads(Settings(index_dir=tmp_path)) == max(1, default_ort_threads() // 2)  # two runs at once by default
    assert run_threads(Settings(ort_threads=4, concurrent_runs=2, index_dir=tmp_path)) == 2
    assert run_threads(Settings(ort_threads=3, concurrent_runs=2, index_dir=tmp_path)) == 1
    assert run_threads(Settings(ort_threads=1, concurrent_runs=4, index_dir=tmp_path)) == 1  # never none


def test_the_registry_gives_each_batcher_its_concurrent_runs(models_dir, tmp_path):
    import asyncio

    async def main() -> tuple[int, int]:
        reg = Registry(settings_for(models_dir, tmp_path / "idx", concurrent_runs=2, ort_threads=2, warmup=False))
        await reg.load_all()
        try:
            model = reg.get("tiny")
            return model.batcher.limits.concurrent_runs, model.encoder.session.get_session_options().intra_op_num_threads
        finally:
            await reg.stop()

    assert asyncio.run(main()) == (2, 1)


def test_a_bundle_the_guide_did_not_measure_is_named_by_no_rule(models_dir, tmp_path):
    """The guide measured tiny2 under another export (its fingerprint differs): loaded, it is unmeasured, and the
    rules pass over it; tiny, measured, is the default and the retrieval pick."""
    guide = guide_of(tmp_path, models_dir, default=["tiny2", "tiny"], retrieval=["tiny2", "tiny"], hybrid=["tiny2"])
    guide.data["models"]["tiny2"]["fingerprint"] = "0" * 16
    reg = half_loaded(models_dir, tmp_path, "tiny2", guide, model_aliases="openai=retrieval")
    tiny = reg._load_one(models_dir / "tiny")  # both loaded now
    tiny.warmed = True
    reg._check_measured(tiny)
    reg.models["tiny"], reg.started = tiny, True
    assert reg.unmeasured == {"tiny2"}
    assert reg.default_model == "tiny" and reg.get("openai").name == "tiny"
    assert not guide.hybrid("tiny2", reg.models["tiny2"].encoder.fingerprint())
    assert guide.entry("tiny2", reg.models["tiny2"].encoder.fingerprint())["dev"] is None


def test_without_a_guide_every_bundle_is_unmeasured_and_the_first_by_name_is_the_default(models_dir, tmp_path):
    reg = half_loaded(models_dir, tmp_path, "tiny2")
    reg.started = True
    assert reg.guide.source is None and reg.unmeasured == {"tiny2"} and reg.default_model == "tiny2"


@pytest.mark.parametrize(("setting", "expected"), [("onnxruntime", "onnxruntime"), ("auto", "openvino")])
def test_the_registry_serves_each_bundle_on_the_runtime_the_setting_allows(tmp_path, setting, expected):
    from tests.tiny_bundle import make_tiny_bundle
    from thoughtvec.service.core.runtime import openvino_support

    if expected == "openvino" and openvino_support().why_not is not None:
        pytest.skip(f"OpenVINO cannot serve here: {openvino_support().why_not}")
    make_tiny_bundle(tmp_path / "models" / "tiny", cpu_runtime="openvino")
    reg = Registry(settings_for(tmp_path / "models", tmp_path / "idx", cpu_runtime=setting, warmup=False))
    model = reg._load_one(tmp_path / "models" / "tiny")
    assert model.encoder.runtime.name == expected and model.describe(True, Guide()).runtime.name == expected
