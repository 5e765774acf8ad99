"""Traces (``service/core/tracing.py``): a request's span with its parse, queue, run and answer stages, through the
door and the batcher, exported by OTLP where ``otlp_endpoint`` is set; nothing looked up or recorded where it is not."""

from __future__ import annotations

import sys
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra (pip install -e '.[otel]') is not installed")

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from tests.service.conftest import serve_test, settings_for
from thoughtvec.service.core import tracing
from thoughtvec.service.core.tracing_otel import Exporter
from thoughtvec.service.http.app import start_tracing
from thoughtvec.service.settings import Settings

STAGES = ["parse", "queue", "run", "answer"]


@pytest.fixture
def spans():
    """Tracing on, into memory, for the test."""
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracing.enable(Exporter(provider))
    try:
        yield memory
    finally:
        tracing.stop()


def request_span(memory: InMemorySpanExporter, name: str):
    found = [s for s in memory.get_finished_spans() if s.name == name]
    assert len(found) == 1, [s.name for s in memory.get_finished_spans()]
    return found[0]


def children(memory: InMemorySpanExporter, parent) -> list:
    kids = [s for s in memory.get_finished_spans() if s.parent is not None and s.parent.span_id == parent.context.span_id]
    return sorted(kids, key=lambda s: s.start_time)


def test_an_embeddings_request_is_a_span_with_its_stages_in_order(client, spans):
    r = client.post("/v1/embeddings", json={"input": ["the cat sat", "a dog ran in the city"], "model": "tiny"})
    assert r.status_code == 200
    root = request_span(spans, "POST /v1/embeddings")
    assert root.kind == SpanKind.SERVER and root.parent is None
    assert root.attributes["http.route"] == "/v1/embeddings" and root.attributes["http.request.method"] == "POST"
    assert root.attributes["http.response.status_code"] == 200 and root.attributes["thoughtvec.model"] == "tiny"
    stages = children(spans, root)
    assert [s.name for s in stages] == STAGES
    assert all(root.start_time <= s.start_time <= s.end_time <= root.end_time for s in stages)
    assert all(a.end_time <= b.start_time for a, b in zip(stages, stages[1:]))  # one after the other
    run = stages[2].attributes
    assert run["thoughtvec.model"] == "tiny" and run["thoughtvec.batch.size"] == 2 and run["thoughtvec.batch.id"].startswith("tiny#")
    assert run["thoughtvec.batch.padded_tokens"] >= 2 * 3


def test_a_request_on_fastapis_way_has_its_route_and_its_stages(client, spans):
    r = client.post("/v1/indexes", json={"name": "traced", "model": "tiny"})
    assert r.status_code == 201, r.text
    root = request_span(spans, "POST /v1/indexes")
    assert root.attributes["http.response.status_code"] == 201
    assert [s.name for s in children(spans, root)] == ["parse", "answer"]  # no model ran


def test_a_refused_request_has_its_status_and_is_not_an_error_of_the_server(client, spans):
    assert client.post("/v1/embeddings", json={"input": ["ok", "   "], "model": "tiny"}).status_code == 422
    root = request_span(spans, "POST /v1/embeddings")
    assert root.attributes["http.response.status_code"] == 422 and root.status.status_code == StatusCode.UNSET
    assert "run" not in [s.name for s in children(spans, root)]
    assert client.get("/v1/nowhere").status_code == 404
    unmatched = request_span(spans, "GET")  # no route: its span is named by its method alone
    assert unmatched.attributes["http.response.status_code"] == 404 and "http.route" not in unmatched.attributes


def test_a_callers_traceparent_makes_the_request_its_child(client, spans):
    trace_id, span_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    headers = {"traceparent": f"00-{trace_id}-{span_id}-01"}
    assert client.post("/v1/embeddings", json={"input": "the cat", "model": "tiny"}, headers=headers).status_code == 200
    root = request_span(spans, "POST /v1/embeddings")
    assert root.context.trace_id == int(trace_id, 16) and root.parent.span_id == int(span_id, 16)


def test_nothing_is_looked_up_or_recorded_when_tracing_is_off(client, monkeypatch):
    import opentelemetry.trace

    def called(*args, **kwargs):
        raise AssertionError("a tracing call while tracing is off")

    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    assert not tracing.ENABLED
    for name in ("begin", "current", "batch"):
        monkeypatch.setattr(tracing, name, called)
    monkeypatch.setattr(opentelemetry.trace, "get_tracer_provider", lambda: provider)  # FastAPI's hooks would find it
    monkeypatch.setattr(opentelemetry.trace, "get_tracer", called)
    assert client.post("/v1/embeddings", json={"input": "the cat", "model": "tiny"}).status_code == 200
    assert client.post("/v1/indexes", json={"name": "untraced", "model": "tiny"}).status_code == 201
    assert client.get("/health").status_code == 200
    assert memory.get_finished_spans() == ()


def test_without_the_sdk_tracing_does_not_start_and_says_what_to_install(monkeypatch):
    import thoughtvec.service.core

    monkeypatch.setitem(sys.modules, "thoughtvec.service.core.tracing_otel", None)  # as if the otel extra were missing
    monkeypatch.delattr(thoughtvec.service.core, "tracing_otel", raising=False)
    try:
        with pytest.raises(ImportError, match=r"pip install 'thoughtvec\[otel\]'"):
            start_tracing(Settings(otlp_endpoint="http://localhost:4317", build_default_index=False))
        assert not tracing.ENABLED
    finally:
        tracing.stop()


class _Collector:
    """An OTLP trace collector on 127.0.0.1 (HTTP or gRPC): the span names it received."""

    def __init__(self, protocol: str):
        self.spans: list[tuple[bytes, str]] = []  # (trace id, "service: span name")
        self.protocol = protocol
        if protocol == "grpc":
            self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
            collector = self

            class Service(trace_service_pb2_grpc.TraceServiceServicer):
                def Export(self, request, context):
                    collector.received(request)
                    return trace_service_pb2.ExportTraceServiceResponse()

            trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), self.server)
            self.port = self.server.add_insecure_port("127.0.0.1:0")
            self.server.start()
            self.endpoint = f"http://127.0.0.1:{self.port}"
        else:
            collector = self

            class Handler(BaseHTTPRequestHandler):
                def do_POST(self):
                    body = self.rfile.read(int(self.headers["Content-Length"]))
                    assert self.path == "/v1/traces", self.path
                    collector.received(trace_service_pb2.ExportTraceServiceRequest.FromString(body))
                    self.send_response(200)
                    self.send_header("Content-Type", "application/x-protobuf")
                    self.end_headers()
                    self.wfile.write(trace_service_pb2.ExportTraceServiceResponse().SerializeToString())

                def log_message(self, *args):
                    pass

            self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
            threading.Thread(target=self.http.serve_forever, daemon=True).start()
            self.endpoint = f"http://127.0.0.1:{self.http.server_address[1]}"

    def received(self, request) -> None:
        for resource in request.resource_spans:
            service = next(a.value.string_value for a in resource.resource.attributes if a.key == "service.name")
            self.spans += [(s.trace_id, f"{service}: {s.name}") for scope in resource.scope_spans for s in scope.spans]

    def trace_of(self, name: str) -> list[str]:
        """The names of the spans in the one trace that has a span ``name``, as they came."""
        (trace_id,) = {t for t, n in self.spans if n == name}
        return [n for t, n in self.spans if t == trace_id]

    def close(self) -> None:
        if self.protocol == "grpc":
            self.server.stop(None)
        else:
            self.http.shutdown()


@pytest.mark.parametrize("protocol", ["grpc", "http/protobuf"])
def test_a_server_with_an_otlp_endpoint_sends_its_traces_there(models_dir, tmp_path, protocol):
    collector = _Collector(protocol)
    try:
        settings = settings_for(
            models_dir, tmp_path / "indexes", otlp_endpoint=collector.endpoint, otlp_protocol=protocol, otlp_service_name="tv-test"
        )
        with serve_test(settings) as client:
            assert tracing.ENABLED
            assert client.post("/v1/embeddings", json={"input": "the cat", "model": "tiny"}).status_code == 200
        assert not tracing.ENABLED  # stopped with the server, its spans sent
        assert collector.trace_of("tv-test: POST /v1/embeddings") == [*(f"tv-test: {s}" for s in STAGES), "tv-test: POST /v1/embeddings"]
    finally:
        collector.close()
