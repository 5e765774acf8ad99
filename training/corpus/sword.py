"""SWORD modules (zText Bibles, zCom commentaries) read without libsword, and OSIS markup to text.

A compressed SWORD module keeps each testament in three files, ``{ot,nt}.{b,c,v}z{s,v,z}``:

- ``.?zs`` block index: per block ``<u32 offset, u32 compressed size, u32 plain size>`` (LE);
- ``.?zz`` the blocks, each a zlib stream (one book, chapter or verse of text per block);
- ``.?zv`` verse index: per verse ``<u32 block, u32 start, u16|u32 size>`` into the plain block,
  10 bytes (zText, zCom) or 12 bytes (zText4, zCom4).

Commentaries point several verses at one span; :func:`module_entries` yields each span once.
"""

from __future__ import annotations

import html
import re
import struct
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

from thoughtvec.training.corpus.text import RawDocument, is_heading

_BLOCK = struct.Struct("<III")


class SwordError(ValueError):
    """A module's files are missing or inconsistent."""


def read_conf(path: Path) -> dict[str, str]:
    """A ``mods.d/*.conf`` file as a dict (first value wins; the ``[Name]`` line as ``"name"``)."""
    conf: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]") and "name" not in conf:
            conf["name"] = line[1:-1]
        elif "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            conf.setdefault(key.strip(), value.strip())
    return conf


def find_module(root: Path) -> tuple[dict[str, str], Path]:
    """The one module under an extracted package: its conf and data folder."""
    confs = sorted(root.rglob("mods.d/*.conf"))
    if len(confs) != 1:
        raise SwordError(f"{root}: expected one SWORD module conf under mods.d/, found {len(confs)}")
    conf = read_conf(confs[0])
    data = (confs[0].parent.parent / conf.get("DataPath", "")).resolve()
    if not data.is_dir():
        raise SwordError(f"{confs[0]}: DataPath {conf.get('DataPath')!r} is not a folder")
    return conf, data


def _entry_widths(conf: dict[str, str]) -> tuple[int, int]:
    """Entry sizes to try: the conf's driver first. Some confs say zCom4 over a 10-byte index (mhcc)."""
    return (12, 10) if conf.get("ModDrv", "").endswith("4") else (10, 12)


def _parse_index(bzv: bytes, width: int, blocks: list[tuple[int, int, int]]) -> list[tuple[int, int, int]] | None:
    """Verse entries if every one fits inside its block; ``None`` if this width cannot be right."""
    if len(bzv) % width:
        return None
    fmt = struct.Struct("<IIH" if width == 10 else "<III")
    entries = [fmt.unpack_from(bzv, i) for i in range(0, len(bzv), width)]
    for b, start, size in entries:
        if size and (b >= len(blocks) or start + size > blocks[b][2]):
            return None
    return entries


def testament_entries(data: Path, testament: str, widths: tuple[int, int]) -> Iterator[str]:
    """Texts of one testament's entries in verse order, each distinct span once."""
    bzs = list(data.glob(f"{testament}.?zs"))
    if not bzs:
        return
    stem = bzs[0].with_suffix("")
    kind = bzs[0].suffix[1]  # b(ook), c(hapter) or v(erse) blocks
    index, verses, blob = (Path(f"{stem}.{kind}z{x}").read_bytes() for x in "svz")
    blocks = [_BLOCK.unpack_from(index, i) for i in range(0, len(index) - len(index) % 12, 12)]
    entries = next((e for w in widths if (e := _parse_index(verses, w, blocks)) is not None), None)
    if entries is None:
        raise SwordError(f"{stem}.{kind}zv: verse index fits neither 10- nor 12-byte entries")
    seen: set[tuple[int, int, int]] = set()
    cache: tuple[int, bytes] = (-1, b"")
    for b, start, size in entries:
        if not size or (b, start, size) in seen:
            continue
        seen.add((b, start, size))
        if cache[0] != b:
            off, csize, _ = blocks[b]
            cache = (b, zlib.decompress(blob[off : off + csize]))
        yield cache[1][start : start + size].decode("utf-8", errors="replace")


def module_entries(root: Path) -> Iterator[str]:
    """All entry texts of the module extracted under ``root``: Old Testament, then New."""
    conf, data = find_module(root)
    widths = _entry_widths(conf)
    for testament in ("ot", "nt"):
        yield from testament_entries(data, testament, widths)


# ---------------------------------------------------------------------------------------------
# OSIS → paragraphs

# A document starts at a chapter milestone or at a book-level division (front matter, glossary).
_BOUNDARY = re.compile(r"<(chapter|div)\b([^>]*)>")
_BOUNDARY_DIVS = {"book", "front", "back", "glossary", "bookGroup", "colophon"}
_ATTR = re.compile(r'(\w+)="([^"]*)"')

_GAP = "\x00"  # stands for removed markup: a space between words, nothing before punctuation
_REMOVE = [
    re.compile(r"<note\b[^>]*>.*?</note>", re.S),  # footnotes, cross-references
    re.compile(r"<speaker\b[^>]*>.*?</speaker>", re.S),  # "Beloved" in the Song of Songs
    re.compile(r'<seg type="keyword"[^>]*>.*?</seg>', re.S),  # glossary head words
    re.compile(r"<table\b[^>]*>.*?</table>", re.S),  # Matthew Henry's chapter outlines: headings
    # commentary verse labels: <hi type="bold">Verse 1.</hi>, <hi type="bold">Verses 3-5</hi>
    re.compile(r'<hi type="bold">\s*(?:Verses?|Vers?\.)\s*[\d\s,;:&\-\u2013\u2014]*(?:and\s*[\d\s,\-]*)?\.?\s*</hi>', re.S),
]
_TITLE = re.compile(r"<title\b([^>]*)>(.*?)</title>|<title\b[^>]*/>", re.S)
_BREAK = re.compile(r"<(?:div(?![^>]*x-milestone)|lb|lg|list|/list|item|/item|p|/p|br)\b[^>]*>")
_LINE = re.compile(r"<l\b[^>]*>")
_TAG = re.compile(r"<[^>]*>")
_DANGLING_TAG = re.compile(r"<[a-zA-Z/]\w*(?=\s|$)")  # a tag cut short in the module ("<d <chapter")
_GAP_BEFORE_PUNCT = re.compile(_GAP + r"+(?=[,.;:!?'\"\u2019\u201d)\]])")
# Labels opening a commentary paragraph in plain text: "Verses 2, 4, 8.", "Ver. 3-11 --", "2.",
# "III.", "Whole Psalm.", "(last clause)." (the bold "Verse 1." labels are removed as markup).
_LABEL = re.compile(
    r"^(?:(?:Verses?|Vers?\.)\s*\d[\d\s,;:&\-\u2013\u2014]*(?:and\s*\d[\d\s,\-]*)?\.?\s*"
    r"|\(?\d{1,3}\)?[.)]\s+|[IVXL]{1,5}\.\s+"  # list numbers
    r"|Whole Psalm\.\s*|Title\.\s*|TITLE\.\s*|Chapter Outline\s*|\((?:\w+ )?clauses?\)\.?\s*|[-\u2014]+\s*)+"
)


def _title(match: re.Match) -> str:
    # canonical titles (psalm superscriptions) are scripture; section headings are not
    attrs, inner = match.group(1) or "", match.group(2) or ""
    return f"\n{inner}\n" if 'canonical="true"' in attrs else "\n"


def osis_paragraphs(markup: str) -> list[str]:
    """Plain paragraphs of an OSIS fragment: notes, headings and verse labels gone."""
    for pattern in _REMOVE:
        markup = pattern.sub(_GAP, markup)
    markup = _TITLE.sub(_title, markup)
    markup = _BREAK.sub("\n", markup)
    markup = _LINE.sub(" ", markup)  # poetry lines of one verse run on
    markup = _TAG.sub("", markup)  # <w>, <hi>, <q>, <reference>, milestones: keep their text
    markup = _DANGLING_TAG.sub("", markup)
    markup = _GAP_BEFORE_PUNCT.sub("", markup).replace(_GAP, " ")
    text = html.unescape(markup).replace("#(", "(")  # mhcc writes verse refs as "ver. #(18)"
    paras = (_LABEL.sub("", " ".join(line.split())) for line in text.split("\n"))
    return [p for p in paras if p and not is_heading(p)]  # "HINTS TO PREACHERS.", "ALEPH"


def _boundary_title(match: re.Match) -> str | None:
    """The title of the document a tag starts, or None if it starts none."""
    attrs = dict(_ATTR.findall(match.group(2)))
    if "sID" not in attrs:
        return None
    if match.group(1) == "chapter":
        return attrs.get("osisID") or f"chapter {attrs.get('n', '?')}"
    if attrs.get("type") in _BOUNDARY_DIVS:
        return attrs.get("osisID") or attrs["type"]
    return None


def osis_documents(entries: Iterable[str], prefix: str) -> Iterator[RawDocument]:
    """Split a module's running OSIS text into documents at chapter and book boundaries."""
    text = " ".join(entries)
    title, start = "front", 0  # text before the first boundary: the module's preface, if any
    for m in _BOUNDARY.finditer(text):
        new_title = _boundary_title(m)
        if new_title is None:
            continue
        paras = osis_paragraphs(text[start : m.start()])
        if paras:
            yield RawDocument(f"{prefix} {title}", paras)
        title, start = new_title, m.end()
    paras = osis_paragraphs(text[start:])
    if paras:
        yield RawDocument(f"{prefix} {title}", paras)
