"""OtelObserver and configure_telemetry with the SDK's in-memory exporter and metric reader."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
import warnings

import pytest
from opentelemetry.trace import SpanKind, StatusCode

from stepguard import Guard, GuardConfig, ModelTimeout
from stepguard.telemetry import OtelObserver, TelemetryExportWarning, configure_telemetry, shutdown
from tests._fakes import CHAIN_INPUTS as INPUTS, ScriptedModel, sum_chain_procedure as _procedure
from tests._traced import Traced

SECRET = "sk-test-SECRET-0123456789"


@pytest.fixture
def traced() -> Traced:
    return Traced()


def _run_with_fault(traced: Traced, **kw):
    model = ScriptedModel(faults={"S7": ["wrong"]})
    cfg = GuardConfig(chunk_size=5, ladder=("restate",))
    return Guard(model, cfg, observer=traced.observer(**kw)).run(_procedure(), INPUTS, thread_id="t-1")


def test_a_derived_rungs_model_calls_are_chat_spans_under_the_chunk_that_asked(traced):
    """The commute rung runs a nested guard: its call is traced, its run and chunks are not."""
    model = ScriptedModel(faults={"S7": ["wrong"]})
    result = Guard(model, GuardConfig(chunk_size=5, ladder=("commute",)), observer=traced.observer()).run(_procedure(), INPUTS)
    assert result.rung_fixes() == {"commute": 1}
    chunks, calls = traced.named("stepguard.chunk"), traced.named("chat ")
    assert len(traced.named("invoke_workflow")) == 1
    assert len(calls) == result.usage.model_calls == len(model.calls) == 4
    assert {c.parent.span_id for c in calls} <= {c.context.span_id for c in chunks}


def test_span_tree_is_run_then_chunk_then_model_call(traced):
    result = _run_with_fault(traced)
    (run,) = traced.named("invoke_workflow")
    chunks, calls = traced.named("stepguard.chunk"), traced.named("chat ")
    assert run.name == "invoke_workflow telemetry_demo" and run.parent is None and run.kind == SpanKind.INTERNAL
    assert len(chunks) == result.chunks == 4 and len(calls) == result.usage.model_calls == 4
    chunk_ids = {c.context.span_id for c in chunks}
    assert all(c.parent.span_id == run.context.span_id for c in chunks)
    assert all(c.parent.span_id in chunk_ids and c.kind == SpanKind.CLIENT for c in calls)
    assert {s.context.trace_id for s in traced.spans.get_finished_spans()} == {run.context.trace_id}
    assert [c.attributes["stepguard.chunk.index"] for c in sorted(chunks, key=lambda s: s.start_time)] == [0, 1, 2, 3]


def test_genai_attributes_on_model_call_and_run(traced):
    result = _run_with_fault(traced)
    call = traced.named("chat ")[0]
    a = call.attributes
    assert call.name == "chat scripted"
    assert a["gen_ai.operation.name"] == "chat" and a["gen_ai.provider.name"] == "test"
    assert a["gen_ai.request.model"] == "scripted" and a["gen_ai.response.model"] == "scripted"
    assert a["gen_ai.request.temperature"] == 0.0 and a["gen_ai.request.seed"] == 0 and a["gen_ai.request.max_tokens"] > 0
    assert tuple(a["gen_ai.response.finish_reasons"]) == ("stop",)
    assert a["gen_ai.usage.input_tokens"] == 100 and a["gen_ai.usage.output_tokens"] > 0
    assert a["openinference.span.kind"] == "LLM"
    ids = [c.attributes["gen_ai.response.id"] for c in sorted(traced.named("chat "), key=lambda s: s.start_time)]
    assert ids == ["scripted-1", "scripted-2", "scripted-3", "scripted-4"]  # the reply's own id, per call
    (run,) = traced.named("invoke_workflow")
    r = run.attributes
    assert r["gen_ai.operation.name"] == "invoke_workflow" and r["gen_ai.workflow.name"] == "telemetry_demo"
    assert r["stepguard.procedure.name"] == "telemetry_demo" and r["stepguard.steps"] == 12
    assert r["stepguard.chunk_size"] == 5 and r["stepguard.policy"] == "reprompt"
    assert r["stepguard.result.status"] == result.status == "verified"
    assert r["stepguard.reprompts"] == 1 and r["stepguard.repaired"] == 0 and r["stepguard.simulated"] is True
    assert r["gen_ai.conversation.id"] == "t-1" and r["openinference.span.kind"] == "CHAIN"
    # the run is the GenAI "invoke agent internal" span: provider Required, request model when available
    assert r["gen_ai.provider.name"] == "test" and r["gen_ai.request.model"] == "scripted"
    assert "gen_ai.system" not in r and "gen_ai.system" not in a  # the name before v1.37
    assert run.status.status_code == StatusCode.UNSET


def test_deviation_is_an_evaluation_event_with_kind_action_and_rung(traced):
    _run_with_fault(traced)
    events = [(c, e) for c in traced.named("stepguard.chunk") for e in c.events]
    assert all(e.name == "gen_ai.evaluation.result" for _, e in events)
    fails = [(c, e) for c, e in events if e.attributes["gen_ai.evaluation.score.label"] == "fail"]
    assert len(fails) == 1
    chunk, ev = fails[0]
    assert ev.attributes["stepguard.step"] == "S7" and ev.attributes["stepguard.deviation.kind"] == "arithmetic_error"
    assert ev.attributes["stepguard.policy.action"] == "reprompt" and ev.attributes["stepguard.rung"] == "restate"
    assert ev.attributes["gen_ai.evaluation.name"] == "stepguard.step_check" and ev.attributes["gen_ai.evaluation.score.value"] == 0.0
    assert chunk.attributes["stepguard.deviation.kind"] == "arithmetic_error" and chunk.attributes["stepguard.chunk.verified"] == 1
    passes = [e for _, e in events if e.attributes["gen_ai.evaluation.score.label"] == "pass"]
    assert sorted(e.attributes["stepguard.step"] for e in passes) == sorted(f"S{k}" for k in range(1, 13))
    retry = next(c for c in traced.named("stepguard.chunk") if c.attributes.get("stepguard.attempt") == 1)
    assert retry.attributes["stepguard.rung"] == "restate" and retry.attributes["stepguard.chunk.first_step"] == "S7"


def _all_text(traced: Traced) -> str:
    return "\n".join(s.to_json() for s in traced.spans.get_finished_spans())


def test_no_content_by_default(traced, monkeypatch):
    monkeypatch.delenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", raising=False)
    _run_with_fault(traced)
    text = _all_text(traced)
    for leak in ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.evaluation.explanation", "input.value",
                 "Known values", "S7 = S6 + S4 =", "stepguard.answer"):
        assert leak not in text


@pytest.mark.parametrize("how", ["argument", "env"])
def test_content_when_opted_in(traced, monkeypatch, how):
    if how == "env":
        monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
        result = _run_with_fault(traced)
    else:
        result = _run_with_fault(traced, capture_content=True)
    a = traced.named("chat ")[0].attributes
    sent = json.loads(a["gen_ai.input.messages"])
    assert sent[-1]["role"] == "user" and "Steps:" in sent[-1]["parts"][0]["content"]
    got = json.loads(a["gen_ai.output.messages"])
    assert got[0]["role"] == "assistant" and got[0]["parts"][0]["content"].startswith("S1 = x")
    fail = next(e for c in traced.named("stepguard.chunk") for e in c.events if e.attributes["gen_ai.evaluation.score.label"] == "fail")
    assert "S7" in fail.attributes["gen_ai.evaluation.explanation"]
    assert traced.named("invoke_workflow")[0].attributes["stepguard.answer"] == result.answer_text


class KeyedModel(ScriptedModel):
    """A model holding an API key the way an adapter would, behind a URL with credentials."""

    spec = f"http://user:{SECRET}@127.0.0.1:9/v1?api_key={SECRET}#scripted"
    base_url = f"http://user:{SECRET}@127.0.0.1:9/v1"
    api_key = SECRET


def test_api_keys_never_appear(traced, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"authorization=Bearer {SECRET}")
    Guard(KeyedModel(), GuardConfig(chunk_size=5), observer=traced.observer(capture_content=True)).run(_procedure(), INPUTS)
    text = _all_text(traced)
    assert SECRET not in text
    (run,) = traced.named("invoke_workflow")
    assert run.attributes["stepguard.model"] == "http://127.0.0.1:9/v1#scripted"
    assert traced.named("chat ")[0].attributes["server.address"] == "127.0.0.1"


def test_metrics_follow_the_genai_conventions(traced):
    result = _run_with_fault(traced)
    m = traced.metrics()
    usage = {p.attributes["gen_ai.token.type"]: p for p in m["gen_ai.client.token.usage"]}
    assert usage["input"].sum == result.usage.input_tokens and usage["output"].sum == result.usage.output_tokens
    assert usage["input"].attributes["gen_ai.operation.name"] == "chat" and usage["input"].count == 4
    (duration,) = m["gen_ai.client.operation.duration"]
    assert duration.count == 4 and duration.sum > 0 and duration.explicit_bounds[0] == 0.01
    assert sum(p.value for p in m["stepguard.steps.verified"]) == 12
    (dev,) = m["stepguard.deviations"]
    assert dev.value == 1 and dev.attributes["stepguard.deviation.kind"] == "arithmetic_error"
    assert sum(p.value for p in m["stepguard.reprompts"]) == 1
    assert "stepguard.repairs" not in m or sum(p.value for p in m["stepguard.repairs"]) == 0


def test_repair_policy_counts_repairs(traced):
    model = ScriptedModel(faults={"S4": ["wrong"]})
    Guard(model, GuardConfig(chunk_size=5, policy="repair"), observer=traced.observer()).run(_procedure(), INPUTS)
    assert sum(p.value for p in traced.metrics()["stepguard.repairs"]) == 1
    assert traced.named("invoke_workflow")[0].attributes["stepguard.result.status"] == "repaired"


class TimeoutModel(ScriptedModel):
    def complete(self, messages, settings=None):
        raise ModelTimeout("no reply in 1s", self.spec)


def test_model_failure_marks_call_chunk_and_run(traced):
    with pytest.raises(ModelTimeout):
        Guard(TimeoutModel(), GuardConfig(), observer=traced.observer()).run(_procedure(), INPUTS)
    (call,) = traced.named("chat ")
    assert call.attributes["error.type"] == "ModelTimeout" and call.status.status_code == StatusCode.ERROR
    (run,) = traced.named("invoke_workflow")
    assert run.attributes["error.type"] == "ModelTimeout" and run.attributes["stepguard.result.status"] == "error"
    assert traced.named("stepguard.chunk")[0].status.status_code == StatusCode.ERROR
    (duration,) = traced.metrics()["gen_ai.client.operation.duration"]
    assert duration.attributes["error.type"] == "ModelTimeout"


async def test_concurrent_runs_on_one_guard_do_not_mix(traced):
    guard = Guard(ScriptedModel(faults={"S7": ["wrong"]}), GuardConfig(chunk_size=5), observer=traced.observer())
    results = await asyncio.gather(*(guard.arun(_procedure(), INPUTS, thread_id=f"c{i}") for i in range(3)))
    runs = traced.named("invoke_workflow")
    assert len(runs) == 3 and len({r.context.trace_id for r in runs}) == 3
    spans = traced.spans.get_finished_spans()
    by_id = {s.context.span_id: s for s in spans}
    for run, result in zip(sorted(runs, key=lambda r: r.attributes["stepguard.thread_id"]), results):
        mine = [s for s in spans if s.context.trace_id == run.context.trace_id]
        chunks = [s for s in mine if s.name == "stepguard.chunk"]
        assert len(chunks) == result.chunks
        for s in mine:
            if s is not run:  # every parent is in the same trace
                assert by_id[s.parent.span_id].context.trace_id == run.context.trace_id


def test_broken_telemetry_never_breaks_a_run(traced):
    obs = traced.observer()
    obs._tracer = type("T", (), {"start_span": lambda *a, **k: (_ for _ in ()).throw(RuntimeError("boom"))})()
    result = Guard(ScriptedModel(), GuardConfig(chunk_size=5), observer=obs).run(_procedure(), INPUTS)
    assert result.status == "verified"


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["down", "silent"])
def test_backend_down_or_silent_run_finishes_and_warns_once(monkeypatch, caplog, backend):
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "1")
    monkeypatch.setenv("OTEL_METRICS_EXPORTER", "otlp")
    listener = None
    if backend == "down":
        port = _closed_port()
    else:  # accepts connections, never answers
        listener = socket.socket()
        listener.bind(("127.0.0.1", 0))
        listener.listen(16)
        port = listener.getsockname()[1]
    try:
        tp, mp = configure_telemetry(otlp_endpoint=f"http://127.0.0.1:{port}")
        caplog.set_level(logging.DEBUG)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            t0 = time.perf_counter()
            for _ in range(3):
                result = Guard(ScriptedModel(), GuardConfig(chunk_size=5), observer=OtelObserver(tp, mp)).run(_procedure(), INPUTS)
                assert result.status == "verified"
            run_s = time.perf_counter() - t0
            t1 = time.perf_counter()
            shutdown(timeout_s=4)
            close_s = time.perf_counter() - t1
    finally:
        if listener is not None:
            listener.close()
    assert run_s < 3, "runs must not wait on the backend"
    assert close_s < 4.5, "shutdown is bounded"
    ours = [w for w in caught if issubclass(w.category, TelemetryExportWarning)]
    assert len(ours) == 1 and f"127.0.0.1:{port}" in str(ours[0].message)
    noisy = [r for r in caplog.records if r.name.startswith("opentelemetry") and r.levelno >= logging.WARNING]
    assert noisy == []
    assert len([r for r in caplog.records if r.name == "stepguard.telemetry" and r.levelno >= logging.WARNING]) == 0


def test_grpc_without_its_package_is_a_clear_error(monkeypatch):
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    import importlib.util

    if importlib.util.find_spec("opentelemetry.exporter.otlp.proto.grpc") is not None:
        pytest.skip("the grpc exporter is installed here")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
    with pytest.raises(ValueError, match="opentelemetry-exporter-otlp-proto-grpc"):
        configure_telemetry(otlp_endpoint="http://127.0.0.1:4317")


def test_cli_trace_file(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from stepguard.cli._app import app

    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    proc = tmp_path / "p.yaml"
    proc.write_text("name: cli_demo\ninputs: [x, y]\nsteps:\n  - {var: S1, expr: x}\n  - {var: S2, expr: S1 + y}\n")
    out = tmp_path / "t.jsonl"
    res = CliRunner().invoke(app, ["run", str(proc), "-i", "x=7", "-i", "y=3", "--model", "sim:perfect", "--trace-file", str(out)])
    assert res.exit_code == 0, res.output
    from stepguard.telemetry import read_trace_file

    names = [s.name for r in read_trace_file(out) for rs in r.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert "invoke_workflow cli_demo" in names and "chat sim:perfect" in names


def test_step_events_deviations_only_keeps_the_fail_event(traced):
    Guard(ScriptedModel(faults={"S7": ["wrong"]}), GuardConfig(chunk_size=5),
          observer=traced.observer(step_events="deviations")).run(_procedure(), INPUTS)
    events = [e for c in traced.named("stepguard.chunk") for e in c.events]
    assert [e.attributes["stepguard.step"] for e in events] == ["S7"]
    assert sum(p.value for p in traced.metrics()["stepguard.steps.verified"]) == 12
    with pytest.raises(ValueError):
        traced.observer(step_events="some")


def test_raise_policy_marks_the_run_failed(traced):
    from stepguard import StepDeviation

    with pytest.raises(StepDeviation):
        Guard(ScriptedModel(faults={"S3": ["wrong"]}), GuardConfig(chunk_size=5, policy="raise"),
              observer=traced.observer()).run(_procedure(), INPUTS)
    (run,) = traced.named("invoke_workflow")
    assert run.attributes["stepguard.result.status"] == "failed" and run.attributes["error.type"] == "stepguard.run_failed"
    assert run.status.status_code == StatusCode.ERROR
    fail = next(e for c in traced.named("stepguard.chunk") for e in c.events if e.attributes["gen_ai.evaluation.score.label"] == "fail")
    assert fail.attributes["stepguard.policy.action"] == "raise" and "stepguard.rung" not in fail.attributes
