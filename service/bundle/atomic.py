"""Atomic file and folder writes: write to a temporary sibling, flush, fsync, rename into place.

A crash at any point leaves either the previous version or the new one, never a torn file.
Used for bundles, indexes (service) and checkpoints (training).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO


def _read_umask() -> int:
    mask = os.umask(0o022)  # the only way to read it is to set it; done once, at import
    os.umask(mask)
    return mask


_UMASK = _read_umask()


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):  # not every filesystem lets a folder be opened
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def atomic_open(path: str | os.PathLike, mode: str = "wb") -> Iterator[IO]:
    """Open a temporary file next to ``path``; on clean exit it replaces ``path`` atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; a file should get the usual mode
    try:
        with os.fdopen(fd, mode) as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    with atomic_open(path, "wb") as f:
        f.write(data)


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_save(path: str | os.PathLike, writer: Callable[[IO], None]) -> None:
    """``writer(f)`` fills a binary file object (``np.save``, ``torch.save``...)."""
    with atomic_open(path, "wb") as f:
        writer(f)


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary folder; on clean exit it replaces the folder ``path``.

    The old folder is renamed aside before the new one is renamed in, then deleted; a crash in
    between leaves ``.<name>.old-*`` next to it, which :func:`recover_dir` puts back.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    os.chmod(tmp, 0o777 & ~_UMASK)  # mkdtemp makes 0700
    try:
        yield tmp
        for f in tmp.rglob("*"):
            if f.is_file():
                with open(f, "rb") as fh:
                    os.fsync(fh.fileno())
        old = None
        if path.exists():
            old = Path(tempfile.mkdtemp(prefix=f".{path.name}.old-", dir=path.parent))
            old.rmdir()
            os.replace(path, old)
        os.replace(tmp, path)
        _fsync_dir(path.parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def recover_dir(path: str | os.PathLike) -> bool:
    """If a crash left ``path`` missing but an ``.old`` copy beside it, put the copy back."""
    path = Path(path)
    if path.exists():
        return False
    olds = sorted(path.parent.glob(f".{path.name}.old-*"))
    if not olds:
        return False
    os.replace(olds[-1], path)
    return True
