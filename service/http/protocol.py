"""uvicorn's httptools protocol, answering plain ``POST /v1/embeddings`` requests without ASGI.

Profiled under a flood of one-sentence requests (issue 16), the event loop spent more on the ASGI
plumbing around a request (uvicorn's send/receive messages, FastAPI's and Starlette's layers, our
middleware, a watcher task per request for disconnects) than on admitting, tokenizing and answering
it. For a request :class:`thoughtvec.service.http.fastpath.Shortcut` takes, this protocol skips all of that:
uvicorn still parses the request, queues pipelined ones, keeps connections alive and tracks the task
for a graceful shutdown; the task it starts reads the body from uvicorn's request cycle, validates it
as the route does, answers with the route's answer and writes the response bytes itself. The
request is counted in the metrics as the middleware would count it; a client that disconnects has
its work cancelled by :meth:`connection_lost`. A body that does not validate is handed, still
buffered in the cycle, to the ASGI app, which answers it as it answers any request.

This leans on uvicorn's ``HttpToolsProtocol`` internals (``_start_asgi_task`` and the cycle's
fields), so :func:`available` checks them, ``thoughtvec serve`` falls back to plain uvicorn when they
are missing, and ``tests/service/http/test_protocol.py`` runs the real server through every case.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from typing import Any

from starlette.responses import Response
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol, RequestResponseCycle
from uvicorn.protocols.utils import get_client_addr, get_path_with_query_string

from thoughtvec.service.http.fastpath import PATH, Shortcut, parse
from thoughtvec.service.http.middleware import client_gone, internal_error

log = logging.getLogger(__name__)
_CYCLE_FIELDS = ("body", "more_body", "message_event", "disconnected", "keep_alive", "flow", "transport", "on_response", "default_headers")


def available() -> str | None:
    """None when the installed uvicorn has what this protocol relies on; else why not."""
    if not callable(getattr(HttpToolsProtocol, "_start_asgi_task", None)):
        return "uvicorn's HttpToolsProtocol has no _start_asgi_task"
    probe = RequestResponseCycle.__init__.__code__.co_names
    missing = [f for f in _CYCLE_FIELDS if f not in probe]
    return f"uvicorn's RequestResponseCycle lacks {', '.join(missing)}" if missing else None


class EmbeddingsProtocol(HttpToolsProtocol):
    """``HttpToolsProtocol`` whose plain embeddings requests never become ASGI calls."""

    def __init__(self, config: Any, server_state: Any, app_state: dict[str, Any], _loop: asyncio.AbstractEventLoop | None = None):
        super().__init__(config, server_state, app_state, _loop)
        self.shortcut: Shortcut | None = getattr(getattr(config.app, "state", None), "shortcut", None)
        self.working: asyncio.Task | None = None  # this connection's task while it waits for the model

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: Any) -> None:
        if app is not self.app or self.shortcut is None or not self.shortcut.takes(_scope(cycle)):
            super()._start_asgi_task(cycle, app)  # uvicorn's 503 under limit_concurrency, or anything else
            return
        coro = self._answer(cycle, self.shortcut)
        task = (
            self.loop.create_task(coro, context=contextvars.Context())
            if getattr(self.config, "reset_contextvars", False)
            else self.loop.create_task(coro)
        )
        task.add_done_callback(self.tasks.discard)
        self.tasks.add(task)

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        if self.working is not None:  # nobody will read the answer: drop the request's queued sentences
            self.working.cancel()

    async def _answer(self, cycle: RequestResponseCycle, shortcut: Shortcut) -> None:
        start = time.perf_counter()
        try:
            while cycle.more_body and not cycle.disconnected:  # the body, as the cycle's receive() reads it
                cycle.flow.resume_reading()
                await cycle.message_event.wait()
                cycle.message_event.clear()
            if cycle.disconnected:
                shortcut.metrics.request_done(PATH, "POST", 499, time.perf_counter() - start)
                return
            request = parse(bytes(cycle.body))
            if request is None:
                cycle.message_event.set()  # receive() hands the buffered body to the app
                await cycle.run_asgi(self.app)
                return
            response = await self._respond(cycle, shortcut, request)
            if cycle.flow.write_paused and not cycle.disconnected:
                await cycle.flow.drain()
            if not cycle.disconnected:
                _write(cycle, response)
            shortcut.metrics.request_done(PATH, "POST", response.status_code, time.perf_counter() - start)
        except Exception:  # a defect here: logged, and the client is not left waiting
            if not cycle.response_complete and not cycle.disconnected:
                _write(cycle, internal_error(_scope(cycle)))
            else:
                log.exception("embeddings request failed after its answer")
                cycle.transport.close()
        finally:
            cycle.on_response = _nothing  # as run_asgi leaves it: a late callback cannot start another request

    async def _respond(self, cycle: RequestResponseCycle, shortcut: Shortcut, request: Any) -> Response:
        task = asyncio.current_task()
        self.working = task
        try:
            return await shortcut.respond(request)
        except asyncio.CancelledError:
            if not cycle.disconnected or task is None:  # a shutdown, not our client leaving
                raise
            task.uncancel()
            return client_gone()
        except Exception:  # noqa: BLE001 - what CatchAllMiddleware does for the ASGI way: logged, a 500 with its id
            return internal_error(_scope(cycle))
        finally:
            self.working = None


def _write(cycle: RequestResponseCycle, response: Response) -> None:
    """Status line, uvicorn's default headers, the response's, and the body: one write."""
    if cycle.access_log:
        scope = cycle.scope
        cycle.access_logger.info(
            '%s - "%s %s HTTP/%s" %d',
            get_client_addr(scope),
            scope["method"],
            get_path_with_query_string(scope),
            scope["http_version"],
            response.status_code,
        )
    out: list[bytes] = [STATUS_LINE[response.status_code]]
    for name, value in (*cycle.default_headers, *response.raw_headers):
        out += (name, b": ", bytes(value), b"\r\n")
    if not cycle.keep_alive:
        out.append(b"connection: close\r\n")
    out += (b"\r\n", bytes(response.body))  # bytes already: no copy
    cycle.transport.write(b"".join(out))
    cycle.response_started = cycle.response_complete = True
    cycle.message_event.set()
    if not cycle.keep_alive:
        cycle.transport.close()
    cycle.on_response()


def _scope(cycle: RequestResponseCycle) -> dict[str, Any]:
    return cycle.scope  # type: ignore[return-value]  # uvicorn's HTTPScope TypedDict is the ASGI scope Starlette types as a mapping


def _nothing() -> None:
    pass
