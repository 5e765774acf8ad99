"""``thoughtvec export``: the handler (its parser: ``training/commands/export.py``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from thoughtvec.training.corpus.wordvecs import load_word_vectors
from thoughtvec.training.export.export import ExportOptions, export, load_checkpoint, sample_sentences
from thoughtvec.training.export.transformer import export_sentence_transformer
from thoughtvec.training.train.expansion import ExpansionOptions


def run(args: argparse.Namespace) -> int:
    if args.sentence_transformers:
        return _sentence_transformers(args)

    variant = args.variant or load_checkpoint(args.checkpoint[0])["variant"]
    name = args.name or variant
    options: dict = {"input_words": args.input_words}
    if args.expand != "none":
        options["expansion"] = ExpansionOptions(load_word_vectors(args.expand), words=args.expand_words)
    opts = ExportOptions(out=Path(args.out or f"models/{name}"), name=name, fp16=not args.fp32, corpus=args.corpus or "",
                         card_sample=args.card_sample, family_options=options)  # fmt: skip
    try:
        out = export(args.checkpoint, variant, opts)
    except (ValueError, RuntimeError, FileNotFoundError) as e:
        print(f"thoughtvec export: {e}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0


def _sentence_transformers(args: argparse.Namespace) -> int:
    folder = Path(args.sentence_transformers)
    name = args.name or folder.name.lower()
    corpus = args.corpus or "data/corpus/corpus.txt"
    if not Path(corpus).is_file():
        print(f"thoughtvec export: corpus {corpus!r} not found (its sentences check the export); name one with --corpus", file=sys.stderr)
        return 2
    try:
        out = export_sentence_transformer(folder, Path(args.out or f"models/{name}"), sample_sentences(corpus, 256, seed=1), name=name,
                                          weights=args.weights, licence=args.licence, source=args.source or str(folder))  # fmt: skip
    except (ValueError, RuntimeError, OSError) as e:
        print(f"thoughtvec export: {e}", file=sys.stderr)
        return 2
    print(f"wrote {out}")
    return 0
