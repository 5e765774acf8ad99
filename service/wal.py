"""An append-only write-ahead log of index operations.

Each record is ``magic | payload length | crc32 | payload`` with payload = ``json length | json |
binary blob`` (the blob holds float32 vectors). ``append`` returns only after ``fsync``, so an
acknowledged write survives a crash. A crash mid-append leaves a torn last record: its length or
checksum does not match, :func:`read_records` stops before it and :class:`Wal` cuts it off, so the
log always reads back as the state before the interrupted write.
"""

from __future__ import annotations

import json
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from service.atomic import atomic_write_bytes

MAGIC = b"TVW1"
_HEAD = struct.Struct("<4sII")  # magic, payload length, crc32 of the payload
_JSON_LEN = struct.Struct("<I")


def encode_record(header: dict[str, Any], blob: bytes = b"") -> bytes:
    meta = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    payload = _JSON_LEN.pack(len(meta)) + meta + blob
    return _HEAD.pack(MAGIC, len(payload), zlib.crc32(payload)) + payload


def read_records(path: Path) -> tuple[list[tuple[dict[str, Any], bytes]], int]:
    """All whole records and the byte offset where the last whole one ends."""
    records: list[tuple[dict[str, Any], bytes]] = []
    if not path.exists():
        return records, 0
    data = path.read_bytes()
    pos = 0
    while pos + _HEAD.size <= len(data):
        magic, length, crc = _HEAD.unpack_from(data, pos)
        start, end = pos + _HEAD.size, pos + _HEAD.size + length
        if magic != MAGIC or end > len(data):
            break
        payload = data[start:end]
        if zlib.crc32(payload) != crc:
            break
        (mlen,) = _JSON_LEN.unpack_from(payload, 0)
        header = json.loads(payload[_JSON_LEN.size : _JSON_LEN.size + mlen].decode("utf-8"))
        records.append((header, payload[_JSON_LEN.size + mlen :]))
        pos = end
    return records, pos


class Wal:
    """The log file of one index, opened for appending."""

    def __init__(self, path: Path):
        self.path = path
        self._f = None

    def replay(self) -> Iterator[tuple[dict[str, Any], bytes]]:
        """Yield the whole records, cutting any torn tail off the file first."""
        records, good = read_records(self.path)
        if self.path.exists() and self.path.stat().st_size != good:
            with open(self.path, "r+b") as f:
                f.truncate(good)
                f.flush()
                os.fsync(f.fileno())
        yield from records

    def append(self, header: dict[str, Any], blob: bytes = b"") -> None:
        if self._f is None:
            self._f = open(self.path, "ab")
        self._f.write(encode_record(header, blob))
        self._f.flush()
        os.fsync(self._f.fileno())

    @property
    def size(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def reset(self) -> None:
        """Empty the log (after a snapshot holds everything in it)."""
        self.close()
        atomic_write_bytes(self.path, b"")

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None
