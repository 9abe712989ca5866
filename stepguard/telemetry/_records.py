"""Per-run records of :class:`~stepguard.telemetry.OtelObserver` and the span-finishing helpers."""

from __future__ import annotations

import contextvars
import json
import time
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import context as otel_context, trace
from opentelemetry.context import Context
from opentelemetry.trace import NonRecordingSpan, Span, SpanContext, Status, StatusCode, TraceFlags

from stepguard.telemetry import _names as n

__all__ = ["Call", "Chunk", "NullRecord", "Run", "ToolRun", "clean", "finish_run_span", "mark_error", "quiet_context"]


def clean(attrs: dict[str, Any]) -> dict[str, Any]:
    """``attrs`` without the None values (the SDK warns on them)."""
    return {k: v for k, v in attrs.items() if v is not None}


@dataclass
class Chunk:
    """A chunk in progress: what its span will carry, emitted in one burst when the chunk ends.

    Attributes:
        start_ns: start time, ns since the epoch (the span's start_time).
        attrs: the chunk span's attributes at its start.
        calls: its model calls, ended.
        events: ``(attributes, time_ns)`` of its ``gen_ai.evaluation.result`` events.
        passed: steps that passed (one counter add per chunk).
        outcome: attributes known when the chunk's reply was checked.
    """

    start_ns: int
    attrs: dict[str, Any]
    calls: list[Call] = field(default_factory=list)
    events: list[tuple[dict[str, Any], int]] = field(default_factory=list)
    passed: int = 0
    outcome: dict[str, Any] = field(default_factory=dict)
    tools: list[ToolRun] = field(default_factory=list)
    """Its executed tool calls (``execute_tool`` spans)."""


@dataclass
class ToolRun:
    """One executed tool call: attributes, the arguments' verdicts, times, the result or error."""

    name: str
    attrs: dict[str, Any]
    verdicts: list[tuple[str, bool, str]]
    start_ns: int = field(default_factory=time.time_ns)
    end_ns: int = 0
    error: BaseException | None = None

    def result(self, value: str) -> None:
        """Keep the result (recorded only when content capture is on)."""
        self.attrs["_result"] = value


@dataclass
class Run:
    """One run: its live span and context, constant attributes, and the chunk in progress."""

    span: Span
    ctx: Context
    steps: list[str]
    model_attrs: dict[str, Any]  # gen_ai.provider.name, gen_ai.request.model (+ server.*)
    metric_attrs: dict[str, Any]  # attributes of the stepguard.* counters
    chunk: Chunk | None = None
    token: contextvars.Token[Any] | None = None
    procedure: str = ""
    """The procedure's name (the guardrail spans' policy)."""


class NullRecord:
    """The model-call record when no run is being traced."""

    def response(self, response: Any) -> None:
        """Ignore the response."""
        return None

    def result(self, value: Any) -> None:
        """Ignore the tool's result."""
        return None


class Call:
    """One model call: request attributes, times, and the response or error once known."""

    def __init__(self, name: str, attrs: dict[str, Any], metric_attrs: dict[str, Any]) -> None:
        self.name, self.attrs, self.metric_attrs = name, attrs, metric_attrs
        self.start_ns, self.t0 = time.time_ns(), time.perf_counter()
        self.end_ns, self.seconds = self.start_ns, 0.0
        self.resp: Any = None
        self.error: BaseException | None = None

    def response(self, response: Any) -> None:
        """Keep the response; its attributes are set when the span is emitted."""
        self.resp = response

    def finish(self, error: BaseException | None) -> None:
        """Stamp the end time (and the error, if the call raised)."""
        self.seconds = time.perf_counter() - self.t0
        self.end_ns = self.start_ns + int(self.seconds * 1e9)
        self.error = error


def mark_error(span: Span, error: BaseException, record: bool = True) -> None:
    """Set ``error.type`` (the exception's class name) and ERROR status; record the exception event."""
    span.set_attribute(n.ERROR_TYPE, type(error).__name__)
    if record:
        span.record_exception(error)
    span.set_status(Status(StatusCode.ERROR, type(error).__name__))


def finish_run_span(span: Span, result: Any, error: BaseException | None, capture_content: bool) -> None:
    """Set the result's status and totals (or the error) on the run span, and end it."""
    if result is not None:
        u = result.spent  # this call's: a resumed thread's earlier calls had their own span
        span.set_attributes(clean({
            n.RESULT_STATUS: result.status, n.REPROMPTS: result.reprompts, n.REPAIRED: result.repaired,
            n.CHUNKS: result.chunks, n.FIRST_UNVERIFIED: result.first_unverified,
            n.RESULT_GRADES: [f"{s.var}={s.grade}" for s in result.steps if s.grade is not None] or None,
            n.USAGE_MODEL_CALLS: u.model_calls, n.USAGE_INPUT_TOKENS: u.input_tokens, n.USAGE_OUTPUT_TOKENS: u.output_tokens,
        }))
        if capture_content:
            span.set_attributes(clean({n.ANSWER: result.answer_text, n.OI_INPUT_VALUE: json.dumps(result.inputs),
                                       n.OI_OUTPUT_VALUE: result.answer_text}))
        if result.status == "failed" and error is None:
            span.set_attribute(n.ERROR_TYPE, "stepguard.run_failed")
            span.set_status(Status(StatusCode.ERROR, f"unverified from step {result.first_unverified}"))
    if error is not None:
        if result is None:
            span.set_attribute(n.RESULT_STATUS, "error")
        mark_error(span, error)
    span.end()



def quiet_context(run: Run | None) -> Context:
    """The context the guard's own model call runs in: other instrumentations do not trace it.

    Two mechanisms, because instrumentations honour different ones:

    - OpenTelemetry's suppress-instrumentation keys (``opentelemetry.context``'s
      ``_SUPPRESS_INSTRUMENTATION_KEY`` and ``_SUPPRESS_HTTP_INSTRUMENTATION_KEY``, and the plain
      ``"suppress_instrumentation"`` key older instrumentations read): the httpx, requests and
      urllib3 instrumentations check them;
    - an unsampled parent: the current span is a non-recording span in the run's trace with the
      sampled flag off, so a span that an instrumentation starts anyway (the
      ``opentelemetry-instrumentation-openai-v2`` 2.x ``chat`` span does not check the keys) is
      not sampled under the SDK's default ``ParentBased`` sampler and is never exported.

    A sampler that ignores the parent (plain ``ALWAYS_ON``) still records such spans.
    """
    ctx = otel_context.set_value(otel_context._SUPPRESS_INSTRUMENTATION_KEY, True)
    ctx = otel_context.set_value(otel_context._SUPPRESS_HTTP_INSTRUMENTATION_KEY, True, ctx)
    ctx = otel_context.set_value("suppress_instrumentation", True, ctx)
    parent = run.span.get_span_context() if run is not None else None
    if parent is not None and parent.is_valid:
        unsampled = SpanContext(parent.trace_id, parent.span_id, is_remote=False, trace_flags=TraceFlags(TraceFlags.DEFAULT))
        ctx = trace.set_span_in_context(NonRecordingSpan(unsampled), ctx)
    return ctx
