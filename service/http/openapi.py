"""The served OpenAPI schema states this server's limits, and names its default model in the examples.

Request schemas name a setting where a limit is one (``"x-max-items": "max_inputs"``, ``"x-max-length":
"max_input_chars"``, ``"x-maximum": "max_k"``, in ``schemas.py``); :func:`install` replaces each such key, once,
by the JSON Schema keyword with the setting's value (``"maxItems": 2048``). A client generated from the schema,
or a fuzzer, then knows what a request over a limit is: a 413 or 422 naming the field. Examples name the model
that answers a request naming none by :data:`DEFAULT_MODEL`, replaced by the server's default model (which the
model guide and the bundles served decide when the server starts).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI

from thoughtvec.service.settings import Settings

KEYWORDS = {"x-max-items": "maxItems", "x-max-length": "maxLength", "x-maximum": "maximum"}
DEFAULT_MODEL = "{default model}"  # in an example's text: the server's default model


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


def name_default_model(node: Any, model: str) -> Any:
    """``node`` with :data:`DEFAULT_MODEL` replaced by ``model`` in every string."""
    if isinstance(node, dict):
        return {k: name_default_model(v, model) for k, v in node.items()}
    if isinstance(node, list):
        return [name_default_model(v, model) for v in node]
    return node.replace(DEFAULT_MODEL, model) if isinstance(node, str) else node


def install(app: FastAPI, settings: Settings, default_model: Callable[[], str | None]) -> None:
    """``app.openapi()`` answers the schema with ``settings``' limits stated and ``default_model()`` named."""
    build = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            state_limits(build(), settings)  # FastAPI keeps the schema it built in app.openapi_schema
            app.openapi_schema = name_default_model(app.openapi_schema, default_model() or "a-model")
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
