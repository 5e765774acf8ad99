"""The lexical index benchmark runs end to end on a small slice of the search sample (figures printed, never asserted)."""

from __future__ import annotations

from thoughtvec.bench import lexical_bench


def test_lexical_bench_runs(capsys):
    assert lexical_bench.main(["--n", "300", "--adds", "30"]) == 0
    out = capsys.readouterr().out
    assert "rebuilt over 300 sentences" in out and "300 documents at the end" in out  # 300 + 30 adds - 30 deletes


def test_load_bench_runs(capsys):
    assert lexical_bench.main(["--load", "--n", "200", "--dim", "8"]) == 0
    out = capsys.readouterr().out
    assert "load of a Flat index of 200 sentences (dim 8): vectors alone" in out and "with the lexical half" in out
