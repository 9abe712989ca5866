"""A wrapper that turns a failing trace or metrics backend into one warning.

The OTLP exporters log every failed batch (and every retry) through their module loggers; a run
that traces to a backend that is down would scroll those lines forever. :class:`QuietExporter`
drops those records, remembers the last one as the reason, gives one report (a
:class:`TelemetryExportWarning`, or one line through a caller's function) for all the exporters
of one ``configure_telemetry`` call, and after a failure skips exports for a while, so a dead
backend costs one export attempt per pause rather than one per batch.
"""

from __future__ import annotations

import logging
import re
import threading
import time
import warnings
from collections.abc import Callable, Sequence
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
                if str(record.msg).startswith("Transient error") and isinstance(record.args, tuple) and record.args:
                    self.cause = str(record.args[0])
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


def short_reason(text: str) -> str:
    """The cause of a failed export in a few words (the exporters' messages run to 300 characters).

    ``"... [Errno 111] Connection refused ..."`` -> ``"connection refused"``; an HTTP status stays
    (``"HTTP 404"``); an export the exporter gave up on without naming the error is
    ``"unreachable, or no answer within the export timeout"``.
    """
    low = text.lower()
    if "max retries or shutdown" in low and ":" not in low.split("shutdown", 1)[1]:
        return "unreachable, or no answer within the export timeout"  # the exporter gave up without naming why
    for needle, said in (("refused", "connection refused"), ("reset", "connection reset"),
                         ("remotedisconnected", "connection closed without an answer"),
                         ("aborted", "connection closed without an answer"), ("timed out", "no answer in time"),
                         ("timeout", "no answer in time"), ("name or service not known", "unknown host"),
                         ("nodename nor servname", "unknown host")):
        if needle in low:
            return said
    code = re.search(r"code: (\d{3})", text)
    if code:
        return f"HTTP {code.group(1)}"
    return text.splitlines()[0][:160] if text.strip() else "no answer"


class FailureNotice:
    """Says once that telemetry could not be exported; shared by the exporters of one set-up.

    Args:
        report: called with the one message (a single line) instead of warning; ``None`` = a
            :class:`TelemetryExportWarning`. The command line passes a function that prints it.

    Attributes:
        failures: exports that failed or were skipped so far (all signals).
        warned: whether the one warning has been given.
    """

    def __init__(self, report: Callable[[str], None] | None = None) -> None:
        self.failures, self.warned = 0, False
        self.report = report
        self._lock = threading.Lock()

    def failed(self, signal: str, target: str, reason: str) -> None:
        """Count a failed export; the first one is reported (one line), the rest are not."""
        with self._lock:
            self.failures += 1
            if self.warned:
                return
            self.warned = True
        msg = (f"stepguard: could not export {signal} to {target} ({short_reason(reason)}); "
               "going on without them, further failures not reported")
        log.info(msg)
        if self.report is not None:
            try:
                self.report(msg)
            except Exception:  # noqa: BLE001 - reporting must not break the export thread
                pass
        else:
            warnings.warn(msg, TelemetryExportWarning, stacklevel=1)


class QuietExporter:
    """Wraps a span or metric exporter: failures never raise, are reported once, and pause exports.

    After a failed export the next ones are skipped (reported as failures at once, no network)
    for ``pause_s`` seconds, then one is tried again: a backend that is down costs one export
    attempt per pause, not one per batch, and a run's final flush does not wait on it again.

    Args:
        inner: the exporter (``OTLPSpanExporter``, ``OTLPMetricExporter``, ...).
        target: what to name in the warning (the endpoint URL; never headers).
        signal: ``"spans"`` or ``"metrics"``.
        notice: the :class:`FailureNotice` shared with the set-up's other exporters; a new one if None.
        pause_s: seconds to skip exports after a failure (0: never skip; the file exporter's).

    Attributes:
        attempts: exports passed to ``inner`` so far.
    """

    def __init__(self, inner: Any, target: str, signal: str = "spans", notice: FailureNotice | None = None,
                 pause_s: float = 30.0) -> None:
        self._inner, self.target, self.signal = inner, target, signal
        self.notice = notice or FailureNotice()
        self.pause_s = pause_s
        self.attempts = 0
        self._paused_until = 0.0
        silence_exporter_logs()

    def __getattr__(self, name: str) -> Any:  # metric exporters carry preferred temporality etc.
        return getattr(self._inner, name)

    def export(self, batch: Any, *args: Any, **kwargs: Any) -> Any:
        """Export through the inner exporter; a failure or exception is counted, never raised."""
        if self.pause_s and time.monotonic() < self._paused_until:
            self.notice.failed(self.signal, self.target, "skipped: the backend failed recently")
            return _failure(batch)
        self.attempts += 1
        try:
            result = self._inner.export(batch, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 - a broken backend must not break the run
            self._pause()
            self.notice.failed(self.signal, self.target, f"{type(exc).__name__}: {exc}")
            return _failure(batch)
        if getattr(result, "name", "") == "FAILURE":
            self._pause()
            self.notice.failed(self.signal, self.target, _SWALLOW.reason())
        return result

    def _pause(self) -> None:
        if self.pause_s:
            self._paused_until = time.monotonic() + self.pause_s

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
