"""``thoughtvec serve``, ``thoughtvec index build|list`` and ``thoughtvec generate``.

Light at import time (argparse only): fastapi, uvicorn, onnxruntime and faiss load inside the
handlers, so ``thoughtvec --help`` stays fast and training commands never pull them in.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

log = logging.getLogger(__name__)

GENERATE_DOC = """Sentences decoded from vectors by a bundle's own decoders, in-process (no server).

It runs what ``POST /v1/generate`` runs (``thoughtvec.service.core.generation``), with the same fields and limits:

  thoughtvec generate --model uni-skip "he opened the door ." --story 3
  thoughtvec generate --model uni-skip "the night was cold ." --to "she laughed ." --steps 5
  thoughtvec generate --model mean-max-aae "the lord is my shepherd ." --task reconstruct --decoding beam
  thoughtvec generate --model models/uni-skip "it rained ." --decoding sample --temperature 0.8 --count 3 --seed 1
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    from thoughtvec.service.settings import SEARCH_MODES, IndexBackendName, add_cli_flags

    backends = [b.value for b in IndexBackendName]

    serve = subparsers.add_parser(
        "serve",
        help="run the HTTP API on the bundles under models/",
        description="Run the HTTP API. Every setting is a flag here and a THOUGHTVEC_* variable.",
    )
    serve.add_argument("--settings-table", action="store_true", help="print the settings table (Markdown) and exit")
    add_cli_flags(serve)
    serve.set_defaults(func=cmd_serve)

    index = subparsers.add_parser("index", help="build or list search indexes offline")
    isub = index.add_subparsers(dest="index_command", metavar="ACTION", required=True)
    build = isub.add_parser("build", help="embed a file of texts into a new index (progress bar)")
    build.add_argument("--model", required=True, help="bundle name under --models-dir, or a bundle folder")
    build.add_argument("--input", required=True, type=Path, help=".txt, .tsv ([source<TAB>]text) or .jsonl, optionally .gz")
    build.add_argument("--name", required=True, help="index name")
    build.add_argument("--view", default=None, help="bundle view (default: the bundle's)")
    build.add_argument(
        "--mode",
        choices=SEARCH_MODES,
        default=None,
        help="the search a request naming no mode gets (default: the best on dev for the model and backend: hybrid over "
        "all-minilm-l6-v2, lexical over any other model, dense on Milvus)",
    )
    build.add_argument("--factory", default="Flat", help="FAISS factory string (default Flat = exact)")
    build.add_argument("--metric", default="cosine", choices=["cosine", "ip", "l2"])
    build.add_argument("--no-normalize", dest="normalize", action="store_false", help="keep raw vectors (ip/l2 only)")
    build.add_argument("--limit", type=int, default=None, help="first N texts only")
    build.add_argument("--batch-size", type=int, default=128)
    build.add_argument("--overwrite", action="store_true", help="replace an existing index of that name")
    build.add_argument("--models-dir", type=Path, default=None, help="default: the serve setting models_dir")
    build.add_argument("--index-dir", type=Path, default=None, help="default: the serve setting index_dir")
    build.add_argument("--index-backend", choices=backends, default=None, help="default: the serve setting index_backend")
    build.add_argument("--milvus-uri", default=None, help="with --index-backend milvus; default: the serve setting milvus_uri")
    build.set_defaults(func=cmd_index_build)
    lst = isub.add_parser("list", help="list the indexes on disk")
    lst.add_argument("--index-dir", type=Path, default=None)
    lst.add_argument("--index-backend", choices=backends, default=None, help="default: the serve setting index_backend")
    lst.add_argument("--milvus-uri", default=None, help="with --index-backend milvus; default: the serve setting milvus_uri")
    lst.set_defaults(func=cmd_index_list)

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
    p.add_argument("--json", action="store_true", help="print the whole answer as JSON")
    p.set_defaults(func=cmd_generate)


def quiet_faiss() -> None:
    # "could not load AVX2 ..." is noise; faiss-cpu logs as faiss.loader, faiss-gpu-cu12 as faiss._loader
    for name in ("faiss.loader", "faiss._loader"):
        logging.getLogger(name).setLevel(logging.WARNING)


def cmd_serve(args: argparse.Namespace) -> int:
    quiet_faiss()
    from thoughtvec.service.settings import load_settings, overrides_from_args, settings_table

    if args.settings_table:
        print(settings_table())
        return 0
    try:
        settings = load_settings(**overrides_from_args(args))
    except ValueError as e:  # pydantic's ValidationError is a ValueError
        print(f"thoughtvec serve: {e}", file=sys.stderr)
        return 2
    import uvicorn

    from thoughtvec.service.http.app import create_app, server_config

    logging.getLogger().setLevel(settings.log_level.upper())
    log.info("http://%s:%d  (docs at /docs)", settings.host, settings.port)
    server = uvicorn.Server(server_config(create_app(settings), settings))
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    return 0 if server.started else 3  # uvicorn.run's STARTUP_FAILURE (the port is taken, say)


def _index_settings(args: argparse.Namespace):
    """The serve settings with the index command's flags on top (those given)."""
    from thoughtvec.service.settings import load_settings

    flags = {"index_backend": args.index_backend, "milvus_uri": args.milvus_uri, "index_dir": args.index_dir}
    return load_settings(**{k: v for k, v in flags.items() if v is not None})


def _where(settings) -> str:
    from thoughtvec.service.settings import IndexBackendName

    return f"Milvus at {settings.milvus_uri}" if settings.index_backend is IndexBackendName.milvus else str(settings.index_dir)


def cmd_index_build(args: argparse.Namespace) -> int:
    quiet_faiss()
    import numpy as np

    from thoughtvec.service.core.encoder import Encoder, available_providers
    from thoughtvec.service.errors import ThoughtvecError
    from thoughtvec.service.index.backend import open_backend
    from thoughtvec.service.index.build import build_index, read_documents
    from thoughtvec.service.settings import default_search_mode

    settings = _index_settings(args)
    models_dir = args.models_dir or settings.models_dir
    bundle = Path(args.model) if Path(args.model).is_dir() else models_dir / args.model
    try:
        encoder = Encoder.load(bundle, providers=available_providers())
        store = open_backend(settings.model_copy(update={"prefer_cuda": False}))  # it searches nothing: no GPU copy
        try:
            view = encoder.view(args.view)
            mode = args.mode or default_search_mode(encoder.name, store.capabilities.modes)
            # the store makes the config: a mode or a factory it cannot serve is refused before anything is embedded
            config = store.new_config(
                args.name,
                encoder.name,
                view,
                encoder.dim(view),
                factory=args.factory,
                metric=args.metric,
                normalize=args.normalize,
                fingerprint=encoder.fingerprint(view),
                mode=mode,
            )
            docs = read_documents(args.input, args.limit)
            log.info("%d texts from %s; model %s view %s, searched %s", len(docs), args.input, encoder.name, view, mode)

            def encode(texts: list[str]) -> np.ndarray:
                return encoder.encode(texts, view, normalize=False, truncation="split", batch_size=args.batch_size)

            stats = store.install(build_index(encode, config, docs), overwrite=args.overwrite)
        finally:
            store.close()
    except (ThoughtvecError, ValueError, OSError) as e:
        print(f"thoughtvec index build: {getattr(e, 'message', e)}", file=sys.stderr)
        return 1
    where = _where(settings) if store.capabilities.shared else Path(settings.index_dir) / args.name
    print(
        f"index '{args.name}': {stats.documents} documents, {stats.factory} {stats.metric}, "
        f"model {stats.model}/{stats.view} (dim {stats.dim}), searched {stats.mode} -> {where}"
    )
    return 0


def cmd_index_list(args: argparse.Namespace) -> int:
    quiet_faiss()
    from thoughtvec.service.errors import ThoughtvecError
    from thoughtvec.service.index.backend import open_backend

    settings = _index_settings(args)
    store = open_backend(settings.model_copy(update={"prefer_cuda": False}))
    try:
        stats = store.inventory()
    except (ThoughtvecError, ValueError, OSError) as e:
        print(f"thoughtvec index list: {getattr(e, 'message', e)}", file=sys.stderr)
        return 1
    finally:
        store.close()
    if not stats:
        print(f"no indexes in {_where(settings)}")
        return 0
    logged = store.capabilities.snapshots  # its counts are the snapshots': say so, and show each log's size
    head = ("name", "model/view", "mode", "dim", "factory", "metric", "documents*" if logged else "documents", "log bytes")
    n = len(head) if logged else len(head) - 1
    rows = [
        (st.name, f"{st.model}/{st.view}", st.mode, str(st.dim), st.factory, st.metric, str(st.documents), str(st.wal_bytes))[:n]
        for st in stats
    ]
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(n)]
    for r in [head[:n]] + rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)))
    if logged:
        print("* at the last snapshot; writes in the log are added when the server loads the index")
    return 0


def cmd_generate(args: argparse.Namespace) -> int:
    from thoughtvec.service.bundle.format import load_bundle
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


def main(argv: list[str] | None = None) -> int:
    """The serving commands alone (``python -m thoughtvec.service.cli``): works even where training/ cannot import."""
    parser = argparse.ArgumentParser(prog="thoughtvec")
    parser.add_argument("-v", "--verbose", action="store_true")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    register(sub)
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", datefmt="%H:%M:%S"
    )
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
