"""``thoughtvec postprocess``: choose, on dev data, the mean / principal-component removal of each
cosine view of a bundle, estimated on training-corpus sentences, and write it into the bundle
(``postprocess.npz``; the unprocessed view stays as ``<view>-raw``); then fit each cosine view's principal
axes, on which requests for fewer ``dimensions`` are projected. See training/export/postprocess.py.

  thoughtvec postprocess --bundle models/uni-skip
  thoughtvec postprocess --bundle models/mean-max-aae --sample 50000
  thoughtvec postprocess --bundle models/all-minilm-l6-v2 --axes-only          # keep the maps, fit the axes
  thoughtvec postprocess --bundle models/invertible-linear-w2v --axes-only --axes 96 --axes-views de-sif
"""

from __future__ import annotations

import argparse
from pathlib import Path

from thoughtvec.service.bundle.postprocess import AXES


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("postprocess", help="choose each cosine view's mean/PC removal on dev data; write it into the bundle",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--bundle", action="append", required=True, metavar="PATH", help="bundle folder (repeatable)")
    p.add_argument("--corpus", type=Path, help="corpus the maps are estimated on (default: the bundle's training corpus)")
    p.add_argument("--sample", type=int, default=20_000, help="corpus sentences to estimate on (default 20000)")
    p.add_argument("--data", type=Path, help="SentEval downstream folder (default $THOUGHTVEC_SENTEVAL or ../shared/data/senteval)")
    p.add_argument("--axes", type=int, default=AXES, help=f"principal axes kept per cosine view, at most its dim (default {AXES}; 0: none)")
    p.add_argument("--axes-views", help="comma list of the views that get axes (default: every cosine view but the -raw twins)")
    p.add_argument("--axes-only", action="store_true", help="keep the views' post-processing as it is; only fit their principal axes")
    p.set_defaults(func="thoughtvec.training.handlers.postprocess:run")
