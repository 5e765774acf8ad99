"""``thoughtvec bench``: throughput, latency, CPU per request, GFLOP/s and memory, in-process and behind the server.

The parser is argparse alone (:mod:`thoughtvec.bench.arguments`); the measuring code (:func:`thoughtvec.bench.bench.run`)
is imported by the dispatcher when the command runs, as every command's handler is.
"""

from __future__ import annotations

import argparse

from thoughtvec.bench.arguments import add_arguments


def register(subparsers: argparse._SubParsersAction) -> None:
    bench = subparsers.add_parser(
        "bench", help="throughput, latency, CPU per request, GFLOP/s and memory: in-process and behind the server"
    )
    add_arguments(bench)
    bench.set_defaults(func="thoughtvec.bench.bench:run")
