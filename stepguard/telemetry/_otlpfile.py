"""The trace file: OTLP/JSON, one ``ExportTraceServiceRequest`` per line, and reading it back.

This is the encoding the OpenTelemetry Collector's ``file`` exporter writes and its
``otlpjsonfile`` receiver reads, so a file from ``stepguard run --trace-file`` goes into any
pipeline. Each exported batch becomes one line: the request that an OTLP/HTTP exporter would have
POSTed (built by the same encoder, ``opentelemetry-exporter-otlp-proto-common``'s
``encode_spans``), written with protobuf's JSON mapping and the two changes the OTLP/JSON spec
makes to it (https://opentelemetry.io/docs/specs/otlp/#json-protobuf-encoding):

- ``traceId``, ``spanId`` and ``parentSpanId`` are hex strings (32 and 16 characters), not base64;
- enum values (``kind``, ``status.code``) are integers.

Field names are lowerCamelCase; 64-bit integers (``startTimeUnixNano``, ``intValue``) are strings.

:func:`read_trace_file` undoes the two changes and parses each line with protobuf's
``json_format``; :func:`replay_trace_file` POSTs the requests to an OTLP/HTTP endpoint, so a file
written offline can be sent to Phoenix, Jaeger or a Collector later.
"""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

__all__ = ["OtlpJsonFileExporter", "encode_line", "read_trace_file", "replay_trace_file"]

_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId"})  # the bytes fields of Span and Span.Link


def _ids(node: Any, convert: Any) -> Any:
    """``node`` with every id field passed through ``convert`` (walks dicts and lists)."""
    if isinstance(node, dict):
        return {k: (convert(v) if k in _ID_KEYS and isinstance(v, str) else _ids(v, convert)) for k, v in node.items()}
    if isinstance(node, list):
        return [_ids(v, convert) for v in node]
    return node


def _b64_to_hex(value: str) -> str:
    return base64.b64decode(value).hex()


def _hex_to_b64(value: str) -> str:
    return base64.b64encode(bytes.fromhex(value)).decode("ascii")


def encode_line(spans: Sequence[ReadableSpan]) -> str:
    """One OTLP/JSON line (no newline) for ``spans``: their ``ExportTraceServiceRequest``.

    Raises:
        Exception: whatever the OTLP encoder raises for a span it cannot encode.
    """
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    data = MessageToDict(encode_spans(spans), use_integers_for_enums=True)
    return json.dumps(_ids(data, _b64_to_hex), ensure_ascii=False, separators=(",", ":"))


def _parse(line: str) -> Any:
    from google.protobuf.json_format import ParseDict
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    return ParseDict(_ids(json.loads(line), _hex_to_b64), ExportTraceServiceRequest())


def read_trace_file(path: str | Path) -> list[Any]:
    """The requests in an OTLP/JSON trace file, one ``ExportTraceServiceRequest`` per non-empty line.

    Raises:
        OSError: the file cannot be read.
        ValueError: a line that is not OTLP/JSON, named by its line number.
    """
    out = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            out.append(_parse(line))
        except Exception as exc:
            raise ValueError(f"{path}:{number}: not an OTLP/JSON ExportTraceServiceRequest: {exc}") from exc
    return out


def iter_spans(requests: Sequence[Any]) -> Iterator[Any]:
    """Every ``opentelemetry.proto.trace.v1.Span`` in ``requests``, in file order."""
    for request in requests:
        for rs in request.resource_spans:
            for ss in rs.scope_spans:
                yield from ss.spans


def replay_trace_file(path: str | Path, endpoint: str, headers: Mapping[str, str] | None = None, timeout_s: float = 10.0) -> int:
    """POST every request in an OTLP/JSON trace file to an OTLP/HTTP traces endpoint, as protobuf.

    Args:
        path: the trace file (``stepguard run --trace-file``).
        endpoint: the full traces URL (``http://127.0.0.1:4318/v1/traces``), or a base URL, to which
            ``/v1/traces`` is appended.
        headers: more HTTP headers (a hosted backend's API key).
        timeout_s: seconds per request.

    Returns:
        The number of spans sent.

    Raises:
        ValueError: a line that is not OTLP/JSON.
        httpx.HTTPError: the endpoint could not be reached or answered with an error status.
    """
    import httpx

    url = endpoint.rstrip("/")
    if not url.endswith("/v1/traces"):
        url += "/v1/traces"
    sent = 0
    requests = read_trace_file(path)
    with httpx.Client(timeout=timeout_s) as client:
        for request in requests:
            resp = client.post(url, content=request.SerializeToString(),
                               headers={"Content-Type": "application/x-protobuf", **(headers or {})})
            resp.raise_for_status()
            sent += sum(1 for _ in iter_spans([request]))
    return sent


class OtlpJsonFileExporter(SpanExporter):
    """Appends each batch of spans to ``path`` as one OTLP/JSON ``ExportTraceServiceRequest`` line.

    The Collector's ``otlpjsonfile`` receiver reads the file as it is; so do
    :func:`read_trace_file` and :func:`replay_trace_file`. The file is opened per batch, so it can
    be read (``tail -f``) while a run writes it.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Write the batch; a span that cannot be encoded, a full disk or a vanished folder is a
        FAILURE, never an exception."""
        if not spans:
            return SpanExportResult.SUCCESS
        try:
            line = encode_line(spans) + "\n"
            with self._lock, self.path.open("a", encoding="utf-8") as fh:
                fh.write(line)
        except Exception:  # noqa: BLE001 - an exporter never raises into the SDK
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        """Nothing to close: the file is opened per batch."""

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is buffered here."""
        return True
