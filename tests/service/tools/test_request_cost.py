import json
import os
import re

from service.tools.request_cost import cpu_seconds, lua_script


def test_wrk_script_cycles_through_valid_embeddings_bodies(tmp_path):
    sentences = [f"sentence number {i} ." for i in range(10)]
    one = lua_script(sentences, 1, 4, tmp_path).read_text()
    many = lua_script(sentences, 3, 2, tmp_path).read_text()
    bodies = [json.loads(b) for b in re.findall(r"\[==\[(.*?)\]==\]", one)]
    assert [b["input"] for b in bodies] == sentences[:4] and all(b["encoding_format"] == "base64" for b in bodies)
    assert [json.loads(b)["input"] for b in re.findall(r"\[==\[(.*?)\]==\]", many)] == [sentences[0:3], sentences[3:6]]
    assert 'wrk.format(nil, "/v1/embeddings", nil, bodies[(i % #bodies) + 1])' in one


def test_cpu_seconds_counts_this_process():
    before = cpu_seconds(os.getpid())
    sum(i * i for i in range(2_000_000))
    assert cpu_seconds(os.getpid()) > before
