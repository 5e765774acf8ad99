"""The served OpenAPI schema states this server's limits.

Request schemas name a setting where a limit is one (``"x-max-items": "max_inputs"``, ``"x-max-length":
"max_input_chars"``, ``"x-maximum": "max_k"``, in ``schemas.py``); :func:`install` replaces each such key, once,
by the JSON Schema keyword with the setting's value (``"maxItems": 2048``). A client generated from the schema,
or a fuzzer, then knows what a request over a limit is: a 413 or 422 naming the field.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

from thoughtvec.service.settings import Settings

KEYWORDS = {"x-max-items": "maxItems", "x-max-length": "maxLength", "x-maximum": "maximum"}


def state_limits(node: Any, settings: Settings) -> None:
    """Replace, in place, every ``x-max-*`` key under ``node`` by its keyword and the named setting's value."""
    if isinstance(node, dict):
        for ours, keyword in KEYWORDS.items():
            if ours in node:
                node[keyword] = getattr(settings, node.pop(ours))
        for value in node.values():
            state_limits(value, settings)
    elif isinstance(node, list):
        for value in node:
            state_limits(value, settings)


def install(app: FastAPI, settings: Settings) -> None:
    """``app.openapi()`` answers the schema with ``settings``' limits stated."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            state_limits(build(), settings)  # FastAPI keeps the schema it built in app.openapi_schema
        return app.openapi_schema  # type: ignore[return-value]

    app.openapi = openapi  # type: ignore[method-assign]
