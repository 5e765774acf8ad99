"""``thoughtvec postprocess``: the handler (its parser: ``training/commands/postprocess.py``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from thoughtvec.service.bundle.errors import BundleError
from thoughtvec.service.bundle.format import load_bundle
from thoughtvec.training.evaluation.datasets import DatasetError
from thoughtvec.training.evaluation.dev_pairs import load_dev_pairs
from thoughtvec.training.export.postprocess import add_axes, postprocess_bundle


def run(args: argparse.Namespace) -> int:
    for path in args.bundle:
        try:
            corpus = args.corpus or load_bundle(path).spec.training.get("corpus", {}).get("path")
            if not corpus or not Path(corpus).is_file():
                print(f"thoughtvec postprocess: {path}: corpus {corpus!r} not found; build it (`thoughtvec corpus build`) "
                      "or name one with --corpus", file=sys.stderr)  # fmt: skip
                return 2
            log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
            views = args.axes_views.split(",") if args.axes_views else None
            dev = load_dev_pairs(args.data)
            if args.axes_only:
                add_axes(path, corpus, sample=args.sample, count=args.axes, views=views, log=log, dev=dev)
            else:
                postprocess_bundle(path, corpus, dev, sample=args.sample, log=log, axes=args.axes, axes_for=views)
        except (BundleError, DatasetError, ValueError) as e:
            print(f"thoughtvec postprocess: {e}", file=sys.stderr)
            return 2
    return 0
