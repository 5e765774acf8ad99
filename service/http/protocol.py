"""uvicorn's httptools HTTP protocol with each response's head and body sent in one write.

uvicorn writes a response's status line and headers as soon as the app sends ``http.response.start``, and its
body on ``http.response.body``: two writes, so two TCP segments (the socket has ``TCP_NODELAY``) and two system
calls for every small answer, where one would do. :class:`OneWriteProtocol` hands uvicorn a transport
(:class:`HeadHeldTransport`) that holds a response head until the next write, sending the two together; a head
that nothing follows in the same turn of the event loop (a streamed answer that waits, ``100 Continue``) goes out
at the end of that turn. Nothing else changes: parsing, keep-alive, pipelining and flow control are uvicorn's.

``thoughtvec serve`` runs it where uvicorn has its httptools protocol (:func:`http_protocol`); the live-server
tests run every answer through it.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

# A body larger than this is not copied onto its head: one more system call costs less than the copy.
MERGE_LIMIT = 64 * 1024


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


@functools.cache
def http_protocol() -> type[asyncio.Protocol] | str:
    """The protocol class ``thoughtvec serve`` gives uvicorn: :class:`OneWriteProtocol` where uvicorn has its
    httptools protocol, else uvicorn's own choice (``"auto"``)."""
    try:
        from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
    except ImportError:  # no httptools: uvicorn's h11 protocol, as it is
        return "auto"

    class OneWriteProtocol(HttpToolsProtocol):
        """uvicorn's httptools protocol, its writes through a :class:`HeadHeldTransport`."""

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(HeadHeldTransport(transport, self.loop))  # type: ignore[arg-type]

    OneWriteProtocol.__qualname__ = "OneWriteProtocol"  # pickled by name (module __getattr__): for worker processes
    return OneWriteProtocol


def __getattr__(name: str) -> Any:
    """``OneWriteProtocol`` by name, as pickle looks it up: uvicorn sends its config, protocol class and all, to each
    worker process (``thoughtvec serve --workers``)."""
    if name == "OneWriteProtocol" and not isinstance(http_protocol(), str):
        return http_protocol()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
