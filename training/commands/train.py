"""Train one variant on the corpus, with a progress bar, periodic checkpoints and a loss curve.

Settings: the flags below (or the same keys at the top level of a TOML --config file), and the
family's model settings via --set KEY=VALUE (or a [model] table); flags win over the file, and a
typo is an error. `thoughtvec train --list-settings` prints every variant's model settings.
Under `torchrun --nproc_per_node N -m thoughtvec train ...` it trains with DDP.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import get_args, get_type_hints

from thoughtvec.training.train.config import TrainConfig


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("train", help="train an encoder", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", help="TOML file: TrainConfig keys at top level, model settings under [model]")
    hints = get_type_hints(TrainConfig)
    for f in dataclasses.fields(TrainConfig):
        if f.name == "model":
            continue
        kind = next(t for t in get_args(hints[f.name]) or (hints[f.name],) if t is not type(None))  # int | None -> int
        shown = "" if f.default is None else f" (default {f.default!r})"  # None: the help says whose default
        p.add_argument(
            "--" + f.name.replace("_", "-"), dest=f.name, type=kind, default=None, metavar=f.name.upper(), help=f.metadata["help"] + shown
        )
    p.add_argument(
        "--set",
        dest="model_set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a model setting, e.g. --set hidden=1024 (repeatable; see `thoughtvec train --list-settings`)",
    )
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its checkpoint")
    p.add_argument("--list-settings", action="store_true", help="print each variant's model settings and exit")
    p.set_defaults(func="thoughtvec.training.handlers.train:run")
