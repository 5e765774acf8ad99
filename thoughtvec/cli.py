"""The ``thoughtvec`` command: one entry point, one subcommand per job.

Each subcommand's parser lives in a light module with ``register(subparsers)``: the training commands in
``training/commands/``, the serving ones in ``service/cli.py``, ``bench`` in ``bench/cli.py``. A parser names its
handler as a ``"module:function"`` string, imported by ``service.cli.dispatch`` only when the command runs, so
``thoughtvec --help`` and ``thoughtvec serve`` load no torch (``training/handlers/``, ``service/handlers/``).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys

from thoughtvec.bench import cli as benchmarks
from thoughtvec.service import cli as serving
from thoughtvec.service.cli import dispatch, exact_flags
from thoughtvec.training.commands import checkpoint, corpus, export, postprocess, quantize, train
from thoughtvec.training.commands import eval as evaluate

# In the order of the --help listing: build a corpus, train, carry a checkpoint, export, evaluate, post-process,
# quantise, serve, bench.
COMMAND_MODULES = [corpus, train, checkpoint, export, evaluate, postprocess, quantize, serving, benchmarks]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="thoughtvec",
        description="Sentence embeddings from classic unsupervised encoders: build a corpus, train, export, evaluate, serve.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in COMMAND_MODULES:
        module.register(sub)
    return exact_flags(parser)


def main(argv: list[str] | None = None) -> int:
    # OpenMP threads that spin while waiting burn whole cores when the machine is shared (2 threads
    # fighting another process: 33 s/step instead of 0.8 s measured here). Sleep instead. Must be set
    # before torch loads its OpenMP runtime, which happens when a training command's handler is imported.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
    )
    try:
        return dispatch(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
