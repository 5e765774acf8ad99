"""``thoughtvec postprocess``: the handler (its parser: ``training/commands/postprocess.py``)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from thoughtvec.service.bundle.errors import BundleError
from thoughtvec.service.bundle.format import load_bundle
from thoughtvec.training.evaluation.datasets import DatasetError
from thoughtvec.training.postprocess import DevPairs, add_axes, postprocess_bundle


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
            if args.axes_only:
                add_axes(path, corpus, sample=args.sample, count=args.axes, views=views, log=log, dev=DevPairs.load(args.data))
            else:
                postprocess_bundle(path, corpus, sample=args.sample, data_root=args.data, log=log, axes=args.axes, axes_for=views)
        except (BundleError, DatasetError, ValueError) as e:
            print(f"thoughtvec postprocess: {e}", file=sys.stderr)
            return 2
    return 0
