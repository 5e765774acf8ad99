"""``thoughtvec serve``: the HTTP API (its parser: ``service/cli.py``)."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable

import uvicorn

from thoughtvec.service.errors import IndexFolderLocked
from thoughtvec.service.http.app import create_app, server_config
from thoughtvec.service.index.backend import check_index_folder
from thoughtvec.service.settings import load_settings, overrides_from_args, settings_table

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
    if settings.workers > 1:
        from thoughtvec.service.http.worker_processes import serve_workers  # noqa: PLC0415  # only with --workers above 1

        return _refused(lambda: check_index_folder(settings)) or serve_workers(settings)
    app = create_app(settings, settle_heap=True)
    refused = _refused(app.state.core.indexes.open)  # the folder is held from here until the server stops
    if refused:
        return refused
    server = uvicorn.Server(server_config(app, settings))
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    return 0 if server.started else 3  # uvicorn.run's STARTUP_FAILURE (the port is taken, say)


def _refused(take: Callable[[], None]) -> int:
    """``take`` the index folder before anything serves: 0, or 3 (a start-up failure, as a port taken) with the
    reason on stderr, where another process holds it (the folder as configured, and what to do)."""
    try:
        take()
    except IndexFolderLocked as e:
        print(f"thoughtvec serve: {e}", file=sys.stderr)
        return 3
    return 0
