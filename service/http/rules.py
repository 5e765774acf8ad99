"""The rules every request passes, whichever way it is answered: API keys, admin keys for index writes,
the body limit and CORS. Each is defined here once.

:meth:`RequestRules.install` puts them around the app as middleware, outside everything that answers
a request (the embeddings fast path and the routes), so no way in can skip one. Outermost first:

* CORS (``cors_origins``): a preflight is answered here; every answer, errors included, carries the
  CORS headers, so a page can read a 401 or a 413;
* the body limit (``max_body_bytes``): 413 by ``Content-Length`` before reading, or while a chunked
  body streams in;
* API keys (``api_keys``; admin keys are API keys too): 401 without a valid ``Authorization: Bearer``
  key, on every path but :data:`OPEN_PATHS` and CORS preflights.

Index writes also need an admin key when ``admin_keys`` is set (:meth:`RequestRules.require_admin`,
a dependency of the write routes): 401 without a key, 403 with a key that is not an admin's.
"""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from thoughtvec.service.errors import BodyTooLarge, Forbidden, Unauthorized
from thoughtvec.service.http.middleware import domain_error
from thoughtvec.service.settings import Settings

OPEN_PATHS = frozenset({"/health", "/"})  # "/": the playground page holds no data; its calls send the key
CORS_METHODS = ("GET", "POST", "DELETE")
CORS_HEADERS = ("Authorization", "Content-Type")


@dataclass(frozen=True)
class RequestRules:
    keys: tuple[bytes, ...]  # any of these may call; empty: no keys, every request may come
    admin_keys: tuple[bytes, ...]  # only these may write indexes; empty: any caller may
    max_body_bytes: int
    cors_origins: tuple[str, ...]  # empty: CORS off

    @classmethod
    def of(cls, settings: Settings) -> RequestRules:
        # admin keys are API keys too; without API keys the server is open and admin keys guard writes alone
        keys = settings.api_keys + settings.admin_keys if settings.api_keys else []
        return cls(
            tuple(k.encode() for k in keys),
            tuple(k.encode() for k in settings.admin_keys),
            settings.max_body_bytes,
            tuple(settings.cors_origins),
        )

    def install(self, app: FastAPI) -> None:
        """Wrap ``app``'s middleware so far in the rules (``add_middleware``: the last added is the outermost)."""
        if self.keys:
            app.add_middleware(AuthMiddleware, keys=self.keys)
        app.add_middleware(BodyLimitMiddleware, limit=self.max_body_bytes)
        if self.cors_origins:
            app.add_middleware(
                CORSMiddleware, allow_origins=list(self.cors_origins), allow_methods=list(CORS_METHODS), allow_headers=list(CORS_HEADERS)
            )

    def require_admin(self, scope: Scope) -> None:
        """Index writes: with admin keys configured, only they may write."""
        if not self.admin_keys:
            return
        token = bearer_token(scope)
        if token is None:
            raise Unauthorized("index writes need an admin key: Authorization: Bearer <admin key>", field="Authorization")
        if not key_matches(token, self.admin_keys):
            raise Forbidden("this key may not write indexes; use an admin key", field="Authorization")


class _BodyTooLargeHTTP(StarletteHTTPException):
    """Raised inside ``receive``; FastAPI re-raises HTTPExceptions from body parsing, so the 413 handler answers."""

    def __init__(self, limit: int):
        super().__init__(413, f"the request body is larger than {limit} bytes (the limit, max_body_bytes)")


class BodyLimitMiddleware:
    """Reject bodies over ``limit`` bytes: by Content-Length before reading, or while streaming chunks."""

    def __init__(self, app: ASGIApp, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope["headers"]:
            if name == b"content-length" and value.isdigit() and int(value) > self.limit:
                exc = BodyTooLarge(f"the request body has {int(value)} bytes; the limit is {self.limit} (max_body_bytes)", field="body")
                await domain_error(exc)(scope, receive, send)
                return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _BodyTooLargeHTTP(self.limit)
            return message

        await self.app(scope, limited, send)


class AuthMiddleware:
    """Bearer API keys on every path but :data:`OPEN_PATHS` (and CORS preflights, which carry no key)."""

    def __init__(self, app: ASGIApp, keys: tuple[bytes, ...]):
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] in OPEN_PATHS or scope["method"] == "OPTIONS":
            await self.app(scope, receive, send)
            return
        token = bearer_token(scope)
        if token is None or not key_matches(token, self.keys):
            problem = "missing Authorization: Bearer <key> header" if token is None else "the API key is not valid"
            await domain_error(Unauthorized(problem, field="Authorization"))(scope, receive, send)
            return
        await self.app(scope, receive, send)


def bearer_token(scope: Scope) -> bytes | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = value.partition(b" ")
            return token.strip() if scheme.lower() == b"bearer" and token.strip() else None
    return None


def key_matches(token: bytes, keys: tuple[bytes, ...]) -> bool:
    # compare_digest against every key: the time taken does not reveal which key came close
    return any([hmac.compare_digest(token, k) for k in keys])
