"""The rules every request passes, whichever way it is answered: who may call which route, the body limit
and CORS. Each is defined here once.

The door (``thoughtvec.service.http.door``), the app's one middleware, applies them to every request before
anything answers it, so no way in can skip one. Outermost first:

* CORS (``cors_origins``), Starlette's middleware around the door: a preflight is answered there; every answer, errors included, carries the
  CORS headers, so a page can read a 401 or a 413;
* the body limit (``max_body_bytes``): 413 by ``Content-Length`` before reading, or while the body
  streams in;
* access (``api_keys``, ``admin_keys``): each route and method is :class:`Access` ``open``, ``key`` or
  ``admin`` in one table beside the routes (``thoughtvec.service.http.routes.ACCESS``). With API keys
  set, a ``key`` or ``admin`` route answers 401 without a valid ``Authorization: Bearer`` key (admin
  keys are API keys too); with admin keys set, an ``admin`` route answers 401 without a key and 403
  with a key that is not an admin's. A request that matches no route (a 404 or 405 to come) needs a
  key like any ``key`` route. The app does not start while a route it serves has no entry, or an
  entry names no route: a route cannot be added open by accident.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from starlette.routing import BaseRoute
from starlette.types import Scope

from thoughtvec.service.errors import BodyTooLarge, Forbidden, ThoughtvecError, Unauthorized
from thoughtvec.service.http.error_answers import ErrorAnswer, domain_error
from thoughtvec.service.settings import Settings

CORS_METHODS = ("GET", "POST", "DELETE")
CORS_HEADERS = ("Authorization", "Content-Type")


class Access(StrEnum):
    """Who may call a route (with a method)."""

    open = "open"  # anyone, with or without a key
    key = "key"  # an API key, where api_keys are set
    admin = "admin"  # an admin key, where admin_keys are set (else as ``key``)


# (method, path as the route declares it) -> who may call it
AccessTable = Mapping[tuple[str, str], Access]


def routes_of(routes: list) -> list:
    """Every route with a path, including those of included routers (FastAPI >= 0.165 wraps them)."""
    out = []
    for r in routes:
        inner = getattr(r, "original_router", None)
        out.extend(routes_of(inner.routes) if inner is not None else [r] if hasattr(r, "path") else [])
    return out


def check_access_table(routes: list[BaseRoute], table: AccessTable) -> None:
    """``ValueError`` naming every route and method the table leaves out, and every entry that names no route."""
    served = [(r, sorted(getattr(r, "methods", None) or ())) for r in routes_of(routes)]
    pairs = {(m, r.path_format) for r, methods in served for m in methods}
    missing, unknown = sorted(pairs - set(table)), sorted(set(table) - pairs)
    if missing or unknown:
        raise ValueError(
            "the access table (thoughtvec.service.http.routes.ACCESS) must name every route and method served, and only those: "
            f"not in it: {', '.join(f'{m} {p}' for m, p in missing) or 'none'}; "
            f"in it but not served: {', '.join(f'{m} {p}' for m, p in unknown) or 'none'}"
        )


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

    @property
    def guarded(self) -> bool:
        """Whether any route needs a key (else :meth:`refusal` is always None)."""
        return bool(self.keys or self.admin_keys)

    # -- the body limit ------------------------------------------------------------------------
    @staticmethod
    def declared_length(scope: Scope) -> int | None:
        """The body's ``Content-Length``; None for a chunked body (or an unreadable length: counted as it comes)."""
        for name, value in scope["headers"]:
            if name == b"content-length":
                return int(value) if value.isdigit() else None
        return None

    def too_large(self, length: int | None) -> ErrorAnswer | None:
        """The 413 for a declared length over the limit, before a byte of the body is read."""
        if length is None or length <= self.max_body_bytes:
            return None
        return domain_error(
            BodyTooLarge(f"the request body has {length} bytes; the limit is {self.max_body_bytes} (max_body_bytes)", field="body")
        )

    # -- access ----------------------------------------------------------------------------------
    def refusal(self, access: Access, scope: Scope) -> ErrorAnswer | None:
        """The 401 or 403 for a request to a route of ``access`` with the key it carries; None: it may come."""
        problem = self.refused(access, bearer_token(scope))
        return None if problem is None else domain_error(problem)

    def refused(self, access: Access, token: bytes | None) -> ThoughtvecError | None:
        if access is Access.open:
            return None
        if self.keys:  # API keys on: every route not open needs one (admin keys are among them)
            if token is None:
                return Unauthorized("missing Authorization: Bearer <key> header", field="Authorization")
            if not key_matches(token, self.keys):
                return Unauthorized("the API key is not valid", field="Authorization")
        if access is Access.admin and self.admin_keys:
            if token is None:
                return Unauthorized("index writes need an admin key: Authorization: Bearer <admin key>", field="Authorization")
            if not key_matches(token, self.admin_keys):
                return Forbidden("this key may not write indexes; use an admin key", field="Authorization")
        return None


def bearer_token(scope: Scope) -> bytes | None:
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = value.partition(b" ")
            return token.strip() if scheme.lower() == b"bearer" and token.strip() else None
    return None


def key_matches(token: bytes, keys: tuple[bytes, ...]) -> bool:
    # compare_digest against every key: the time taken does not reveal which key came close
    return any([hmac.compare_digest(token, k) for k in keys])
