"""``thoughtvec checkpoint``: a training checkpoint cut into parts small enough to copy back from a machine that
returns only a few 16 MiB files, and made whole again (see training/train/carry.py).

  thoughtvec checkpoint pack --checkpoint runs/invertible-linear/checkpoint.pt --out $OUT
  thoughtvec checkpoint unpack --packed carried/ --out runs/invertible-linear/checkpoint.pt
  thoughtvec train --variant invertible-linear --resume        # or: thoughtvec export --checkpoint ...
"""

from __future__ import annotations

import argparse
from pathlib import Path


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("checkpoint", help="pack a checkpoint into parts to carry, or unpack them",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    verbs = p.add_subparsers(dest="verb", required=True)
    pk = verbs.add_parser("pack", help="write checkpoint.json and parts checkpoint.pt.NN")
    pk.add_argument("--checkpoint", required=True, type=Path, help="runs/<variant>/checkpoint.pt")
    pk.add_argument("--out", required=True, type=Path, help="folder for the parts and checkpoint.json")
    pk.add_argument("--part-mb", type=float, default=15.0, help="largest part in MiB (default 15)")
    un = verbs.add_parser("unpack", help="join the parts into a checkpoint that train --resume and export read")
    un.add_argument("--packed", required=True, type=Path, help="folder holding checkpoint.json and its parts")
    un.add_argument("--out", required=True, type=Path, help="checkpoint file to write (refused if it exists)")
    p.set_defaults(func="thoughtvec.training.handlers.checkpoint:run")
