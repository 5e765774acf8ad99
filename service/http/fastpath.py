"""``POST /v1/embeddings`` without the per-request machinery, for the requests that need none of it.

A one-sentence request costs the server more in HTTP plumbing than in its share of the batch
(issue 16). Two entrances share one answer, :func:`respond`: the body validated by the route's own
``EmbeddingsRequest`` (pydantic's JSON parser), answered by the route's ``answer``, errors by the one
error table. Anything that does not validate goes on to FastAPI with its body, so its answer, error
messages included, is the route's.

* :class:`EmbeddingsFastPath`, an ASGI middleware inside ours (metrics, CORS, body limit, API keys,
  catch-all all apply): it skips FastAPI's routing, dependency solving and inner middleware.
* ``thoughtvec.service.http.protocol.EmbeddingsProtocol``, what ``thoughtvec serve`` runs (setting
  ``fast_protocol``): uvicorn's HTTP protocol answering a plain request before any ASGI exists for
  it. :class:`Shortcut` says which requests it may take, and does for them what the middleware
  would; everything else goes the ASGI way.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import partial

from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from thoughtvec.service.core.engine import Core
from thoughtvec.service.core.results import Encoded
from thoughtvec.service.errors import ThoughtvecError
from thoughtvec.service.http.middleware import (
    ClientGone,
    bearer_token,
    client_gone,
    domain_error,
    key_matches,
    request_keys,
    unless_disconnected,
)
from thoughtvec.service.http.routes.embeddings import answer
from thoughtvec.service.http.schemas import EmbeddingsRequest
from thoughtvec.service.settings import Settings

PATH = "/v1/embeddings"


def parse(body: bytes) -> EmbeddingsRequest | None:
    """The request, or None when it does not validate (FastAPI then answers, in its words)."""
    try:
        return EmbeddingsRequest.model_validate_json(body)
    except (ValidationError, ValueError):
        return None


async def respond(
    core: Core, request: EmbeddingsRequest, guard: Callable[[Awaitable[Encoded]], Awaitable[Encoded]], retry_after_s: int
) -> Response:
    """The route's answer, or its error response: what both entrances send."""
    try:
        return await answer(core, request, guard)
    except ThoughtvecError as e:
        return domain_error(e, retry_after_s)
    except ClientGone:
        return client_gone()


_LOOKED_AT = frozenset({b"content-type", b"content-length", b"expect", b"transfer-encoding", b"origin"})


def _headers(scope: Scope) -> dict[bytes, bytes]:
    """The request headers the fast paths decide on, by (lower-case) name."""
    return {name: value for name, value in scope["headers"] if name in _LOOKED_AT}


def _json_with_length(headers: dict[bytes, bytes]) -> bool:
    json_type = headers.get(b"content-type", b"").split(b";", 1)[0].strip().lower() == b"application/json"
    return json_type and b"content-length" in headers


class EmbeddingsFastPath:
    def __init__(self, app: ASGIApp, core: Core, route: BaseRoute, retry_after_s: int):
        self.app = app
        self.core = core
        self.route = route  # what the metrics label the request with, as if the router had matched it
        self.retry_after_s = retry_after_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != PATH or scope["method"] != "POST" or not _json_with_length(_headers(scope)):
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        while True:  # the body (the body limit is enforced by the middleware outside, by Content-Length)
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request" or not message.get("more_body", False):
                break
        request = parse(b"".join(m.get("body", b"") for m in messages)) if message["type"] == "http.request" else None
        if request is None:
            await self.app(scope, _replay(messages, receive), send)  # FastAPI answers, in its words
            return
        scope["route"] = self.route
        response = await respond(self.core, request, partial(unless_disconnected, Request(scope, receive)), self.retry_after_s)
        await response(scope, receive, send)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed


class Shortcut:
    """Which requests the protocol answers itself, and what it answers them with.

    It takes a ``POST /v1/embeddings`` with a JSON body of declared length within ``max_body_bytes``,
    no ``Expect`` or ``Transfer-Encoding``, a valid key when keys are configured, and no ``Origin``
    when CORS is configured. Everything else (401, 413, CORS, 100-continue, chunked bodies) is left
    to the ASGI stack, whose middleware answers it as it always has.
    """

    def __init__(self, core: Core, settings: Settings):
        self.core = core
        self.metrics = core.metrics
        self.limit = settings.max_body_bytes
        self.keys = [k.encode() for k in request_keys(settings)] or None  # None: no keys, every request may come
        self.cors = bool(settings.cors_origins)
        self.retry_after_s = settings.retry_after_s

    def takes(self, scope: Scope) -> bool:
        if scope["method"] != "POST" or scope["path"] != PATH:
            return False
        headers = _headers(scope)
        if (
            not _json_with_length(headers)
            or b"expect" in headers
            or b"transfer-encoding" in headers
            or (self.cors and b"origin" in headers)
        ):
            return False
        length = headers[b"content-length"]
        if not length.isdigit() or int(length) > self.limit:
            return False
        if self.keys is not None:
            token = bearer_token(scope)
            return token is not None and key_matches(token, self.keys)
        return True

    async def respond(self, request: EmbeddingsRequest) -> Response:
        """The answer; the caller's task is cancelled if its client leaves (nothing to watch here)."""
        return await respond(self.core, request, _as_is, self.retry_after_s)


def _as_is(work: Awaitable[Encoded]) -> Awaitable[Encoded]:
    return work
