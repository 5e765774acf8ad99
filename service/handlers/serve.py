"""``thoughtvec serve``: the HTTP API (its parser: ``service/cli.py``)."""

from __future__ import annotations

import argparse
import logging
import sys

import uvicorn

from thoughtvec.service.http.app import create_app, server_config
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
        from thoughtvec.service.http.workers import serve_workers

        return serve_workers(settings)
    server = uvicorn.Server(server_config(create_app(settings, settle_heap=True), settings))
    try:
        server.run()
    except KeyboardInterrupt:
        pass
    return 0 if server.started else 3  # uvicorn.run's STARTUP_FAILURE (the port is taken, say)
