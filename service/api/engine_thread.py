"""A private event loop on a thread of its own, where the Python API hosts the serving core.

The core is asynchronous (its batchers, admission and index services live on an event loop); the Python API is
not. :class:`EngineThread` runs one loop on a daemon thread and hands it coroutines from any other thread
(``asyncio.run_coroutine_threadsafe``): callers on many threads at once share the core as a server's requests do
(their texts meet in the same batches), and a caller inside an event loop of its own (a notebook) is served too.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class EngineThread:
    """One event loop, run on a daemon thread until :meth:`stop`."""

    def __init__(self, name: str):
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self.loop.is_closed()

    def call(self, work: Coroutine[Any, Any, T]) -> T:
        """``work`` run on the loop; its result, or its exception, in the calling thread. Interrupted here (Ctrl-C), the
        work is cancelled there: nothing runs on for a caller that has gone."""
        if threading.current_thread() is self._thread:
            work.close()
            raise RuntimeError("the engine's own thread cannot wait for the engine: call the API from another thread")
        if not self.running:
            work.close()
            raise RuntimeError("the model is closed")
        future = asyncio.run_coroutine_threadsafe(work, self.loop)
        try:
            return future.result()
        except BaseException:
            future.cancel()  # done already: nothing; still running (KeyboardInterrupt): cancelled on the loop
            raise

    def stop(self) -> None:
        """Stop the loop and its thread; what the loop still held (its default executor) is let go of."""
        if self.loop.is_closed():
            return
        if self._thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join()
        self.loop.close()
