"""The ``thoughtvec`` command: one entry point, one subcommand per job.

Each subcommand lives in a light module with ``register(subparsers)``; the heavy imports (torch,
onnx, faiss, fastapi) happen inside its handler, so ``thoughtvec serve`` runs without torch.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

# (module, in order of the --help listing). Serving commands live in service/, the rest here.
COMMAND_MODULES = [
    "training.commands.corpus",
    "training.commands.train",
    "training.commands.export",
    "service.cli",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="thoughtvec",
        description="Sentence embeddings from classic unsupervised encoders: build a corpus, train, export, evaluate, serve.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
