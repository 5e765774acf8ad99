"""``thoughtvec bench``: throughput, latency, CPU per request, GFLOP/s and memory, in-process and behind the server.

Light at import time (argparse only); the measuring code loads inside the handler.
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    from thoughtvec.bench.bench import add_arguments

    bench = subparsers.add_parser(
        "bench", help="throughput, latency, CPU per request, GFLOP/s and memory: in-process and behind the server"
    )
    add_arguments(bench)
    bench.set_defaults(func=cmd_bench)


def cmd_bench(args: argparse.Namespace) -> int:
    from thoughtvec.bench.bench import run
    from thoughtvec.service.cli import quiet_faiss

    quiet_faiss()
    return run(args)
