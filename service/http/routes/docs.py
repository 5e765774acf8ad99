"""``/docs`` (Swagger UI) and ``/redoc`` with their scripts served from this app: they work offline.

The assets come from the ``fastapi-offline`` package (pinned in pyproject.toml), which vendors
Swagger UI's and ReDoc's distribution files; only the files are used, not its app factory.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter, Request
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

router = APIRouter(include_in_schema=False)


class AssetMissing(NotFound):
    """No such docs asset."""


def assets_dir() -> Path:
    import fastapi_offline

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
async def asset(name: str) -> FileResponse:
    if name not in ASSETS:
        raise AssetMissing(f"no docs asset '{name}'; there are {sorted(ASSETS)}", field="name")
    return FileResponse(assets_dir() / name, media_type=ASSETS[name], headers={"Cache-Control": "public, max-age=86400"})
