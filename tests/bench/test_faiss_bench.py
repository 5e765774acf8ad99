"""docker/gpu/faiss_bench.py on the CPU: both indexes built through the server's VectorIndex and searched, recall
measured against the exact Flat answers; without GPU FAISS no GPU row is written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docker" / "gpu"))
from faiss_bench import clustered, main


def test_vectors_are_unit_length_and_clustered():
    x = clustered(2000, 16, centres=4, seed=1)
    assert x.shape == (2000, 16) and x.dtype.name == "float32"
    assert abs(float((x * x).sum(1).max()) - 1) < 1e-5
    # four centres: each vector's best match among 200 others is far closer than random unit vectors in 16-d
    assert float((x[:200] @ x[200:400].T).max(1).mean()) > 0.5


def test_flat_and_ivf_are_measured_against_the_exact_answers(tmp_path, capsys):
    assert main(["--vectors", "6000", "--dim", "32", "--nlist", "16", "--queries", "200", "--singles", "10", "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "faiss.json").read_text())
    assert report["gpus"] == 0 and report["search_params"]["nprobe"] == 16
    flat, ivf = report["indexes"]["Flat"], report["indexes"]["IVF16,Flat"]
    assert flat["cpu"]["recall"] == 1.0 and flat["cpu"]["qps"] > 0 and flat["cpu"]["single_p50_ms"] > 0
    assert ivf["trained"] and 0.5 < ivf["cpu"]["recall"] <= 1.0  # nprobe 16 of 16 lists: all of them, so exact or nearly
    assert "gpu" not in flat and "gpu" not in ivf
    out = capsys.readouterr().out
    assert "| `IVF16,Flat` | CPU |" in out and "GPUs FAISS can use: 0" in out
