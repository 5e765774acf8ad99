"""``POST /v1/embeddings`` without FastAPI's routing, for the requests that need none of it.

A one-sentence request costs the server more in HTTP plumbing than in its share of the batch.
:class:`EmbeddingsFastPath` is an ASGI middleware *inside* the request rules (``rules.py``: keys,
body limit, CORS) and the metrics and catch-all middleware, so every rule has been applied before it
sees a request; it re-states none. What it skips is FastAPI's routing, dependency solving and
request parsing: a JSON body with a ``Content-Length`` is validated by the route's own
``EmbeddingsRequest`` (pydantic's JSON parser) and answered by the route's own ``answer``, errors by
the one error table. Anything else (a chunked body, another content type, a body that does not
validate) goes on to FastAPI with its body, so its answer, error messages included, is the route's.
"""

from __future__ import annotations

from functools import partial

from pydantic import ValidationError
from starlette.requests import Request
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from thoughtvec.service.core.embedding import EmbeddingService
from thoughtvec.service.errors import ThoughtvecError
from thoughtvec.service.http.middleware import ClientGone, client_gone, domain_error, unless_disconnected
from thoughtvec.service.http.routes.embeddings import answer
from thoughtvec.service.http.schemas import EmbeddingsRequest

PATH = "/v1/embeddings"


def parse(body: bytes) -> EmbeddingsRequest | None:
    """The request, or None when it does not validate (FastAPI then answers, in its words)."""
    try:
        return EmbeddingsRequest.model_validate_json(body)
    except (ValidationError, ValueError):
        return None


def _json_with_length(scope: Scope) -> bool:
    """A JSON body of declared length: the requests this path takes (a chunked one streams: the route reads it)."""
    json_type = has_length = False
    for name, value in scope["headers"]:
        if name == b"content-type":
            json_type = value.split(b";", 1)[0].strip().lower() == b"application/json"
        elif name == b"content-length":
            has_length = True
    return json_type and has_length


class EmbeddingsFastPath:
    def __init__(self, app: ASGIApp, embedding: EmbeddingService, route: BaseRoute, retry_after_s: int):
        self.app = app
        self.embedding = embedding
        self.route = route  # what the metrics label the request with, as if the router had matched it
        self.retry_after_s = retry_after_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != PATH or scope["method"] != "POST" or not _json_with_length(scope):
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        while True:  # the body, through the body limit's receive
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request" or not message.get("more_body", False):
                break
        request = parse(b"".join(m.get("body", b"") for m in messages)) if message["type"] == "http.request" else None
        if request is None:
            await self.app(scope, _replay(messages, receive), send)  # FastAPI answers, in its words
            return
        scope["route"] = self.route
        try:
            response = await answer(self.embedding, request, partial(unless_disconnected, Request(scope, receive)))
        except ThoughtvecError as e:
            response = domain_error(e, self.retry_after_s)
        except ClientGone:
            response = client_gone()
        await response(scope, receive, send)


def _replay(messages: list[Message], receive: Receive) -> Receive:
    pending = list(messages)

    async def replayed() -> Message:
        return pending.pop(0) if pending else await receive()

    return replayed
