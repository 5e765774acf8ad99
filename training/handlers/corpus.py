"""``thoughtvec corpus``: the handler (its parser: ``training/commands/corpus.py``)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from thoughtvec import paths
from thoughtvec.training.corpus.build import BuildConfig, HeldOut, build_corpus
from thoughtvec.training.corpus.fetch import default_cache
from thoughtvec.training.corpus.sample import write_sample
from thoughtvec.training.corpus.sources import parse_names, resolve_inputs
from thoughtvec.training.corpus.vectors import VectorsConfig, train_vectors
from thoughtvec.training.corpus.wordvecs import CORPUS_W2V_FILE
from thoughtvec.training.evaluation.datasets import all_sentences


def _default_senteval() -> str:
    return os.environ.get("THOUGHTVEC_SENTEVAL") or str(paths.SHARED_DATA / "senteval")


def build(args: argparse.Namespace) -> int:
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
    try:
        held_out = None if senteval == "none" else HeldOut(Path(senteval), all_sentences(Path(senteval)))
        cfg = BuildConfig(
            out=args.out, cache=args.cache or default_cache(), sources=names, inputs=inputs, senteval=held_out, workers=args.workers
        )
        report = build_corpus(cfg)
    except Exception as e:  # noqa: BLE001 - a SentEval file missing or malformed, an unwritable --out: one line, exit 1
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(report.summary())
    return 0 if report.stats["documents"] else 1


def sample(args: argparse.Namespace) -> int:
    try:
        report = write_sample(args.corpus, args.out, size=args.size, seed=args.seed)
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    print(report.summary())
    return 0


def vectors(args: argparse.Namespace) -> int:
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
