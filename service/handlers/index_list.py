"""``thoughtvec index list``, and the index commands' settings (its parser: ``service/cli.py``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from thoughtvec.service.errors import ThoughtvecError
from thoughtvec.service.index.backend import open_backend
from thoughtvec.service.settings import IndexBackendName, load_settings


def index_settings(args: argparse.Namespace, **more: Any):
    """The serve settings with the index command's flags on top (those given), and ``more`` settings (those not None)."""
    flags = {"index_backend": args.index_backend, "milvus_uri": args.milvus_uri, "index_dir": args.index_dir} | more
    return load_settings(**{k: v for k, v in flags.items() if v is not None})


def where_stored(settings) -> str:
    return f"Milvus at {settings.milvus_uri}" if settings.index_backend is IndexBackendName.milvus else str(settings.index_dir)


def cmd_index_list(args: argparse.Namespace) -> int:
    settings = index_settings(args)
    store = open_backend(settings.model_copy(update={"prefer_cuda": False}))
    try:
        stats = store.inventory()
    except (ThoughtvecError, ValueError, OSError) as e:
        print(f"thoughtvec index list: {getattr(e, 'message', e)}", file=sys.stderr)
        return 1
    finally:
        store.close()
    if not stats:
        print(f"no indexes in {where_stored(settings)}")
        return 0
    logged = store.capabilities.snapshots  # its counts are the snapshots': say so, and show each log's size
    head = ("name", "model/view", "mode", "dim", "factory", "metric", "documents*" if logged else "documents", "log bytes")
    n = len(head) if logged else len(head) - 1
    rows = [
        (
            st.name,
            f"{st.model}/{st.view}",
            st.mode,
            str(st.dim),
            st.factory,
            st.metric,
            str(st.documents),
            str(st.backend.get("wal_bytes", 0)),
        )[:n]
        for st in stats
    ]
    widths = [max(len(r[i]) for r in rows + [head]) for i in range(n)]
    for r in [head[:n]] + rows:
        print("  ".join(v.ljust(w) for v, w in zip(r, widths)))
    if logged:
        print("* at the last snapshot; writes in the log are added when the server loads the index")
    return 0
