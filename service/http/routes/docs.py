"""``/docs`` (Swagger UI) and ``/redoc`` with their scripts served from this app: they work offline, and ask no
other host for anything (``tests/service/http/test_docs.py`` renders both in Chromium and lists what they ask for).

The assets come from the ``fastapi-offline`` package (pinned in pyproject.toml), which vendors
Swagger UI's and ReDoc's distribution files; only the files are used, not its app factory. ReDoc's script is
served with one change: the logo its side menu shows beside "API docs by Redocly" comes from Redocly's CDN whatever
ReDoc's options say, so it is left out (the link stays). ``/favicon.ico`` is the docs pages' icon.
"""

from __future__ import annotations

import functools
from pathlib import Path

from fastapi import APIRouter, Request, Response
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import FileResponse, HTMLResponse

from thoughtvec.service.errors import NotFound

ASSETS_URL = "/docs-assets"
ASSETS = {
    "swagger-ui-bundle.js": "text/javascript",
    "swagger-ui.css": "text/css",
    "redoc.standalone.js": "text/javascript",
    "favicon.png": "image/png",
}

CACHED = {"Cache-Control": "public, max-age=86400"}
# The image ReDoc's side menu loads from Redocly's CDN (its component hides itself when the image fails: an empty
# source fails without a request)
REDOCLY_LOGO = b'"https://cdn.redoc.ly/redoc/logo-mini.svg"'

router = APIRouter(include_in_schema=False)


class AssetMissing(NotFound):
    """No such docs asset."""


def assets_dir() -> Path:
    import fastapi_offline  # noqa: PLC0415  # only when the docs pages are asked for

    return Path(fastapi_offline.__file__).resolve().parent / "static"


@router.get("/docs")
async def swagger(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    return get_swagger_ui_html(
        openapi_url=f"{root}{request.app.openapi_url}",
        title="thoughtvec - Swagger UI",
        swagger_js_url=f"{root}{ASSETS_URL}/swagger-ui-bundle.js",
        swagger_css_url=f"{root}{ASSETS_URL}/swagger-ui.css",
        swagger_favicon_url=f"{root}{ASSETS_URL}/favicon.png",
        swagger_ui_parameters={"tryItOutEnabled": True, "displayRequestDuration": True},
    )


@router.get("/redoc")
async def redoc(request: Request) -> HTMLResponse:
    root = request.scope.get("root_path", "")
    return get_redoc_html(
        openapi_url=f"{root}{request.app.openapi_url}",
        title="thoughtvec - ReDoc",
        redoc_js_url=f"{root}{ASSETS_URL}/redoc.standalone.js",
        redoc_favicon_url=f"{root}{ASSETS_URL}/favicon.png",
        with_google_fonts=False,
    )


@router.get(ASSETS_URL + "/{name}")
async def asset(name: str) -> Response:
    if name not in ASSETS:
        raise AssetMissing(f"no docs asset '{name}'; there are {sorted(ASSETS)}", field="name")
    if name == "redoc.standalone.js":
        return Response(redoc_script(), media_type=ASSETS[name], headers=CACHED)
    return FileResponse(assets_dir() / name, media_type=ASSETS[name], headers=CACHED)


@functools.cache
def redoc_script() -> bytes:
    """ReDoc's script without the image it would fetch from Redocly's CDN."""
    return (assets_dir() / "redoc.standalone.js").read_bytes().replace(REDOCLY_LOGO, b'""')


@router.get("/favicon.ico")
async def favicon() -> FileResponse:
    """The icon browsers ask for by themselves, for every page (without a key: access is open)."""
    return FileResponse(assets_dir() / "favicon.png", media_type=ASSETS["favicon.png"], headers=CACHED)
