"""Which code produced a result: this checkout's commit, marked ``-dirty`` when tracked files differ."""

from __future__ import annotations

import subprocess

from thoughtvec.paths import REPO


def git_commit(*paths: str) -> str | None:
    """The short commit of this checkout, with ``-dirty`` when tracked files (under ``paths``, else anywhere)
    have uncommitted changes; ``None`` outside a git checkout or without git."""
    try:
        git = ["git", "-C", str(REPO)]
        sha = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, timeout=5).stdout.strip()
        dirty = subprocess.run(
            [*git, "status", "--porcelain", "--untracked-files=no", "--", *paths], capture_output=True, text=True, timeout=5
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return sha + ("-dirty" if dirty else "") if sha else None
