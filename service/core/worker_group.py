"""Several server processes on one port (``workers``): what each publishes so that any of them speaks for all.

A client's connection lands on any worker, and so does a scrape of ``/metrics`` or a probe of ``/ready``. Each
worker writes, about once a second (off the event loop) and at once when its readiness changes, its own readiness
and metrics exposition to a file of its own (``<pid>.json``, replaced whole) in a folder the supervisor made for the group (``thoughtvec.service.http.worker_processes``);
the answering worker reads the other live workers' files beside its own state as it is. So ``/ready`` is 200 once
every worker is ready, and ``/metrics`` sums the workers' series (:func:`~thoughtvec.service.core.metrics.
merge_expositions`), each at most a second old but the answering worker's own.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path

from thoughtvec.service.bundle.atomic import atomic_write_bytes

log = logging.getLogger(__name__)

# How often a worker publishes when nobody asks (its series in another worker's /metrics are at most this old).
PUBLISH_EVERY_S = 1.0


@dataclass(frozen=True)
class Peer:
    """One worker's last publication."""

    pid: int
    ready: bool
    metrics: str  # its Prometheus text exposition


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


class WorkerGroup:
    """This process as one of ``size`` workers publishing into ``folder``."""

    def __init__(self, folder: Path, size: int, pid: int | None = None):
        self.folder = Path(folder)
        self.size = size
        self.pid = os.getpid() if pid is None else pid
        self.published_ready: bool | None = None  # the readiness this worker last published (None: nothing yet)

    def publish(self, ready: bool, metrics: bytes) -> None:
        self.published_ready = ready
        body = {"pid": self.pid, "ready": ready, "metrics": metrics.decode(), "at": time.time()}
        try:
            atomic_write_bytes(self.folder / f"{self.pid}.json", json.dumps(body).encode())
        except OSError as e:  # the others see this worker's last publication; it keeps serving
            log.warning("worker %d cannot publish to %s: %s", self.pid, self.folder, e)

    def others(self) -> list[Peer]:
        """Every other live worker's last publication, by pid."""
        out = []
        for path in sorted(self.folder.glob("*.json")):
            try:
                body = json.loads(path.read_bytes())
            except (OSError, ValueError):  # being replaced, or gone: its next publication counts
                continue
            pid = int(body.get("pid", 0))
            if pid and pid != self.pid and alive(pid):
                out.append(Peer(pid, bool(body.get("ready")), str(body.get("metrics", ""))))
        return out
