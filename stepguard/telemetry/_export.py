"""A wrapper that turns a failing trace or metrics backend into one warning.

The OTLP exporters log every failed batch (and every retry) through their module loggers; a run
that traces to a backend that is down would scroll those lines forever. :class:`QuietExporter`
drops those records, remembers the last one as the reason, and gives one
:class:`TelemetryExportWarning` for all the exporters of one ``configure_telemetry`` call.
"""

from __future__ import annotations

import logging
import threading
import warnings
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.trace.export import SpanExportResult

__all__ = ["FailureNotice", "QuietExporter", "TelemetryExportWarning"]

log = logging.getLogger("stepguard.telemetry")

# Loggers that report each failed or retried export; their records are swallowed by QuietExporter.
_NOISY = (
    "opentelemetry.exporter.otlp.proto.http.trace_exporter",
    "opentelemetry.exporter.otlp.proto.http.metric_exporter",
    "opentelemetry.exporter.otlp.proto.http._common",
    "opentelemetry.exporter.otlp.common.http",
    "opentelemetry.exporter.otlp.proto.grpc.exporter",
    "opentelemetry.exporter.otlp.proto.grpc.trace_exporter",
    "opentelemetry.exporter.otlp.proto.grpc.metric_exporter",
)


class TelemetryExportWarning(RuntimeWarning):
    """The trace or metrics backend could not be reached; the run went on without it."""


class _Swallow(logging.Filter):
    """Drops the exporters' warning and error records, keeping the last as the failure reason."""

    def __init__(self) -> None:
        super().__init__("stepguard.telemetry.swallow")
        self.last = ""
        self.cause = ""  # the error behind the last "Transient error ..., retrying" record

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING:
            try:
                self.last = record.getMessage()
                if str(record.msg).startswith("Transient error") and record.args:
                    self.cause = str(record.args[0])  # type: ignore[index]
            except Exception:  # noqa: BLE001
                self.last = str(record.msg)
            return False
        return True

    def reason(self) -> str:
        """The last swallowed message, with the underlying error when it was a retried one (<= 300 chars)."""
        text = self.last or "export failed"
        if self.cause and self.cause not in text:
            text = f"{text.rstrip('.')}: {self.cause}"
        return text[:300]


_SWALLOW = _Swallow()
_installed = False
_install_lock = threading.Lock()


def silence_exporter_logs() -> None:
    """Install the filter on the OTLP exporters' loggers (idempotent; process-wide: it also quiets
    OTLP exporters that other code in the process set up, whose failures stepguard then cannot see)."""
    global _installed
    with _install_lock:
        if _installed:
            return
        for name in _NOISY:
            logging.getLogger(name).addFilter(_SWALLOW)
        _installed = True


class FailureNotice:
    """Says once that telemetry could not be exported; shared by the exporters of one set-up.

    Attributes:
        failures: exports that failed so far (all signals).
        warned: whether the one warning has been given.
    """

    def __init__(self) -> None:
        self.failures, self.warned = 0, False
        self._lock = threading.Lock()

    def failed(self, signal: str, target: str, reason: str) -> None:
        """Count a failed export; the first one warns (:class:`TelemetryExportWarning`; also logged at INFO)."""
        with self._lock:
            self.failures += 1
            if self.warned:
                return
            self.warned = True
        msg = (f"stepguard: could not export {signal} to {target} ({reason}); runs go on "
               "without it, and further failures are not reported")
        log.info(msg)  # the one user-facing channel is the warning (filterable by its category)
        warnings.warn(msg, TelemetryExportWarning, stacklevel=1)


class QuietExporter:
    """Wraps a span or metric exporter: failures never raise, and are reported once.

    Args:
        inner: the exporter (``OTLPSpanExporter``, ``OTLPMetricExporter``, ...).
        target: what to name in the warning (the endpoint URL; never headers).
        signal: ``"spans"`` or ``"metrics"``.
        notice: the :class:`FailureNotice` shared with the set-up's other exporters; a new one if None.
    """

    def __init__(self, inner: Any, target: str, signal: str = "spans", notice: FailureNotice | None = None) -> None:
        self._inner, self.target, self.signal = inner, target, signal
        self.notice = notice or FailureNotice()
        silence_exporter_logs()

    def __getattr__(self, name: str) -> Any:  # metric exporters carry preferred temporality etc.
        return getattr(self._inner, name)

    def export(self, batch: Any, *args: Any, **kwargs: Any) -> Any:
        """Export through the inner exporter; a failure or exception is counted, never raised."""
        try:
            result = self._inner.export(batch, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - a broken backend must not break the run
            self.notice.failed(self.signal, self.target, f"{type(exc).__name__}: {exc}")
            return _failure(batch)
        if getattr(result, "name", "") == "FAILURE":
            self.notice.failed(self.signal, self.target, _SWALLOW.reason())
        return result

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush the inner exporter (never raises)."""
        try:
            return bool(self._inner.force_flush(timeout_millis))
        except Exception:  # noqa: BLE001
            return False

    def shutdown(self, *args: Any, **kwargs: Any) -> None:
        """Shut the inner exporter down (never raises)."""
        try:
            self._inner.shutdown(*args, **kwargs)
        except Exception:  # noqa: BLE001
            pass


def _failure(batch: Any) -> Any:
    if isinstance(batch, Sequence):
        return SpanExportResult.FAILURE
    from opentelemetry.sdk.metrics.export import MetricExportResult

    return MetricExportResult.FAILURE
