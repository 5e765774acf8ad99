"""``thoughtvec postprocess``: choose, on dev data, the mean / principal-component removal of each
cosine view of a bundle, estimated on training-corpus sentences, and write it into the bundle
(``postprocess.npz``; the unprocessed view stays as ``<view>-raw``). See training/postprocess.py.

  thoughtvec postprocess --bundle models/uni-skip
  thoughtvec postprocess --bundle models/mean-max-aae --sample 50000
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("postprocess", help="choose each cosine view's mean/PC removal on dev data; write it into the bundle",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--bundle", action="append", required=True, metavar="PATH", help="bundle folder (repeatable)")
    p.add_argument("--corpus", type=Path, help="corpus the maps are estimated on (default: the bundle's training corpus)")
    p.add_argument("--sample", type=int, default=20_000, help="corpus sentences to estimate on (default 20000)")
    p.add_argument("--data", type=Path, help="SentEval downstream folder (default $THOUGHTVEC_SENTEVAL or ../shared/data/senteval)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from thoughtvec.service.bundle.errors import BundleError
    from thoughtvec.service.bundle.format import load_bundle
    from thoughtvec.training.evaluation.datasets import DatasetError
    from thoughtvec.training.postprocess import postprocess_bundle

    for path in args.bundle:
        try:
            corpus = args.corpus or load_bundle(path).spec.training.get("corpus", {}).get("path")
            if not corpus or not Path(corpus).is_file():
                print(f"thoughtvec postprocess: {path}: corpus {corpus!r} not found; build it (`thoughtvec corpus build`) "
                      "or name one with --corpus", file=sys.stderr)  # fmt: skip
                return 2
            postprocess_bundle(path, corpus, sample=args.sample, data_root=args.data, log=lambda m: print(m, file=sys.stderr, flush=True))
        except (BundleError, DatasetError, ValueError) as e:
            print(f"thoughtvec postprocess: {e}", file=sys.stderr)
            return 2
    return 0
