"""Work for a request whose client leaves is cancelled: its queued sentences are dropped, nothing is computed for
nobody (:func:`unless_disconnected`)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from starlette.requests import Request

T = TypeVar("T")


class ClientGone(Exception):
    """The client disconnected before the answer was ready."""


async def _disconnected(request: Request) -> None:
    # After the body is read, receive() returns only when the client disconnects (or we answer).
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


# Work done sooner than this is never watched: a watcher task costs a small request more than the work of a client
# that left would (at most this long of it is done for nobody).
WATCH_AFTER_S = 0.05


async def unless_disconnected(request: Request, work: Awaitable[T], watch_after_s: float = WATCH_AFTER_S) -> T:
    """Await ``work``; if the client goes away first, cancel it (its queued sentences are dropped).

    The work runs in the caller's task. After ``watch_after_s``, one watcher task waits for the client to leave
    and cancels that task when it does."""
    caller = asyncio.current_task()
    assert caller is not None  # called from a request's task
    left = False
    watch: asyncio.Future | None = None

    def on_disconnect(done: asyncio.Future) -> None:
        nonlocal left
        if not done.cancelled() and done.exception() is None:
            left = True
            caller.cancel()

    def start_watch() -> None:
        nonlocal watch
        watch = asyncio.ensure_future(_disconnected(request))
        watch.add_done_callback(on_disconnect)

    timer = asyncio.get_running_loop().call_later(watch_after_s, start_watch)
    try:
        return await work
    except asyncio.CancelledError:
        if left and caller.uncancel() == 0:  # cancelled for the client's leaving alone, not by the server
            raise ClientGone() from None
        raise
    finally:
        timer.cancel()
        if watch is not None:
            watch.remove_done_callback(on_disconnect)
            watch.cancel()
