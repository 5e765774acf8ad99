"""The door: the one ASGI middleware every HTTP request passes before anything answers it (``app.add_middleware``).

For each request, in this order:

1. the clock starts (``thoughtvec_requests_total`` and ``thoughtvec_request_seconds`` count every answer, a 401 or
   a 413 included, labelled with the route's template), and where tracing is on (``otlp_endpoint``) the request's
   trace, whose parse stage is the body's reading and checking below (``thoughtvec.service.core.tracing``);
2. the request rules (``thoughtvec.service.http.rules``): the body limit by ``Content-Length`` before reading;
   then access, by the route and method the request resolves to (:class:`RouteTable`, in the router's order);
3. a body is read whole, within the limit (a chunked one is counted as it streams in), and a JSON body is held
   to its route's shape and the JSON limits (``thoughtvec.service.http.bodies``), handing the event loop back as
   it goes: a body that would cost much to refuse is refused before anything parses it;
4. a route marked for the express lane is answered there (``thoughtvec.service.http.transport``); every other
   request goes on to the app, FastAPI's router and handlers, with the body given again as it came;
5. a domain error raised on the way is answered as the app's handlers answer it, anything else escaping is a JSON
   500 with a request id that the log carries too (``error_answers.internal_error``);
6. after a request that moved a megabyte or more, freed memory goes back to the system (``core/memory.py``).

CORS, where configured, is Starlette's middleware around the door: a preflight is answered there, and every
answer, a 500 included, carries its headers.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from starlette.routing import get_route_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from thoughtvec.service.core import tracing
from thoughtvec.service.core.memory import Trimmer
from thoughtvec.service.core.metrics import Metrics
from thoughtvec.service.errors import BodyTooLarge
from thoughtvec.service.http.bodies import JsonLimits, Shape, check, endpoint_body, shape_of
from thoughtvec.service.http.disconnect import ClientGone
from thoughtvec.service.http.error_answers import answer_to, internal_error
from thoughtvec.service.http.rules import Access, AccessTable, RequestRules, routes_of
from thoughtvec.service.http.transport import ExpressLane
from thoughtvec.service.settings import Settings

BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True)
class RouteRule:
    """What the door knows of one route and method: its template (the metrics' label), who may call it, and the
    shape of its JSON body (``None``: no body, or one of any keys)."""

    template: str
    access: Access
    body: Shape | None


UNMATCHED = RouteRule("unmatched", Access.key, None)  # a 404 or 405 to come: a key, as any ``key`` route


class RouteTable:
    """Each route's :class:`RouteRule` per method, found as the router finds routes: a path without parameters by a
    table, the others by their patterns in the router's order."""

    def __init__(self, routes: list[Any], access: AccessTable):
        self.static: dict[tuple[str, str], RouteRule] = {}
        self.patterns: list[tuple[Any, dict[str, RouteRule]]] = []
        for route in routes_of(routes):
            rules = {m: RouteRule(route.path_format, access[m, route.path_format], _body_shape(route)) for m in sorted(route.methods or ())}
            if route.param_convertors:
                self.patterns.append((route.path_regex, rules))
            else:
                for method, rule in rules.items():
                    self.static.setdefault((method, route.path_format), rule)

    def find(self, method: str, path: str) -> RouteRule:
        rule = self.static.get((method, path))
        if rule is not None:
            return rule
        for pattern, rules in self.patterns:
            if method in rules and pattern.match(path):
                return rules[method]
        return UNMATCHED


def _body_shape(route: Any) -> Shape | None:
    """The shape of ``route``'s JSON body, from its endpoint's signature."""
    if not isinstance(route, APIRoute):
        return None
    body = endpoint_body(route.endpoint)
    return None if body is None else shape_of(body[1])


class Door:
    """The app's one ASGI middleware; see the module's docstring. ``app`` is what comes after it (FastAPI's
    exception handling and router), ``api`` the FastAPI app, whose routes it reads at the first request."""

    def __init__(self, app: ASGIApp, api: FastAPI, rules: RequestRules, access: AccessTable, metrics: Metrics, settings: Settings):
        self.app = app
        self.rules = rules
        self.metrics = metrics
        self.settings = settings
        self.limits = JsonLimits.of(settings)
        self.table = RouteTable(api.routes, access)
        self.express = ExpressLane(routes_of(api.routes))
        self.trimmer = Trimmer()
        api.state.door = self  # for the tests and tools that look at what the door knows

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # the lifespan, a websocket
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 0  # 0 until the answer starts
        rule = UNMATCHED
        length = self.rules.declared_length(scope)
        moved = length or 0  # the body's bytes, and the answer's as they go

        async def sent(message: Message) -> None:
            nonlocal status, moved
            if message["type"] == "http.response.start":
                status = message["status"]
            else:
                moved += len(message.get("body", b""))
            await send(message)

        trace = tracing.begin(scope["method"], scope["path"], scope["headers"], start) if tracing.ENABLED else None
        try:
            rule = self.table.find(scope["method"], get_route_path(scope))
            await self.answer(scope, receive, sent, rule, length, trace)
        except Exception as exc:
            if status:  # the answer has started: it cannot change (uvicorn ends the connection)
                raise
            answer = answer_to(exc, self.settings) or internal_error(scope)
            await answer(scope, receive, sent)
        finally:
            end = time.perf_counter()
            self.metrics.request_done(rule.template, scope["method"], status or 500, end - start)
            if trace is not None:
                trace.finish(rule.template, status or 500, end)
            self.trimmer.after(moved)  # a large request's buffers go back to the system

    async def answer(
        self, scope: Scope, receive: Receive, send: Send, rule: RouteRule, length: int | None, trace: tracing.RequestTrace | None = None
    ) -> None:
        rules = self.rules
        if (problem := rules.too_large(length)) is not None:
            await problem(scope, receive, send)
            return
        if rules.guarded and (refusal := rules.refusal(rule.access, scope)) is not None:
            await refusal(scope, receive, send)
            return
        if scope["method"] not in BODY_METHODS:
            await self.app(scope, receive, send)
            return
        if trace is not None:
            trace.reading()
        raw = await self.read_body(receive, length)
        json_body = _json_content(scope)
        if json_body:
            await self.check(raw, rule.body)
        if trace is not None:
            trace.parsed()
        if json_body and (call := self.express.calls.get((scope["method"], scope["path"]))) is not None and not scope.get("root_path"):
            if await self.express.answer(call, scope, receive, send, raw):
                return
        await self.app(scope, _replay(raw, receive), send)

    async def read_body(self, receive: Receive, declared: int | None) -> bytes:
        """The whole body, from its ``http.request`` messages: within the limit as it streams in, whatever its
        ``Content-Length`` said. A client gone before its end raises :class:`ClientGone`."""
        limit = self.rules.max_body_bytes
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                raise ClientGone()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge(f"the request body is larger than {limit} bytes (the limit, max_body_bytes)", field="body")
            chunks.append(chunk)
            if not message.get("more_body", False):
                return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    async def check(self, raw: bytes, shape: Shape | None) -> None:
        """Hold ``raw`` to ``shape`` and the JSON limits (``bodies.check``), a turn of the event loop between two
        slices of a large body's walk."""
        for _ in check(raw, self.limits, shape):
            await asyncio.sleep(0)


def _json_content(scope: Scope) -> bool:
    for name, value in scope["headers"]:
        if name == b"content-type":
            kind = value.split(b";", 1)[0].strip().lower()
            return kind == b"application/json" or kind.endswith(b"+json")
    return False


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` with the body, already read, given again first."""
    pending = [{"type": "http.request", "body": body, "more_body": False}]

    async def replayed() -> Message:
        return pending.pop() if pending else await receive()

    return replayed
