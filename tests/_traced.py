"""A tracer and meter provider that keep every span and metric in memory, for the telemetry tests."""

from __future__ import annotations

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from stepguard.telemetry import OtelObserver

__all__ = ["Traced"]


class Traced:
    """A tracer and meter provider that keep everything in memory."""

    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.tp = TracerProvider()
        self.tp.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        self.mp = MeterProvider(metric_readers=[self.reader])

    def observer(self, **kw) -> OtelObserver:
        return OtelObserver(self.tp, self.mp, **kw)

    def named(self, prefix: str) -> list:
        return [s for s in self.spans.get_finished_spans() if s.name.startswith(prefix)]

    def metrics(self) -> dict[str, list]:
        out: dict[str, list] = {}
        for rm in self.reader.get_metrics_data().resource_metrics:
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    out[m.name] = list(m.data.data_points)
        return out
