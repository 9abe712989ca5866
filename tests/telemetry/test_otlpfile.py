"""The trace file is OTLP/JSON that the pipeline reads: parsed back by protobuf, replayed over OTLP/HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from stepguard import Guard, GuardConfig
from stepguard.telemetry import OtelObserver, OtlpJsonFileExporter, configure_telemetry, read_trace_file, replay_trace_file, shutdown
from tests._fakes import CHAIN_INPUTS as INPUTS, ScriptedModel, sum_chain_procedure as _procedure
from tests._otlp_server import OtlpReceiver


def _value(v) -> object:
    """An OTLP ``AnyValue`` as the Python value the SDK held."""
    kind = v.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(x) for x in v.array_value.values)
    return getattr(v, kind)


def _proto_view(span) -> tuple:
    attrs = {kv.key: _value(kv.value) for kv in span.attributes}
    events = tuple((e.name, e.time_unix_nano, tuple(sorted((kv.key, _value(kv.value)) for kv in e.attributes))) for e in span.events)
    return (span.trace_id.hex(), span.span_id.hex(), span.parent_span_id.hex() or None, span.name, span.kind - 1,
            span.start_time_unix_nano, span.end_time_unix_nano, tuple(sorted(attrs.items())), events, span.status.code)


def _sdk_view(span) -> tuple:
    events = tuple((e.name, e.timestamp, tuple(sorted(e.attributes.items()))) for e in span.events)
    parent = f"{span.parent.span_id:016x}" if span.parent else None
    return (f"{span.context.trace_id:032x}", f"{span.context.span_id:016x}", parent, span.name, span.kind.value,
            span.start_time, span.end_time, tuple(sorted(span.attributes.items())), events, span.status.status_code.value)


def _spans(requests) -> list:
    return [s for r in requests for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]


def _traced_run(tmp_path: Path, *extra) -> tuple[InMemorySpanExporter, Path]:
    memory, path = InMemorySpanExporter(), tmp_path / "trace.otlp.jsonl"
    tp = TracerProvider()
    for exporter in (memory, OtlpJsonFileExporter(path), *extra):
        tp.add_span_processor(SimpleSpanProcessor(exporter))
    model = ScriptedModel(faults={"S7": ["wrong"]})
    Guard(model, GuardConfig(chunk_size=5, ladder=("restate",)), observer=OtelObserver(tp, capture_content=True)).run(_procedure(), INPUTS)
    tp.shutdown()
    return memory, path


def test_trace_file_parses_back_into_the_spans_an_in_memory_exporter_saw(tmp_path):
    memory, path = _traced_run(tmp_path)
    lines = path.read_text().splitlines()
    assert len(lines) == len(memory.get_finished_spans())  # SimpleSpanProcessor: one request per span
    requests = read_trace_file(path)
    assert sorted(map(_proto_view, _spans(requests))) == sorted(map(_sdk_view, memory.get_finished_spans()))
    first = json.loads(lines[0])  # the OTLP/JSON spelling: camelCase, hex ids, integer enums
    span = first["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(span["traceId"]) == 32 and int(span["traceId"], 16) and len(span["spanId"]) == 16
    assert isinstance(span["kind"], int) and "startTimeUnixNano" in span
    assert first["resourceSpans"][0]["scopeSpans"][0]["scope"]["name"] == "stepguard"


def test_each_line_parses_with_protobufs_json_format(tmp_path):
    """A line is protobuf's JSON mapping of ExportTraceServiceRequest, but for the ids: OTLP/JSON
    writes them in hex, which proto3 JSON would read as base64 (24 bytes, not 16), so
    read_trace_file turns them back before parsing."""
    from google.protobuf.json_format import Parse
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    _, path = _traced_run(tmp_path)
    lines = path.read_text().splitlines()
    direct = [Parse(line, ExportTraceServiceRequest()) for line in lines]
    read = read_trace_file(path)
    assert [s.name for s in _spans(direct)] == [s.name for s in _spans(read)]
    assert [MessageToDict(s)["attributes"] for s in _spans(direct)] == [MessageToDict(s)["attributes"] for s in _spans(read)]
    assert {len(s.trace_id) for s in _spans(read)} == {16} and {len(s.trace_id) for s in _spans(direct)} == {24}


@pytest.mark.slow
def test_replaying_the_file_to_otlp_http_delivers_the_same_spans_as_a_live_export(tmp_path):
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    with OtlpReceiver() as live, OtlpReceiver() as replayed:
        memory, path = _traced_run(tmp_path, OTLPSpanExporter(endpoint=f"{live.url}/v1/traces", timeout=5))
        sent = replay_trace_file(path, replayed.url)
        assert sent == len(memory.get_finished_spans()) == len(live.spans()) == len(replayed.spans())
        assert sorted(s.SerializeToString() for s in replayed.spans()) == sorted(s.SerializeToString() for s in live.spans())
        assert [r.resource_spans[0].resource for r in replayed.requests][0] == live.requests[0].resource_spans[0].resource


def test_configure_telemetry_trace_file_holds_one_request_per_batch_with_the_resource(tmp_path, monkeypatch):
    monkeypatch.setenv("OTEL_SERVICE_NAME", "svc-from-env")
    for var in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(var, raising=False)
    path = tmp_path / "spans.jsonl"
    tp, mp = configure_telemetry(trace_file=path)
    Guard(ScriptedModel(faults={"S7": ["wrong"]}), GuardConfig(chunk_size=5), observer=OtelObserver(tp, mp)).run(_procedure(), INPUTS)
    assert shutdown(timeout_s=5)
    requests = read_trace_file(path)
    assert len(requests) == len(path.read_text().splitlines()) >= 1
    names = {s.name for s in _spans(requests)}
    assert names == {"invoke_workflow telemetry_demo", "stepguard.chunk", "chat scripted", "run_guardrail stepguard"}
    resource = {kv.key: _value(kv.value) for kv in requests[0].resource_spans[0].resource.attributes}
    assert resource["service.name"] == "svc-from-env"


def test_a_bad_line_is_named_by_its_number(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text('{"resourceSpans": []}\n\n{"resourceSpans": 5}\n')
    with pytest.raises(ValueError, match=r"t\.jsonl:3"):
        read_trace_file(path)
