"""The ``thoughtvec`` command: every subcommand answers --help, and the serving ones need no torch."""

from __future__ import annotations

import argparse
import subprocess
import sys
import textwrap

import pytest

from thoughtvec.cli import build_parser

SUBCOMMANDS = [
    ["corpus", "build"], ["corpus", "sample"], ["train"], ["checkpoint", "pack"], ["checkpoint", "unpack"], ["export"],
    ["eval"], ["postprocess"], ["quantize"],
    ["serve"], ["index", "build"], ["index", "list"], ["generate"], ["bench"],
]  # fmt: skip


def test_every_subcommand_is_listed():
    listed = set(build_parser()._subparsers._group_actions[0].choices)
    assert {c[0] for c in SUBCOMMANDS} == listed


@pytest.mark.parametrize("cmd", SUBCOMMANDS, ids=" ".join)
def test_help(cmd, capsys):
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args([*cmd, "--help"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: thoughtvec " + " ".join(cmd))


def test_serving_commands_start_without_torch():
    code = textwrap.dedent("""
        import sys
        sys.modules["torch"] = None  # the serving install has no torch: any import of it fails
        from thoughtvec.cli import build_parser
        args = build_parser().parse_args(["serve", "--port", "8123"])
        assert args.func is not None
        assert "torch" not in [m for m in sys.modules if sys.modules[m] is not None]
        print("ok")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "ok", out.stderr


def test_train_rejects_unknown_model_setting(tmp_path):
    out = subprocess.run([sys.executable, "-m", "thoughtvec", "train", "--variant", "uni-skip", "--corpus", str(tmp_path / "c.txt"),
                          "--out", str(tmp_path / "r"), "--set", "hiden=10"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 2 and "unknown skip-thought setting(s) ['hiden']" in out.stderr


def every_parser(parser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from every_parser(sub)


def test_a_flag_is_never_taken_for_a_longer_one(capsys):
    """``serve --models x`` is not ``serve --models-dir x`` (a folder with no bundles: a server of nothing)."""
    with pytest.raises(SystemExit):
        build_parser().parse_args(["serve", "--models", "mean-max-aae"])
    assert "unrecognized arguments: --models" in capsys.readouterr().err
    assert all(not p.allow_abbrev for p in every_parser(build_parser()))
