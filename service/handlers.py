"""The handlers of ``thoughtvec serve``, ``thoughtvec index build|list`` and ``thoughtvec generate`` (their parsers:
``service/cli.py``, which names them by string so that ``thoughtvec --help`` loads none of this)."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
import tempfile
from dataclasses import asdict
from pathlib import Path

import numpy as np
import uvicorn

from thoughtvec.service.bundle.format import load_bundle
from thoughtvec.service.core.encoder import Encoder, available_providers
from thoughtvec.service.core.engine import Core
from thoughtvec.service.errors import ThoughtvecError
from thoughtvec.service.http.app import create_app, server_config
from thoughtvec.service.index.backend import open_backend
from thoughtvec.service.index.build import build_index, read_documents
from thoughtvec.service.settings import IndexBackendName, Settings, default_search_mode, load_settings, overrides_from_args, settings_table

log = logging.getLogger(__name__)


def cmd_serve(args: argparse.Namespace) -> int:
    if args.settings_table:
        print(settings_table())
        return 0
    try:
        settings = load_settings(**overrides_from_args(args))
    except ValueError as e:  # pydantic's ValidationError is a ValueError
        print(f"thoughtvec serve: {e}", file=sys.stderr)
        return 2

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

    flags = {"index_backend": args.index_backend, "milvus_uri": args.milvus_uri, "index_dir": args.index_dir}
    return load_settings(**{k: v for k, v in flags.items() if v is not None})


def _where(settings) -> str:
    return f"Milvus at {settings.milvus_uri}" if settings.index_backend is IndexBackendName.milvus else str(settings.index_dir)


def cmd_index_build(args: argparse.Namespace) -> int:
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
