"""``thoughtvec quantize``: a bundle's int8 variant (static, or per-token for transformers), written only when
every view stays within cosine 0.99 of the float vectors and it runs faster; see training/export/quantize.py.

  thoughtvec quantize --bundle models/mean-max-aae              # writes models/mean-max-aae-int8
  thoughtvec eval --bundle models/mean-max-aae-int8             # then compare SentEval with the float bundle
  thoughtvec quantize --bundle models/all-minilm-l6-v2 --method token --corpus data/corpus/corpus.txt
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("quantize", help="write a bundle's int8 variant where it is faithful and faster",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("--bundle", required=True, type=Path, help="float bundle folder")
    p.add_argument("--out", type=Path, help="new bundle folder (default: <bundle>-int8 beside it)")
    p.add_argument("--corpus", type=Path, help="corpus to calibrate and compare on (default: the bundle's training corpus)")
    p.add_argument("--sample", type=int, default=2000, help="corpus sentences: half calibrate the int8 ranges, half score (default 2000)")
    p.add_argument("--min-cosine", type=float, default=0.99, help="smallest cosine to the float vectors, every view (default 0.99)")
    p.add_argument("--min-speedup", type=float, default=1.05, help="int8 ÷ float sentences/s at batch 32 (default 1.05)")
    p.add_argument("--threads", type=int, help="ONNX Runtime threads (default: all cores)")
    p.add_argument("--method", choices=["static", "token"], default="static",
                   help="static: calibrated activation scales (QDQ); token: each activation row scaled at run time by its own "
                        "range, for transformers (default static)")  # fmt: skip
    p.set_defaults(func="thoughtvec.training.handlers.quantize:run")
