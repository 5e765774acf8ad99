"""``thoughtvec serve``, ``thoughtvec index build|list`` and ``thoughtvec generate``: their parsers, and the
dispatcher of every ``thoughtvec`` command.

A parser names its handler as a string, ``"module:function"`` (``args.func``), that :func:`dispatch` imports only
when that command runs: parsing and ``--help`` load argparse and the settings, never fastapi, uvicorn,
onnxruntime, faiss or torch (``import torch`` alone takes seconds). The handlers import everything at their top:
the serving ones are in ``service/handlers/``, the training ones in ``training/handlers/``.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from pathlib import Path

from thoughtvec.service import configure_logging, quiet_faiss
from thoughtvec.service.settings import SEARCH_MODES, IndexBackendName, add_cli_flags

GENERATE_DOC = """Sentences decoded from vectors by a bundle's own decoders, in-process (no server).

It runs what ``POST /v1/generate`` runs (``thoughtvec.service.core.generation``), with the same fields and limits:

  thoughtvec generate --model uni-skip "he opened the door ." --story 3
  thoughtvec generate --model uni-skip "the night was cold ." --to "she laughed ." --steps 5
  thoughtvec generate --model mean-max-aae "the lord is my shepherd ." --task reconstruct --decoding beam
  thoughtvec generate --model models/uni-skip "it rained ." --decoding sample --temperature 0.8 --count 3 --seed 1
"""


def positive(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    n = int(text)
    if n < 1:
        raise argparse.ArgumentTypeError(f"{text} is not a whole number of at least 1")
    return n


def register(subparsers: argparse._SubParsersAction) -> None:
    backends = [b.value for b in IndexBackendName]

    serve = subparsers.add_parser(
        "serve",
        help="run the HTTP API on the bundles under models/",
        description="Run the HTTP API. Every setting is a flag here and a THOUGHTVEC_* variable.",
    )
    serve.add_argument("--settings-table", action="store_true", help="print the settings table (Markdown) and exit")
    add_cli_flags(serve)
    serve.set_defaults(func="thoughtvec.service.handlers.serve:cmd_serve")

    index = subparsers.add_parser("index", help="build or list search indexes offline")
    isub = index.add_subparsers(dest="index_command", metavar="ACTION", required=True)
    build = isub.add_parser(
        "build",
        help="embed a file of documents into an index, or add the ones it lacks to it (resumable; progress bar)",
        description="Embed a file of documents into an index, streamed: .txt (a document a line), .tsv (a header naming "
        'id, text and metadata columns, or [source<TAB>]text), .jsonl ({"id", "text", "metadata"}; BEIR\'s corpus.jsonl) '
        "or .parquet. A document without an id is named <file name>:<line> (Parquet: :<row>). An index of that name is "
        "added to: the documents whose ids it holds are skipped, so the same command run again after an interruption "
        "(Ctrl-C, kill -9) goes on where it stopped.",
    )
    build.add_argument("--model", required=True, help="bundle name under --models-dir, or a bundle folder")
    build.add_argument("--input", required=True, type=Path, help=".txt, .tsv or .jsonl (optionally .gz), or .parquet (the parquet extra)")
    build.add_argument("--name", required=True, help="index name")
    build.add_argument("--view", default=None, help="bundle view (default: the bundle's; adding: the index's)")
    build.add_argument(
        "--mode",
        choices=SEARCH_MODES,
        default=None,
        help="the search a request naming no mode gets (default: the best on dev for the model and backend: hybrid over "
        "a model whose hybrid beat BM25 alone on dev (the model guide's), lexical over any other model, dense on a Milvus without BM25); lexical named: a lexical-only "
        "index, its documents not embedded",
    )
    build.add_argument(
        "--factory",
        default=None,
        help="FAISS factory string (default: Flat = exact, rebuilt as HNSW32 once it holds 32 MiB of vectors, 32,768 documents at 256 dimensions; adding: the index's)",
    )
    build.add_argument("--metric", default=None, choices=["cosine", "ip", "l2"], help="default cosine; adding: the index's")
    build.add_argument(
        "--no-normalize", dest="normalize", action="store_const", const=False, default=None, help="keep raw vectors (ip/l2 only)"
    )
    build.add_argument("--limit", type=positive, default=None, help="the file's first N documents only")
    build.add_argument(
        "--batch-size", type=positive, default=None, help="sentences per ONNX run (default: the serve setting max_batch_size)"
    )
    build.add_argument(
        "--chunk",
        type=positive,
        default=2048,
        help="documents embedded and written at a time (default 2048); an interruption redoes at most two chunks' embedding",
    )
    build.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no log lines: the summary line alone")
    build.add_argument(
        "--overwrite", action="store_true", help="drop an index of that name first (run again without it to go on after an interruption)"
    )
    build.add_argument("--models-dir", type=Path, default=None, help="default: the serve setting models_dir")
    build.add_argument("--index-dir", type=Path, default=None, help="default: the serve setting index_dir")
    build.add_argument("--index-backend", choices=backends, default=None, help="default: the serve setting index_backend")
    build.add_argument("--milvus-uri", default=None, help="with --index-backend milvus; default: the serve setting milvus_uri")
    build.set_defaults(func="thoughtvec.service.handlers.index_build:cmd_index_build")
    lst = isub.add_parser("list", help="list the indexes on disk")
    lst.add_argument("--index-dir", type=Path, default=None)
    lst.add_argument("--index-backend", choices=backends, default=None, help="default: the serve setting index_backend")
    lst.add_argument("--milvus-uri", default=None, help="with --index-backend milvus; default: the serve setting milvus_uri")
    lst.set_defaults(func="thoughtvec.service.handlers.index_list:cmd_index_list")

    p = subparsers.add_parser("generate", help="decode sentences from vectors with a bundle's decoders", description=GENERATE_DOC,
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
    p.add_argument("--truncate", action="store_true", help="cut a text over the encoder's token limit (default: refuse it)")
    p.add_argument("--allow-unk", action="store_true", help="let the decoder write <unk> (default: never)")
    p.add_argument("--no-repeat-ngram-size", type=int, default=3, help="no n-gram of this size twice in a sentence (0: off)")
    p.add_argument("--json", action="store_true", help="print the whole answer as JSON")
    p.set_defaults(func="thoughtvec.service.handlers.generate:cmd_generate")


def dispatch(args: argparse.Namespace) -> int:
    """Run the command parsed into ``args``: its ``func``, a ``"module:function"`` string imported now, or a function."""
    quiet_faiss()  # before a handler's imports load faiss
    func = args.func
    if isinstance(func, str):
        module, _, name = func.partition(":")
        func = getattr(importlib.import_module(module), name)
    return int(func(args) or 0)


def exact_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``parser`` and every subcommand's parser take a flag only by its whole name: ``serve --models x`` is an
    error, not ``--models-dir x`` (argparse takes any unambiguous prefix by default)."""
    parser.allow_abbrev = False
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                exact_flags(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The serving commands alone (``python -m thoughtvec.service.cli``): works even where training/ cannot import."""
    parser = argparse.ArgumentParser(prog="thoughtvec")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    register(sub)
    args = exact_flags(parser).parse_args(argv)
    configure_logging(logging.DEBUG if args.verbose else logging.INFO)
    return dispatch(args)


if __name__ == "__main__":
    sys.exit(main())
