"""Memory given back to the system after large requests (glibc's allocator; elsewhere every call here does nothing).

A 16 MB request body, the answer to 2 048 texts, a batch's tensors: Python hands buffers this large to ``malloc``.
glibc serves a block over its mmap threshold (128 KiB) with a mapping of its own, returned to the system when freed,
but then raises the threshold to the size of that block (up to 32 MiB), so that later blocks of that size come from
the heap, whose free pages stay with the process: a server's resident memory kept near its peak after a few large
requests. Two remedies, both measured (docs/RELIABILITY.md, "Memory after large requests"):

* :func:`configure`: the threshold fixed at :data:`MMAP_THRESHOLD` (a fixed threshold is not raised again), so a
  large buffer is always a mapping of its own and goes back to the system when freed;
* :class:`Trimmer`: after a request that moved more than :data:`LARGE_BYTES`, ``malloc_trim(0)`` on a thread (it
  returns the free pages inside the heap too), at most once every :data:`TRIM_EVERY_S`.
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import time

log = logging.getLogger(__name__)

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
MMAP_THRESHOLD = 256 * 1024  # bytes: a block this large or larger is a mapping of its own
LARGE_BYTES = 1 << 20  # a request that moved this much (body and answer) is followed by a trim
TRIM_EVERY_S = 1.0


def _libc() -> ctypes.CDLL | None:
    """glibc, where the process runs on it (``malloc_trim`` is glibc's alone)."""
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return libc if libc is not None and hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None


LIBC = _libc()


def configure() -> bool:
    """Fix glibc's mmap threshold (see the module's docstring); whether it was set."""
    if LIBC is None:
        return False
    return bool(LIBC.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))


def trim() -> bool:
    """Give the heap's free pages back to the system; whether any were (False where there is no glibc)."""
    return bool(LIBC.malloc_trim(0)) if LIBC is not None else False


class Trimmer:
    """:func:`trim` on a thread after large requests (``after(moved)``), at most once every ``every_s``: the trim
    walks the heap (milliseconds for a large one), so it never runs on the event loop nor after every request."""

    def __init__(self, large_bytes: int = LARGE_BYTES, every_s: float = TRIM_EVERY_S):
        self.large_bytes = large_bytes
        self.every_s = every_s
        self._last = 0.0
        self._pending: asyncio.TimerHandle | None = None
        self.trims = 0  # trims run: the tests and the metrics read it

    def after(self, moved: int) -> None:
        """A request moved ``moved`` bytes (its body and its answer): trim soon if that was large."""
        if moved < self.large_bytes or LIBC is None or self._pending is not None:
            return
        loop = asyncio.get_running_loop()
        wait = max(0.0, self._last + self.every_s - time.monotonic())
        self._pending = loop.call_later(wait, self._start, loop)

    def _start(self, loop: asyncio.AbstractEventLoop) -> None:
        self._pending = None
        self._last = time.monotonic()
        self.trims += 1
        loop.run_in_executor(None, trim)  # ctypes lets go of the interpreter while it runs
