"""Train one variant on the corpus, with a progress bar, periodic checkpoints and a loss curve.

Settings: the flags below (or the same keys at the top level of a TOML --config file), and the
family's model settings via --set KEY=VALUE (or a [model] table); flags win over the file, and a
typo is an error. `thoughtvec train --list-settings` prints every variant's model settings.
Under `torchrun --nproc_per_node N -m thoughtvec train ...` it trains with DDP.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any, get_args, get_type_hints


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def register(sub: argparse._SubParsersAction) -> None:
    from thoughtvec.training.config import TrainConfig

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
    p.set_defaults(func=run)


def _load_config(args: argparse.Namespace):
    from thoughtvec.training.config import TrainConfig

    values: dict[str, Any] = {}
    model: dict[str, Any] = {}
    if args.config:
        import tomllib

        with open(args.config, "rb") as fh:
            data = tomllib.load(fh)
        model = dict(data.pop("model", {}))
        valid = {f.name for f in dataclasses.fields(TrainConfig)} - {"model"}
        unknown = sorted(set(data) - valid)
        if unknown:
            raise SystemExit(f"{args.config}: unknown setting(s) {unknown}; valid: {sorted(valid)}")
        values.update(data)
    for f in dataclasses.fields(TrainConfig):
        v = getattr(args, f.name, None)
        if f.name != "model" and v is not None:
            values[f.name] = v
    for item in args.model_set:
        if "=" not in item:
            raise SystemExit(f"--set {item!r}: expected KEY=VALUE")
        k, v = item.split("=", 1)
        model[k.strip()] = _parse_value(v.strip())
    try:
        config = TrainConfig(**values, model=model)
    except ValueError as e:
        raise SystemExit(f"thoughtvec train: {e}") from None
    return config, frozenset(values) | ({"model"} if model else frozenset())


def run(args: argparse.Namespace) -> int:
    if args.list_settings:
        from thoughtvec.training.families import all_variants, get_family

        for variant, fam in all_variants().items():
            family = get_family(fam)
            print(f"{variant} ({fam}): {json.dumps(dataclasses.asdict(family.config(variant)))}")
        return 0
    from thoughtvec.training.trainer import Trainer

    tcfg, explicit = _load_config(args)
    try:
        trainer = Trainer(tcfg, resume=args.resume, explicit=explicit)
    except (ValueError, FileExistsError, FileNotFoundError) as e:
        print(f"thoughtvec train: {e}", file=sys.stderr)
        return 2
    trainer.train()
    return 0
