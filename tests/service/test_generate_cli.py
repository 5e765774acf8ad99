"""``thoughtvec generate``: the server's generation core over one bundle folder, printed."""

from __future__ import annotations

import json

import pytest

from tests.decoder_bundles import decoder_models
from thoughtvec.cli import main


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return decoder_models(tmp_path_factory)


def test_story_path_and_json(models, capsys):
    assert main(["generate", "--model", str(models / "uni-skip"), "anna walked into the garden .", "--story", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line[:3] for line in lines] == ["1. ", "2. "]
    args = ["generate", "--models-dir", str(models), "--model", "mean-max-aae", "ben saw a book there .", "--to", "the coat was old ."]
    assert main(args + ["--steps", "3"]) == 0
    assert [line[:8] for line in capsys.readouterr().out.splitlines()] == ["t=0.00  ", "t=0.50  ", "t=1.00  "]
    assert main(args[:-2] + ["--json", "--decoding", "sample", "--seed", "5"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["seed"] == 5 and out["task"] == "reconstruct" and len(out["data"]) == 1


def test_a_vector_file(models, tmp_path, capsys):
    assert main(["generate", "--model", str(models / "uni-skip"), "the coat was old .", "--json"]) == 0
    want = json.loads(capsys.readouterr().out)["data"][0]["text"]
    from thoughtvec.service.core.encoder import Encoder

    vec = Encoder.load(models / "uni-skip").encode(["the coat was old ."], "uni", normalize=False)[0]  # the raw vector
    (tmp_path / "v.json").write_text(json.dumps(vec.tolist()))
    assert main(["generate", "--model", str(models / "uni-skip"), "--vector", str(tmp_path / "v.json")]) == 0
    assert capsys.readouterr().out.strip() == want


def test_errors_exit_2(models, capsys):
    assert main(["generate", "--model", str(models / "tiny"), "hello ."]) == 2
    assert "model 'tiny' has no decoder" in capsys.readouterr().err
    assert main(["generate", "--model", str(models / "uni-skip"), "hello .", "--max-tokens", "999"]) == 2
    assert "max_generate_tokens" in capsys.readouterr().err


def test_a_long_text_is_refused_unless_truncate_says_cut_it(models, capsys):
    long = " ".join(["anna walked into the garden ."] * 40)  # over the tiny encoders' token limit
    assert main(["generate", "--model", str(models / "uni-skip"), long]) == 2
    assert "truncation: truncate" in capsys.readouterr().err
    assert main(["generate", "--model", str(models / "uni-skip"), long, "--truncate"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip() and "input was cut" in captured.err
