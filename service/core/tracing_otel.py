"""A request's recorded stages as OpenTelemetry spans, exported by OTLP: imported only when tracing is on
(:func:`thoughtvec.service.core.tracing.start`), so the serving install needs no OpenTelemetry SDK (the ``otel``
extra brings it).

The spans follow OpenTelemetry's HTTP conventions where they speak of HTTP (a server span named
``{method} {route}``, ``http.request.method``, ``http.route``, ``http.response.status_code``; a 5xx is an error, a
4xx the client's); a caller's W3C ``traceparent`` header makes the request's span a child of the caller's.
"""

from __future__ import annotations

import time
from urllib.parse import urlsplit

from opentelemetry import propagate
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.trace import SpanKind, Status, StatusCode, set_span_in_context

from thoughtvec.service import __version__
from thoughtvec.service.core.tracing import RequestTrace
from thoughtvec.service.settings import Settings

UNMATCHED = "unmatched"  # the door's template for a request no route matches: its span has no route


def otlp_exporter(settings: Settings) -> SpanExporter:
    """OTLP to ``otlp_endpoint`` by ``otlp_protocol``: gRPC (a collector's port 4317, as TEI sends) or HTTP with
    protobuf (port 4318; ``/v1/traces`` is added to an endpoint without a path)."""
    if settings.otlp_protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter  # noqa: PLC0415  # only the protocol in use

        return OTLPSpanExporter(endpoint=settings.otlp_endpoint, insecure=urlsplit(settings.otlp_endpoint).scheme != "https")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpanExporter  # noqa: PLC0415  # only the protocol in use

    url = settings.otlp_endpoint
    if urlsplit(url).path in ("", "/"):
        url = url.rstrip("/") + "/v1/traces"
    return HttpSpanExporter(endpoint=url)


class Exporter:
    """Turns each finished :class:`RequestTrace` into spans of ``provider``'s tracer."""

    def __init__(self, provider: TracerProvider):
        self.provider = provider
        self.tracer = provider.get_tracer("thoughtvec.service", __version__)
        self.offset_ns = time.time_ns() - time.perf_counter_ns()  # perf_counter's clock to the epoch's

    @classmethod
    def to_otlp(cls, settings: Settings) -> Exporter:
        """Spans of service ``otlp_service_name``, sent in batches, off the event loop, to ``otlp_endpoint``."""
        provider = TracerProvider(resource=Resource.create({SERVICE_NAME: settings.otlp_service_name, SERVICE_VERSION: __version__}))
        provider.add_span_processor(BatchSpanProcessor(otlp_exporter(settings)))
        return cls(provider)

    def ns(self, t: float) -> int:
        return int(t * 1e9) + self.offset_ns

    def export(self, trace: RequestTrace, route: str, status: int, end: float) -> None:
        attributes: dict[str, str | int] = {
            "http.request.method": trace.method,
            "url.path": trace.path,
            "http.response.status_code": status,
        }
        if route != UNMATCHED:
            attributes["http.route"] = route
        if trace.models:
            attributes["thoughtvec.model"] = ",".join(trace.models)
        if status >= 500:
            attributes["error.type"] = str(status)
        parent = propagate.extract({k.decode("latin-1"): v.decode("latin-1") for k, v in trace.headers})
        name = trace.method if route == UNMATCHED else f"{trace.method} {route}"
        span = self.tracer.start_span(name, context=parent, kind=SpanKind.SERVER, start_time=self.ns(trace.start), attributes=attributes)
        if status >= 500:
            span.set_status(Status(StatusCode.ERROR))
        inside = set_span_in_context(span)
        for stage in trace.stages:
            child = self.tracer.start_span(stage.name, context=inside, start_time=self.ns(stage.start), attributes=stage.attributes)
            if stage.error is not None:
                child.set_status(Status(StatusCode.ERROR, stage.error))
            child.end(end_time=self.ns(stage.end))
        span.end(end_time=self.ns(end))

    def shutdown(self) -> None:
        """Send what is recorded, then stop."""
        self.provider.shutdown()
