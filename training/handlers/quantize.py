"""``thoughtvec quantize``: the handler (its parser: ``training/commands/quantize.py``)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from thoughtvec.service.bundle.errors import BundleError
from thoughtvec.service.bundle.format import load_bundle
from thoughtvec.training.export.export import sample_sentences
from thoughtvec.training.export.quantize import quantize_bundle


def run(args: argparse.Namespace) -> int:
    out = args.out or args.bundle.with_name(args.bundle.name + "-int8")
    try:
        corpus = args.corpus or load_bundle(args.bundle).spec.training.get("corpus", {}).get("path")
        if not corpus or not Path(corpus).is_file():
            print(f"thoughtvec quantize: corpus {corpus!r} not found; build it (`thoughtvec corpus build`) or name one with --corpus",
                  file=sys.stderr)  # fmt: skip
            return 2
        sentences = sample_sentences(str(corpus), args.sample, seed=2)
        report = quantize_bundle(args.bundle, out, sentences, min_cosine=args.min_cosine,
                                 min_speedup=args.min_speedup, threads=args.threads, method=args.method,
                                 log=lambda m: print(m, file=sys.stderr, flush=True))  # fmt: skip
    except (BundleError, ValueError) as e:
        print(f"thoughtvec quantize: {e}; nothing written", file=sys.stderr)
        return 2
    print(json.dumps(report.as_dict(), indent=2))
    print(f"wrote {out}")
    return 0
