"""The rerank benchmark runs end to end on the tiny bundle (figures printed, never asserted)."""

from __future__ import annotations

from thoughtvec.bench import rerank_bench


def test_rerank_bench_runs(models_dir, capsys):
    rerank_bench.main(["--model", "tiny", "--models-dir", str(models_dir), "--sample", "--queries", "3", "--candidates", "5"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("3 queries, each with 5 sentences of the search sample") and lines[0].endswith("model tiny")
    assert lines[1].split() == ["mode", "p50", "ms", "p90", "ms", "docs/s"]
    assert [line.split()[0] for line in lines[2:]] == ["hybrid", "dense", "BM25"]
    assert all(float(x) > 0 for line in lines[2:4] for x in line.split()[1:])
