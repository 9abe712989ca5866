"""Traces and metrics of guarded runs, in the OpenTelemetry GenAI semantic conventions.

Public face:

- :class:`OtelObserver`: pass it to ``Guard(..., observer=...)``; one ``invoke_workflow`` span per
  run, a ``stepguard.chunk`` span per chunk, a ``chat {model}`` CLIENT span per model call,
  ``gen_ai.evaluation.result`` events per checked step, and the ``gen_ai.client.*`` and
  ``stepguard.*`` metrics.
- :func:`configure_telemetry`: tracer and meter providers that export over OTLP/HTTP (Phoenix,
  Jaeger, Tempo, a Collector), to an OTLP/JSON trace file, or to the console; honours the OTEL_* variables.
- :class:`OtlpJsonFileExporter`, :func:`read_trace_file`, :func:`replay_trace_file`: the trace file
  (one OTLP ``ExportTraceServiceRequest`` per line, as the Collector's file exporter writes), read
  back, or sent to an OTLP/HTTP endpoint later.
- :func:`configure_from_flags`: what the commands' ``--otel`` / ``--trace-file`` ask for (run, bench run, serve).
- :func:`shutdown`: flush them within a bounded time.
- :class:`TelemetryExportWarning`: given once when the backend cannot be reached.
- ``names``: the module holding every span, attribute, event and metric name, with its source.

Example::

    from stepguard import Guard
    from stepguard.telemetry import OtelObserver, configure_telemetry, shutdown

    tp, mp = configure_telemetry(otlp_endpoint="http://127.0.0.1:6006")   # Phoenix
    Guard(model, observer=OtelObserver(tp, mp)).run(procedure, inputs)
    shutdown()

See ``docs/tracing.md``.
"""

from stepguard.telemetry import _names as names
from stepguard.telemetry._export import TelemetryExportWarning
from stepguard.telemetry._observer import OtelObserver
from stepguard.telemetry._otlpfile import OtlpJsonFileExporter, read_trace_file, replay_trace_file
from stepguard.telemetry._setup import (
    DEFAULT_EXPORT_TIMEOUT_S,
    DEFAULT_OTLP_ENDPOINT,
    configure_from_flags,
    configure_telemetry,
    otlp_endpoint_from_env,
    shutdown,
)

__all__ = [
    "DEFAULT_EXPORT_TIMEOUT_S",
    "DEFAULT_OTLP_ENDPOINT",
    "OtelObserver",
    "OtlpJsonFileExporter",
    "TelemetryExportWarning",
    "configure_from_flags",
    "configure_telemetry",
    "names",
    "otlp_endpoint_from_env",
    "read_trace_file",
    "replay_trace_file",
    "shutdown",
]
