"""The per-request series (``core/metrics.py``'s ``Tally``) read exactly as prometheus_client's own would."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from thoughtvec.service.core.metrics import LATENCY_BUCKETS, Metrics

# on the bounds, between them, below the first and past the last
SECONDS = [0.0005, 0.001, 0.0025, 0.003, 0.05, 0.07, 1.0, 29.9, 30.0, 31.0, 120.0]


def exposition(registry: CollectorRegistry, prefix: str) -> list[str]:
    return sorted(line for line in generate_latest(registry).decode().splitlines() if line.startswith(prefix))


def test_requests_and_latency_read_as_client_metrics_would():
    ours = Metrics()
    ref = CollectorRegistry()
    count = Counter("thoughtvec_requests_total", "HTTP requests", ["route", "method", "status"], registry=ref)
    latency = Histogram(
        "thoughtvec_request_seconds", "HTTP request latency", ["route", "method", "status"], buckets=LATENCY_BUCKETS, registry=ref
    )
    for i, s in enumerate(SECONDS):
        status = 200 if i % 3 else 422
        ours.request_done("/v1/embeddings", "POST", status, s)
        count.labels("/v1/embeddings", "POST", str(status)).inc()
        latency.labels("/v1/embeddings", "POST", str(status)).observe(s)
    for prefix in ("thoughtvec_requests_total{", "thoughtvec_request_seconds_"):
        assert exposition(ours.registry, prefix) == exposition(ref, prefix)


def test_embedded_and_queue_depth_read_as_client_metrics_would():
    ours = Metrics()
    ref = CollectorRegistry()
    names = ("thoughtvec_inputs_total", "thoughtvec_sentences_total", "thoughtvec_tokens_total")
    counters = [Counter(n, n, ["model"], registry=ref) for n in names]
    depth = Gauge("thoughtvec_queue_depth", "sentences waiting", ["model"], registry=ref)
    ours.model_loaded("idle")
    for c in counters:
        c.labels("idle")
    depth.labels("idle").set(0)
    for inputs, parts, tokens in ((1, 1, 7), (3, 5, 40)):
        ours.embedded("m", inputs, parts, tokens, 0, 0)
        for c, n in zip(counters, (inputs, parts, tokens)):
            c.labels("m").inc(n)
    ours.queue_depth("m", 12)
    depth.labels("m").set(12)
    for prefix in (*(n + "{" for n in names), "thoughtvec_queue_depth{"):
        assert exposition(ours.registry, prefix) == exposition(ref, prefix)
