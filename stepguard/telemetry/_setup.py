"""``configure_telemetry`` and ``shutdown``: tracer and meter providers from arguments and OTEL_* variables.

Environment variables honoured (the OpenTelemetry SDK's standard ones):

================================  ==================================================================
``OTEL_EXPORTER_OTLP_ENDPOINT``   base URL; ``/v1/traces`` and ``/v1/metrics`` are appended
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``..._METRICS_ENDPOINT``  full URL of one signal
``OTEL_EXPORTER_OTLP_HEADERS``    ``k=v,k2=v2`` sent with each export (API keys of hosted backends)
``OTEL_EXPORTER_OTLP_PROTOCOL``   ``http/protobuf`` (default); ``grpc`` needs the extra package
                                  ``opentelemetry-exporter-otlp-proto-grpc``
``OTEL_EXPORTER_OTLP_TIMEOUT``    seconds per export (default here 1, not the SDK's 10)
``OTEL_SERVICE_NAME``             ``service.name`` (else the ``service_name`` argument)
``OTEL_RESOURCE_ATTRIBUTES``      more resource attributes (``openinference.project.name=x`` picks
                                  the Phoenix project)
``OTEL_TRACES_EXPORTER``          ``none`` turns OTLP span export off
``OTEL_METRICS_EXPORTER``         ``otlp`` turns OTLP metric export **on** (see below)
================================  ==================================================================

Metrics go over OTLP only when asked (``OTEL_METRICS_EXPORTER=otlp``, or a
``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT``): unlike the SDK's default, because the usual local
backends (Phoenix, Jaeger) take traces only and answer ``/v1/metrics`` with 404/405.
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, cast

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, MetricExporter, MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

from stepguard.telemetry._export import FailureNotice, QuietExporter
from stepguard.telemetry._otlpfile import OtlpJsonFileExporter

__all__ = ["DEFAULT_EXPORT_TIMEOUT_S", "DEFAULT_OTLP_ENDPOINT", "configure_from_flags", "configure_telemetry",
           "otlp_endpoint_from_env", "shutdown"]

log = logging.getLogger("stepguard.telemetry")

DEFAULT_OTLP_ENDPOINT = "http://127.0.0.1:4318"
"""Where ``stepguard run --otel`` sends when no OTEL_* endpoint is set (OTLP/HTTP's usual port)."""
DEFAULT_EXPORT_TIMEOUT_S = 1.0
"""Seconds one OTLP export may take, retries included, unless ``OTEL_EXPORTER_OTLP_TIMEOUT`` says.

Short (the SDK's is 10): a run's last spans are exported when it ends, so a backend that is down
delays the end of ``stepguard run`` by at most this; a local Collector or Phoenix answers in
milliseconds, and a distant backend that needs longer is given it with the variable."""

_providers: list[tuple[TracerProvider, MeterProvider]] = []
_lock = threading.Lock()
_atexit_registered = False


def otlp_endpoint_from_env(signal: str = "traces") -> str | None:
    """The OTLP URL for ``signal`` ("traces" or "metrics") from the OTEL_* variables, or None."""
    full = os.environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT", "").strip()
    if full:
        return full
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip()
    return _signal_url(base, signal) if base else None


def _signal_url(base: str, signal: str) -> str:
    base = base.rstrip("/")
    path = f"/v1/{signal}"
    return base if base.endswith(path) else base + path


def _protocol(signal: str) -> str:
    proto = (os.environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL") or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
             or "http/protobuf")
    proto = proto.strip().lower()
    if proto not in ("http/protobuf", "grpc"):
        raise ValueError(f"OTEL_EXPORTER_OTLP_PROTOCOL={proto!r} is not supported: use http/protobuf (default) or grpc")
    return proto


def _timeout() -> float | None:
    if os.environ.get("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT") or os.environ.get("OTEL_EXPORTER_OTLP_TIMEOUT"):
        return None  # the exporter reads them (seconds)
    return DEFAULT_EXPORT_TIMEOUT_S


def _otlp_exporter(signal: str, url: str) -> Any:
    """An OTLP exporter for ``signal`` to ``url`` over the configured protocol; headers from env."""
    if _protocol(signal) == "grpc":
        try:
            if signal == "traces":
                from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans
                grpc: Any = GrpcSpans
            else:
                from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetrics
                grpc = GrpcMetrics
        except ImportError as exc:
            raise ValueError("OTEL_EXPORTER_OTLP_PROTOCOL=grpc needs the package opentelemetry-exporter-otlp-proto-grpc "
                             "(pip install opentelemetry-exporter-otlp-proto-grpc), or use http/protobuf") from exc
        grpc_url = url.removesuffix(f"/v1/{signal}")
        return grpc(endpoint=grpc_url, timeout=_timeout())
    if signal == "traces":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        return OTLPSpanExporter(endpoint=url, timeout=_timeout())
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    return OTLPMetricExporter(endpoint=url, timeout=_timeout())


def _enabled(signal: str) -> bool:
    value = os.environ.get(f"OTEL_{signal.upper()}_EXPORTER", "").strip().lower()
    if signal == "metrics":  # opt-in: see the module docstring
        return "otlp" in value or (bool(os.environ.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")) and value != "none")
    return value != "none"


def configure_telemetry(
    otlp_endpoint: str | None = None,
    trace_file: str | Path | None = None,
    service_name: str = "stepguard",
    console: bool = False,
    *,
    resource_attributes: dict[str, Any] | None = None,
    metric_readers: list[MetricReader] | None = None,
    otlp_from_env: bool = True,
    set_global: bool = False,
    on_export_failure: Callable[[str], None] | None = None,
) -> tuple[TracerProvider, MeterProvider]:
    """Build a tracer provider and a meter provider for :class:`~stepguard.telemetry.OtelObserver`.

    Args:
        otlp_endpoint: OTLP/HTTP base URL (``http://127.0.0.1:6006`` for Phoenix, ``:4318`` for
            Jaeger or a Collector); ``/v1/traces`` and ``/v1/metrics`` are appended. ``None`` =
            the OTEL_* variables, and no OTLP export when they are unset too.
        trace_file: append spans to this file in OTLP/JSON, one ``ExportTraceServiceRequest`` per
            line (what the Collector's ``otlpjsonfile`` receiver reads; :func:`read_trace_file`).
        service_name: ``service.name``, unless ``OTEL_SERVICE_NAME`` is set.
        console: also print spans (and metrics at shutdown) to stderr.
        resource_attributes: more resource attributes (e.g. ``{"openinference.project.name": "x"}``).
        metric_readers: more metric readers (a Prometheus reader, an ``InMemoryMetricReader``).
        otlp_from_env: read the OTLP endpoint from the OTEL_* variables when ``otlp_endpoint`` is
            None; False = OTLP only to an explicit ``otlp_endpoint``.
        set_global: also install both as OpenTelemetry's global providers.
        on_export_failure: called once, with a one-line message, when an export first fails
            (``None``: a :class:`~stepguard.telemetry.TelemetryExportWarning`). After a failure an
            OTLP exporter skips exports for 30 s, so a dead backend costs one attempt per 30 s.

    Returns:
        ``(tracer_provider, meter_provider)``. Spans go through a ``BatchSpanProcessor`` (export in
        a background thread: a slow or dead backend never slows a run; it is reported by one
        warning, :class:`~stepguard.telemetry.TelemetryExportWarning`). Call :func:`shutdown` to
        flush; it also runs at interpreter exit.

    Raises:
        ValueError: an unsupported ``OTEL_EXPORTER_OTLP_PROTOCOL``, or ``grpc`` without its package.
    """
    from stepguard import __version__

    attrs: dict[str, Any] = {"service.name": os.environ.get("OTEL_SERVICE_NAME", "").strip() or service_name,
                             "service.version": __version__, **(resource_attributes or {})}
    resource = Resource.create(attrs)
    notice = FailureNotice(on_export_failure)
    tp = TracerProvider(resource=resource, shutdown_on_exit=False)
    readers: list[MetricReader] = list(metric_readers or ())
    traces_url: str | None
    metrics_url: str | None
    if otlp_endpoint:
        traces_url, metrics_url = _signal_url(otlp_endpoint, "traces"), _signal_url(otlp_endpoint, "metrics")
    elif otlp_from_env:
        traces_url, metrics_url = otlp_endpoint_from_env("traces"), otlp_endpoint_from_env("metrics")
    else:
        traces_url = metrics_url = None
    if traces_url and _enabled("traces"):
        tp.add_span_processor(BatchSpanProcessor(_spans(QuietExporter(_otlp_exporter("traces", traces_url), traces_url, "spans", notice))))
    if metrics_url and _enabled("metrics"):
        exporter = QuietExporter(_otlp_exporter("metrics", metrics_url), metrics_url, "metrics", notice)
        readers.append(PeriodicExportingMetricReader(cast(MetricExporter, exporter)))  # QuietExporter: see _spans
    if trace_file is not None:
        path = str(trace_file)
        tp.add_span_processor(BatchSpanProcessor(_spans(QuietExporter(OtlpJsonFileExporter(path), path, "spans", notice, pause_s=0))))
    if console:
        tp.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
        readers.append(PeriodicExportingMetricReader(ConsoleMetricExporter(out=sys.stderr)))
    mp = MeterProvider(resource=resource, metric_readers=readers, shutdown_on_exit=False)
    if set_global:
        from opentelemetry import metrics, trace

        trace.set_tracer_provider(tp)
        metrics.set_meter_provider(mp)
    global _atexit_registered
    with _lock:
        _providers.append((tp, mp))
        if not _atexit_registered:
            atexit.register(shutdown)
            _atexit_registered = True
    return tp, mp


def configure_from_flags(otel: bool, trace_file: str | Path | None,
                         on_export_failure: Callable[[str], None] | None = None) -> tuple[TracerProvider, MeterProvider] | None:
    """The providers ``--otel`` / ``--trace-file`` ask for, the same for ``stepguard run``, ``bench run`` and ``serve``.

    ``otel``: OTLP/HTTP to the OTEL_* endpoint, else :data:`DEFAULT_OTLP_ENDPOINT`; ``trace_file``:
    OTLP/JSON lines appended to that file. Neither: ``None`` (nothing configured).

    Raises:
        ValueError: an unsupported ``OTEL_EXPORTER_OTLP_PROTOCOL`` (as :func:`configure_telemetry`).
    """
    if not otel and trace_file is None:
        return None
    endpoint = DEFAULT_OTLP_ENDPOINT if otel and not otlp_endpoint_from_env() else None
    return configure_telemetry(otlp_endpoint=endpoint, trace_file=trace_file, otlp_from_env=otel,
                               on_export_failure=on_export_failure)


def shutdown(timeout_s: float = 5.0, providers: tuple[TracerProvider, MeterProvider] | None = None) -> bool:
    """Flush and close every provider :func:`configure_telemetry` made, within ``timeout_s`` seconds.

    Args:
        timeout_s: the most seconds the flush may take.
        providers: only this pair (what one proxy app configured), not every pair made.

    Returns:
        True when everything was flushed in time; False when the time ran out (what was left
        is dropped, with one warning on the ``stepguard.telemetry`` logger).
    """
    with _lock:
        todo = [p for p in _providers if providers is None or p == providers]
        _providers[:] = [p for p in _providers if p not in todo]
    if not todo:
        return True

    def close() -> None:
        for tp, mp in todo:
            for step in (partial(tp.force_flush, int(timeout_s * 1000)), tp.shutdown,
                         partial(mp.shutdown, timeout_millis=timeout_s * 1000)):
                try:
                    step()
                except Exception:  # noqa: BLE001 - closing telemetry must not fail the caller
                    pass

    worker = threading.Thread(target=close, name="stepguard-telemetry-shutdown", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        log.warning("stepguard: telemetry flush did not finish within %.1fs; the rest is dropped", timeout_s)
        return False
    return True


def _spans(exporter: QuietExporter) -> SpanExporter:
    """``exporter`` as the SDK's processors take it: a QuietExporter wraps a span or a metric
    exporter and forwards what it does not define to it, so it is either by duck typing only."""
    return cast(SpanExporter, exporter)
