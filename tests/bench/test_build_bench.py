"""The bulk build benchmark runs end to end on the tiny bundle (figures printed, never asserted)."""

from __future__ import annotations

from thoughtvec.bench import build_bench


def test_build_bench_runs(models_dir, capsys):
    build_bench.main(["--model", str(models_dir / "tiny"), "--n", "60", "--rounds", "1"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("60 sentences of the search sample, tiny, ")
    assert lines[1].split() == ["round", "load", "embed", "build", "encoder", "build/embed", "build/encoder"]
    row = lines[2].split()
    assert row[0] == "1" and all(float(x) > 0 for x in row[2:])
