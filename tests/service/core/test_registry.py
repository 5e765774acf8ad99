"""The registry names the model a request gets: by name, by alias, or the default; while bundles load, the
model a rule names is awaited (503), never stood in for by another one that happens to be loaded first."""

from __future__ import annotations

import pytest

from tests.service.conftest import settings_for
from thoughtvec.service.core.registry import Registry
from thoughtvec.service.errors import NotReady
from thoughtvec.service.settings import RETRIEVAL_MODEL_PREFERENCE


def half_loaded(models_dir, tmp_path, loaded: str, **settings) -> Registry:
    """A registry that has found both tiny bundles and loaded only ``loaded``, as during start-up."""
    reg = Registry(settings_for(models_dir, tmp_path, **({"default_model": None} | settings)))
    reg.discovered = ["tiny", "tiny2"]
    model = reg._load_one(models_dir / loaded)
    model.warmed = True
    reg.models[loaded] = model
    return reg


def test_the_default_model_is_awaited_while_it_loads(models_dir, tmp_path):
    reg = half_loaded(models_dir, tmp_path, "tiny2", model_preference="tiny,tiny2")
    assert reg.default_model == "tiny"
    with pytest.raises(NotReady, match="'tiny' is not loaded yet"):
        reg.get(None)
    reg.started = True  # loading over, tiny never came: the next in the preference serves
    assert reg.default_model == "tiny2" and reg.get(None).name == "tiny2"


def test_retrieval_aliases_name_the_first_served_of_the_retrieval_preference(models_dir, tmp_path, monkeypatch):
    monkeypatch.setattr("thoughtvec.service.core.registry.RETRIEVAL_MODEL_PREFERENCE", ("tiny2", "tiny"))
    reg = half_loaded(models_dir, tmp_path, "tiny", model_aliases="openai=retrieval", model_preference="tiny,tiny2")
    with pytest.raises(NotReady):  # tiny2 is still loading: the alias waits for it
        reg.get("openai")
    reg.started = True
    assert reg.get("openai").name == "tiny" and reg.aliases() == {"openai": "tiny"}  # tiny2 failed: the next served
    monkeypatch.setattr("thoughtvec.service.core.registry.RETRIEVAL_MODEL_PREFERENCE", ("elsewhere",))
    assert reg.get("openai").name == "tiny"  # none of the preference served: the default model


def test_openai_and_cohere_names_default_to_the_retrieval_rule():
    from thoughtvec.service.settings import COHERE_MODEL_NAMES, OPENAI_MODEL_NAMES, Settings

    assert "text-embedding-3-small" in OPENAI_MODEL_NAMES and "rerank-v3.5" in COHERE_MODEL_NAMES
    assert Settings().aliases == {n: "retrieval" for n in (*OPENAI_MODEL_NAMES, *COHERE_MODEL_NAMES)}
    assert RETRIEVAL_MODEL_PREFERENCE  # the order itself is checked against the records (tests/test_committed_bundles.py)
