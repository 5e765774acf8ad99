"""A MediaWiki XML dump to plain article text: templates, tables, references and lists removed.

Good enough for prose, not a wikitext renderer: we keep the running paragraphs of each article
(link texts kept, bold/italic quotes dropped) and drop everything that is not prose — infoboxes,
tables, lists, headings, image captions and the reference sections at the end.
"""

from __future__ import annotations

import bz2
import html
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

from thoughtvec.training.corpus.text import RawDocument

# Sections that hold no running prose; everything under them (down to the next heading of the
# same or a higher level) is skipped.
SKIP_SECTIONS = {
    "references",
    "external links",
    "see also",
    "notes",
    "further reading",
    "bibliography",
    "sources",
    "citations",
    "footnotes",
    "works",
    "publications",
    "discography",
    "filmography",
    "notes and references",
    "references and notes",
    "selected works",
    "gallery",
}

_DROP_WITH_CONTENT = re.compile(
    r"<!--.*?-->|<ref\b[^>/]*/>|<ref\b[^>]*>.*?</ref>"
    r"|<(math|gallery|timeline|score|syntaxhighlight|source|imagemap|hiero|chem|graph)\b[^>]*>.*?</\1>",
    re.S | re.I,
)
_NON_PROSE_LINK = re.compile(r"(?:file|image|media|category)\s*:|[a-z]{2,3}(?:-[a-z]+)?:", re.I)
_LINK = re.compile(r"\[\[(?:[^\]|]*\|)?([^\]]*)\]\]")
_EXT_LINK = re.compile(r"\[(?:https?:)?//[^\s\]]+\s*([^\]]*)\]")
_QUOTES = re.compile(r"'{2,}")
_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_HEADING = re.compile(r"^(=+)\s*(.*?)\s*\1\s*$")
_NON_PROSE_LINE = re.compile(r"^\s*(?:[*#:;|!{}]|----|__)")


def remove_nested(text: str, open_: str, close: str) -> str:
    """Remove every balanced ``open_ … close`` span (templates ``{{ }}``, tables ``{| |}``)."""
    out, depth, start = [], 0, 0
    pattern = re.compile(re.escape(open_) + "|" + re.escape(close))
    for m in pattern.finditer(text):
        if m.group() == open_:
            if depth == 0:
                out.append(text[start : m.start()])
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                start = m.end()
    if depth == 0:
        out.append(text[start:])
    return "".join(out)


def _remove_non_prose_links(text: str) -> str:
    """Drop ``[[File:…]]``, ``[[Category:…]]`` and interlanguage links, with links nested in captions."""
    spans, stack = [], []
    for m in re.finditer(r"\[\[|\]\]", text):
        if m.group() == "[[":
            stack.append(m.start())
        elif stack:
            start = stack.pop()
            if not stack and _NON_PROSE_LINK.match(text, start + 2):
                spans.append((start, m.end()))
    for start, end in reversed(spans):
        text = text[:start] + text[end:]
    return text


def _inline(text: str) -> str:
    text = _DROP_WITH_CONTENT.sub("", text)
    text = remove_nested(text, "{{", "}}")
    text = remove_nested(text, "{|", "|}")
    text = _remove_non_prose_links(text)
    text = _LINK.sub(r"\1", text)
    text = _EXT_LINK.sub(r"\1", text)
    text = _QUOTES.sub("", text)
    text = _TAG.sub(" ", text)
    return html.unescape(text)


def wikitext_paragraphs(wikitext: str) -> list[str]:
    """The prose paragraphs of one article's wikitext."""
    paragraphs: list[str] = []
    block: list[str] = []
    skip_level = 0  # > 0 while inside a skipped section of that level

    def flush() -> None:
        if block:
            paragraphs.append(" ".join(block))
            block.clear()

    for line in _inline(wikitext).split("\n"):
        heading = _HEADING.match(line)
        if heading:
            flush()
            level = len(heading.group(1))
            if skip_level and level > skip_level:
                continue
            skip_level = level if heading.group(2).strip().lower() in SKIP_SECTIONS else 0
        elif not line.strip() or _NON_PROSE_LINE.match(line):
            flush()
        elif not skip_level:
            block.append(line.strip())
    flush()
    return paragraphs


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def dump_documents(path: Path) -> Iterator[RawDocument]:
    """Articles (namespace 0, not redirects) of a ``pages-articles`` dump, ``.bz2`` or plain."""
    opener = bz2.open if path.suffix == ".bz2" else open
    with opener(path, "rb") as f:
        page: dict[str, str] = {}
        for _, elem in ET.iterparse(f, events=("end",)):
            tag = _local(elem.tag)
            if tag in ("title", "ns", "text"):
                page[tag] = elem.text or ""
            elif tag == "redirect":
                page["redirect"] = "1"
            elif tag == "page":
                if page.get("ns") == "0" and "redirect" not in page:
                    paras = wikitext_paragraphs(page.get("text", ""))
                    if paras:
                        yield RawDocument(page.get("title", "?"), paras)
                page = {}
                elem.clear()
