import re
import shutil
import socket

import pytest

from thoughtvec.bench import floor

RESPONSE = b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 17\r\n\r\n{"data":"canned"}'


def read_response(sock: socket.socket, buf: bytes) -> tuple[bytes, bytes]:
    """One response's body off ``sock``, and what came after it."""
    while b"\r\n\r\n" not in buf:
        buf += sock.recv(65536)
    head, rest = buf.split(b"\r\n\r\n", 1)
    assert head.startswith(b"HTTP/1.1 200")
    length = int(re.search(rb"(?i)content-length: *(\d+)", head)[1])  # type: ignore[index]
    while len(rest) < length:
        rest += sock.recv(65536)
    return rest[:length], rest[length:]


@pytest.mark.parametrize("kind", floor.KINDS)
def test_a_floor_server_answers_each_request_of_a_pipelined_stream_with_the_canned_bytes(tmp_path, kind):
    (tmp_path / "r.http").write_bytes(RESPONSE)
    server = floor.FloorServer(kind, tmp_path / "r.http")
    try:
        bodies = [b'{"input": "a"}', b"", b'{"input": "a much longer sentence than the first"}']
        stream = b"".join(
            b"POST /v1/embeddings HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (len(b), b)
            for b in bodies
        )
        with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
            s.sendall(stream[:50])  # a head cut in two, then the rest: three requests in flight at once
            s.sendall(stream[50:])
            buf = b""
            for _ in bodies:
                body, buf = read_response(s, buf)
                assert body == b'{"data":"canned"}'
    finally:
        server.close()


def test_floor_prints_each_server_and_the_bound_it_sets(models_dir, capsys):
    if shutil.which("wrk") is None:
        pytest.skip("wrk is not installed (Debian: apt-get install wrk)")
    assert floor.main(["--bundle", str(models_dir / "tiny"), "--seconds", "1", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    rows = re.findall(r"^\| 1 \| (thoughtvec serve|floor: \w+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \|$", out, re.M)
    assert [(who, size) for who, size, *_ in rows] == [
        ("thoughtvec serve", "1"), ("thoughtvec serve", "32"), ("floor: asgi", "1"), ("floor: uvicorn", "1"), ("floor: raw", "1")
    ]  # fmt: skip
    assert all(int(rps) > 0 and int(cpu) > 0 for *_, rps, cpu, _ in rows)
    bounds = re.search(r"^- upper bound on the ratio .*: ([\d.]+) \(asgi\), ([\d.]+) \(uvicorn\), ([\d.]+) \(raw\)$", out, re.M)
    assert bounds and all(0 < float(b) <= 1.5 for b in bounds.groups())
    assert re.search(r"^- ratio 0\.9 needs s1 - s .* <= -?\d+ µs", out, re.M)
