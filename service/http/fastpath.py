"""``POST /v1/embeddings`` without FastAPI's per-request machinery, for the requests that need none of it.

A one-sentence request costs the server more in routing, dependency solving and the framework's
middleware than in its share of the batch (issue 16). This ASGI layer sits inside our middleware
(metrics, CORS, body limit, API keys, catch-all: all still apply) and answers a well-formed
embeddings request itself: the body is validated by the same ``EmbeddingsRequest`` (pydantic's
JSON parser) and answered by the same ``answer`` as the route, errors by the same error table.
Anything else (another path, a body without Content-Length, a body that does not validate) goes
on to FastAPI untouched, with the body replayed, so its answer, error messages included, is the
route's.
"""

from __future__ import annotations

from pydantic import ValidationError
from starlette.requests import Request
from starlette.routing import BaseRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.core.engine import Core
from service.errors import ThoughtvecError
from service.http.middleware import ClientGone, client_gone, domain_error
from service.http.routes.embeddings import answer
from service.http.schemas import EmbeddingsRequest

PATH = "/v1/embeddings"


def _is_json_with_length(scope: Scope) -> bool:
    json_type = has_length = False
    for name, value in scope["headers"]:
        if name == b"content-type":
            json_type = value.split(b";", 1)[0].strip().lower() == b"application/json"
        elif name == b"content-length":
            has_length = True
    return json_type and has_length


class EmbeddingsFastPath:
    def __init__(self, app: ASGIApp, core: Core, route: BaseRoute, retry_after_s: int):
        self.app = app
        self.core = core
        self.route = route  # what the metrics label the request with, as if the router had matched it
        self.retry_after_s = retry_after_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != PATH or scope["method"] != "POST" or not _is_json_with_length(scope):
            await self.app(scope, receive, send)
            return
        messages: list[Message] = []
        while True:  # the body (the body limit is enforced by the middleware outside, by Content-Length)
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request" or not message.get("more_body", False):
                break
        try:
            if message["type"] != "http.request":
                raise ValueError("no body")
            body = EmbeddingsRequest.model_validate_json(b"".join(m.get("body", b"") for m in messages))
        except (ValidationError, ValueError):
            await self.app(scope, _replay(messages, receive), send)  # FastAPI answers, in its words
            return
        scope["route"] = self.route
        try:
            response = await answer(self.core, body, Request(scope, receive))
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
