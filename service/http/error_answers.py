"""The one error table: how each domain error is said over HTTP, per API family, and the app's handlers.

Errors are classes (``thoughtvec.service.errors``) with a code, a message and the field; none carries an
HTTP status. :data:`STATUS` is the one table that maps each to a status, per API family, and
:class:`ErrorAnswer` says it in the family of the path it answers (:func:`family`):

* OpenAI's ``/v1/*`` and this API's other routes: ``{"error": {"code", "message", "field"}}``;
* TEI's routes (:data:`TEI_PATHS`): ``{"error": "...", "error_type": "..."}`` with TEI's statuses (400 ``Empty``
  for nothing to embed, 413 ``Validation`` for too long or too many, 429 ``Overloaded``, 503 ``Unhealthy``);
* Cohere's (:data:`COHERE_PATHS`: rerank and embed): ``{"message": "..."}``, 400 for a value Cohere refuses, 422 for a body that
  does not validate.

Request validation is ``InvalidRequest`` (``MalformedJson`` for a body that is not JSON); unknown routes
``NotFound``; oversized bodies ``BodyTooLarge``; missing keys ``Unauthorized``; a non-admin key on an index
write ``Forbidden`` (the request rules: ``thoughtvec.service.http.rules``); anything unexpected a 500
``internal_error`` with a request id that the server log carries too.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from fastapi import Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import Receive, Scope, Send

from thoughtvec.service.errors import (
    BodyTooLarge,
    BundleError,
    ClientClosed,
    Conflict,
    EmptyInput,
    Forbidden,
    IndexesReadOnly,
    IndexUnavailable,
    InputTooLong,
    InvalidInput,
    InvalidRequest,
    MalformedJson,
    MethodNotAllowed,
    NotFound,
    NotReady,
    QueueFull,
    RequestTooLarge,
    StorageUnavailable,
    ThoughtvecError,
    TooManyInputs,
    Unauthorized,
    UnknownIndex,
    UnknownModel,
    UnknownView,
    WorkerDead,
)
from thoughtvec.service.http.disconnect import ClientGone
from thoughtvec.service.http.peer_schemas import FORM_TAGS
from thoughtvec.service.settings import Settings

log = logging.getLogger(__name__)

Family = Literal["openai", "tei", "cohere"]
TEI_PATHS = frozenset({"/", "/embed", "/embed_sparse", "/rerank", "/similarity", "/tokenize", "/info"})  # TEI's routes (its router's paths)
COHERE_PATHS = frozenset({"/v1/rerank", "/v2/rerank", "/v1/embed", "/v2/embed"})  # Cohere v1's and v2's rerank and embed


@dataclass(frozen=True)
class Status:
    openai: int  # OpenAI's /v1/* and this API's own routes
    tei: int  # TEI's status ...
    tei_type: str  # ... and error_type (TEI's names: Empty, Validation, Tokenizer, Overloaded, Unhealthy, Backend)
    cohere: int


# The error table. TEI answers 413 for every input its validation refuses (too long, too many) and 400 for an
# empty one; Cohere answers 400 for a value it refuses (an empty list, too many tokens) and 422 (its client's
# UnprocessableEntityError) for a body of the wrong form. A class not listed takes its nearest base's row.
STATUS: dict[type[ThoughtvecError], Status] = {
    InvalidRequest: Status(422, 422, "Validation", 422),
    MalformedJson: Status(400, 400, "Validation", 400),
    InvalidInput: Status(422, 422, "Validation", 400),
    EmptyInput: Status(422, 400, "Empty", 400),
    InputTooLong: Status(413, 413, "Validation", 400),
    TooManyInputs: Status(413, 413, "Validation", 400),
    RequestTooLarge: Status(413, 413, "Validation", 400),
    BodyTooLarge: Status(413, 413, "Validation", 413),
    Unauthorized: Status(401, 401, "Validation", 401),
    Forbidden: Status(403, 403, "Validation", 403),
    UnknownModel: Status(404, 404, "Validation", 404),
    UnknownView: Status(404, 404, "Validation", 404),
    UnknownIndex: Status(404, 404, "Validation", 404),
    NotFound: Status(404, 404, "Validation", 404),
    MethodNotAllowed: Status(405, 405, "Validation", 405),
    Conflict: Status(409, 409, "Validation", 409),
    IndexesReadOnly: Status(409, 409, "Validation", 409),
    ClientClosed: Status(499, 499, "Validation", 499),  # nginx's "client closed request": nobody reads it
    QueueFull: Status(429, 429, "Overloaded", 429),
    NotReady: Status(503, 503, "Unhealthy", 503),
    WorkerDead: Status(503, 503, "Unhealthy", 503),
    StorageUnavailable: Status(503, 503, "Unhealthy", 503),
    IndexUnavailable: Status(503, 503, "Unhealthy", 503),
    BundleError: Status(500, 500, "Backend", 500),
    ThoughtvecError: Status(500, 500, "Backend", 500),  # unexpected: internal_error
}


def status_of(exc: ThoughtvecError) -> Status:
    return next(STATUS[c] for c in type(exc).__mro__ if c in STATUS)


def family(scope: Scope) -> Family:
    """The API family a request's path belongs to (below any root path)."""
    path, root = scope.get("path", ""), scope.get("root_path", "")
    path = path[len(root) :] or "/" if root and path.startswith(root) else path
    return "tei" if path in TEI_PATHS else "cohere" if path in COHERE_PATHS else "openai"


def error_body(exc: ThoughtvecError, fam: Family, request_id: str | None = None) -> tuple[int, dict[str, Any]]:
    """The status and body that say ``exc`` in family ``fam``."""
    row = status_of(exc)
    if fam == "tei":
        return row.tei, {"error": exc.message, "error_type": row.tei_type}
    if fam == "cohere":
        return row.cohere, {"message": exc.message}
    detail = {"code": exc.code, "message": exc.message, "field": exc.field} | ({"request_id": request_id} if request_id else {})
    return row.openai, {"error": detail}


class ErrorAnswer(Response):
    """An error as an ASGI answer, said in the family of the path it answers: whoever raised it (a route, a request
    rule, the catch-all) need not know which API the caller speaks."""

    media_type = "application/json"

    def __init__(self, exc: ThoughtvecError, headers: dict[str, str] | None = None, request_id: str | None = None):
        super().__init__(status_code=status_of(exc).openai, headers=headers)
        # without its traceback: an answer kept beside the frames that raised it would hold them (a request's body) in a cycle
        self.exc, self.extra_headers, self.request_id = exc.with_traceback(None), headers or {}, request_id

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        status, body = error_body(self.exc, family(scope), self.request_id)
        await JSONResponse(body, status_code=status, headers=self.extra_headers)(scope, receive, send)


def domain_error(exc: ThoughtvecError, retry_after_s: int = 1) -> ErrorAnswer:
    headers = None
    if isinstance(exc, QueueFull):
        headers = {"Retry-After": str(max(1, round(exc.retry_after_s)))}
    elif isinstance(exc, (NotReady, WorkerDead, StorageUnavailable, IndexUnavailable)):  # each may pass: ask again
        headers = {"Retry-After": str(retry_after_s)}
    elif isinstance(exc, Unauthorized):
        headers = {"WWW-Authenticate": "Bearer"}
    return ErrorAnswer(exc, headers)


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


def validation_error(exc: RequestValidationError) -> ErrorAnswer:
    # A misspelt field also makes the real one "missing": name the typo first.
    errors = sorted(exc.errors(), key=lambda e: e.get("type") != "extra_forbidden")
    first = errors[0]
    if first.get("type") == "json_invalid":
        reason = (first.get("ctx") or {}).get("error", "invalid JSON")
        pos = first["loc"][1] if len(first["loc"]) > 1 else "?"
        return ErrorAnswer(MalformedJson(f"the body is not valid JSON: {reason} at character {pos}", field="body"))
    fld = field_path(tuple(first["loc"]))
    msg = first["msg"]
    got = first.get("input")
    if isinstance(got, bytes):  # a body FastAPI did not decode: its content type is not JSON
        return ErrorAnswer(InvalidRequest("body: send a JSON body with Content-Type: application/json", field="body"))
    if first.get("type") not in ("missing", "extra_forbidden") and not isinstance(got, (dict, list)) and got is not None:
        msg += f" (got {repr(got[:80]) if isinstance(got, str) else json.dumps(got)[:80]})"  # a scalar, as JSON wrote it
    if first.get("type") == "extra_forbidden":
        msg = "is not a field of this request (check the spelling)"
    more = f" [and {len(errors) - 1} more problem(s)]" if len(errors) > 1 else ""
    return ErrorAnswer(InvalidRequest(f"{fld}: {msg}{more}", field=fld))


def client_gone() -> ErrorAnswer:
    return ErrorAnswer(ClientClosed("the client went away before the answer was ready"))


# The errors FastAPI and Starlette raise as HTTPExceptions, by status.
HTTP_ERRORS: dict[int, type[ThoughtvecError]] = {
    400: MalformedJson,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    413: BodyTooLarge,
}


def error_handlers(settings: Settings) -> dict[type[Exception], Callable[[Request, Any], Awaitable[Response]]]:
    """The app's exception handlers (``FastAPI.add_exception_handler``), by the exception class each answers."""

    async def domain(request: Request, exc: ThoughtvecError) -> Response:
        return domain_error(exc, settings.retry_after_s)

    async def validation(request: Request, exc: RequestValidationError) -> Response:
        return validation_error(exc)

    async def gone(request: Request, exc: ClientGone) -> Response:
        return client_gone()

    async def http(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 400 and exc.__cause__ is not None:  # FastAPI could not parse the body
            return ErrorAnswer(MalformedJson(f"the body is not valid JSON: {parse_problem(exc.__cause__)}", field="body"))
        headers = getattr(exc, "headers", None)
        if exc.status_code == 405:  # Starlette names the methods of the first matching route only
            headers = (headers or {}) | {"Allow": ", ".join(allowed_methods(request))}
        message = (
            f"no route {request.method} {request.url.path}" if exc.status_code == 404 and exc.detail == "Not Found" else str(exc.detail)
        )
        kind = HTTP_ERRORS.get(exc.status_code)
        if kind is None:  # no other status is raised as an HTTPException here; say it as FastAPI would
            return JSONResponse({"error": {"code": "http_error", "message": message, "field": None}}, exc.status_code, headers)
        return ErrorAnswer(kind(message, field="body" if exc.status_code == 413 else None), headers)

    return {ThoughtvecError: domain, RequestValidationError: validation, ClientGone: gone, StarletteHTTPException: http}


def answer_to(exc: Exception, settings: Settings) -> Response | None:
    """The answer the app's handlers give ``exc`` where they answer it without the request: a domain error, or a
    client that left; None for any other."""
    if isinstance(exc, ThoughtvecError):
        return domain_error(exc, settings.retry_after_s)
    if isinstance(exc, ClientGone):
        return client_gone()
    return None


def allowed_methods(request: Request) -> list[str]:
    """Every method some route takes at this path (Starlette's 405 names only the first route's)."""
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
    if isinstance(cause, ValueError) and "digits" in str(cause):  # Python's limit on integer text, with its hint
        return "a number has too many digits"
    return "it cannot be read as JSON"


def internal_error(scope: Scope) -> ErrorAnswer:
    """Log the exception being handled under a fresh request id; the 500 that names that id (the door's answer to
    whatever escapes the routes and handlers: the process and every other request go on)."""
    rid = uuid.uuid4().hex[:16]
    # %r: a path with odd characters is escaped, never a second error inside logging
    log.exception("request %s: %s %r failed", rid, scope.get("method"), scope.get("path"))
    problem = ThoughtvecError(f"unexpected server error; the log has the details under request id {rid}")
    return ErrorAnswer(problem, headers={"X-Request-Id": rid}, request_id=rid)


def json_bytes(payload: Any) -> bytes:
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
