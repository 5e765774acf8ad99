"""Dependencies shared by the routers (``Annotated`` aliases, as the FastAPI template does)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request

from service.core.engine import Core
from service.http.middleware import require_admin
from service.http.schemas import ErrorBody


async def get_core(request: Request) -> Core:  # async: a sync dependency would hop to a thread
    return request.app.state.core


CoreDep = Annotated[Core, Depends(get_core)]


async def admin_only(request: Request, core: CoreDep) -> None:
    require_admin(core.settings, request)


AdminDep = Depends(admin_only)

def usage_headers(usage: dict) -> dict[str, str]:
    """How many inputs were split or truncated, as headers too (clients that parse only OpenAI's fields see them)."""
    return {"X-Split-Inputs": str(usage["split_inputs"]), "X-Truncated-Inputs": str(usage["truncated_inputs"])}


# Path parameters with the values "Try it out" fills in (the default index; the index the examples create).
IndexName = Annotated[str, Path(description="index name", examples=["default"])]
NewIndexName = Annotated[str, Path(description="index name", examples=["notes"])]
ModelName = Annotated[str, Path(description="bundle or alias", examples=["invertible-linear"])]
DocId = Annotated[str, Path(description="document id", examples=["n1"])]


# Documented error answers (the body is always ErrorBody).
ERRORS = {code: {"model": ErrorBody} for code in (400, 401, 404, 413, 422, 429, 503)}
WRITE_ERRORS = ERRORS | {403: {"model": ErrorBody}, 409: {"model": ErrorBody}}
