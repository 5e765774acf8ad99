"""The flags of ``thoughtvec bench`` (and of ``python -m thoughtvec.bench.servers``'s peer): argparse alone, so that
registering the command (``thoughtvec --help``) loads none of the measuring code."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--models-dir", type=Path, default=Path("models"), help="bundles to measure (default models/)")
    p.add_argument("--models", default="", help="comma-separated bundle folder names (default: all)")
    p.add_argument(
        "--sentences",
        type=Path,
        default=None,
        help="texts to send (.txt or sample .tsv.gz); default: the search sample if present, else generated",
    )
    p.add_argument("--batches", default="1,32,128", help="in-process batch sizes")
    p.add_argument("--concurrency", default="1,4,64", help="requests in flight")
    p.add_argument("--request-sizes", default="1,32", help="sentences per request")
    p.add_argument("--seconds", type=float, default=4.0, help="measured seconds per level (after a warm-up flood per server)")
    p.add_argument("--repeats", type=int, default=1, help="measure the batching ratio's two floods this many times")
    p.add_argument("--client", default="auto", choices=["auto", "wrk", "python"], help="load generator (auto: wrk when installed)")
    p.add_argument(
        "--encoding", default="base64", choices=["base64", "float"], help="encoding_format of the requests (the openai client sends base64)"
    )
    p.add_argument("--no-server", action="store_true", help="in-process figures only")
    p.add_argument("--mixed", action="store_true", help="also: 32-sentence requests alone and beside a 1-sentence flood")
    p.add_argument("--batching-off", action="store_true", help="also: the server levels with max batch size 1")
    p.add_argument("--server-flag", action="append", default=[], help="extra flag for the server, e.g. --server-flag=--max-wait-ms=1")
    p.add_argument(
        "--against",
        action="append",
        default=[],
        help="compare: servers without (A) and with (B) this extra flag, alternated --repeats times, on the batching ratio's "
        "floods (instead of the server levels), e.g. --against=--batch-planning=greedy",
    )
    add_peer_arguments(p)


def add_peer_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--peer", default="", help="a shell command starting another embedding server, with {port} where its port goes")
    p.add_argument("--peer-path", default="/embeddings", help="the peer's OpenAI-style embeddings route (infinity: /embeddings)")
    p.add_argument("--peer-ready", default="/health", help="a route of the peer that answers 200 once it serves")
    p.add_argument("--peer-name", default="peer", help="the peer's name in the tables")
