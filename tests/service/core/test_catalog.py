"""The catalog without HTTP, over a fake runtime: typed model descriptions with aliases and devices, tokenization."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.service.conftest import SENTENCES
from tests.service.core.fake_runtime import DEVICES, fake_services
from tests.service.core.test_embedding_service import LONG
from thoughtvec.service.bundle.format import load_bundle
from thoughtvec.service.core.catalog import Catalog, tei_pooling
from thoughtvec.service.core.results import ModelDescription, ModelList
from thoughtvec.service.errors import UnknownModel

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.fixture
def services(models_dir, tmp_path):
    return lambda **settings: fake_services(models_dir, tmp_path / "indexes", **settings)


async def test_tokenize_shows_the_ids_the_model_gets(services):
    async with services() as (emb, _, fakes):
        catalog = Catalog(emb, lambda: DEVICES)
        out = await catalog.tokenize([SENTENCES[0], LONG], "tiny")
        assert [t.id for t in out.data[0].tokens] == fakes["tiny"].token_ids(SENTENCES[0])
        assert (out.data[0].over_limit, out.data[1].over_limit, out.max_input_tokens) == (False, True, 32)


async def test_models_are_typed_descriptions_with_aliases_and_devices(services):
    async with services(model_aliases="text-embedding-ada-002=default") as (emb, _, _fakes):
        catalog = Catalog(emb, lambda: DEVICES)
        listing = catalog.models()
        assert isinstance(listing, ModelList) and listing.devices == DEVICES
        assert [m.id for m in listing.models] == ["tiny", "tiny2"] and all(isinstance(m, ModelDescription) for m in listing.models)
        tiny = listing.models[0]
        assert (tiny.default, tiny.dimension, tiny.default_view, tiny.max_input_tokens, tiny.family) == (
            True,
            8,
            "mean",
            32,
            "skip-thought",
        )
        assert tiny.views["meanmax"].dim == 16 and tiny.training is None and tiny.alias_of is None  # no provenance in the list
        assert [(a.id, a.name, a.alias_of, a.default) for a in listing.aliases] == [("text-embedding-ada-002", "tiny", "tiny", False)]
        one = catalog.describe("tiny2")
        assert (one.id, one.default, one.dimension, one.training) == ("tiny2", False, 4, {"note": "not trained: fixed random embeddings"})
        alias = catalog.describe("text-embedding-ada-002")
        assert (alias.id, alias.name, alias.alias_of, alias.default) == ("text-embedding-ada-002", "tiny", "tiny", True)
        with pytest.raises(UnknownModel):
            catalog.describe("nope")


# TEI's pooling name of each committed bundle's default view: mean for means (of states, of word vectors, SIF-weighted),
# last_token for skip-thought's last GRU state
TEI_POOLING = {
    "all-minilm-l6-v2": "mean",
    "mean-max-aae": "mean",
    "invertible-linear": "mean",
    "invertible-bijection": "mean",
    "uni-skip": "last_token",
    "bi-skip": "last_token",
    "combine-skip": "last_token",
}


@pytest.mark.parametrize(("bundle", "pooling"), sorted(TEI_POOLING.items()))
def test_info_names_a_bundles_pooling_as_tei_does(bundle, pooling):
    spec = load_bundle(Path(__file__).resolve().parents[3] / "models" / bundle).spec
    assert tei_pooling(spec) == pooling
