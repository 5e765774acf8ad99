"""Prometheus metrics: one registry per app (tests build many apps), exposed at ``GET /metrics``.

Request metrics are labelled by the route *template* (``/v1/indexes/{name}``), never the raw
path, so a scan of random URLs cannot blow up the label space.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families

# `_created` series double every counter for a timestamp no dashboard plots (process-wide switch).
disable_created_metrics()

# Series that every worker holds whole (each loads every index): several workers' values are one value, not a sum.
SAME_IN_EVERY_WORKER = frozenset({"thoughtvec_index_documents"})
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
SIZE_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
TOKEN_BUCKETS = (16, 64, 256, 1024, 2048, 4096, 8192, 16384, 32768, 65536)


class Metrics:
    """Every metric the service exports, on a private registry."""

    def __init__(self) -> None:
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}  # (metric, labels) -> its child: see `_child`
        self.registry = CollectorRegistry()
        r = self.registry
        self.tally = Tally()  # the series every request moves (requests, latency, what was embedded, queue depth)
        r.register(self.tally)
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
        self.dropped_total = Counter(
            "thoughtvec_dropped_sentences_total", "queued sentences dropped because the client went away", ["model"], registry=r
        )
        self.index_size = Gauge("thoughtvec_index_documents", "documents in a search index", ["index"], registry=r)
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
        """One HTTP request answered (the door: ``thoughtvec.service.http.door``)."""
        self.tally.request(route, method, status, seconds)

    def routes_known(self, routes: list[tuple[str, str]]) -> None:
        """Create each route's 200 series at zero: a rate over a route nobody called yet is 0, not absent."""
        for path, method in routes:
            self.tally.requests.setdefault((path, method, 200), 0)

    def model_loaded(self, model: str) -> None:
        """Create a model's series at zero, so dashboards see them before the first request."""
        self.dropped_total.labels(model)
        for action in ("split", "truncated"):
            self.long_inputs.labels(model, action)
        self.tally.embedded.setdefault(model, [0, 0, 0])
        self.tally.depth.setdefault(model, 0)

    def embedded(self, model: str, inputs: int, parts: int, tokens: int, split: int, truncated: int) -> None:
        self.tally.embed(model, inputs, parts, tokens)
        if split:
            self._child(self.long_inputs, model, "split").inc(split)
        if truncated:
            self._child(self.long_inputs, model, "truncated").inc(truncated)

    # -- batcher hooks (thoughtvec.service.core.batcher.Observer) ------------------------------------------
    def queue_depth(self, model: str, depth: int) -> None:
        self.tally.depth[model] = depth

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


class Tally:
    """The series every request moves, kept as plain numbers and read when ``/metrics`` is scraped (a prometheus
    collector): ``thoughtvec_requests_total`` and ``thoughtvec_request_seconds`` by route, method and status,
    ``thoughtvec_inputs_total``, ``thoughtvec_sentences_total`` and ``thoughtvec_tokens_total`` by model, and
    ``thoughtvec_queue_depth``. A client metric takes a lock and walks its buckets in Python at each update,
    several a request; these are a few list updates. Every update and every scrape happen on the event loop,
    so none needs a lock."""

    def __init__(self) -> None:
        self.requests: dict[tuple[str, str, int], int] = {}  # (route, method, status) -> requests
        self.latency: dict[tuple[str, str, int], list[float]] = {}  # the same -> [sum, count in each bucket, +Inf last]
        self.embedded: dict[str, list[int]] = {}  # model -> [inputs, sentences, tokens]
        self.depth: dict[str, int] = {}  # model -> sentences waiting

    def request(self, route: str, method: str, status: int, seconds: float) -> None:
        key = (route, method, status)
        self.requests[key] = self.requests.get(key, 0) + 1
        row = self.latency.get(key)
        if row is None:
            row = self.latency[key] = [0.0] * (len(LATENCY_BUCKETS) + 2)
        row[0] += seconds
        row[1 + bisect_left(LATENCY_BUCKETS, seconds)] += 1  # a bucket counts what is <= its bound

    def embed(self, model: str, inputs: int, parts: int, tokens: int) -> None:
        row = self.embedded.get(model)
        if row is None:
            row = self.embedded[model] = [0, 0, 0]
        row[0] += inputs
        row[1] += parts
        row[2] += tokens

    def collect(self) -> Iterator[Metric]:
        labels = ["route", "method", "status"]
        requests = CounterMetricFamily("thoughtvec_requests", "HTTP requests", labels=labels)
        for (route, method, status), n in sorted(self.requests.items()):
            requests.add_metric([route, method, str(status)], n)
        yield requests
        latency = HistogramMetricFamily("thoughtvec_request_seconds", "HTTP request latency", labels=labels)
        for (route, method, status), times in sorted(self.latency.items()):
            cumulative: list[tuple[str, float]] = []
            seen = 0.0
            for bound, in_bucket in zip([*map(str, map(float, LATENCY_BUCKETS)), "+Inf"], times[1:]):
                seen += in_bucket
                cumulative.append((bound, seen))
            latency.add_metric([route, method, str(status)], cumulative, times[0])
        yield latency
        for i, (name, doc) in enumerate(
            (
                ("thoughtvec_inputs", "texts embedded (a split text counts once)"),
                ("thoughtvec_sentences", "sentences (parts) embedded: a split text counts each part"),
                ("thoughtvec_tokens", "tokens embedded (the usage the API reports)"),
            )
        ):
            family = CounterMetricFamily(name, doc, labels=["model"])
            for model, counts in sorted(self.embedded.items()):
                family.add_metric([model], counts[i])
            yield family
        depth = GaugeMetricFamily("thoughtvec_queue_depth", "sentences waiting", labels=["model"])
        for model, n in sorted(self.depth.items()):
            depth.add_metric([model], n)
        yield depth


def merge_expositions(texts: list[str]) -> bytes:
    """Several processes' expositions as one: each series the sum of the processes' (counters, histograms' buckets,
    sums and counts, the queue depth), but a series every process holds whole (SAME_IN_EVERY_WORKER) is their largest."""
    families: dict[str, Metric] = {}
    values: dict[str, dict[tuple[str, tuple[tuple[str, str], ...]], float]] = {}
    for text in texts:
        for fam in text_string_to_metric_families(text):
            if fam.name not in families:
                families[fam.name] = Metric(fam.name, fam.documentation, fam.type)
                values[fam.name] = {}
            rows = values[fam.name]
            for sample in fam.samples:
                key = (sample.name, tuple(sample.labels.items()))
                if fam.name in SAME_IN_EVERY_WORKER:
                    rows[key] = max(rows.get(key, sample.value), sample.value)
                else:
                    rows[key] = rows.get(key, 0.0) + sample.value
    for name, fam in families.items():
        for (sample_name, labels), value in values[name].items():
            fam.add_sample(sample_name, dict(labels), value)
    registry = CollectorRegistry()
    registry.register(_Fixed(list(families.values())))
    return generate_latest(registry)


class _Fixed:
    """A collector of metric families already made."""

    def __init__(self, families: list[Metric]):
        self.families = families

    def collect(self) -> Iterator[Metric]:
        return iter(self.families)
