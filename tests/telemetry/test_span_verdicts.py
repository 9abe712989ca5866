"""Each step's verdict is on span attributes too (issue 45): Langfuse collects no OpenTelemetry
events and Datadog takes evaluations through its own API, so a user of either saw the chat spans and
no verdict. Read here through an exporter that drops every event: the chunk spans' parallel arrays
say which step passed and which failed (with its kind and action), and the run span each step's
final provenance. Neighbours: ``step_events="deviations"`` (passes make no event, but are on the
span), a flagged run, and the events themselves, still sent."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from stepguard import Guard, GuardConfig, Procedure
from stepguard.telemetry import OtelObserver
from tests._fakes import ScriptedModel

PROC = Procedure.model_validate({"name": "sums", "inputs": ["x", "y"], "steps": [
    {"var": "a", "expr": "x + y"}, {"var": "b", "expr": "a * 2"}, {"var": "c", "expr": "b - x"}]})


class EventlessExporter(SpanExporter):
    """Keeps each span's name and attributes only, as a backend that drops span events does."""

    def __init__(self) -> None:
        self.spans: list[tuple[str, dict[str, Any]]] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += [(s.name, dict(s.attributes or {})) for s in spans]
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        pass


def _run(config: GuardConfig, *, step_events: str = "all", faults: dict[str, list[str | None]] | None = None
         ) -> tuple[EventlessExporter, InMemorySpanExporter]:
    eventless, full = EventlessExporter(), InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(eventless))
    tp.add_span_processor(SimpleSpanProcessor(full))
    observer = OtelObserver(tp, MeterProvider(), step_events=step_events)  # type: ignore[arg-type]
    Guard(ScriptedModel(faults=faults or {"b": ["wrong"]}), config, observer=observer).run(PROC, {"x": 3, "y": 4})
    return eventless, full


def _checks(spans: list[tuple[str, dict[str, Any]]]) -> list[tuple[str, str, str, str]]:
    out: list[tuple[str, str, str, str]] = []
    for name, a in spans:
        if name == "stepguard.chunk" and "stepguard.evaluation.steps" in a:
            out += zip(a["stepguard.evaluation.steps"], a["stepguard.evaluation.labels"],
                       a["stepguard.evaluation.deviation_kinds"], a["stepguard.evaluation.actions"], strict=True)
    return out


@pytest.mark.parametrize("step_events", ["all", "deviations"])
def test_a_steps_verdict_is_read_from_span_attributes_alone(step_events: str) -> None:
    eventless, full = _run(GuardConfig(chunk_size=3), step_events=step_events)
    checks = _checks(eventless.spans)
    assert ("b", "fail", "arithmetic_error", "reprompt") in checks
    assert [c for c in checks if c[1] == "pass"] == [("a", "pass", "", ""), ("b", "pass", "", ""), ("c", "pass", "", "")]
    [run] = [a for name, a in eventless.spans if name.startswith("invoke_workflow")]
    assert list(run["stepguard.result.steps"]) == ["a", "b", "c"]
    assert list(run["stepguard.result.provenance"]) == ["model_verified"] * 3
    events = [e for s in full.get_finished_spans() for e in s.events if e.name == "gen_ai.evaluation.result"]
    assert any(e.attributes["stepguard.step"] == "b" and e.attributes["gen_ai.evaluation.score.label"] == "fail"
               for e in events)  # the events are still sent


def test_a_flagged_step_shows_on_the_run_span() -> None:
    eventless, _ = _run(GuardConfig(chunk_size=1, policy="flag"), faults={"b": ["wrong"] * 10})
    [run] = [a for name, a in eventless.spans if name.startswith("invoke_workflow")]
    assert dict(zip(run["stepguard.result.steps"], run["stepguard.result.provenance"], strict=True))["b"] == "flagged"
    assert ("b", "fail", "arithmetic_error", "flag") in _checks(eventless.spans)
