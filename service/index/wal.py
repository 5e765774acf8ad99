"""An append-only write-ahead log of index operations.

Each record is ``magic | payload length | crc32 | payload`` with payload = ``json length | json |
binary blob`` (the blob holds float32 vectors). ``append`` returns only after ``fsync``, so an
acknowledged write survives a crash. A crash mid-append leaves a torn last record: its length or
checksum does not match, :func:`read_records` stops before it and :class:`Wal` cuts it off, so the
log always reads back as the state before the interrupted write.

An append that fails (a short write, ENOSPC, EIO from ``fsync``) truncates the file back to where
it ended before and fsyncs that, as SQLite and PostgreSQL do with a failed WAL write: what was
acknowledged stays, the rejected record is gone, and the next record starts on a clean end. Writes
go through an unbuffered descriptor, so no bytes of a failed append wait in a buffer for the next
one to carry. If even the truncation fails, no append is accepted until one succeeds.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import struct
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from thoughtvec.service.bundle.atomic import atomic_write_bytes

log = logging.getLogger(__name__)

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
        self._fd: int | None = None
        self._end: int | None = None  # where the last acknowledged record ends

    def replay(self) -> Iterator[tuple[dict[str, Any], bytes]]:
        """Yield the whole records, cutting any torn tail off the file first."""
        records, good = read_records(self.path)
        if self.path.exists() and self.path.stat().st_size != good:
            with open(self.path, "r+b") as f:
                f.truncate(good)
                f.flush()
                os.fsync(f.fileno())
        self._end = good
        yield from records

    def append(self, header: dict[str, Any], blob: bytes = b"") -> None:
        """Write one record and fsync it; on any error the file is as it was before, and the error raised."""
        record = memoryview(encode_record(header, blob))
        fd = self._open()
        if self._end is None:
            self._end = os.fstat(fd).st_size
        end = self._end
        if os.fstat(fd).st_size != end:  # an earlier rollback failed: finish it first
            _truncate(fd, end)
        try:
            while record:
                written = os.write(fd, record)
                if written == 0:
                    raise OSError(errno.ENOSPC, "no byte written", str(self.path))
                record = record[written:]  # a short write: write the rest
            os.fsync(fd)
        except BaseException:
            try:
                _truncate(fd, end)
            except OSError as e:
                log.error("%s: cannot cut a failed append off (%s); appends wait until it can be", self.path, e)
            raise
        self._end = os.fstat(fd).st_size

    def _open(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
        return self._fd

    def truncate_to(self, size: int) -> None:
        """Drop records after ``size`` (a record that was logged but could not be applied)."""
        fd = self._open()
        self._end = size
        _truncate(fd, size)

    @property
    def size(self) -> int:
        return self.path.stat().st_size if self.path.exists() else 0

    def reset(self) -> None:
        """Empty the log (after a snapshot holds everything in it)."""
        self.close()
        atomic_write_bytes(self.path, b"")
        self._end = 0

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _truncate(fd: int, end: int) -> None:
    """Cut the file back to ``end`` bytes, durably."""
    os.ftruncate(fd, end)
    os.fsync(fd)
