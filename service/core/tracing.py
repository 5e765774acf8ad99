"""Traces of a request's stages, exported by OpenTelemetry where configured (``otlp_endpoint``); off by default.

The app turns it on at start-up where ``otlp_endpoint`` is set (``http.app.start_tracing``). The door and the
batcher call this module, and only after checking :data:`ENABLED`, a module attribute: off, a
request costs a few attribute reads and nothing else (no tracer, no span, no context variable set). On, each
request keeps a :class:`RequestTrace`, a list of plain records (a stage's name, its start and end on
``time.perf_counter``'s clock, its attributes) that the door turns into spans once the answer is sent, in one
place (:mod:`thoughtvec.service.core.tracing_otel`): nothing is created on the model's thread or between two
stages, and the batcher's worker, which serves many requests at once, only appends to each request's list.

A request's span (``POST /v1/embeddings``: its method and route template) has these children, in order:

* ``parse``: the door reading the body and holding it to its route's shape and the JSON limits, and on the express
  lane the body validated into the route's model (FastAPI validates the other routes' bodies after it);
* ``queue``: each time the request's sentences wait in a model's queue, until the first batch carrying them runs;
* ``run``: each ONNX run of a batch the request rode in (the batch named by ``thoughtvec.batch.id``, its size and
  padded tokens beside it: the requests that shared a run share the id);
* ``answer``: from the model's last answer (vectors, or an error) to the answer's last byte handed to the server
  (pooling, normalising, rendering, sending); where no model ran, the route's whole work.

What happens between parse and queue (the model looked up, the limits, tokenizing) is the request span's own time.
"""

from __future__ import annotations

import contextvars
import itertools
import logging
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

log = logging.getLogger(__name__)

# Read by the door and the batcher before anything else of this module: False, they do nothing more.
ENABLED = False

_CURRENT: contextvars.ContextVar[RequestTrace | None] = contextvars.ContextVar("request_trace", default=None)
_BATCHES = itertools.count(1)  # batch ids, unique in the process


class TraceExporter(Protocol):
    """Where finished traces go (``tracing_otel.Exporter``: spans, by OTLP)."""

    def export(self, trace: RequestTrace, route: str, status: int, end: float) -> None: ...

    def shutdown(self) -> None: ...


_exporter: TraceExporter | None = None  # while enabled


@dataclass(slots=True)
class Stage:
    """One child span to be: its name, start and end (``time.perf_counter`` seconds) and attributes."""

    name: str
    start: float
    end: float
    attributes: dict[str, Any]
    error: str | None = None


@dataclass(slots=True)
class RequestTrace:
    """What one request did, stage by stage, until the door exports it (:meth:`finish`)."""

    method: str
    path: str
    headers: list[tuple[bytes, bytes]]  # the request's, for a caller's ``traceparent``
    start: float
    stages: list[Stage] = field(default_factory=list)
    models: list[str] = field(default_factory=list)
    parse_start: float | None = None
    parse_end: float | None = None
    back: float | None = None  # the last time a model's batcher answered
    done: bool = False
    token: contextvars.Token | None = None  # where :func:`begin` made it current

    def reading(self) -> None:
        """The door starts reading the body."""
        self.parse_start = time.perf_counter()

    def parsed(self) -> None:
        """The body is read and checked (the door), or validated (the express lane): the parse stage ends here."""
        self.parse_end = time.perf_counter()

    def ran(self, model: str, queued: float | None, start: float, end: float, batch: BatchRun) -> None:
        """A batch of ``model``'s carrying sentences of this request ran from ``start`` to ``end``: a run stage, and
        the queue stage before it where its sentences were queued at ``queued`` (the first run of a queued lot)."""
        if self.done:  # the answer went without this run (a failed request, a client gone)
            return
        if model not in self.models:
            self.models.append(model)
        if queued is not None:
            self.stages.append(Stage("queue", queued, start, {"thoughtvec.model": model}))
        attributes = {
            "thoughtvec.model": model,
            "thoughtvec.batch.id": batch.id,
            "thoughtvec.batch.size": batch.size,
            "thoughtvec.batch.padded_tokens": batch.padded_tokens,
        }
        self.stages.append(Stage("run", start, end, attributes, batch.error))

    def model_answered(self) -> None:
        """A model's batcher answered the request's sentences (their vectors, or an error): the answer stage starts
        here, unless another answers later."""
        self.back = time.perf_counter()

    def finish(self, route: str, status: int, end: float) -> None:
        """The answer is sent: the parse and answer stages, then every span, exported."""
        self.done = True
        if self.token is not None:
            _CURRENT.reset(self.token)
        if self.parse_start is not None:
            self.parse_end = self.parse_end or end  # a body refused: its parse lasts until the refusal is sent
            self.stages.append(Stage("parse", self.parse_start, self.parse_end, {}))
        answer_from = max(t for t in (self.start, self.parse_end, self.back) if t is not None)
        self.stages.append(Stage("answer", answer_from, end, {}))
        self.stages.sort(key=lambda s: s.start)
        if _exporter is not None:
            try:
                _exporter.export(self, route, status, end)
            except Exception:  # a trace never costs its request the answer, which is sent already
                log.exception("the trace of %s %s could not be exported", self.method, route)


@dataclass(frozen=True, slots=True)
class BatchRun:
    """A batch as its requests' run stages name it."""

    id: str
    size: int
    padded_tokens: int
    error: str | None = None


def batch(model: str, size: int, padded_tokens: int, error: BaseException | None = None) -> BatchRun:
    """A new batch of ``model``'s, with an id of its own (``model#n``)."""
    return BatchRun(f"{model}#{next(_BATCHES)}", size, padded_tokens, None if error is None else repr(error))


def begin(method: str, path: str, headers: list[tuple[bytes, bytes]], start: float) -> RequestTrace:
    """A request's trace, current in the caller's context (its task and the tasks it starts) from now on."""
    trace = RequestTrace(method, path, headers, start)
    trace.token = _CURRENT.set(trace)
    return trace


def current() -> RequestTrace | None:
    """The trace of the request the running task serves (None: none, or tracing off)."""
    return _CURRENT.get()


def enable(exporter: TraceExporter) -> None:
    """Record every request from now on and hand each to ``exporter`` (the tests' keep them in memory)."""
    global ENABLED, _exporter
    _exporter, ENABLED = exporter, True


def stop() -> None:
    """Record nothing more; what was recorded is exported before this returns."""
    global ENABLED, _exporter
    exporter, _exporter, ENABLED = _exporter, None, False
    if exporter is not None:
        exporter.shutdown()
