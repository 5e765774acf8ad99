"""The commit stamped on checkpoints and evaluation records."""

from __future__ import annotations

import re
import shutil

import pytest

from thoughtvec.paths import REPO
from thoughtvec.training.train.provenance import git_commit


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="needs git and a checkout")
def test_git_commit_names_this_checkouts_commit():
    assert re.fullmatch(r"[0-9a-f]{4,}(-dirty)?", git_commit() or "")
    assert re.fullmatch(r"[0-9a-f]{4,}(-dirty)?", git_commit("training/evaluation") or "")
