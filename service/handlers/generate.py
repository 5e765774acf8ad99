"""``thoughtvec generate``: a bundle's decoders in-process (its parser: ``service/cli.py``)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

from thoughtvec.service.bundle.format import load_bundle
from thoughtvec.service.core.engine import Core
from thoughtvec.service.errors import ThoughtvecError
from thoughtvec.service.settings import Settings


def cmd_generate(args: argparse.Namespace) -> int:
    if (args.input is None) == (args.vector is None):
        print("thoughtvec generate: give a text or --vector FILE (one of them)", file=sys.stderr)
        return 2
    folder = Path(args.model) if Path(args.model).is_dir() else (args.models_dir or Settings().models_dir) / args.model
    try:
        bundle = load_bundle(folder)
        source = args.input if args.vector is None else json.loads(args.vector.read_text())
        fields = dict(task=args.task, to=args.to, steps=args.steps, plus=args.plus, minus=args.minus, story=args.story,
                      decoding=args.decoding, beam_width=args.beam_width, temperature=args.temperature, seed=args.seed,
                      count=args.count, max_tokens=args.max_tokens, truncation="truncate" if args.truncate else "reject",
                      allow_unk=args.allow_unk, no_repeat_ngram_size=args.no_repeat_ngram_size)  # fmt: skip
        result = asyncio.run(_generate(folder.resolve(), bundle.name, source, fields))
    except (ThoughtvecError, OSError, ValueError) as e:
        print(f"thoughtvec generate: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(asdict(result), indent=2))
        return 0
    for d in result.data:
        where = f"t={d.t:.2f}  " if d.t is not None else f"{d.index + 1}. " if len(result.data) > 1 else ""
        print(f"{where}{d.text}")
    if result.seed is not None:
        print(f"(seed {result.seed})", file=sys.stderr)
    for note in result.notes:
        print(f"({note})", file=sys.stderr)
    return 0


async def _generate(folder: Path, name: str, source, fields: dict):
    """The server's core over this one bundle (a models folder holding only it), without HTTP."""
    with tempfile.TemporaryDirectory(prefix="thoughtvec-generate-") as tmp:
        (Path(tmp) / name).symlink_to(folder, target_is_directory=True)
        settings = Settings(
            models_dir=Path(tmp), index_dir=Path(tmp) / "indexes", build_default_index=False, default_model=name, warmup=False
        )
        core = Core(settings)
        await core.embedding.start()
        try:
            if name in core.embedding.registry.failed:
                raise ValueError(core.embedding.registry.failed[name])
            return await core.generation.generate(source, model=name, **fields)
        finally:
            await core.embedding.stop()
