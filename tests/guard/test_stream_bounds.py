"""Bounds inside a streamed window (issue 29.5), against the scripted streaming stub server through the
official ``openai`` client: a chat span records whether and where its stream was cut and why; the
wall-time budget cuts a stream that runs past it; a stream that breaks mid-line or sends an event
that is not JSON ends typed and named, and nothing of the window in flight is committed."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from stepguard import BudgetExhausted, Guard, GuardConfig, ModelError
from stepguard.adapters import load_model
from stepguard.guard import GuardResult, StepOutcome
from stepguard.telemetry import OtelObserver
from tests._stub_server import StubServer

from .test_stream_verified import PROC, RIGHT, N, _text

pytestmark = pytest.mark.slow


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        server.line_s = 0.0
        yield server


def test_a_chat_span_records_where_and_why_its_stream_was_cut(stub: StubServer) -> None:
    def script(last: str) -> str:
        if "was wrong" in last or "Recompute" in last:
            return f"s3 = {RIGHT['s3']}\n"  # the ladder's re-ask of s3 alone
        if "s1 = x" not in last:  # the window after the fix
            return _text({k: v for k, v in RIGHT.items() if int(k[1:]) >= 4})
        return _text({**RIGHT, "s3": 0})

    stub.script = script
    spans = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(spans))
    guard = Guard(load_model(f"{stub.base_url}#lines"), GuardConfig(streamed=True, ladder=("restate",)), observer=OtelObserver(tp))
    result = guard.run(PROC, {"x": 2})
    assert result.status == "verified" and result.usage.model_calls == 3
    first, again, rest = (s.attributes for s in sorted((s for s in spans.get_finished_spans() if s.name.startswith("chat ")),
                                                        key=lambda s: s.start_time))
    assert tuple(first["gen_ai.response.finish_reasons"]) == ("cut",)
    assert first["gen_ai.request.stream"] is True and first["gen_ai.response.time_to_first_chunk"] >= 0
    assert (first["stepguard.stream.cut.step"], first["stepguard.stream.cut.kind"]) == ("s3", "arithmetic_error")
    assert first["stepguard.stream.cut.verified_steps"] == 2
    assert first["stepguard.stream.cut.chars"] == len(_text({"s1": 3, "s2": 5, "s3": 0, "s4": 12}))  # s4's line started: s3 judged
    assert "gen_ai.request.stream" not in again and "stepguard.stream.cut.step" not in again  # the re-ask, read whole
    assert rest["gen_ai.request.stream"] is True and tuple(rest["gen_ai.response.finish_reasons"]) == ("stop",)
    assert not any(k.startswith("stepguard.stream.cut") for k in rest)


def test_the_wall_time_budget_cuts_a_stream_that_runs_past_it(stub: StubServer) -> None:
    stub.script = lambda last: _text(RIGHT)
    stub.line_s = 0.05
    stub.hold_at, stub.hold_s = 3, 2.0  # three lines, then nothing for two seconds: past the budget
    spans = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(spans))
    guard = Guard(load_model(f"{stub.base_url}#lines"), GuardConfig(streamed=True, max_wall_s=1.0, on_exhausted="raise"),
                  observer=OtelObserver(tp))
    told: list[str] = []
    with pytest.raises(BudgetExhausted, match="wall_time budget spent at step s5") as err:
        for item in guard.stream(PROC, {"x": 2}):
            if isinstance(item, StepOutcome):
                told.append(item.var)
    assert err.value.budget == "wall_time"
    result = err.value.result
    assert isinstance(result, GuardResult) and result.usage.model_calls == 1
    assert told == ["s1", "s2", "s3", "s4"] == [s.var for s in result.steps if s.provenance == "model_verified"]
    (dev,) = result.deviations
    assert (dev.kind, dev.step) == ("budget_exhausted", "s5") and "while the model was writing step s5" in dev.detail
    (chat,) = [s.attributes for s in spans.get_finished_spans() if s.name.startswith("chat ")]
    assert (chat["stepguard.stream.cut.step"], chat["stepguard.stream.cut.kind"]) == ("s5", "budget_exhausted")
    for _ in range(100):  # the server notices the closed connection at its next write
        if stub.aborted["lines"]:
            break
        time.sleep(0.05)
    assert stub.aborted["lines"] == 1 and stub.lines_sent["lines"] < N  # closed at the first line after the budget ran out


@pytest.mark.parametrize(("fault", "message"), [
    ("reset", r"the stream broke off after \d+ characters"),
    ("garbage", r"the stream broke off after \d+ characters: JSONDecodeError"),
])
def test_a_stream_that_breaks_mid_line_or_sends_an_event_that_is_not_json_ends_typed_and_named(
        stub: StubServer, fault: str, message: str) -> None:
    stub.script = lambda last: _text(RIGHT)
    stub.fault_at, stub.fault = 5, fault
    told: list[str] = []
    model = load_model(f"{stub.base_url}#lines", max_retries=0)
    with pytest.raises(ModelError, match=message) as err:
        for item in Guard(model, GuardConfig(streamed=True)).stream(PROC, {"x": 2}):
            if isinstance(item, StepOutcome):
                told.append(item.var)
    assert told == ["s1", "s2", "s3", "s4"]  # each told as its line verified, before the break
    result = err.value.result
    assert isinstance(result, GuardResult)  # the partial result: the window in flight commits nothing
    assert result.status == "failed" and all(s.provenance == "missing" for s in result.steps)
