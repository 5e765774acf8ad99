"""The King James Bible through Debian's ``bible`` program, and the SWORD modules.

``bible-kjv-text`` ships the KJV in Chip Chapin's compressed format (``/usr/lib/bible.data``);
``bible-kjv``'s ``bible`` program, run from the extracted package (no installation), prints it
one verse per line: ``Ge1:1 In the beginning God created the heaven and the earth.``
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

from thoughtvec.training.corpus import sword
from thoughtvec.training.corpus.text import RawDocument

KJV_VERSES = 31102
_VERSE = re.compile(r"^(\d?[A-Za-z]+)(\d+):(\d+)\s+(.*)$")


def _find(root: Path, rel: str) -> Path:
    path = root / rel
    if not path.exists():
        raise FileNotFoundError(f"{path} not found in the extracted package")
    return path


def dump_kjv(program: Path, data_dir: Path) -> list[str]:
    """Every verse line, from Genesis 1:1 to Revelation 22:21."""
    cmd = [str(program), "-f", "-p", str(data_dir), "gen1:1-rev22:21"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    except OSError as e:  # not executable here (another architecture, a missing libreadline)
        raise RuntimeError(f"cannot run {program}: {e}") from None
    if proc.returncode != 0:
        raise RuntimeError(f"{program} exited {proc.returncode}: {proc.stderr.strip()[:200]}")
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    if len(lines) != KJV_VERSES:
        raise RuntimeError(f"{program} printed {len(lines)} verses, expected {KJV_VERSES}")
    return lines


def kjv_chapters(lines: list[str]) -> Iterator[RawDocument]:
    """One document per chapter; verse references dropped, verses run together (a sentence may
    span verses, so Punkt splits the chapter as one paragraph)."""
    key = ("", "")  # (book, chapter) of ``verses``
    verses: list[str] = []
    for line in lines:
        m = _VERSE.match(line)
        if not m:
            raise ValueError(f"unexpected line from bible: {line[:80]!r}")
        if (m.group(1), m.group(2)) != key:
            if verses:
                yield RawDocument(f"KJV {key[0]} {key[1]}", [" ".join(verses)])
            key, verses = (m.group(1), m.group(2)), []
        verses.append(m.group(4))
    if verses:
        yield RawDocument(f"KJV {key[0]} {key[1]}", [" ".join(verses)])


def kjv_documents(program_root: Path, text_root: Path) -> Iterator[RawDocument]:
    program = _find(program_root, "usr/bin/bible")
    data = _find(text_root, "usr/lib/bible.data")
    yield from kjv_chapters(dump_kjv(program, data.parent))


def sword_documents(root: Path, prefix: str) -> Iterator[RawDocument]:
    """A SWORD Bible or commentary, one document per chapter (a psalm, for the Treasury of David)."""
    yield from sword.osis_documents(sword.module_entries(root), prefix)
