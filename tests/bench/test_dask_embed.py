"""The Dask recipe's map step: a worker loads its model once, whatever the partitions it is given, and adds each to
its index through the Python API; with Dask installed (the `dask` extra), the whole recipe runs."""

from __future__ import annotations

import inspect

import pandas as pd
import pytest

from tests.service.conftest import SENTENCES
from thoughtvec.bench import dask_embed
from thoughtvec.paths import DOCS


@pytest.fixture
def worker():
    yield
    for index in dask_embed._INDEXES.values():
        index.model.close()
    dask_embed._INDEXES.clear()


def test_a_worker_loads_its_model_once_and_adds_every_partition_to_its_index(models_dir, tmp_path, worker):
    frame = pd.DataFrame({"id": [f"s{i}" for i in range(len(SENTENCES))], "text": SENTENCES})
    model = str(models_dir / "tiny")  # a bundle's folder
    done = pd.concat([dask_embed.embed_partition(p, model, str(tmp_path), {}) for p in dask_embed.split(frame, 3)])
    assert sorted(done["id"]) == sorted(frame["id"]) and list(done.index) == list(frame.index)
    assert len(dask_embed._INDEXES) == 1  # one model and index for this process
    index = dask_embed.worker_index(model, str(tmp_path), {})
    assert len(index) == len(SENTENCES) and index.search(SENTENCES[2], k=1, mode="dense")[0].id == "s2"


def test_the_recipe_runs(models_dir, tmp_path, capsys, worker):
    pytest.importorskip("dask", reason="the `dask` extra is not installed")
    assert dask_embed.main(["--model", str(models_dir / "tiny"), "--sentences", "300", "--partitions", "4", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "in-process loop" in out and "dask map_partitions (threads, 2 workers, 1 process)" in out
    assert "300 documents in" in out and "the first hit of sentence s123 is s123" in out


def test_the_docs_quote_the_map_step_as_it_is():
    assert f"```python\n{inspect.getsource(dask_embed.embed_partition).rstrip()}\n```" in (DOCS / "python.md").read_text(encoding="utf-8")
