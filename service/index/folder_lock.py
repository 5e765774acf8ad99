"""One writer per index folder: an advisory lock (``flock``) on ``<index_dir>/.lock``, held while a store uses it.

Two processes writing one folder would each append to the indexes' logs from its own copy of them, and at the next
start one's acknowledged writes would be gone. So a store that writes the folder holds its lock exclusively, and a
read-only store (``--workers N``, ``index_read_only``) holds it shared: read-only stores share a folder with each
other, never with a writer. A reader beside a live writer would serve what the folder held at its start and none of
the writes since, and its load tidies the folder (it cuts a log's torn tail, restores or removes half-made
snapshots), which beside a writer could cut the record being appended: so that pair is refused too, whichever
starts second.

``flock`` rather than POSIX ``lockf``: a flock lock belongs to the open file description, so a process keeps it
when it closes some other descriptor of the file, and two stores of one process conflict as two processes do. The
kernel drops it when the process ends, however it ends: a ``kill -9`` leaves no stale lock to clean up. On a network
filesystem it binds other machines only where the mount forwards locks (NFSv4, or NFSv3 with lockd/NLM); with
``nolock`` or ``local_lock=all``, or on some SMB mounts, it binds the processes of one machine only
(docs/deployment.md).
"""

from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from thoughtvec.service.errors import IndexFolderLocked

LOCK_FILE = ".lock"  # inside the index folder; no index can take the name (index names start with a letter or digit)


class FolderLock:
    """An index folder's lock, held from :meth:`take` until :meth:`release` (or the process's end)."""

    def __init__(self, fd: int):
        self._fd: int | None = fd

    @classmethod
    def take(cls, root: Path, *, shared: bool) -> FolderLock:
        """The lock of ``root`` (made if missing), shared or exclusive, without waiting; :class:`IndexFolderLocked`
        naming ``root`` as configured, and what to do, where another process holds it or it cannot be taken."""
        try:
            root.mkdir(parents=True, exist_ok=True)
            fd = _open(root / LOCK_FILE, shared)
        except OSError as e:
            hint = "; a folder mounted read-only is served read-only (`--index-read-only`)" if e.errno == errno.EROFS else ""
            raise IndexFolderLocked(f"cannot lock the index folder {root} (index_dir): {e.strerror} ({LOCK_FILE} in it){hint}") from e
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except OSError as e:
            message = _refusal(root, shared, _holder(fd)) if e.errno in (errno.EAGAIN, errno.EACCES) else _unlockable(root, e)
            os.close(fd)
            raise IndexFolderLocked(message) from None
        if not shared:  # the writer's pid, for the message another process gets
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        return cls(fd)

    def release(self) -> None:
        """Let go of the folder (closing the descriptor drops the lock)."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)


def _open(path: Path, shared: bool) -> int:
    """The lock file, read-write (made if missing: NFS locks a writer's descriptor only); for a shared lock on a folder
    mounted read-only (a replica's ``:ro`` volume), read-only, which is enough to share it."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        if not shared or e.errno not in (errno.EROFS, errno.EACCES):
            raise
        return os.open(path, os.O_RDONLY)


def _holder(fd: int) -> str:
    """Who holds the lock this descriptor was refused: read-only servers (it can be shared), else its writer."""
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        pid = os.pread(fd, 16, 0).decode(errors="replace").strip()
        if pid == str(os.getpid()):
            return "another store of this process"
        return f"another process (pid {pid})" if pid.isdigit() else "another process"
    fcntl.flock(fd, fcntl.LOCK_UN)
    return ""  # only readers


def _refusal(root: Path, shared: bool, writer: str) -> str:
    """What a refused process is told: the folder as configured, who holds it (``writer``, or read-only servers where
    empty), and what to do."""
    if not shared and not writer:  # a writer refused beside read-only servers
        return (
            f"the index folder {root} (index_dir) is in use by read-only servers, and a process that writes an index folder"
            " must be alone in it. Stop them first, or start this one read-only too (`thoughtvec serve --index-read-only`)"
            " to serve the folder beside them"
        )
    if shared:
        return (
            f"the index folder {root} (index_dir) is being written by {writer or 'another process'}: a read-only server"
            " beside it would serve a stale copy (none of its later writes). Stop that process first (read-only servers"
            " share a folder with each other only), or keep the indexes in a Milvus server (`--index-backend milvus`),"
            " which every replica reads and writes"
        )
    return (
        f"the index folder {root} (index_dir) is in use: {writer} writes it, and one process writes an index folder (two"
        " would lose each other's writes). Stop that process first; to serve one folder from several processes, start"
        " them read-only (`thoughtvec serve --index-read-only`, or `--workers N`) with no writer beside them, or keep the"
        " indexes in a Milvus server (`--index-backend milvus`)"
    )


def _unlockable(root: Path, e: OSError) -> str:
    """``flock`` itself failed (not refused): a filesystem without locks, such as an NFS mount without lockd."""
    return (
        f"cannot lock the index folder {root} (index_dir): {e.strerror}; it needs a filesystem with file locks"
        " (a local disk, NFSv4, or NFSv3 with lockd)"
    )
