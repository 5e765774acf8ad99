"""``HeadHeldTransport`` (``service/http/protocol.py``): a response's head goes out with its body, in one write."""

from __future__ import annotations

import asyncio

from thoughtvec.service.http.protocol import MERGE_LIMIT, HeadHeldTransport, http_protocol

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
