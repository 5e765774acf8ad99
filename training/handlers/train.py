"""``thoughtvec train``: the handler (its parser: ``training/commands/train.py``)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tomllib
from typing import Any

from thoughtvec.training.train.config import TrainConfig
from thoughtvec.training.train.families import all_variants, get_family
from thoughtvec.training.train.trainer import Trainer


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _load_config(args: argparse.Namespace):
    values: dict[str, Any] = {}
    model: dict[str, Any] = {}
    if args.config:
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
        for variant, fam in all_variants().items():
            family = get_family(fam)
            print(f"{variant} ({fam}): {json.dumps(dataclasses.asdict(family.config(variant)))}")
        return 0

    tcfg, explicit = _load_config(args)
    try:
        trainer = Trainer(tcfg, resume=args.resume, explicit=explicit)
    except (ValueError, FileExistsError, FileNotFoundError) as e:
        print(f"thoughtvec train: {e}", file=sys.stderr)
        return 2
    trainer.train()
    return 0
