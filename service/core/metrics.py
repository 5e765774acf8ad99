"""Prometheus metrics: one registry per app (tests build many apps), exposed at ``GET /metrics``.

Request metrics are labelled by the route *template* (``/v1/indexes/{name}``), never the raw
path, so a scan of random URLs cannot blow up the label space.
"""

from __future__ import annotations

from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest

# `_created` series double every counter for a timestamp no dashboard plots (process-wide switch).
disable_created_metrics()

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
TOKEN_BUCKETS = (16, 64, 256, 1024, 2048, 4096, 8192, 16384, 32768, 65536)


class Metrics:
    """Every metric the service exports, on a private registry."""

    def __init__(self) -> None:
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}  # (metric, labels) -> its child: see `_child`
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("thoughtvec_requests_total", "HTTP requests", ["route", "method", "status"], registry=r)
        self.latency = Histogram(
            "thoughtvec_request_seconds", "HTTP request latency", ["route", "method", "status"], buckets=LATENCY_BUCKETS, registry=r
        )
        self.queue_wait = Histogram(
            "thoughtvec_queue_wait_seconds",
            "time from admission to the start of a request's last batch",
            ["model"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.batch_size = Histogram("thoughtvec_batch_size", "sentences per ONNX run", ["model"], buckets=SIZE_BUCKETS, registry=r)
        self.batch_tokens = Histogram(
            "thoughtvec_batch_tokens", "padded tokens per ONNX run (batch x longest)", ["model"], buckets=TOKEN_BUCKETS, registry=r
        )
        self.inference = Histogram(
            "thoughtvec_inference_seconds", "ONNX Runtime time per batch", ["model"], buckets=LATENCY_BUCKETS, registry=r
        )
        self.depth = Gauge("thoughtvec_queue_depth", "sentences waiting", ["model"], registry=r)
        self.dropped_total = Counter(
            "thoughtvec_dropped_sentences_total", "queued sentences dropped because the client went away", ["model"], registry=r
        )
        self.index_size = Gauge("thoughtvec_index_documents", "documents in a search index", ["index"], registry=r)
        self.inputs = Counter("thoughtvec_inputs_total", "texts embedded (a split text counts once)", ["model"], registry=r)
        self.sentences = Counter(
            "thoughtvec_sentences_total", "sentences (parts) embedded: a split text counts each part", ["model"], registry=r
        )
        self.tokens = Counter("thoughtvec_tokens_total", "tokens embedded (the usage the API reports)", ["model"], registry=r)
        self.long_inputs = Counter(
            "thoughtvec_long_inputs_total", "texts over the token limit, by what was done", ["model", "action"], registry=r
        )

    def _child(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, looked up once: ``.labels()`` takes a lock and builds a key, and the
        hot path (a request, a batch) touches several series; label sets are bounded (routes, models)."""
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = metric.labels(*labels)
        return child

    def request_done(self, route: str, method: str, status: int, seconds: float) -> None:
        """One HTTP request answered (the gate: ``thoughtvec.service.http.gate``)."""
        self._child(self.requests, route, method, str(status)).inc()
        self._child(self.latency, route, method, str(status)).observe(seconds)

    def routes_known(self, routes: list[tuple[str, str]]) -> None:
        """Create each route's 200 series at zero: a rate over a route nobody called yet is 0, not absent."""
        for path, method in routes:
            self.requests.labels(path, method, "200")

    def model_loaded(self, model: str) -> None:
        """Create a model's series at zero, so dashboards see them before the first request."""
        for c in (self.inputs, self.sentences, self.tokens, self.dropped_total):
            c.labels(model)
        for action in ("split", "truncated"):
            self.long_inputs.labels(model, action)
        self.depth.labels(model).set(0)

    def embedded(self, model: str, inputs: int, parts: int, tokens: int, split: int, truncated: int) -> None:
        self._child(self.inputs, model).inc(inputs)
        self._child(self.sentences, model).inc(parts)
        self._child(self.tokens, model).inc(tokens)
        if split:
            self._child(self.long_inputs, model, "split").inc(split)
        if truncated:
            self._child(self.long_inputs, model, "truncated").inc(truncated)

    # -- batcher hooks (thoughtvec.service.core.batcher.Observer) ------------------------------------------
    def queue_depth(self, model: str, depth: int) -> None:
        self._child(self.depth, model).set(depth)

    def batch_done(self, model: str, size: int, padded_tokens: int, seconds: float, waits: list[float]) -> None:
        self._child(self.batch_size, model).observe(size)
        self._child(self.batch_tokens, model).observe(padded_tokens)
        self._child(self.inference, model).observe(seconds)
        hist = self._child(self.queue_wait, model)
        for w in waits:
            hist.observe(w)

    def dropped(self, model: str, sentences: int) -> None:
        self._child(self.dropped_total, model).inc(sentences)

    # -- indexes -----------------------------------------------------------------------------
    def index_documents(self, index: str, count: int | None) -> None:
        if count is None:
            try:
                self.index_size.remove(index)
            except KeyError:  # never reported
                pass
        else:
            self.index_size.labels(index).set(count)

    def exposition(self) -> tuple[bytes, str]:
        return generate_latest(self.registry), CONTENT_TYPE_LATEST
