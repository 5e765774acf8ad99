"""HTTP plumbing: the one error table, the catch-all, and dropping requests whose client left.

Every error leaves as ``{"error": {"code", "message", "field"}}``. Domain errors carry their own
status (``thoughtvec.service.errors``); request validation is 422 (400 for malformed JSON); unknown routes
404; oversized bodies 413; missing keys 401; a non-admin key on an index write 403 (the request rules:
``thoughtvec.service.http.rules``); anything unexpected 500 ``internal_error`` with a request id that the
server log carries too.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Awaitable
from typing import Any, TypeVar

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from thoughtvec.service.errors import IndexUnavailable, NotReady, QueueFull, StorageUnavailable, ThoughtvecError, Unauthorized, WorkerDead
from thoughtvec.service.http.peer_schemas import FORM_TAGS
from thoughtvec.service.settings import Settings

log = logging.getLogger(__name__)
T = TypeVar("T")

# The error table: status -> code for errors raised outside the domain layer.
HTTP_CODES = {400: "bad_request", 401: "unauthorized", 403: "forbidden", 404: "not_found", 405: "method_not_allowed", 413: "body_too_large"}


def error_response(
    status: int, code: str, message: str, field: str | None = None, headers: dict[str, str] | None = None, request_id: str | None = None
) -> JSONResponse:
    body = {"code": code, "message": message, "field": field} | ({"request_id": request_id} if request_id else {})
    return JSONResponse({"error": body}, status_code=status, headers=headers)


def domain_error(exc: ThoughtvecError, retry_after_s: int = 1) -> JSONResponse:
    headers = None
    if isinstance(exc, QueueFull):
        headers = {"Retry-After": str(max(1, round(exc.retry_after_s)))}
    elif isinstance(exc, (NotReady, WorkerDead, StorageUnavailable, IndexUnavailable)):  # each may pass: ask again
        headers = {"Retry-After": str(retry_after_s)}
    elif isinstance(exc, Unauthorized):
        headers = {"WWW-Authenticate": "Bearer"}
    return error_response(exc.status, exc.code, exc.message, exc.field, headers)


def field_path(loc: tuple[Any, ...]) -> str:
    """``("body", "input", 3)`` -> ``input[3]``; ``("body", "documents", 0, "id")`` -> ``documents[0].id``; the form
    of a body that takes two (``peer_schemas.FORM_TAGS``) is left out."""
    out = ""
    loc = loc[1:] if loc and loc[0] in ("body", "query", "path") else loc
    for part in loc[1:] if loc and loc[0] in FORM_TAGS else loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out or "body"


def validation_error(exc: RequestValidationError) -> JSONResponse:
    # A misspelt field also makes the real one "missing": name the typo first.
    errors = sorted(exc.errors(), key=lambda e: e.get("type") != "extra_forbidden")
    first = errors[0]
    if first.get("type") == "json_invalid":
        reason = (first.get("ctx") or {}).get("error", "invalid JSON")
        pos = first["loc"][1] if len(first["loc"]) > 1 else "?"
        return error_response(400, "malformed_json", f"the body is not valid JSON: {reason} at character {pos}", "body")
    fld = field_path(tuple(first["loc"]))
    msg = first["msg"]
    got = first.get("input")
    if first.get("type") not in ("missing", "extra_forbidden") and not isinstance(got, (dict, list)) and got is not None:
        msg += f" (got {str(got)[:80]!r})"  # a scalar: str() cannot recurse
    if first.get("type") == "extra_forbidden":
        msg = "is not a field of this request (check the spelling)"
    more = f" [and {len(errors) - 1} more problem(s)]" if len(errors) > 1 else ""
    return error_response(422, "invalid_request", f"{fld}: {msg}{more}", fld)


def client_gone() -> JSONResponse:
    # Nobody reads this; 499 (nginx's "client closed request") keeps the metrics honest.
    return error_response(499, "client_closed_request", "the client went away before the answer was ready")


def install_error_handlers(app, settings: Settings) -> None:
    @app.exception_handler(ThoughtvecError)
    async def _domain(request: Request, exc: ThoughtvecError) -> JSONResponse:
        return domain_error(exc, settings.retry_after_s)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return validation_error(exc)

    @app.exception_handler(ClientGone)
    async def _gone(request: Request, exc: Exception) -> JSONResponse:
        return client_gone()

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code == 400 and exc.__cause__ is not None:  # FastAPI could not parse the body
            return error_response(400, "malformed_json", f"the body is not valid JSON: {parse_problem(exc.__cause__)}", "body")
        code = HTTP_CODES.get(exc.status_code, "http_error")
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405:  # Starlette names the methods of the first matching route only
            headers = (headers or {}) | {"Allow": ", ".join(allowed_methods(request))}
        message = (
            f"no route {request.method} {request.url.path}" if exc.status_code == 404 and exc.detail == "Not Found" else str(exc.detail)
        )
        return error_response(exc.status_code, code, message, "body" if exc.status_code == 413 else None, headers)


def allowed_methods(request: Request) -> list[str]:
    """Every method some route takes at this path (Starlette's 405 names only the first route's)."""
    from starlette.routing import Match

    return [
        m
        for m in ("DELETE", "GET", "HEAD", "PATCH", "POST", "PUT")
        if any(route.matches({**request.scope, "method": m})[0] == Match.FULL for route in request.app.routes)
    ]


def parse_problem(cause: BaseException) -> str:
    """Why ``json.loads`` refused a body, for the cases FastAPI does not report as ``json_invalid``."""
    if isinstance(cause, UnicodeDecodeError):
        return f"not UTF-8 ({cause.reason} at byte {cause.start})"
    if isinstance(cause, RecursionError):
        return "nested too deeply to parse"
    return str(cause)[:200] or type(cause).__name__


class CatchAllMiddleware:
    """Whatever escapes the routes and handlers becomes a JSON 500 ``internal_error`` with a request id.

    The traceback is logged under the same id; the process and every other request go on. An
    exception after the response has started cannot change it and is re-raised to uvicorn.
    """

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def watch(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, watch)
        except Exception:
            response = internal_error(scope)
            if started:
                raise
            await response(scope, receive, send)


def internal_error(scope: Scope) -> JSONResponse:
    """Log the exception being handled under a fresh request id; the 500 that names that id."""
    rid = uuid.uuid4().hex[:16]
    # %r: a path with odd characters is escaped, never a second error inside logging
    log.exception("request %s: %s %r failed", rid, scope.get("method"), scope.get("path"))
    return error_response(
        500,
        "internal_error",
        f"unexpected server error; the log has the details under request id {rid}",
        headers={"X-Request-Id": rid},
        request_id=rid,
    )


class ClientGone(Exception):
    """The client disconnected before the answer was ready."""


async def _disconnected(request: Request) -> None:
    # After the body is read, receive() returns only when the client disconnects (or we answer).
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def unless_disconnected(request: Request, work: Awaitable[T]) -> T:
    """Await ``work``; if the client goes away first, cancel it (its queued sentences are dropped)."""
    task = asyncio.ensure_future(work)
    watch = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
    except asyncio.CancelledError:
        task.cancel()
        raise
    finally:
        watch.cancel()
    if task.done():
        return task.result()
    task.cancel()
    raise ClientGone()


def json_bytes(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
