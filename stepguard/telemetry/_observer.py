"""``OtelObserver``: the guard's observer hooks as OpenTelemetry spans, events and metrics.

Span tree of one run (names and attributes in :mod:`stepguard.telemetry._names`)::

    invoke_workflow {procedure}          INTERNAL  gen_ai.operation.name=invoke_workflow, stepguard.*
      stepguard.chunk                    INTERNAL  steps, rung, attempt; gen_ai.evaluation.result events, and the
                                                   same verdicts as stepguard.evaluation.* arrays (_verdicts.py)
        chat {model}                     CLIENT    gen_ai.operation.name=chat, gen_ai.request.* / response.* / usage.*
        run_guardrail stepguard          INTERNAL  the check of the reply: gen_ai.guardrail.verdict / action /
                                                   policy / rule; a gen_ai.guardrail.security.finding event a deviation
        execute_tool {tool}              INTERNAL  a tool step's executed call; one evaluation event per argument
      stepguard.chunk ...

LangGraph may run nodes in other threads or tasks, so spans are never taken from the current-span
stack: each is started with an explicit parent context kept in a per-run record. The run span is
live from start to end; a chunk's span, its ``chat`` spans and its events are recorded as plain
data while the chunk runs and created in one burst, with their real start and end times, when the
chunk ends (that is when they would be exported anyway). So the ``chat`` span is not the current
span during the model call: instrumented HTTP clients do not nest under it. The record is
found through a context variable set by ``run_started``; LangGraph copies the caller's context
into every node (threads and asyncio tasks alike), so concurrent ``arun`` calls on one guard, each
in its own task, never see each other's record.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Iterator
from typing import Any, Literal

from opentelemetry import context, trace
from opentelemetry.metrics import MeterProvider, get_meter_provider
from opentelemetry.trace import SpanKind, TracerProvider

from stepguard.telemetry import _names as n
from stepguard.telemetry._content import capture_from_env, input_messages_json, output_messages_json, scrub_url, server_of
from stepguard.telemetry._metrics import Instruments
from stepguard.telemetry._records import Call, Chunk, NullRecord, Run, ToolRun, clean, finish_run_span, mark_error, quiet_context
from stepguard.telemetry._verdicts import checked_attributes, result_attributes

__all__ = ["OtelObserver"]

_SCOPE = "stepguard"
_SCHEMA = "https://opentelemetry.io/schemas/1.41.0"


class OtelObserver:
    """A :class:`stepguard.guard.GuardObserver` that records OpenTelemetry spans, events and metrics.

    Args:
        tracer_provider: where spans go; ``None`` = the global provider (a no-op until one is set).
            :func:`stepguard.telemetry.configure_telemetry` builds one.
        meter_provider: where metrics go; ``None`` = the global provider.
        capture_content: record prompt and reply text (``gen_ai.input.messages``,
            ``gen_ai.output.messages``), deviation details and the answer. ``None`` (default) =
            the GenAI opt-in variable ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT``,
            off when unset. API keys are never recorded either way.
        openinference: also set ``openinference.span.kind`` (CHAIN / GUARDRAIL / LLM) so Arize
            Phoenix draws the spans natively (it derives the rest of its view from ``gen_ai.*``).
        step_events: ``"all"`` (default): one ``gen_ai.evaluation.result`` event per checked step;
            ``"deviations"``: only for failed checks (passes are still counted in the chunk's
            ``stepguard.chunk.verified`` and the ``stepguard.steps.verified`` metric). Events are
            most of the per-step cost of tracing: see ``benchmarks/bench_tracing.py``.
        suppress_instrumentation: run each model call in a context where other OpenTelemetry
            instrumentations do not trace it again (the OpenAI, httpx or requests
            instrumentations would add a second ``chat`` or HTTP span per call, and
            ``gen_ai.usage.*`` summed over spans would count its tokens twice); see
            :func:`~stepguard.telemetry._records.quiet_context`. False lets them trace it too.

    Example:
        >>> tp, mp = configure_telemetry(trace_file="trace.jsonl")            # doctest: +SKIP
        >>> Guard(model, observer=OtelObserver(tp, mp)).run(procedure, inputs)  # doctest: +SKIP

    Observers must not raise: every hook swallows its own errors, and the model-call context
    manager re-raises only the model's exception.
    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: bool | None = None,
        openinference: bool = True,
        step_events: Literal["all", "deviations"] = "all",
        suppress_instrumentation: bool = True,
    ) -> None:
        from stepguard import __version__

        tp = tracer_provider or trace.get_tracer_provider()
        mp = meter_provider or get_meter_provider()
        self._tracer = tp.get_tracer(_SCOPE, __version__, schema_url=_SCHEMA)
        self._inst = Instruments(mp.get_meter(_SCOPE, __version__, schema_url=_SCHEMA))
        self.capture_content = capture_from_env() if capture_content is None else bool(capture_content)
        self.openinference = openinference
        if step_events not in ("all", "deviations"):
            raise ValueError(f"step_events must be 'all' or 'deviations', not {step_events!r}")
        self.step_events = step_events
        self.suppress_instrumentation = suppress_instrumentation
        self._current: contextvars.ContextVar[Run | None] = contextvars.ContextVar(f"stepguard_otel_{id(self)}", default=None)
        self._active: dict[int, Run] = {}
        self._lock = threading.Lock()

    # --- run ------------------------------------------------------------------------------
    def run_started(self, procedure: Any, model: Any, config: Any, thread_id: str) -> None:
        """Start the ``invoke_workflow {procedure}`` span (child of the caller's current span, if any)."""
        with contextlib.suppress(Exception):
            name = procedure.name
            model_attrs = clean({
                n.GEN_AI_PROVIDER_NAME: getattr(model, "provider", None) or "unknown",
                n.GEN_AI_REQUEST_MODEL: getattr(model, "model_name", None) or None,
            })
            server = server_of(model)
            if server:
                model_attrs[n.SERVER_ADDRESS] = server[0]
                if server[1]:
                    model_attrs[n.SERVER_PORT] = server[1]
            attrs = clean({
                n.GEN_AI_OPERATION_NAME: n.OP_WORKFLOW, n.GEN_AI_WORKFLOW_NAME: name, n.GEN_AI_AGENT_NAME: name,
                n.GEN_AI_CONVERSATION_ID: thread_id, n.PROCEDURE_NAME: name, n.STEPS: len(procedure.steps),
                n.CHUNK_SIZE: config.chunk_size, n.POLICY: config.policy, n.ON_EXHAUSTED: config.on_exhausted,
                n.MODEL_SPEC: scrub_url(str(getattr(model, "spec", ""))) or None,
                n.SIMULATED: bool(getattr(model, "simulated", False)), n.THREAD_ID: thread_id,
                **model_attrs,  # provider, request.model, server.*: the agent span's (see _names.GEN_AI_PROVIDER_NAME)
            })
            if self.openinference:
                attrs[n.OI_SPAN_KIND] = n.OI_CHAIN
            span = self._tracer.start_span(f"{n.OP_WORKFLOW} {name}", kind=SpanKind.INTERNAL, attributes=attrs)
            run = Run(span, trace.set_span_in_context(span), [s.var for s in procedure.steps], model_attrs,
                       {**{k: v for k, v in model_attrs.items() if k.startswith("gen_ai.")}, n.POLICY: config.policy},
                      procedure=name)
            run.token = self._current.set(run)
            with self._lock:
                self._active[id(run)] = run

    def run_finished(self, result: Any, error: BaseException | None) -> None:
        """End the open chunk span and the run span, with the result's status and totals."""
        with contextlib.suppress(Exception):
            run = self._run()
            if run is None:
                return
            try:
                self._emit_chunk(run, None, error)
                run.span.set_attributes(result_attributes(result))  # each step's provenance, beside the status
                finish_run_span(run.span, result, error, self.capture_content)
            finally:
                with self._lock:
                    self._active.pop(id(run), None)
                self._reset(run)

    # --- chunks and steps -----------------------------------------------------------------
    def chunk_started(self, chunk: int, start: int, end: int, rung: str | None, attempt: int) -> None:
        """Emit the previous chunk (its re-prompt events get ``rung``) and begin recording this one."""
        with contextlib.suppress(Exception):
            run = self._run()
            if run is None:
                return
            self._emit_chunk(run, rung, None)
            names = run.steps[start:end] or ["?"]
            attrs = clean({n.CHUNK_INDEX: chunk, n.CHUNK_FIRST_STEP: names[0], n.CHUNK_LAST_STEP: names[-1],
                           n.CHUNK_STEPS: end - start, n.ATTEMPT: attempt, n.RUNG: rung})
            if self.openinference:
                attrs[n.OI_SPAN_KIND] = n.OI_GUARDRAIL
            run.chunk = Chunk(time.time_ns(), attrs)

    def step_checked(
        self, var: str | None, outcome: str, kind: str | None, action: str | None, detail: str = "", rung: str | None = None
    ) -> None:
        """Record a ``gen_ai.evaluation.result`` event for the chunk span and count the step.

        A ``reprompt`` event without ``rung`` gets the rung of the next chunk, the re-prompt it caused.
        """
        with contextlib.suppress(Exception):
            run = self._run()
            if run is None:
                return
            chunk = run.chunk
            if chunk is not None and var is not None:  # on the span too: backends that drop events show it
                chunk.verdicts.append((var, outcome, kind or "", action or ""))
            if outcome == "pass" and chunk is not None:
                chunk.passed += 1  # one counter add per chunk, not per step
                if self.step_events != "all":
                    return
            attrs = clean({
                n.EVALUATION_NAME: n.EVALUATION_NAME_VALUE, n.EVALUATION_SCORE_LABEL: outcome,
                n.EVALUATION_SCORE_VALUE: 1.0 if outcome == "pass" else 0.0, n.STEP: var,
                n.DEVIATION_KIND: kind, n.POLICY_ACTION: action, n.RUNG: rung,
                n.EVALUATION_EXPLANATION: (detail or None) if self.capture_content else None,
            })
            if chunk is not None:
                chunk.events.append((attrs, time.time_ns()))
            else:
                run.span.add_event(n.EVALUATION_EVENT, attrs)
            if outcome != "pass" or chunk is None:
                self._inst.record_step(run.metric_attrs, outcome, kind, action)

    def chunk_finished(self, chunk: int, verified: int, deviation: str | None) -> None:
        """Note how many steps verified and the first deviation's kind.

        The chunk stays open for the policy's action; it ends when the next chunk starts or the run ends.
        """
        with contextlib.suppress(Exception):
            run = self._run()
            if run is not None and run.chunk is not None:
                run.chunk.outcome = clean({n.CHUNK_VERIFIED: verified, n.DEVIATION_KIND: deviation})

    def _emit_chunk(self, run: Run, rung: str | None, error: BaseException | None) -> None:
        """Create the chunk span, its chat spans and events in one burst, with their recorded times.

        One burst per chunk, instead of SDK calls spread over the controller's nodes, keeps the
        OpenTelemetry SDK's code hot in the CPU caches: about a third of the cost (see
        ``benchmarks/bench_tracing.py``). The spans are exported no later than they would be
        anyway (a span is exported when it ends).
        """
        chunk, run.chunk = run.chunk, None
        if chunk is None:
            return
        span = self._tracer.start_span(n.CHUNK_SPAN, context=run.ctx, kind=SpanKind.INTERNAL,
                                       attributes={**chunk.attrs, **chunk.outcome, **checked_attributes(chunk.verdicts)},
                                       start_time=chunk.start_ns)
        ctx = trace.set_span_in_context(span)
        for call in chunk.calls:
            self._emit_call(call, ctx)
        for tool in chunk.tools:
            self._emit_tool(tool, ctx)
        events = []
        for attrs, ts in chunk.events:
            if rung and n.RUNG not in attrs and attrs.get(n.POLICY_ACTION) == "reprompt":
                attrs = {**attrs, n.RUNG: rung}
            span.add_event(n.EVALUATION_EVENT, attrs, timestamp=ts)
            events.append((attrs, ts))
        self._emit_guardrail(run, chunk, events, ctx)
        if chunk.passed:
            self._inst.steps_verified.add(chunk.passed, run.metric_attrs)
        if error is not None:
            mark_error(span, error, record=False)
        span.end()

    def _emit_guardrail(self, run: Run, chunk: Chunk, events: list[tuple[dict[str, Any], int]], parent: Any) -> None:
        """The chunk's check as a ``run_guardrail stepguard`` span (GenAI guardrail conventions) with a
        ``gen_ai.guardrail.security.finding`` event per deviation; nothing when the chunk checked no step.

        The verdict is ``deny`` when a step deviated, else ``allow``; rule, reason and action are the
        first deviation's (the step's check, its kind, the policy's action). The span runs from the
        end of the chunk's last model call to its last check.
        """
        fails = [(a, ts) for a, ts in events if a.get(n.EVALUATION_SCORE_LABEL) == "fail"]
        if not events and not chunk.passed:
            return
        policy = f"stepguard.procedure/{run.procedure}"
        base = {n.GUARDRAIL_COMPONENT: n.GUARDRAIL_COMPONENT_VALUE, n.GUARDRAIL_TARGET_TYPE: "output",
                n.GUARDRAIL_TARGET_SUBTYPE: "llm", n.GUARDRAIL_POLICY_ID: policy}
        first = fails[0][0] if fails else {}
        action = n.GUARDRAIL_ACTIONS.get(str(first.get(n.POLICY_ACTION)), "block") if fails else "allow"
        attrs = clean({
            n.GEN_AI_OPERATION_NAME: n.OP_GUARDRAIL, **base, n.GUARDRAIL_VERDICT_TYPE: "deny" if fails else "allow",
            n.GUARDRAIL_ACTION_TYPE: action,
            n.GUARDRAIL_RULE_ID: f"{run.procedure}/{first[n.STEP]}" if first.get(n.STEP) else None,
            n.GUARDRAIL_VERDICT_REASON: first.get(n.DEVIATION_KIND), n.STEP: first.get(n.STEP), n.RUNG: first.get(n.RUNG),
            n.CHUNK_STEPS: chunk.attrs.get(n.CHUNK_STEPS), n.CHUNK_VERIFIED: chunk.outcome.get(n.CHUNK_VERIFIED),
        })
        if self.openinference:
            attrs[n.OI_SPAN_KIND] = n.OI_GUARDRAIL
        start = max([chunk.start_ns, *(c.end_ns for c in chunk.calls)])
        end = max([start, *(ts for _, ts in events)])
        span = self._tracer.start_span(f"{n.OP_GUARDRAIL} {n.GUARDRAIL_COMPONENT_VALUE}", context=parent, kind=SpanKind.INTERNAL,
                                       attributes=attrs, start_time=start)
        for a, ts in fails:
            kind, step = a.get(n.DEVIATION_KIND), a.get(n.STEP)
            span.add_event(n.GUARDRAIL_FINDING_EVENT, clean({
                **base, n.GUARDRAIL_RISK_CATEGORY: f"custom:{kind or 'deviation'}", n.GUARDRAIL_VERDICT_TYPE: "deny",
                n.GUARDRAIL_VERDICT_REASON: kind, n.GUARDRAIL_RULE_ID: f"{run.procedure}/{step}" if step else None,
                n.GUARDRAIL_ACTION_TYPE: n.GUARDRAIL_ACTIONS.get(str(a.get(n.POLICY_ACTION)), "block"), n.STEP: step,
                n.RUNG: a.get(n.RUNG),
            }), timestamp=max(ts, start))
        span.end(end_time=end)

    # --- model calls ----------------------------------------------------------------------
    @contextlib.contextmanager
    def model_call(self, messages: list[Any], settings: Any) -> Iterator[Any]:
        """Time one model call; its ``chat {model}`` CLIENT span is emitted with the chunk's.

        With ``suppress_instrumentation`` (default) the call runs in a context that keeps other
        instrumentations from tracing it a second time (see :func:`quiet_context`).
        """
        call = None
        with contextlib.suppress(Exception):
            call = self._start_call(messages, settings)
        if call is None:
            yield NullRecord()
            return
        token = None
        if self.suppress_instrumentation:
            with contextlib.suppress(Exception):
                token = context.attach(quiet_context(self._run()))
        try:
            yield call
        except BaseException as exc:
            with contextlib.suppress(Exception):
                self._end_call(call, exc)
            raise
        finally:
            if token is not None:
                with contextlib.suppress(Exception):
                    context.detach(token)
        with contextlib.suppress(Exception):
            self._end_call(call, None)

    def _start_call(self, messages: list[Any], settings: Any) -> Call | None:
        run = self._run()
        if run is None:
            return None
        model = run.model_attrs.get(n.GEN_AI_REQUEST_MODEL, "")
        metric_attrs = {n.GEN_AI_OPERATION_NAME: n.OP_CHAT, **run.model_attrs}
        attrs = clean({**metric_attrs, n.GEN_AI_REQUEST_TEMPERATURE: getattr(settings, "temperature", None),
                       n.GEN_AI_REQUEST_SEED: getattr(settings, "seed", None),
                       n.GEN_AI_REQUEST_MAX_TOKENS: getattr(settings, "max_tokens", None)})
        if self.openinference:  # Phoenix derives the rest of its llm.* view from the gen_ai.* attributes
            attrs[n.OI_SPAN_KIND] = n.OI_LLM
        if self.capture_content:
            attrs[n.GEN_AI_INPUT_MESSAGES] = input_messages_json(messages)
        return Call(f"{n.OP_CHAT} {model}".strip(), attrs, metric_attrs)

    def _end_call(self, call: Call, error: BaseException | None) -> None:
        call.finish(error)
        run = self._run()
        if run is not None and run.chunk is not None:
            run.chunk.calls.append(call)
        elif run is not None:
            self._emit_call(call, run.ctx)

    def _emit_call(self, call: Call, parent: Any) -> None:
        resp, attrs, metric_attrs = call.resp, dict(call.attrs), dict(call.metric_attrs)
        tokens_in = tokens_out = None
        if resp is not None:
            usage = resp.usage
            tokens_in, tokens_out = int(usage.input_tokens), int(usage.output_tokens)
            if resp.model:
                metric_attrs[n.GEN_AI_RESPONSE_MODEL] = resp.model
            attrs.update(clean({
                n.GEN_AI_RESPONSE_MODEL: resp.model or None, n.GEN_AI_RESPONSE_ID: getattr(resp, "response_id", "") or None,
                n.GEN_AI_RESPONSE_FINISH_REASONS: (resp.finish_reason,),
                n.GEN_AI_USAGE_INPUT_TOKENS: tokens_in, n.GEN_AI_USAGE_OUTPUT_TOKENS: tokens_out,
                n.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: int(usage.cached_tokens) or None,
                n.SIMULATED: True if resp.simulated else None,
                n.GEN_AI_REQUEST_STREAM: True if getattr(resp, "streamed", False) else None,
                n.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK: getattr(resp, "first_chunk_s", None),
            }))
            cut = getattr(resp, "cut", None)
            if cut is not None:
                attrs.update({n.STREAM_CUT_STEP: cut.step, n.STREAM_CUT_KIND: cut.kind,
                              n.STREAM_CUT_VERIFIED: cut.verified, n.STREAM_CUT_CHARS: cut.chars})
            if self.capture_content:
                attrs[n.GEN_AI_OUTPUT_MESSAGES] = output_messages_json(resp.text, resp.finish_reason)
        span = self._tracer.start_span(call.name, context=parent, kind=SpanKind.CLIENT, attributes=attrs, start_time=call.start_ns)
        if call.error is not None:
            metric_attrs[n.ERROR_TYPE] = type(call.error).__name__
            mark_error(span, call.error)
        span.end(end_time=call.end_ns)
        self._inst.record_call(metric_attrs, call.seconds, tokens_in, tokens_out)

    # --- tool calls -----------------------------------------------------------------------
    @contextlib.contextmanager
    def tool_call(self, step: str, name: str, args: dict[str, str], verdicts: list[tuple[str, bool, str]]) -> Iterator[Any]:
        """Time one executed tool call; its ``execute_tool {name}`` span is emitted with the chunk's."""
        tool = None
        with contextlib.suppress(Exception):
            run = self._run()
            if run is not None:
                import json

                attrs = clean({n.GEN_AI_OPERATION_NAME: n.OP_EXECUTE_TOOL, n.GEN_AI_TOOL_NAME: name,
                               n.GEN_AI_TOOL_TYPE: "function", n.STEP: step})
                if self.capture_content:
                    attrs[n.GEN_AI_TOOL_CALL_ARGUMENTS] = json.dumps(args, sort_keys=True)
                if self.openinference:
                    attrs[n.OI_SPAN_KIND] = "TOOL"
                tool = ToolRun(name, attrs, list(verdicts))
        if tool is None:
            yield NullRecord()
            return
        try:
            yield tool
        except BaseException as exc:
            tool.error = exc
            raise
        finally:
            with contextlib.suppress(Exception):
                tool.end_ns = time.time_ns()
                run = self._run()
                if run is not None and run.chunk is not None:
                    run.chunk.tools.append(tool)
                elif run is not None:
                    self._emit_tool(tool, run.ctx)

    def _emit_tool(self, tool: ToolRun, parent: Any) -> None:
        attrs = dict(tool.attrs)
        result = attrs.pop("_result", None)
        if self.capture_content and result is not None:
            attrs[n.GEN_AI_TOOL_CALL_RESULT] = result
        span = self._tracer.start_span(f"{n.OP_EXECUTE_TOOL} {tool.name}", context=parent, kind=SpanKind.INTERNAL,
                                       attributes=attrs, start_time=tool.start_ns)
        for arg, ok, detail in tool.verdicts:
            span.add_event(n.EVALUATION_EVENT, clean({
                n.EVALUATION_NAME: n.TOOL_ARGUMENT_EVALUATION, n.TOOL_ARGUMENT: arg,
                n.EVALUATION_SCORE_LABEL: "pass" if ok else "fail", n.EVALUATION_SCORE_VALUE: 1.0 if ok else 0.0,
                n.EVALUATION_EXPLANATION: detail if self.capture_content else None,
            }), timestamp=tool.start_ns)
        if tool.error is not None:
            mark_error(span, tool.error)
        span.end(end_time=max(tool.end_ns, tool.start_ns))

    # --- per-run record -------------------------------------------------------------------
    def _run(self) -> Run | None:
        run = self._current.get()
        if run is not None:
            return run
        with self._lock:  # a context that did not inherit the variable: only safe with one run
            return next(iter(self._active.values())) if len(self._active) == 1 else None

    def _reset(self, run: Run) -> None:
        try:
            if run.token is not None:
                self._current.reset(run.token)
        except ValueError:  # finished in a context other than the one it started in
            if self._current.get() is run:
                self._current.set(None)
