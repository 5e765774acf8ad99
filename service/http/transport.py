"""The speed tricks below the routes, in one module: everything here leans on how uvicorn, FastAPI or Starlette
work inside, and nothing above it does. ``tests/service/http/test_transport.py`` fails, naming what changed,
when a release of one of them moves what this module relies on (:data:`RELIES_ON`).

Two tricks, each measured (docs/BENCHMARKS.md, "What each step of a request costs"):

* **One write an answer** (:func:`http_protocol`). uvicorn writes a response's status line and headers on
  ``http.response.start`` and its body on ``http.response.body``: two writes, two TCP segments (the socket has
  ``TCP_NODELAY``) and two system calls for every small answer. :class:`HeadHeldTransport` holds a head until the
  next write and sends the two together; a head that nothing follows in the same turn of the event loop (a
  streamed answer that waits, ``100 Continue``) goes out at the end of that turn. The same protocol answers an
  HTTP request the parser refuses (``Content-Length: -1``) in the API's JSON error shape instead of uvicorn's
  plain text.
* **The express lane** (:class:`ExpressLane`, routes marked :func:`express`). FastAPI's request handler decodes a
  body with ``json``, validates the objects, and solves the endpoint's dependencies inside two exit stacks, for
  every request: for a one-sentence embedding that is most of what the server spends beyond the model. The lane
  calls a marked endpoint itself: its body validated once from the bytes (pydantic's JSON parser), its
  dependencies (each an ``async`` function of the request alone) called in order. A body that does not validate
  goes through FastAPI's handler, so that its errors are FastAPI's, word for word (so does every request while
  dependency overrides are set). The endpoint is the same
  function FastAPI calls: a marked route answers the same either way (``test_transport.py`` holds every example
  request to that).
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import json
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from fastapi import Request, Response, params
from fastapi.routing import APIRoute
from pydantic import TypeAdapter, ValidationError
from starlette.types import Receive, Scope, Send

from thoughtvec.service.core import tracing
from thoughtvec.service.http.bodies import endpoint_body

E = TypeVar("E", bound=Callable[..., Awaitable[Response]])

# What this module relies on inside the libraries below it (tests/service/http/test_transport.py checks each):
RELIES_ON = ("uvicorn.protocols.http.httptools_impl.HttpToolsProtocol: connection_made(transport) and send_400_response(msg)",)

# A body larger than this is not copied onto its head: one more system call costs less than the copy.
MERGE_LIMIT = 64 * 1024


# -- the express lane -------------------------------------------------------------------------------------------
def express(endpoint: E) -> E:
    """Mark a route's endpoint for the express lane (see the module's docstring). It must take one body, may take
    the ``Request`` and dependencies that read only the request, and must return a ``Response``: :class:`ExpressLane`
    checks this when the app starts."""
    endpoint.__express__ = True  # type: ignore[attr-defined]
    return endpoint


@dataclass(frozen=True)
class _Call:
    route: APIRoute
    body: TypeAdapter  # the body's type, validated from JSON bytes
    body_name: str
    request_name: str | None
    dependencies: tuple[tuple[str, Callable[[Request], Awaitable[Any]]], ...]


class ExpressLane:
    """The marked routes by method and path (none has path parameters), and how to call each."""

    def __init__(self, routes: list[Any]):
        self.calls: dict[tuple[str, str], _Call] = {}
        for route in routes:
            if isinstance(route, APIRoute) and getattr(route.endpoint, "__express__", False):
                call = _call_of(route)
                for method in route.methods or ():
                    self.calls.setdefault((method, route.path), call)

    async def answer(self, call: _Call, scope: Scope, receive: Receive, send: Send, raw: bytes) -> bool:
        """Answer a request for the marked route of ``call`` (``calls[method, path]``) whose JSON body ``raw`` has been
        read; False, having sent nothing, where the body does not validate (FastAPI's handler answers it then, with
        its own words). What the endpoint raises is raised."""
        if scope["app"].dependency_overrides:  # a test's stand-ins: FastAPI's handler knows them
            return False
        try:
            body = call.body.validate_json(raw)
        except ValidationError:
            return False
        if tracing.ENABLED and (trace := tracing.current()) is not None:
            trace.parsed()  # the body validated: the request's parse stage ends here
        scope["route"], scope["endpoint"], scope["path_params"] = call.route, call.route.endpoint, {}
        request = Request(scope, receive, send)
        kwargs: dict[str, Any] = {call.body_name: body}
        if call.request_name is not None:
            kwargs[call.request_name] = request
        for name, dependency in call.dependencies:
            kwargs[name] = await dependency(request)
        response = await call.route.endpoint(**kwargs)
        await response(scope, receive, send)
        return True


def _call_of(route: APIRoute) -> _Call:
    """How the lane calls ``route``'s endpoint; ``TypeError`` naming the route where its shape is not the lane's."""
    endpoint = route.endpoint
    problem = f"the express route {sorted(route.methods or ())} {route.path}"
    if "{" in route.path or not inspect.iscoroutinefunction(endpoint):
        raise TypeError(f"{problem} must be an async endpoint without path parameters")
    hints = typing.get_type_hints(endpoint, include_extras=True)
    answer = hints.get("return")
    if not (inspect.isclass(answer) and issubclass(answer, Response)):
        raise TypeError(f"{problem} must return a Response")
    found = endpoint_body(endpoint)
    if found is None:
        raise TypeError(f"{problem} takes no body")
    body_name, request_name, dependencies = found[0], None, []
    for name in inspect.signature(endpoint).parameters:
        hint = hints[name]
        depends = next((m for m in getattr(hint, "__metadata__", ()) if isinstance(m, params.Depends)), None)
        if hint is Request:
            request_name = name
        elif depends is not None:
            dependency = depends.dependency
            takes = list(inspect.signature(dependency).parameters.values()) if dependency else []
            if not (dependency and inspect.iscoroutinefunction(dependency) and len(takes) == 1):
                raise TypeError(f"{problem}: its dependency {name!r} must be an async function of the request alone")
            dependencies.append((name, dependency))
        elif name != body_name:
            raise TypeError(f"{problem}: {name!r} is neither its body, the request nor a dependency")
    return _Call(route, TypeAdapter(found[1]), body_name, request_name, tuple(dependencies))


# -- one write an answer ---------------------------------------------------------------------------------------
class HeadHeldTransport:
    """A transport that sends a response head (a write of ``HTTP/…`` ending in a blank line) with the next write."""

    __slots__ = ("_transport", "_loop", "_head")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop):
        self._transport = transport
        self._loop = loop
        self._head: bytes | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        head = self._head
        if head is not None:
            self._head = None
            if len(data) <= MERGE_LIMIT:
                self._transport.write(head + bytes(data))
                return
            self._transport.write(head)
        elif data[:5] == b"HTTP/" and data[-4:] == b"\r\n\r\n":
            self._head = bytes(data)
            self._loop.call_soon(self.flush)
            return
        self._transport.write(data)

    def flush(self) -> None:
        """Send a held head now."""
        head, self._head = self._head, None
        if head is not None and not self._transport.is_closing():
            self._transport.write(head)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def pause_reading(self) -> None:
        self._transport.pause_reading()

    def resume_reading(self) -> None:
        self._transport.resume_reading()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return self._transport.get_extra_info(name, default)

    def __getattr__(self, name: str) -> Any:  # the rest of the transport's interface, as it is
        return getattr(self._transport, name)


# What a request that is not HTTP gets: the API's error shape (an error the client's bytes caused, never ours).
MALFORMED = {
    "error": {
        "code": "malformed_http",
        "message": "the request is not valid HTTP/1.1 (its request line, a header or the body's framing: Content-Length "
        "or Transfer-Encoding); the connection is closed",
        "field": None,
    }
}


def malformed_answer() -> bytes:
    """The bytes of the 400 for a request the HTTP parser refuses, connection closed after it."""
    body = json.dumps(MALFORMED, separators=(",", ":")).encode()
    head = b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n\r\n" % len(body)
    return head + body


@functools.cache
def http_protocol() -> type[asyncio.Protocol] | str:
    """The protocol class ``thoughtvec serve`` gives uvicorn: uvicorn's httptools protocol with one write an answer
    and JSON for a malformed request, where uvicorn has it; else uvicorn's own choice (``"auto"``)."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol  # noqa: PLC0415  # optional: uvicorn[standard]
    except ImportError:  # no httptools: uvicorn's h11 protocol, as it is
        return "auto"

    class OneWriteProtocol(HttpToolsProtocol):
        """uvicorn's httptools protocol, its writes through a :class:`HeadHeldTransport`."""

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(HeadHeldTransport(transport, self.loop))  # type: ignore[arg-type]

        def send_400_response(self, msg: str) -> None:
            self.transport.write(malformed_answer())
            self.transport.close()

    OneWriteProtocol.__qualname__ = "OneWriteProtocol"  # pickled by name (module __getattr__): for worker processes
    return OneWriteProtocol


def __getattr__(name: str) -> Any:
    """``OneWriteProtocol`` by name, as pickle looks it up: uvicorn sends its config, protocol class and all, to each
    worker process (``thoughtvec serve --workers``)."""
    if name == "OneWriteProtocol" and not isinstance(http_protocol(), str):
        return http_protocol()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
