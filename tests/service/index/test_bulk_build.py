"""Bulk builds (``service/index/build.py``'s :class:`Ingestion`, ``thoughtvec index build``): resumable by id after an
exception or a ``kill -9``, with no document twice or lost and the vectors of an uninterrupted build; each chunk
embedded while the one before is written; an index made otherwise refused; the progress bar, and ``--quiet``."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import zlib

import numpy as np
import pytest

from tests.tiny_bundle import make_tiny_bundle
from thoughtvec.service.cli import main
from thoughtvec.service.index.build import Ingestion
from thoughtvec.service.index.contents import Doc, NewIndex
from thoughtvec.service.index.store import IndexStore

WORDS = "the a cat dog man woman sat ran read walked city river house book red old".split()


def sentences(n: int) -> list[str]:
    rng = np.random.default_rng(0)
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(3, 10)))) + f" {i} ." for i in range(n)]


def vector(text: str, dim: int = 8) -> np.ndarray:
    return np.random.default_rng(zlib.crc32(text.encode())).standard_normal(dim).astype(np.float32)


def encode(texts: list[str]) -> np.ndarray:
    return np.stack([vector(t) for t in texts]) if texts else np.zeros((0, 8), np.float32)


def vectors_of(store: IndexStore, name: str) -> dict[str, np.ndarray]:
    """Every document's stored vector (as FAISS holds it: normalised), by id."""
    vi = store.entry(name).index
    return {doc_id: vi.index.reconstruct(label) for doc_id, label in vi.labels.items()}


def new_store(folder) -> tuple[IndexStore, object]:
    store = IndexStore(folder)
    return store, store.new_config(NewIndex("docs", "fake", "mean", 8, mode="dense"))


def test_an_interrupted_ingestion_run_again_adds_exactly_what_is_missing(tmp_path):
    docs = [Doc(f"d{i}", t) for i, t in enumerate(sentences(50))]
    whole, config = new_store(tmp_path / "whole")
    assert Ingestion(whole, encode, "docs", create=config, chunk=8, bar=False).run(docs).added == 50

    calls = []

    def failing(texts):  # the 4th chunk's embedding fails: chunks 1-3 are written (the 3rd was in flight)
        calls.append(len(texts))
        if len(calls) == 4:
            raise RuntimeError("the machine went away")
        return encode(texts)

    store, config = new_store(tmp_path / "cut")
    first = Ingestion(store, failing, "docs", create=config, chunk=8, bar=False)
    with pytest.raises(RuntimeError, match="went away"):
        first.run(docs)
    assert first.added == 24 and store.count("docs") == 24
    store.close()

    store = IndexStore(tmp_path / "cut")  # a new process: the index as its files hold it
    assert store.load("docs") and store.count("docs") == 24
    embedded = []
    again = Ingestion(store, lambda texts: embedded.append(len(texts)) or encode(texts), "docs", chunk=8, bar=False).run(docs)
    assert (again.read, again.added, again.present) == (50, 26, 24) and sum(embedded) == 26  # none embedded twice
    got, want = vectors_of(store, "docs"), vectors_of(whole, "docs")
    assert sorted(got) == sorted(d.id for d in docs) and store.count("docs") == 50
    assert all(np.allclose(got[i], want[i], atol=1e-6) for i in want)
    assert Ingestion(store, encode, "docs", chunk=8, bar=False).run(docs).added == 0
    store.close()
    whole.close()


def test_each_chunk_is_embedded_while_the_one_before_is_written(tmp_path):
    """The writer holds chunk k until chunk k+1's embedding has begun: a build that waited for each write before
    embedding the next chunk would wait here (and fail the guard) instead of finishing."""
    store, config = new_store(tmp_path)
    embedding = [threading.Event() for _ in range(3)]  # set as chunk k's embedding begins
    order: list[str] = []

    class SlowStore:
        def __getattr__(self, name):
            return getattr(store, name)

        def add(self, name, docs, vectors):
            k = int(docs[0].id[1:]) // 8
            order.append(f"write {k}")
            assert k == 2 or embedding[k + 1].wait(10), f"chunk {k + 1} was not embedded while chunk {k} was written"
            return store.add(name, docs, vectors)

    def embed(texts):
        k = sum(e.is_set() for e in embedding)
        order.append(f"embed {k}")
        embedding[k].set()
        return encode(texts)

    docs = [Doc(f"d{i}", t) for i, t in enumerate(sentences(24))]
    Ingestion(SlowStore(), embed, "docs", create=config, chunk=8, bar=False).run(docs)  # type: ignore[arg-type]
    assert store.count("docs") == 24 and sorted(order) == ["embed 0", "embed 1", "embed 2", "write 0", "write 1", "write 2"]
    store.close()


def test_a_bulk_build_s_store_keeps_no_bm25_half_and_a_load_builds_it(tmp_path):
    from thoughtvec.service.errors import IndexUnavailable
    from thoughtvec.service.index.backend import open_store

    bulk = open_store("faiss", index_dir=tmp_path, bulk=True)
    config = bulk.new_config(NewIndex("docs", "fake", "mean", 8, mode="hybrid"))
    docs = [Doc(f"d{i}", t) for i, t in enumerate(sentences(20))]
    Ingestion(bulk, encode, "docs", create=config, chunk=8, bar=False).run(docs)
    with pytest.raises(IndexUnavailable, match="keeps no BM25 half"):
        bulk.lexical_search("docs", [docs[3].text], 1)
    bulk.close()
    served = open_store("faiss", index_dir=tmp_path)
    served.load_all()
    assert served.lexical_search("docs", [docs[3].text], 1)[0][0][0].id == "d3"
    served.close()


# --- the command ---------------------------------------------------------------------------------------------------


def build_args(models_dir, src, idx, *more: str, model: str = "tiny") -> list[str]:
    return ["index", "build", "--model", model, "--input", str(src), "--name", "docs", "--models-dir", str(models_dir),
            "--index-dir", str(idx), "--mode", "dense", *more]  # fmt: skip


def write_jsonl(path, n: int, bad_line: int | None = None):
    lines = [json.dumps({"id": f"d{i}", "text": t, "metadata": {"i": i}}) for i, t in enumerate(sentences(n))]
    if bad_line is not None:
        lines[bad_line - 1] = '{"id": "broken", "text": '
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def stored(idx) -> tuple[IndexStore, dict[str, np.ndarray]]:
    store = IndexStore(idx)
    assert store.load("docs")
    return store, vectors_of(store, "docs")


def test_a_build_killed_mid_way_goes_on_when_run_again(models_dir, tmp_path, capsys):
    """``kill -9`` after 3 chunks of 16 are written: those 48 documents are in the index (their log records were on
    disk), the same command adds the other 52 and embeds none twice, and the index equals an uninterrupted build's."""
    src = write_jsonl(tmp_path / "d.jsonl", 100)
    argv = build_args(models_dir, src, tmp_path / "cut", "--chunk", "16", "--quiet")
    marker = tmp_path / "three-chunks-written"
    script = f"""
import sys, time
from thoughtvec.service.index import build
settled = build.Ingestion._settled
def pause(self, writing, bar):  # after the third chunk is written, wait to be killed
    settled(self, writing, bar)
    if self.added == 48:
        open({str(marker)!r}, "w").close()
        time.sleep(300)
build.Ingestion._settled = pause
from thoughtvec.service.cli import main
sys.exit(main({argv!r}))
"""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 120
        while not marker.exists():
            assert proc.poll() is None, proc.communicate()
            assert time.time() < deadline, "the build did not write three chunks in 120 s"
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    store, _ = stored(tmp_path / "cut")
    assert store.count("docs") == 48  # every acknowledged chunk survived, from the log
    store.close()

    assert main(argv) == 0
    assert capsys.readouterr().out.startswith("index 'docs': 52 documents added (48 already there) in ")
    assert main(build_args(models_dir, src, tmp_path / "whole", "--quiet")) == 0
    (cut, got), (whole, want) = stored(tmp_path / "cut"), stored(tmp_path / "whole")
    assert sorted(got) == sorted(want) == sorted(f"d{i}" for i in range(100)) and cut.count("docs") == 100
    assert all(np.allclose(got[i], want[i], atol=1e-6) for i in want)
    assert cut.documents("docs", 1, ["d7"])[0].metadata == {"i": 7}
    cut.close()
    whole.close()


def test_a_bad_line_stops_the_build_naming_it_and_the_run_after_the_fix_goes_on(models_dir, tmp_path, capsys):
    src = write_jsonl(tmp_path / "d.jsonl", 40, bad_line=21)
    assert main(build_args(models_dir, src, tmp_path / "idx", "--chunk", "8", "--quiet")) == 1
    err = capsys.readouterr().err
    assert f"{src}:21: not JSON" in err and "16 documents were added before it" in err, err  # chunks 1-2; the 3rd held line 21
    write_jsonl(src, 40)
    assert main(build_args(models_dir, src, tmp_path / "idx", "--chunk", "8", "--quiet")) == 0
    assert "24 documents added (16 already there)" in capsys.readouterr().out


def test_an_index_made_otherwise_is_refused_and_overwrite_replaces_it(models_dir, tmp_path, capsys):
    src = write_jsonl(tmp_path / "d.jsonl", 10)
    idx = tmp_path / "idx"
    assert main(build_args(models_dir, src, idx, "--quiet")) == 0
    capsys.readouterr()
    assert main(build_args(models_dir, src, idx, "--quiet", model="tiny2")) == 1
    err = capsys.readouterr().err
    assert "index 'docs' exists with model tiny (this build: tiny2). A build adds" in err and "--overwrite" in err, err
    assert main(build_args(models_dir, src, idx, "--quiet", "--factory", "HNSW16", "--metric", "ip")) == 1
    assert "factory Flat (this build: HNSW16); metric cosine (this build: ip)" in capsys.readouterr().err
    other = tmp_path / "other-export"
    make_tiny_bundle(other / "tiny", name="tiny", seed=5)  # the same name, another model
    assert main(build_args(other, src, idx, "--quiet")) == 1
    assert "vectors of another export of tiny (fingerprint " in capsys.readouterr().err
    assert main(build_args(models_dir, src, idx, "--quiet", "--factory", "HNSW16", "--overwrite", model="tiny2")) == 0
    assert "10 documents added (0 already there)" in capsys.readouterr().out
    store = IndexStore(idx)
    assert store.load("docs") and (store.config("docs").model, store.config("docs").factory) == ("tiny2", "HNSW16")
    store.close()


def test_the_progress_bar_counts_in_whole_numbers(models_dir, tmp_path, capsys):
    src = tmp_path / "d.txt"  # a round count, which tqdm would print as 1e+4
    src.write_text("".join(f"the cat sat on mat {i} .\n" for i in range(10_000)), encoding="utf-8")
    assert main(build_args(models_dir, src, tmp_path / "a", "--chunk", "5000")) == 0
    err = capsys.readouterr().err
    assert "added=10000" in err and "e+" not in err, err


def test_the_progress_bar_and_quiet(models_dir, tmp_path, capsys, caplog):
    src = write_jsonl(tmp_path / "d.jsonl", 30)
    with caplog.at_level(logging.INFO, logger="thoughtvec"):
        assert main(build_args(models_dir, src, tmp_path / "a", "--chunk", "8")) == 0
    err = capsys.readouterr().err
    assert "index docs: 100%" in err and "30/30" in err and "doc/s" in err and "added=30" in err, err  # total from the file
    assert any("documents from" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="thoughtvec"):
        assert main(build_args(models_dir, src, tmp_path / "b", "--chunk", "8", "--quiet")) == 0
    out, err = capsys.readouterr()
    assert err == "" and out.startswith("index 'docs': 30 documents added (0 already there) in ") and out.count("\n") == 1
    assert not [r for r in caplog.records if r.levelno < logging.WARNING and r.name.startswith("thoughtvec")]
    assert logging.getLogger("thoughtvec").level == logging.NOTSET  # a quiet run leaves the process's logging as it was


def test_a_parquet_build(models_dir, tmp_path, capsys):
    pa = pytest.importorskip("pyarrow", reason="Parquet needs pyarrow (the parquet extra)")
    import pyarrow.parquet as pq

    texts = sentences(12)
    pq.write_table(pa.table({"text": texts, "lang": ["en"] * 12}), tmp_path / "d.parquet", row_group_size=5)
    assert main(build_args(models_dir, tmp_path / "d.parquet", tmp_path / "idx", "--quiet")) == 0
    assert "12 documents added" in capsys.readouterr().out
    store = IndexStore(tmp_path / "idx")
    assert store.load("docs") and sorted(store.entry("docs").index.labels) == sorted(f"d.parquet:{i}" for i in range(1, 13))
    assert store.documents("docs", 1, ["d.parquet:3"])[0].metadata == {"lang": "en"}
    store.close()
