import argparse
import json
import os
import re
import shutil

import pytest

from thoughtvec.bench.arguments import add_arguments
from thoughtvec.bench.bench import cpu_seconds, parse_wrk, request_bodies, resident_mb, run, wrk_script

WRK_OUTPUT = """Running 4s test @ http://127.0.0.1:40000
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency    41.20ms   10.11ms 120.00ms   80.00%
    Req/Sec     1.55k   100.00     1.70k    70.00%
  Latency Distribution
     50%  850.00us
     75%   40.00ms
     90%   52.10ms
     99%    1.20s
  6200 requests in 4.00s, 10.00MB read
  Socket errors: connect 0, read 2, write 0, timeout 1
  Non-2xx or 3xx responses: 5
Requests/sec:   1550.00
Transfer/sec:      2.50MB
"""


def test_wrk_output_is_read_in_milliseconds_with_every_failure_counted():
    f = parse_wrk(WRK_OUTPUT, size=1, concurrency=64)
    assert f.requests == 6200 and f.sentences_per_s == 1550
    assert f.latency_ms == {50: 0.85, 75: 40.0, 90: 52.1, 99: 1200.0}
    assert f.errors == 5 + 2 + 1
    with pytest.raises(RuntimeError, match="cannot read wrk's report"):
        parse_wrk("Usage: wrk <options> <url>", 1, 1)


def test_wrk_script_cycles_through_valid_embeddings_bodies(tmp_path):
    sentences = [f"sentence number {i} ." for i in range(10)]
    one = wrk_script(request_bodies(sentences, 1, 4, "m", "base64"), tmp_path / "one.lua").read_text()
    many = wrk_script(request_bodies(sentences, 3, 2, "m", "float"), tmp_path / "many.lua").read_text()
    bodies = [json.loads(b) for b in re.findall(r"\[==\[(.*?)\]==\]", one)]
    assert len(bodies) == 4 and all(isinstance(b["input"], str) and b["input"] in sentences for b in bodies)
    assert all(b["model"] == "m" and b["encoding_format"] == "base64" for b in bodies)
    assert [len(json.loads(b)["input"]) for b in re.findall(r"\[==\[(.*?)\]==\]", many)] == [3, 3]
    assert 'wrk.format(nil, "/v1/embeddings", nil, bodies[(i % #bodies) + 1])' in one
    other = wrk_script(request_bodies(sentences, 1, 2, "m", "float"), tmp_path / "other.lua", "/embeddings").read_text()
    assert 'wrk.format(nil, "/embeddings", nil, bodies[(i % #bodies) + 1])' in other


def test_process_figures_come_from_proc():
    pid = os.getpid()
    before, main_before = cpu_seconds(pid), cpu_seconds(pid, pid)
    sum(i * i for i in range(2_000_000))
    assert cpu_seconds(pid) > before and cpu_seconds(pid, pid) > main_before  # this is the main thread
    mem = resident_mb()
    assert 10 < mem["rss"] <= mem["peak"]


@pytest.mark.parametrize("client", ["python", "wrk"])
def test_bench_prints_every_figure_against_a_real_server(models_dir, client, capsys):
    if client == "wrk" and shutil.which("wrk") is None:
        pytest.skip("wrk is not installed (Debian: apt-get install wrk)")
    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args(["--models-dir", str(models_dir), "--models", "tiny", "--seconds", "0.4", "--batches", "4",
                         "--concurrency", "1,4", "--client", client, "--mixed", "--repeats", "2"])  # fmt: skip
    assert run(args) == 0
    out = capsys.readouterr().out
    assert re.search(r"\| 4 \| \d+ \| [\d.]+ \|", out)  # in-process sentences/s and G op/s
    assert re.search(r"^graph alone, the server's plan .*: \d+ sentences/s.* achieved/peak \d+%", out, re.M)
    server = re.findall(
        r"^\| (1|32) \| (\d+) \| (\d+) \| \d+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| ([\d.]+|–) \| ([\d.]+|–) \| ([\d.]+|–) \| ([\d.]+|–) \| (\d+) \|",
        out,
        re.M,
    )
    assert len(server) == 4 + 3 and all(int(row[2]) > 0 and row[7] == "0" for row in server)  # 2 sizes x 2 levels + mixed
    alone = [row for row in server if row[3] != "–"]  # a flood alone: the server's CPU, and its event loop's part
    assert len(alone) == 5 and all(0 < float(loop) < float(total) for *_, total, loop, _, _, _ in alone)
    # and how it was batched: 1 to 32 sentences a run, never fewer padded tokens than real ones
    assert all(1 <= float(per_run) <= 32 and float(padding) >= 1 for *_, per_run, padding, _ in alone)
    assert any(float(per_run) > 1 for size, _, _, _, _, per_run, _, _ in alone if size == "1")  # 1-sentence requests batched
    ratios = re.findall(r"^\| [12] \| \d+ \| \d+ \| ([\d.]+) \| (-?[\d.]+) \| (-?[\d.]+) \| ([\d.]+) \| ([\d.]+) \|$", out, re.M)
    assert len(ratios) == 2 and all(float(r) > 0 and float(p1) >= 1 and float(p32) >= 1 for r, _, _, p1, p32 in ratios)
    assert re.search(r"server resident memory: \d+ MB \(peak \d+ MB\)", out)
    assert re.search(r"32-sentence requests beside the flood: \d+% of their sentences/s alone", out)
    assert f"load generator {'wrk' if client == 'wrk' else 'python'}" in out
    assert ("client CPU (cores)" in out) == (client == "python")


def test_compute_prints_the_peak_the_graph_and_the_profile(models_dir, capsys):
    from thoughtvec.bench import compute

    compute.main(["--models-dir", str(models_dir), "--models", "tiny", "--sentences", "40"])
    out = capsys.readouterr().out
    peaks = [float(x) for x in re.findall(r"sgemm 2048\^3, [12] thread\(s\): ([\d.]+) GFLOP/s", out)]
    assert len(peaks) == 2 and all(p > 0 for p in peaks)
    assert len(re.findall(r"^tiny graph alone, batch (?:32|128): \d+ sent/s", out, re.M)) == 2
    assert re.search(r"^operations: float [\d.]+ MFLOP per token at \d+ tokens a sentence", out, re.M)
    assert re.search(r"^ONNX Runtime's peak, 1024x1024x1024, \d+ thread\(s\) as served: MatMul [\d.]+ GFLOP/s", out, re.M)
    run = re.search(
        r"^graph alone, the server's plan \(windows of 128 .* over 40 sentences\): \d+ sentences/s.* achieved/peak (\d+)%", out, re.M
    )
    assert run  # a tiny graph is far from the peak: its share may print as 0%
    assert re.search(r"^tiny, batch 32, ONNX Runtime's profile, time by operator: \w+ \d+ %", out, re.M)


def test_against_alternates_two_servers_in_one_run(models_dir, capsys):
    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args(["--models-dir", str(models_dir), "--models", "tiny", "--seconds", "0.3", "--batches", "4",
                         "--repeats", "2", "--server-flag=--batch-planning=greedy", "--against=--batch-planning=cost"])  # fmt: skip
    assert run(args) == 0
    out = capsys.readouterr().out
    assert "server A: `--batch-planning=greedy`; server B: A with `--batch-planning=cost`; alternated" in out
    rows = re.findall(r"^\| ([12]) \| ([AB]) \| (\d+) \| (\d+) \| ([\d.]+) \|", out, re.M)
    assert [(r, s) for r, s, *_ in rows] == [("1", "A"), ("1", "B"), ("2", "A"), ("2", "B")]
    assert all(int(one) > 0 and int(many) > 0 for *_, one, many, _ in rows)
    assert re.search(r"B over A, median of 2 rounds: 1-sentence requests x[\d.]+ sentences/s, 32-sentence requests x[\d.]+$", out, re.M)
    assert "sentences/request | concurrency" not in out  # the server levels are not run
