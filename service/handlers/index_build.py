"""``thoughtvec index build``: a file of texts embedded into a new index (its parser: ``service/cli.py``)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import numpy as np

from thoughtvec.service.core.encoder import Encoder, available_providers
from thoughtvec.service.core.index_state import check_mode, default_search_mode
from thoughtvec.service.errors import IndexFolderLocked, ThoughtvecError
from thoughtvec.service.handlers.index_list import index_settings, where_stored
from thoughtvec.service.index.backend import open_backend
from thoughtvec.service.index.build import build_index, read_documents
from thoughtvec.service.index.contents import NewIndex
from thoughtvec.service.index.search_settings import SearchSettings
from thoughtvec.service.model_guide import Guide

log = logging.getLogger(__name__)


def cmd_index_build(args: argparse.Namespace) -> int:
    settings = index_settings(args)
    models_dir = args.models_dir or settings.models_dir
    bundle = Path(args.model) if Path(args.model).is_dir() else models_dir / args.model
    try:
        encoder = Encoder.load(bundle, providers=available_providers())
        guide = Guide.load(bundle.parent)  # the dev choices of the bundles beside this one: its default mode, the BM25 half
        # it searches nothing: no GPU copy
        store = open_backend(settings.model_copy(update={"prefer_cuda": False}), search=SearchSettings.of(guide))
        try:
            store.open()  # the folder is this command's until it ends: refused now, before anything is embedded
            view = encoder.view(args.view)
            mode = args.mode or default_search_mode(guide, encoder.name, encoder.fingerprint(), store.capabilities.modes)
            # a mode the backend does not serve, or a factory it cannot build (the store makes the config), is refused
            # before anything is embedded
            check_mode(store.capabilities, mode)
            new = NewIndex(
                name=args.name,
                model=encoder.name,
                view=view,
                dim=encoder.dim(view),
                factory=args.factory,
                metric=args.metric,
                normalize=args.normalize,
                fingerprint=encoder.fingerprint(view),
                mode=mode,
                embedded=args.mode != "lexical",  # named, as by a POST /v1/indexes: lexical-only, no model runs for its documents
            )
            config = store.new_config(new)
            docs = read_documents(args.input, args.limit)
            log.info("%d texts from %s; model %s view %s, searched %s", len(docs), args.input, encoder.name, view, mode)

            def encode(texts: list[str]) -> np.ndarray:
                return encoder.encode(texts, view, normalize=False, truncation="split", batch_size=args.batch_size)

            stats = store.install(build_index(encode, config, docs), overwrite=args.overwrite)
        finally:
            store.close()
    except (ThoughtvecError, IndexFolderLocked, ValueError, OSError) as e:
        print(f"thoughtvec index build: {getattr(e, 'message', e)}", file=sys.stderr)
        return 1
    where = where_stored(settings) if store.capabilities.shared else Path(settings.index_dir) / args.name
    print(
        f"index '{args.name}': {stats.documents} documents, {stats.factory} {stats.metric}, "
        f"model {stats.model}/{stats.view} (dim {stats.dim}), searched {stats.mode} -> {where}"
    )
    return 0
