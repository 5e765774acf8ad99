"""The fast protocol (``thoughtvec.service.http.protocol``) against a real uvicorn on 127.0.0.1, over raw sockets.

A plain embeddings request is answered by the protocol itself; the same request sent chunked goes
the ASGI way (FastAPI's route). Both must give the same status, headers and bytes. Everything the
protocol leaves to ASGI (bad bodies, keys, limits, CORS, 100-continue) must still be answered as
before, on the same connection, in order.
"""

from __future__ import annotations

import json
import socket
import time

import numpy as np
import pytest

from tests.service.conftest import live_server, settings_for
from tests.service.http.test_fastpath import BODIES
from tests.service.http.test_live_server import slow_down
from thoughtvec.service.core.encoder import Encoder
from thoughtvec.service.http import protocol
from thoughtvec.service.http.app import create_app, server_config


def request(body: bytes, *extra: str, version: str = "1.1", chunked: bool = False) -> bytes:
    head = [f"POST /v1/embeddings HTTP/{version}", "Host: test", "Content-Type: application/json", *extra]
    if chunked:
        payload = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        head.append("Transfer-Encoding: chunked")
    else:
        payload = body
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + payload


class Conn:
    """One keep-alive connection; reads responses (Content-Length bodies) in order."""

    def __init__(self, base: str):
        self.sock = socket.create_connection(("127.0.0.1", int(base.rsplit(":", 1)[1])), timeout=10)
        self.buf = b""

    def send(self, data: bytes) -> None:
        self.sock.sendall(data)

    def _fill(self) -> bool:
        chunk = self.sock.recv(65536)
        self.buf += chunk
        return bool(chunk)

    def read(self) -> tuple[int, dict[str, str], bytes]:
        while b"\r\n\r\n" not in self.buf:
            assert self._fill(), "connection closed before a response"
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
        n = int(headers["content-length"])
        while len(self.buf) < n:
            assert self._fill(), "connection closed inside a body"
        body, self.buf = self.buf[:n], self.buf[n:]
        return status, headers, body

    def closed_by_server(self) -> bool:
        try:
            return self.sock.recv(1) == b""
        except TimeoutError:
            return False

    def close(self) -> None:
        self.sock.close()


@pytest.fixture(scope="module")
def server(models_dir, tmp_path_factory):
    with live_server(settings_for(models_dir, tmp_path_factory.mktemp("idx"), max_body_bytes=4096)) as (base, app):
        yield base, app


@pytest.fixture
def taken(monkeypatch):
    """The bodies the protocol parsed itself (it alone calls ``protocol.parse``)."""
    seen: list[bytes] = []
    original = protocol.parse

    def spy(body: bytes):
        seen.append(body)
        return original(body)

    monkeypatch.setattr(protocol, "parse", spy)
    return seen


def test_serve_runs_the_protocol_with_this_uvicorn(models_dir, tmp_path):
    assert protocol.available() is None, protocol.available()  # fails when a uvicorn upgrade moves what it relies on
    settings = settings_for(models_dir, tmp_path)
    assert server_config(create_app(settings), settings).http is protocol.EmbeddingsProtocol
    off = settings_for(models_dir, tmp_path, fast_protocol=False)
    assert server_config(create_app(off), off).http == "auto"


@pytest.mark.parametrize("payload", BODIES, ids=[json.dumps(b)[:40] for b in BODIES])
def test_protocol_and_asgi_answer_alike(server, taken, payload):
    body = json.dumps(payload).encode()
    conn = Conn(server[0])
    try:
        conn.send(request(body))
        fast = conn.read()
        assert taken == [body], "the protocol did not take the request"
        conn.send(request(body, chunked=True))
        routed = conn.read()
        assert len(taken) == 1, "a chunked request was taken by the protocol"
    finally:
        conn.close()
    fast[1].pop("date"), routed[1].pop("date")
    assert fast == routed


def test_pipelined_requests_are_answered_in_order_on_one_connection(server, models_dir, taken):
    enc = Encoder.load(models_dir / "tiny")
    a, b = b'{"input": "the cat sat"}', b'{"input": "a dog ran", "encoding_format": "float"}'
    conn = Conn(server[0])
    try:
        conn.send(request(a) + request(b'{"input": "x", "modle": 1}') + request(b, chunked=True) + request(b))
        answers = [conn.read() for _ in range(4)]
        assert [s for s, _, _ in answers] == [200, 422, 200, 200]
        assert "modle" in json.loads(answers[1][2])["error"]["message"]  # FastAPI's words, from the buffered body
        vec = lambda r: np.array(json.loads(r[2])["data"][0]["embedding"])  # noqa: E731
        np.testing.assert_allclose(vec(answers[0]), enc.encode(["the cat sat"])[0], atol=1e-6)
        np.testing.assert_allclose(vec(answers[2]), enc.encode(["a dog ran"])[0], atol=1e-6)
        assert answers[3][2] == answers[2][2]
        time.sleep(0.2)
        conn.send(request(a))  # still open: keep-alive
        assert conn.read()[0] == 200
    finally:
        conn.close()
    assert taken == [a, b'{"input": "x", "modle": 1}', b, a]


@pytest.mark.parametrize("body", [b'{"input": ["the cat sat", "a dog ran"]}', b'{"input": "the cat",'])
def test_a_body_that_arrives_in_pieces(server, taken, body):
    conn = Conn(server[0])
    try:
        raw = request(body)
        head_end = raw.index(b"\r\n\r\n") + 4
        for piece in (raw[:head_end], raw[head_end : head_end + 5], raw[head_end + 5 :]):
            conn.send(piece)
            time.sleep(0.05)
        status, _, answer = conn.read()
    finally:
        conn.close()
    assert taken == [body]
    if body.endswith(b"}"):
        assert status == 200 and len(json.loads(answer)["data"]) == 2
    else:  # read whole, refused by the protocol, answered by FastAPI from the same buffered body
        assert status == 400 and json.loads(answer)["error"]["code"] == "malformed_json"


@pytest.mark.parametrize("how", [("Connection: close",), ()], ids=["connection-close", "http-1.0"])
def test_connection_close_and_http_1_0(server, taken, how):
    conn = Conn(server[0])
    try:
        conn.send(request(b'{"input": "the cat"}', *how, version="1.1" if how else "1.0"))
        status, headers, _ = conn.read()
        assert status == 200 and headers["connection"] == "close" and taken
        assert conn.closed_by_server()
    finally:
        conn.close()


def test_each_request_is_counted_once_under_its_route(server, taken):
    base, app = server
    sample = app.state.core.metrics.registry.get_sample_value

    def count(status: str) -> float:
        return sample("thoughtvec_requests_total", {"route": "/v1/embeddings", "method": "POST", "status": status}) or 0.0

    before = count("200"), count("404"), count("422")
    conn = Conn(base)
    try:
        for body in (b'{"input": "a cat"}', b'{"input": "a cat", "model": "nope"}', b'{"input": " "}', b'{"input": "a dog"}'):
            conn.send(request(body))
            conn.read()
    finally:
        conn.close()
    assert len(taken) == 4
    assert (count("200"), count("404"), count("422")) == (before[0] + 2, before[1] + 1, before[2] + 1)
    hist = sample("thoughtvec_request_seconds_count", {"route": "/v1/embeddings", "method": "POST", "status": "200"})
    assert hist is not None and hist >= 2


def test_keys_limits_cors_and_expect_go_the_asgi_way(models_dir, tmp_path, taken):
    settings = settings_for(models_dir, tmp_path / "idx", api_keys=["k1"], max_body_bytes=1024, cors_origins=["http://ui.example"])
    body = b'{"input": "the cat sat"}'
    with live_server(settings) as (base, _):
        conn = Conn(base)
        try:
            conn.send(request(body))
            assert conn.read()[0] == 401  # no key
            conn.send(request(body, "Authorization: Bearer nope"))
            assert conn.read()[0] == 401
            assert taken == []
            conn.send(request(body, "Authorization: Bearer k1"))
            assert conn.read()[0] == 200 and taken == [body]
            conn.send(request(b'{"input": "%s"}' % (b"a " * 600), "Authorization: Bearer k1"))
            status, _, answer = conn.read()
            assert status == 413 and "max_body_bytes" in json.loads(answer)["error"]["message"]
            conn.send(request(body, "Authorization: Bearer k1", "Origin: http://ui.example"))
            status, headers, _ = conn.read()
            assert status == 200 and headers["access-control-allow-origin"] == "http://ui.example"
            assert len(taken) == 1
        finally:
            conn.close()
        conn = Conn(base)  # Expect: 100-continue: uvicorn's cycle says "continue", the app reads the body
        try:
            raw = request(body, "Authorization: Bearer k1", "Expect: 100-continue")
            head_end = raw.index(b"\r\n\r\n") + 4
            conn.send(raw[:head_end])
            while b"\r\n\r\n" not in conn.buf:
                assert conn._fill()
            assert conn.buf.startswith(b"HTTP/1.1 100 Continue\r\n\r\n")
            conn.buf = conn.buf[len(b"HTTP/1.1 100 Continue\r\n\r\n") :]
            conn.send(raw[head_end:])
            assert conn.read()[0] == 200 and len(taken) == 1
        finally:
            conn.close()


def test_an_unexpected_error_is_a_500_naming_a_request_id(server, taken, monkeypatch, caplog):
    base, app = server
    core = app.state.core

    async def broken(*a, **kw):
        raise RuntimeError("boom")

    monkeypatch.setattr(core, "embeddings", broken)
    conn = Conn(base)
    try:
        conn.send(request(b'{"input": "the cat"}'))
        status, headers, answer = conn.read()
        error = json.loads(answer)["error"]
        assert status == 500 and error["code"] == "internal_error" and error["request_id"] == headers["x-request-id"]
        assert any(error["request_id"] in r.getMessage() for r in caplog.records)
        monkeypatch.undo()
        conn.send(request(b'{"input": "the cat"}'))  # the connection and the server go on
        assert conn.read()[0] == 200
    finally:
        conn.close()


def test_a_client_that_leaves_has_its_work_cancelled(models_dir, tmp_path, taken):
    settings = settings_for(models_dir, tmp_path / "idx", max_batch_size=1, max_wait_ms=0)
    with live_server(settings) as (base, app):
        running = slow_down(app, 0.3)
        sample = app.state.core.metrics.registry.get_sample_value
        first = Conn(base)
        gone = Conn(base)
        try:
            first.send(request(b'{"input": "the cat"}'))
            assert running.wait(10)  # the worker is busy with the first request
            gone.send(request(b'{"input": ["a dog", "the man"]}'))
            deadline = time.time() + 10
            while len(taken) < 2 and time.time() < deadline:
                time.sleep(0.01)
            time.sleep(0.05)  # its sentences are queued behind the first
            gone.close()
            assert first.read()[0] == 200
        finally:
            first.close()
        labels = {"route": "/v1/embeddings", "method": "POST", "status": "499"}
        deadline = time.time() + 10
        while (
            sample("thoughtvec_dropped_sentences_total", {"model": "tiny"}) != 2 or not sample("thoughtvec_requests_total", labels)
        ) and time.time() < deadline:
            time.sleep(0.02)
        assert sample("thoughtvec_requests_total", labels) == 1  # counted as nginx counts a client that left
        assert sample("thoughtvec_dropped_sentences_total", {"model": "tiny"}) == 2  # its queued sentences never ran
