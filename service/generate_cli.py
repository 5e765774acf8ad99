"""``thoughtvec generate``: sentences decoded from vectors by a bundle's own decoders, in-process (no server).

It runs what ``POST /v1/generate`` runs (``thoughtvec.service.core.generation``), with the same fields and limits:

  thoughtvec generate --model uni-skip "he opened the door ." --story 3
  thoughtvec generate --model uni-skip "the night was cold ." --to "she laughed ." --steps 5
  thoughtvec generate --model mean-max-aae "the lord is my shepherd ." --task reconstruct --decoding beam
  thoughtvec generate --model models/uni-skip "it rained ." --decoding sample --temperature 0.8 --count 3 --seed 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("generate", help="decode sentences from vectors with a bundle's decoders", description=__doc__,
                              formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("input", nargs="?", help="the text whose vector is decoded")
    p.add_argument("--vector", type=Path, help="instead of a text: a JSON file holding a vector (a list of numbers) of the decoder's view")
    p.add_argument("--model", required=True, help="bundle name under --models-dir, or a bundle folder")
    p.add_argument("--models-dir", type=Path, default=None, help="default: the serve setting models_dir")
    p.add_argument("--task", choices=("next", "previous", "reconstruct"), help="default: next where the model has it")
    p.add_argument("--story", type=int, help="chain this many sentences, each decoded from the one before")
    p.add_argument("--to", help="decode the path from the input to this text")
    p.add_argument("--steps", type=int, help="points on the path, both ends included (default 5)")
    p.add_argument("--plus", help="with --minus: decode input + (plus - minus)")
    p.add_argument("--minus", help="with --plus")
    p.add_argument("--decoding", choices=("greedy", "beam", "sample"), default="greedy")
    p.add_argument("--beam-width", type=int, default=4)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--seed", type=int)
    p.add_argument("--count", type=int, default=1, help="sample: sentences drawn")
    p.add_argument("--max-tokens", type=int, help="words per sentence (default: the longest trained on)")
    p.add_argument("--json", action="store_true", help="print the whole answer as JSON")
    p.set_defaults(func=cmd_generate)


def cmd_generate(args: argparse.Namespace) -> int:
    from thoughtvec.service.bundle.format import load_bundle
    from thoughtvec.service.cli import quiet_faiss
    from thoughtvec.service.errors import ThoughtvecError
    from thoughtvec.service.settings import Settings

    quiet_faiss()

    if (args.input is None) == (args.vector is None):
        print("thoughtvec generate: give a text or --vector FILE (one of them)", file=sys.stderr)
        return 2
    folder = Path(args.model) if Path(args.model).is_dir() else (args.models_dir or Settings().models_dir) / args.model
    try:
        bundle = load_bundle(folder)
        source = args.input if args.vector is None else json.loads(args.vector.read_text())
        fields = dict(task=args.task, to=args.to, steps=args.steps, plus=args.plus, minus=args.minus, story=args.story,
                      decoding=args.decoding, beam_width=args.beam_width, temperature=args.temperature, seed=args.seed,
                      count=args.count, max_tokens=args.max_tokens)  # fmt: skip
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
    return 0


async def _generate(folder: Path, name: str, source, fields: dict):
    """The server's core over this one bundle (a models folder holding only it), without HTTP."""
    from thoughtvec.service.core.engine import Core
    from thoughtvec.service.settings import Settings

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
