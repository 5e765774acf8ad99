"""The scale benchmark runs end to end on the tiny bundle (figures printed, never asserted), and the tables in
docs/scale.md are what it prints for the runs committed beside them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from thoughtvec.bench import scale_bench
from thoughtvec.bench.bench import resident_mb

ROOT = Path(__file__).resolve().parents[2]
WORDS = "the a cat dog sat ran on under mat rug fish ate slept near big small red old house tree".split()


def _corpus(folder: Path, documents: int = 60, sentences: int = 8) -> Path:
    """A corpus build's ``corpus.txt``: documents of sentences, a blank line between documents."""
    folder.mkdir()
    lines = []
    for d in range(documents):
        for s in range(sentences):
            lines.append(" ".join(WORDS[(d * 7 + s * 3 + w) % len(WORDS)] for w in range(6 + (d + s) % 5)))
        lines.append("")
    (folder / "corpus.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def test_corpus_documents_are_sentences_and_passages_within_a_document(tmp_path):
    docs, queries = scale_bench.corpus_documents(_corpus(tmp_path / "c", documents=3, sentences=4))
    assert len(docs) == 3 * 4 + 3 * 3  # each sentence, and each pair of consecutive sentences of one document
    assert sorted(i[0] for i, _ in docs) == ["p"] * 9 + ["s"] * 12
    assert len(queries) == scale_bench.QUERIES and all(len(q.split()) >= 5 for q in queries)
    assert docs == scale_bench.corpus_documents(tmp_path / "c")[0]  # one fixed shuffle


def test_scale_bench_measures_a_size_and_prints_its_table(models_dir, tmp_path, capsys):
    corpus = _corpus(tmp_path / "corpus")
    out_json = tmp_path / "run.json"
    argv = ["--bundle", str(models_dir / "tiny"), "--sizes", "200", "--corpus", str(corpus), "--http-adds", "64", "--no-kill"]
    assert scale_bench.main([*argv, "--work", str(tmp_path / "w"), "--json", str(out_json)]) == 0
    run = json.loads(out_json.read_text())
    (point,) = run["sizes"]
    assert run["bundle"] == "tiny" and run["backend"] == "faiss" and point["documents"] == 200
    assert point["factory"] == "Flat"  # the default for a new index, far below its growth point
    assert set(point["search"]) == {f"{m}@{f}" for m in scale_bench.MODES for f in (1, scale_bench.IN_FLIGHT)}
    assert point["http_adds"]["docs_per_s"] > 0 and point["memory"]["vectors_mb"] >= 0
    capsys.readouterr()
    png = tmp_path / "curve.png"
    assert scale_bench.main(["--plot", str(out_json), "--png", str(png)]) == 0
    printed = capsys.readouterr().out
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    table = scale_bench.table(run)
    assert table in printed and table.splitlines()[0] == "| tiny, faiss | 200 |"
    assert "| factory served | `Flat` |" in table and "| HTTP adds, documents/s | " in table


def test_the_docs_tables_are_the_committed_runs():
    page = (ROOT / "docs" / "scale.md").read_text(encoding="utf-8")
    runs = sorted((ROOT / "docs" / "scale").glob("*.json"))
    assert runs
    for path in runs:
        assert scale_bench.table(json.loads(path.read_text())) in page, f"{path.name}'s table is not docs/scale.md's"


def test_tree_resident_memory_counts_the_children():
    hold = "x = bytearray(64 * 2**20); x[::4096] = b'1' * len(x[::4096]); import sys; print(1, flush=True); sys.stdin.read()"
    child = subprocess.Popen([sys.executable, "-c", hold], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "1\n"  # its 64 MiB are touched
        own = resident_mb(os.getpid())["rss"]
        assert scale_bench.tree_rss_mb(os.getpid()) >= own + 60
    finally:
        child.kill()
        child.wait()
