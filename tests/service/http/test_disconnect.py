"""A request whose client leaves is not worked on for nobody (``disconnect.unless_disconnected``)."""

from __future__ import annotations

import asyncio

import pytest
from starlette.requests import Request

from thoughtvec.service.http.disconnect import ClientGone, unless_disconnected


def request_that_leaves(after_s: float | None) -> Request:
    """A request whose body is read; its client disconnects after ``after_s`` seconds (None: never)."""

    async def receive():
        if after_s is None:
            await asyncio.Event().wait()
        await asyncio.sleep(after_s)
        return {"type": "http.disconnect"}

    return Request({"type": "http", "method": "POST", "path": "/", "headers": []}, receive)


def test_the_answer_when_the_client_stays():
    async def main():
        result = await unless_disconnected(request_that_leaves(None), asyncio.sleep(0.01, result="vectors"))
        await asyncio.sleep(0)  # the watcher's cancellation lands
        return result, [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]

    result, others = asyncio.run(main())
    assert result == "vectors"
    assert others == []  # the watcher is gone with the request


def test_the_work_is_cancelled_when_the_client_leaves():
    cancelled = asyncio.Event()

    async def work():
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    async def main():
        with pytest.raises(ClientGone):
            await asyncio.wait_for(unless_disconnected(request_that_leaves(0.01), work()), 10)
        assert cancelled.is_set()
        assert not asyncio.current_task().cancelling()  # the caller's task goes on: it answers 499

    asyncio.run(main())


def test_a_server_cancellation_is_not_a_client_leaving():
    async def main():
        task = asyncio.ensure_future(unless_disconnected(request_that_leaves(None), asyncio.sleep(30)))
        await asyncio.sleep(0.01)
        task.cancel()  # e.g. the server stopping
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())


def test_work_done_sooner_than_the_watch_starts_no_task():
    async def main():
        before = len(asyncio.all_tasks())
        seen = []

        async def work():
            seen.append(len(asyncio.all_tasks()))
            return "vectors"

        assert await unless_disconnected(request_that_leaves(0.001), work(), watch_after_s=1.0) == "vectors"
        return before, seen

    before, seen = asyncio.run(main())
    assert seen == [before]  # no watcher beside the caller


def test_a_client_that_left_before_the_watch_starts_is_noticed_when_it_does():
    async def main():
        with pytest.raises(ClientGone):
            await asyncio.wait_for(unless_disconnected(request_that_leaves(0.0), asyncio.sleep(30), watch_after_s=0.05), 10)

    asyncio.run(main())
