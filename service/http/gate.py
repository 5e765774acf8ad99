"""The one entrance: every HTTP request passes :class:`Gate`, one ASGI layer, before anything answers it.

For each request, in this order:

1. the clock starts (``thoughtvec_requests_total`` and ``thoughtvec_request_seconds`` count every answer, a
   401 or a 413 included, with the route's template as its label);
2. the request rules (``thoughtvec.service.http.rules``): the body limit, by ``Content-Length`` before reading
   or while a chunked body streams in; then access, by the route and method the request resolves to;
3. the route answers. A route of the plain shape (``routes.deps.JsonRoute``) whose path has no parameters is
   found in a table by its method and path and called directly; every other request goes to FastAPI's exception
   handling and router, as a FastAPI app's routes always do;
4. an exception becomes the answer the app's exception handlers give (the domain errors, validation, a client
   that left: ``middleware.install_error_handlers``), whichever way the route was reached; anything else is a
   JSON 500 with a request id that the log carries too (:func:`middleware.internal_error`).

CORS, where configured, is Starlette's middleware around the gate: a preflight is answered there, and every
answer, a 500 included, carries its headers. The gate replaces the middleware stack FastAPI builds (its
server-error, telemetry and body-limit layers and one layer per rule, each wrapping ``send``): a small
request's cost was mostly those layers.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from starlette.middleware.cors import CORSMiddleware
from starlette.middleware.exceptions import ExceptionMiddleware
from starlette.routing import BaseRoute, Match, get_route_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from thoughtvec.service.core.metrics import Metrics
from thoughtvec.service.http.middleware import internal_error
from thoughtvec.service.http.routes.deps import FileStack
from thoughtvec.service.http.rules import CORS_HEADERS, CORS_METHODS, Access, AccessTable, RequestRules, access_matcher, routes_of

Handler = Callable[[Request, Exception], Any]


class Gate:
    """The app's whole middleware stack (``ServiceApp.build_middleware_stack``); see the module's docstring."""

    def __init__(self, app: FastAPI, rules: RequestRules, table: AccessTable, metrics: Metrics):
        self.rules = rules
        self.metrics = metrics
        self.matcher = access_matcher(app.routes, table)  # ValueError where the table and the routes differ
        self.handlers: dict[Any, Handler] = {k: v for k, v in app.exception_handlers.items() if isinstance(k, type)}
        # FastAPI's own inner layers: its exception handling (the same handlers) and a file stack per request
        self.standard: ASGIApp = ExceptionMiddleware(FileStack(app.router), handlers=self.handlers, debug=app.debug)
        self.direct = direct_table(app.router.routes, table)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # the lifespan, a websocket
            await self.standard(scope, receive, send)
            return
        start = time.perf_counter()
        status = 0  # 0 until the answer starts

        async def sent(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.answer(scope, receive, sent)
        except Exception:
            if status:  # the answer has started: it cannot change (uvicorn ends the connection)
                raise
            status = 500
            await internal_error(scope)(scope, receive, send)
        finally:
            route = scope.get("route")
            self.metrics.request_done(
                getattr(route, "path", None) or "unmatched", scope["method"], status or 500, time.perf_counter() - start
            )

    async def answer(self, scope: Scope, receive: Receive, send: Send) -> None:
        rules = self.rules
        length = rules.declared_length(scope)
        if (problem := rules.too_large(length)) is not None:
            await problem(scope, receive, send)
            return
        if length is None:  # chunked: counted as it streams in
            receive = rules.limited(receive)
        method = scope["method"]
        hit = self.direct.get((method, get_route_path(scope)))
        if rules.guarded:  # without keys every route may be called: no lookup
            access = hit[1] if hit is not None else self.access(scope, method)
            if (refusal := rules.refusal(access, scope)) is not None:
                await refusal(scope, receive, send)
                return
        if hit is None:
            await self.standard(scope, receive, send)
            return
        route = hit[0]
        scope["route"], scope["endpoint"], scope["path_params"] = route, route.endpoint, {}
        try:
            await route.app(scope, receive, send)
        except Exception as exc:
            handler = next((self.handlers[c] for c in type(exc).__mro__ if c in self.handlers), None)
            if handler is None:
                raise
            response = await handler(Request(scope, receive), exc)
            await response(scope, receive, send)

    def access(self, scope: Scope, method: str) -> Access:
        """The first route whose path and method match, as the router will pick it; none: a 404 or 405 to come."""
        path = get_route_path(scope)
        for pattern, methods in self.matcher:
            if method in methods and pattern.match(path):
                return methods[method]
        return Access.key


def direct_table(routes: list[BaseRoute], table: AccessTable) -> dict[tuple[str, str], tuple[Any, Access]]:
    """(method, path) -> (route, its access) for each route the gate calls directly: a ``JsonRoute`` of the plain
    shape whose path has no parameters, and which the router would pick for that method and path (no route
    before it matches them)."""
    flat = routes_of(routes)
    out: dict[tuple[str, str], tuple[Any, Access]] = {}
    for i, route in enumerate(flat):
        if not getattr(route, "direct", False) or route.param_convertors:
            continue
        for method in sorted(route.methods or ()):
            probe = {"type": "http", "path": route.path, "root_path": "", "method": method}
            if not any(r.matches(probe)[0] is Match.FULL for r in flat[:i]):
                out[method, route.path] = (route, table[method, route.path])
    return out


class ServiceApp(FastAPI):
    """FastAPI whose middleware stack is a :class:`Gate`, with CORS around it where configured (``install_gate``)."""

    gate: Callable[[], ASGIApp] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.root_path:  # the lifespan (FastAPI's telemetry hooks are off), a websocket
            await super().__call__(scope, receive, send)
            return
        scope["app"] = self  # what Starlette's own __call__ does for a request
        if self.middleware_stack is None:
            self.middleware_stack = self.build_middleware_stack()
        await self.middleware_stack(scope, receive, send)

    def build_middleware_stack(self) -> ASGIApp:  # at the first request, once every handler is registered
        if self.gate is None:
            raise RuntimeError("ServiceApp serves through its gate: call install_gate first")
        return self.gate()


def install_gate(app: ServiceApp, rules: RequestRules, table: AccessTable, metrics: Metrics) -> None:
    """Make the gate ``app``'s stack. ``table`` is checked against the routes now (``ValueError``): an app whose
    routes and access table differ does not start."""
    access_matcher(app.routes, table)

    def gate() -> ASGIApp:
        inner = Gate(app, rules, table, metrics)
        if not rules.cors_origins:
            return inner
        return CORSMiddleware(
            inner, allow_origins=list(rules.cors_origins), allow_methods=list(CORS_METHODS), allow_headers=list(CORS_HEADERS)
        )

    app.gate = gate
