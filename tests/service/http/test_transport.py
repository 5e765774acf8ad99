"""``service/http/transport.py``: what it relies on inside uvicorn still exists (a release that moves it fails here,
by name, not silently slower), and a response's head goes out with its body, in one write."""

from __future__ import annotations

import asyncio
import inspect

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from thoughtvec.service.http import transport
from thoughtvec.service.http.transport import MERGE_LIMIT, HeadHeldTransport, http_protocol, malformed_answer

HEAD = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n"


class Recorder:
    def __init__(self):
        self.writes: list[bytes] = []
        self.closed = False

    def write(self, data):
        self.writes.append(bytes(data))

    def is_closing(self):
        return self.closed

    def close(self):
        self.closed = True

    def get_write_buffer_size(self):
        return 0


def run(steps) -> Recorder:
    async def main():
        raw = Recorder()
        steps(HeadHeldTransport(raw, asyncio.get_running_loop()))
        await asyncio.sleep(0)  # a turn of the loop: a head left alone goes out
        await asyncio.sleep(0)
        return raw

    return asyncio.run(main())


def test_a_head_and_its_body_are_one_write():
    assert run(lambda t: (t.write(HEAD), t.write(b"hello"))).writes == [HEAD + b"hello"]


def test_a_head_alone_goes_out_at_the_end_of_the_turn():
    assert run(lambda t: t.write(HEAD)).writes == [HEAD]
    assert run(lambda t: t.write(b"HTTP/1.1 100 Continue\r\n\r\n")).writes == [b"HTTP/1.1 100 Continue\r\n\r\n"]


def test_other_writes_pass_as_they_are():
    assert run(lambda t: (t.write(b"5\r\nhello\r\n"), t.write(b"0\r\n\r\n"))).writes == [b"5\r\nhello\r\n", b"0\r\n\r\n"]


def test_a_large_body_is_not_copied_onto_its_head():
    big = b"x" * (MERGE_LIMIT + 1)
    assert run(lambda t: (t.write(HEAD), t.write(big))).writes == [HEAD, big]


def test_closing_sends_a_held_head_first():
    raw = run(lambda t: (t.write(HEAD), t.close()))
    assert raw.writes == [HEAD] and raw.closed


def test_the_rest_of_the_transport_is_the_transports():
    loop = asyncio.new_event_loop()
    try:
        assert HeadHeldTransport(Recorder(), loop).get_write_buffer_size() == 0
    finally:
        loop.close()


def test_serve_runs_it_where_uvicorn_has_httptools():
    protocol = http_protocol()
    assert not isinstance(protocol, str) and protocol.__name__ == "OneWriteProtocol"


def test_what_the_transport_relies_on_inside_uvicorn_is_still_there():
    """``transport.RELIES_ON``: the protocol class, the two methods it overrides, and their parameters."""
    assert len(transport.RELIES_ON) == 1 and "HttpToolsProtocol" in transport.RELIES_ON[0], "update this test with RELIES_ON"
    for method, params in (("connection_made", ["self", "transport"]), ("send_400_response", ["self", "msg"])):
        found = getattr(HttpToolsProtocol, method, None)
        assert found is not None, f"uvicorn {uvicorn.__version__}: HttpToolsProtocol.{method} is gone; transport.py overrides it"
        assert list(inspect.signature(found).parameters) == params, f"uvicorn {uvicorn.__version__}: HttpToolsProtocol.{method} changed"
    # send_400_response is still where uvicorn answers a request its parser refuses
    assert "send_400_response" in inspect.getsource(HttpToolsProtocol.data_received), (
        f"uvicorn {uvicorn.__version__} answers bad HTTP elsewhere"
    )


def test_a_malformed_request_is_answered_in_the_apis_error_shape():
    head, _, body = malformed_answer().partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 Bad Request") and b"connection: close" in head
    assert int(head.split(b"content-length: ")[1].split(b"\r\n")[0]) == len(body)
