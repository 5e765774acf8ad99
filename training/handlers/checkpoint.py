"""``thoughtvec checkpoint``: the handler (its parser: ``training/commands/checkpoint.py``)."""

from __future__ import annotations

import argparse
import sys

import torch

from thoughtvec.service.bundle.atomic import atomic_save
from thoughtvec.training.train.carry import pack, unpack


def run(args: argparse.Namespace) -> int:
    try:
        if args.verb == "pack":
            ck = torch.load(args.checkpoint, map_location="cpu", weights_only=False)
            m = pack(ck, args.out, int(args.part_mb * 2**20))
            print(f"packed step {(m['progress'] or {}).get('step')} of {args.checkpoint}: {m['bytes'] / 2**20:.1f} MiB "
                  f"in {len(m['parts'])} part(s) under {args.out}")  # fmt: skip
            return 0
        if args.out.exists():
            print(f"thoughtvec checkpoint: {args.out} exists; nothing written", file=sys.stderr)
            return 2
        ck = unpack(args.packed)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        atomic_save(args.out, lambda f: torch.save(ck, f))
        print(f"wrote {args.out} (step {ck['progress']['step']})")
        return 0
    except (OSError, ValueError, KeyError) as e:
        print(f"thoughtvec checkpoint: {e}", file=sys.stderr)
        return 2
