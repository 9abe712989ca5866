"""The controller: a LangGraph ``StateGraph`` that plans chunks, asks, verifies and applies the policy.

::

    plan ─┬─> ask ──> verify ──> intend ──> act ──> commit ──┬── (clean) ──────────> plan ... ──> finish
          │                               ├── reprompt ──> plan
          │                               ├── repair / flag ───> plan
          │                               ├── stop (raise) ────> finish
          │                               └── exhausted (a budget is spent)
          └── exhausted (tokens or wall time spent before a call) ──> on_exhausted: repair | flag | stop

``act`` executes a tool step's call once every argument has passed its check (and does nothing
for other steps); a tool that fails stops the run at its step (``tool_error``). ``intend`` before it
records the call's intent (:meth:`~stepguard.kinds.Kind.intent`) in its own checkpoint, so a process
killed during the call leaves an intent with no result, which a resume never repeats blindly.
Run-wide budgets (tokens, wall time) are checked by ``plan`` as it picks its hop, so before every
model call; a derived rung's nested run gets what is left of them.
Each node returns its update and its next hop as one ``Command`` (its return annotation names the
nodes it may go to). The deviation travels in state; a re-ask is a new, corrected prompt,
never a node retry (which would resend the same input).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Literal, TypeVar

from langgraph.graph import START, StateGraph
from langgraph.runtime import Runtime
from langgraph.types import Command

from stepguard.errors import BudgetExhausted, EvaluationError, RunClosed, StepguardError, ToolError
from stepguard.guard._corrections import correction_note
from stepguard.guard._identity import identity_digest
from stepguard.guard._result import DeviationEvent, grade_of, outcome
from stepguard.guard._state import BudgetName, GuardState, Progress, RunContext, Stop, Update
from stepguard.guard._window import StreamWatch, aread_window, calls_per_deviation, follow_window, next_window, read_window, tally_window
from stepguard.guard.rungs import Rung, get_rung
from stepguard.kinds import KindVerdict, StepContext, kind_of
from stepguard.model import ChatResponse, GenerationSettings, Usage
from stepguard.procedure import Procedure, Step, format_value
from stepguard.tools import calls_from_native
from stepguard.trace import Trace, parse_trace
from stepguard.verify import ChunkVerdict, Deviation, expected_value, verify_chunk

__all__ = ["build_graph", "nested_thread"]

Hop = TypeVar("Hop", bound=str)


def _go(goto: Hop, update: Update) -> Command[Hop]:
    """A node's outcome: its update (as the checkpoint's JSON, :meth:`Update.channels`) and the next node."""
    return Command(update=update.channels(), goto=goto)


def plan(state: GuardState, runtime: Runtime[RunContext]) -> Command[Literal["ask", "exhausted", "finish"]]:
    """Choose the next chunk: from ``cursor``, ``chunk_size`` steps (one step on a rung that asks the step alone;
    none written from a step of the chunk, :meth:`~stepguard.procedure.Procedure.after`; with
    ``chunk_by="independent"`` none that reads a step of the chunk either).

    Steps at ``cursor`` the evaluator computes (``execute: evaluator``) are committed first, graded
    ``computed`` (:func:`computed_steps`); a chunk ends before the next one. None left: no chunk,
    on to ``finish``. A run-wide budget (tokens, wall time) that forbids another model call goes to
    ``exhausted``; else ``ask``.
    """
    ctx = runtime.context
    n = len(ctx.procedure.steps)
    progress = computed_steps(state, ctx)
    cursor = progress.cursor
    if cursor >= n:
        return _go("finish", Update(progress))
    size = state.progress.chunk_size or ctx.config.chunk_size
    rung = _rung(state)
    if rung is not None and (not rung.whole_chunk or ctx.config.streams):
        size = 1  # streamed: the ladder runs on the failing step alone, then the stream goes on after it
    elif rung is None and ctx.config.streams:
        # a first try in streamed mode: the whole window (adaptive, follow: as wide as the commit said), cut at the first deviation
        size = (state.progress.chunk_size or ctx.config.window) if ctx.config.adaptive or ctx.config.follow else ctx.config.window
    steps, evaluated = ctx.procedure.steps, ctx.procedure.evaluated
    if kind_of(steps[cursor]).asked_alone:
        size = 1  # a tool, extract or text step is asked alone: its value is the tool's, or long text
    else:  # a chunk ends before the next step that is asked alone or computed by the evaluator
        size = next((k - cursor for k in range(cursor + 1, min(n, cursor + size)) if kind_of(steps[k]).asked_alone or evaluated[k]),
                    size)
    # a chunk or window never holds a step written from another of it (a derived sub-step's literal that is
    # an earlier sub-step's value: Procedure.after), nor, with chunk_by="independent", one that reads another by name
    size = ctx.procedure.independent(cursor, size) if ctx.config.chunk_by == "independent" else ctx.procedure.written_apart(cursor, size)
    end, chunk = min(n, cursor + size), state.progress.chunk_no + 1
    ctx.observer.chunk_started(chunk - 1, cursor, end, state.progress.rung, state.progress.tries)
    update = Update(replace(progress, chunk_no=chunk), replace(state.attempt, chunk_start=cursor, chunk_end=end))
    return _go("exhausted" if _spent_before_call(state, ctx) else "ask", update)  # the steps computed spent no call


def computed_steps(state: GuardState, ctx: RunContext) -> Progress:
    """The progress committing the steps from ``cursor`` on that the evaluator computes (``execute: evaluator``),
    up to the next the model is asked: each the evaluator's value (``expr``, its places and rounding),
    provenance ``computed`` (``flagged`` where it reads a flagged value), never counted as the model's.
    The state's progress where the step at ``cursor`` is the model's.

    Raises:
        EvaluationError: a computed step's expression fails on the committed values, or its value
            fails the step's own ``check`` (the step contradicts itself; names the step).
    """
    proc, i = ctx.procedure, state.progress.cursor
    if i >= len(proc.steps) or not proc.evaluated[i]:
        return state.progress
    env = dict(ctx.env(state))
    values, prov, reprompts = dict(state.progress.values), dict(state.progress.provenance), dict(state.progress.step_reprompts)
    while i < len(proc.steps) and proc.evaluated[i]:
        step = proc.steps[i]
        value = proc.expected_value(i, env)  # its check too: a value the step's own predicate refuses raises
        if value is None:  # refused at load: execute evaluator needs an expr
            raise EvaluationError(f"step {step.var!r} (execute: evaluator) has no value to compute")
        env[step.var], values[step.var] = value, format_value(value)
        prov[step.var] = "flagged" if any(prov.get(n) == "flagged" for n in proc.reads(i)) else "computed"
        reprompts[step.var] = 0
        ctx.observer.step_checked(step.var, "pass", None, None)
        i += 1
    return replace(state.progress, values=values, provenance=prov, step_reprompts=reprompts, cursor=i)


def _messages_and_settings(state: GuardState, ctx: RunContext) -> tuple[list[Any], GenerationSettings]:
    cfg = ctx.config
    indices = list(range(state.progress.cursor, state.attempt.chunk_end))
    note = state.progress.note
    role = "reask" if note else "nested" if ctx.depth else "chunk"
    messages, plan = ctx.prompts.chunk_request(ctx.procedure, indices, ctx.env(state), note, ctx.context,
                                               inline=cfg.inline_known, role=role)
    step = ctx.procedure.steps[indices[0]]
    offered = kind_of(step).offered_tools(step, ctx.tools)
    rung = _rung(state)
    resample = rung is not None and rung.resamples
    max_tokens = cfg.max_tokens_per_step * len(indices) + 32
    left = _tokens_left(state, ctx)
    settings = GenerationSettings(
        temperature=cfg.resample_temperature if resample else cfg.temperature,
        seed=cfg.seed + state.progress.tries if resample else cfg.seed,
        max_tokens=max_tokens if left is None else max(1, min(max_tokens, left)),
        tools=offered,
        plan=plan,  # what the call asks, as data: a simulated executor reads it, no server is sent it
    )
    return messages, settings


def _record_reply(state: GuardState, resp: ChatResponse, calls: int = 1, watch: StreamWatch | None = None) -> Update:
    """The reply as the attempt's, its usage added to the run's; ``watch``: the streamed window's, whose restated step it records."""
    u = resp.usage
    usage = state.progress.usage + Usage(u.input_tokens, u.output_tokens, u.cached_tokens, model_calls=calls, model_s=resp.latency_s)
    tool_calls = [{"name": str(c.get("name", "")), "arguments": c.get("arguments", "")} for c in getattr(resp, "tool_calls", ()) or ()]
    restated = list(watch.restated) if watch is not None and watch.restated is not None else None
    attempt = replace(state.attempt, reply=resp.text, finish_reason=resp.finish_reason, tool_calls=tool_calls, derived_note=None,
                      derived_spent=None, restated=restated)
    return Update(replace(state.progress, usage=usage), attempt)


def _rung(state: GuardState) -> Rung | None:
    """The rung of the pending ask (``None`` on a first try)."""
    name = state.progress.rung
    return get_rung(name) if name else None


MAX_NESTING = 2
"""Derived rungs nest at most this deep: a sub-step of a sub-step is asked as it is (``narrow``, ``resample``).

A derived sub-procedure can hold the operation it came from (``divide`` writes a quotient, and a
failing quotient goes through ``single`` to ``divide`` again), so without a bound a model that
keeps failing would recurse without end. What each depth costs a model wrong on every sub-step:
docs/lab/production-suite-history.md, "Nesting"."""


def _derive(rung: Rung, ctx: RunContext, index: int, env: Any) -> Procedure | None:
    """The derived sub-procedure of ``rung`` for step ``index``, or ``None`` where it does not apply
    (or where this run is already :data:`MAX_NESTING` derived rungs deep)."""
    if not rung.derives or not ctx.procedure.steps[index].computes or ctx.depth >= MAX_NESTING:
        return None  # only a computed step has an expression to derive sub-steps from
    try:
        return rung.derive(ctx.procedure, index, env)
    except (ValueError, StepguardError):  # a derived procedure our own limits refuse: ask the step as it is
        return None


def _refusal(rung: Rung, ctx: RunContext, state: GuardState) -> str:
    """Why ``rung`` does not apply to the failing step (:meth:`Rung.refusal`), for the re-prompt's event."""
    step = ctx.procedure.steps[state.progress.cursor]
    if not step.computes:
        return f"a {step.kind} step has no expression to derive sub-steps from"
    try:
        return rung.refusal(ctx.procedure, state.progress.cursor, ctx.env(state))
    except (ValueError, StepguardError):
        return "its sub-procedure is refused by our own limits"


def _derived_procedure(state: GuardState, ctx: RunContext) -> Procedure | None:
    """The sub-procedure of the pending rung, or ``None`` (ask the step as it is)."""
    rung = _rung(state)
    return None if rung is None else _derive(rung, ctx, state.progress.cursor, ctx.env(state))


def _derived_reply(state: GuardState, ctx: RunContext, sub: Procedure, result: Any, spent: str | None = None) -> Update:
    """The nested run's outcome as a reply line for the failing step, with its usage added.

    ``spent``: the budget that stopped the nested run (``BudgetExhausted.budget``), if one did."""
    var = ctx.procedure.steps[state.progress.cursor].var
    rung = _rung(state)
    i = state.progress.cursor
    read = None if rung is None or result.status != "verified" else rung.read(ctx.procedure, i, ctx.env(state), result.texts)
    # not verified: pass on the value the model gave, if any, so the parent records a wrong value
    # (arithmetic_error, with a model value to flag) rather than a missing step; it is checked again
    value = read.value if read is not None else result.answer_text if result.status == "verified" else result.texts.get(var)
    text = f"{var} = {value}" if value is not None else ""
    u, now = result.usage, result.spent  # the nested thread's, and what this call of it spent (a resumed one: less)
    ctx.carried = ctx.carried + Usage(u.input_tokens - now.input_tokens, u.output_tokens - now.output_tokens,
                                      u.cached_tokens - now.cached_tokens, model_calls=u.model_calls - now.model_calls,
                                      model_s=max(0.0, u.model_s - now.model_s))
    usage = ChatResponse(text=text, usage=Usage(u.input_tokens, u.output_tokens, u.cached_tokens), latency_s=u.model_s)
    out = _record_reply(state, usage, calls=u.model_calls)
    assert out.attempt is not None
    out = replace(out, attempt=replace(
        out.attempt, derived_note=None if result.status == "verified" else _unverified_sub_step(sub, result),
        derived_spent=spent if spent in ("tokens", "wall_time") and result.status != "verified" else None))
    if read is not None:  # the value is the model's digits placed by the guard: the event says which, from where
        dev = state.attempt.deviation or Deviation(kind="arithmetic_error", step=var)
        event = Deviation(kind=dev.kind, step=var, got=f"{var} = {read.value}",
                          detail=f"{var} read by position by the {state.progress.rung} rung: {read.record}")
        out = replace(out, events=[DeviationEvent(deviation=event, attempt=state.progress.tries, chunk=state.progress.chunk_no - 1,
                                                  action="read", rung=state.progress.rung)])
    return out


def _unverified_sub_step(sub: Procedure, result: Any) -> str:
    """The sub-step a nested run ended on, with the model's last line for it, for the parent's deviation."""
    first = result.first_unverified
    step = next((s for s in sub.steps if s.var == first), None)
    if step is None:
        return f"the sub-procedure ended {result.status}"
    got = next((e.got for e in reversed(result.deviations) if e.step == first and e.got), None)
    # where the sub-step's own last rung was derived, the sub-step of that run it stopped at, and so on down
    inner = next((e.detail for e in reversed(result.deviations) if e.step == first and " rung's sub-step " in e.detail), None)
    deeper = "" if inner is None else "; in it, " + inner[inner.index("(the ") + 1:].removesuffix(")")
    return f"sub-step {first} = {step.expression or '?'} never verified" + (f"; the model wrote `{got}`" if got else "") + deeper


def nested_thread(ctx: RunContext, state: GuardState) -> str:
    """The checkpoint thread of the pending rung's nested run: the parent's thread, the step, the rung
    and the attempt, so a resumed parent asking the same rung of the same step again resumes that
    nested run (the attempt moves its seed, so another attempt is other work, on a thread of its own)."""
    return f"{ctx.thread_id}/{ctx.procedure.steps[state.progress.cursor].var}/{state.progress.rung}/{state.progress.tries}"


def _nested_guard(ctx: RunContext, state: GuardState, sub: Procedure) -> Any:
    """The nested guard of a derived rung, built by the run context's factory with the rung's own
    settings (:meth:`Rung.nested_config`): its seed moves with the parent's attempt, so a repeated
    rung does not resend the same request, and its token and wall-clock budgets are what the
    parent run has left."""
    rung = _rung(state)
    assert rung is not None
    cfg = rung.nested_config(ctx.config, state.progress.tries, _tokens_left(state, ctx), _wall_left(ctx), sub)
    return ctx.nested_guard(cfg)


def _refuse_if_closed(ctx: RunContext) -> None:
    """Start no model call (nor a nested run) once the run's caller has stopped it (``stop``, or its stream closed).

    Raises:
        RunClosed: naming the step the run stopped before.
    """
    if ctx.closed.is_set():
        raise RunClosed(f"the run of {ctx.procedure.name!r} was stopped by its caller; its thread {ctx.thread_id!r} resumes here")


def ask(state: GuardState, runtime: Runtime[RunContext]) -> Command[Literal["verify"]]:
    """Send the chunk (or corrective) prompt to the model; on a derived rung, run the derived steps
    (the nested run stops with this one: it shares its ``stop``)."""
    ctx = runtime.context
    _refuse_if_closed(ctx)
    sub = _derived_procedure(state, ctx)
    if sub is not None:
        spent = None
        try:
            result = _nested_guard(ctx, state, sub).run(sub, {}, nested_thread(ctx, state), stop=ctx.closed)
        except BudgetExhausted as exc:  # stopped at a sub-step no try verified (Rung.nested_config), or a budget
            result, spent = exc.result, exc.budget
        return _go("verify", _derived_reply(state, ctx, sub, result, spent))
    messages, settings = _messages_and_settings(state, ctx)
    watch = _watch(state, ctx, runtime.stream_writer)
    with ctx.observer.model_call(messages, settings) as record:
        resp = ctx.model.complete(messages, settings) if watch is None else read_window(ctx.model, messages, settings, watch)
        record.response(resp)
    return _go("verify", _record_reply(state, resp, watch=watch))


async def aask(state: GuardState, runtime: Runtime[RunContext]) -> Command[Literal["verify"]]:
    """Async twin of :func:`ask`."""
    ctx = runtime.context
    _refuse_if_closed(ctx)
    sub = _derived_procedure(state, ctx)
    if sub is not None:
        spent = None
        try:
            result = await _nested_guard(ctx, state, sub).arun(sub, {}, nested_thread(ctx, state), stop=ctx.closed)
        except BudgetExhausted as exc:  # as in ask
            result, spent = exc.result, exc.budget
        return _go("verify", _derived_reply(state, ctx, sub, result, spent))
    messages, settings = _messages_and_settings(state, ctx)
    watch = _watch(state, ctx, runtime.stream_writer)
    with ctx.observer.model_call(messages, settings) as record:
        if watch is None:
            resp = await ctx.model.acomplete(messages, settings)
        else:
            resp = await aread_window(ctx.model, messages, settings, watch)
        record.response(resp)
    return _go("verify", _record_reply(state, resp, watch=watch))


def _watch(state: GuardState, ctx: RunContext, write: Callable[[Any], None]) -> StreamWatch | None:
    """The line-by-line check of a streamed first try of a window of chunked steps; ``None`` for a
    call asked whole (chunked mode, a re-ask, a step asked alone). Each step it verifies goes to
    ``write`` (the run's ``custom`` stream) as the :class:`StepOutcome` the window will commit."""
    if not ctx.config.streams or state.progress.rung is not None or kind_of(ctx.procedure.steps[state.progress.cursor]).asked_alone:
        return None
    proc, prov = ctx.procedure, dict(state.progress.provenance)

    def verified(var: str, text: str, index: int) -> None:
        step = proc.steps[index]
        prov[var] = _provenance(ctx, prov, index)
        write(outcome(step, text, provenance=prov[var], grade=grade_of(proc, index, prov[var]),
                      reprompts=state.progress.tries if index == state.progress.cursor else 0, chunk=state.progress.chunk_no - 1,
                      index=index))

    wall = _wall_left(ctx)
    return StreamWatch(proc, state.progress.cursor, state.attempt.chunk_end, ctx.env(state), verified,
                       deadline=None if wall is None else time.monotonic() + wall, closed=ctx.closed)


def _provenance(ctx: RunContext, prov: Mapping[str, str], index: int) -> str:
    """The provenance step ``index`` commits with: its kind's (:meth:`~stepguard.kinds.Kind.provenance`),
    or ``flagged`` where it read a flagged (unverified) operand (``prov``: the steps committed before it)."""
    proc = ctx.procedure
    if any(prov.get(n) == "flagged" for n in proc.reads(index)):
        return "flagged"  # verified only against a flagged (unverified) operand
    return kind_of(proc.steps[index]).provenance(StepContext(proc, index))


def _check_kind(state: GuardState, ctx: RunContext) -> KindVerdict:
    """Check the reply for the step at ``cursor``, asked alone, by its kind."""
    i, proc = state.progress.cursor, ctx.procedure
    reply, calls = state.attempt.reply, calls_from_native(state.attempt.tool_calls)
    return kind_of(proc.steps[i]).check(StepContext(proc, i), ctx.env(state), reply, calls)


def _readable(step: Step, text: str | None) -> str | None:
    """``text``, the model's value a ``flag`` would commit, when it reads back as a value of the
    step's type (:meth:`Kind.value_of`); else ``None``: a value later steps cannot read is never
    committed (``$99.99`` for a number), the step is re-asked or stops as the policy says."""
    if text is None:
        return None
    try:
        kind_of(step).value_of(step, text)
    except (ValueError, TypeError, EvaluationError):
        return None
    return text


def verify(state: GuardState, runtime: Runtime[RunContext]) -> Command[Literal["intend"]]:
    """Parse the reply (never evaluating it) and check it step by step against the evaluator.

    A tool step's call is checked here, argument by argument; it runs in ``act`` only if all pass.
    """
    ctx = runtime.context
    step = ctx.procedure.steps[state.progress.cursor]
    if kind_of(step).asked_alone:
        return _go("intend", _verify_alone(state, ctx, step))
    trace = parse_trace(state.attempt.reply, var_names=ctx.procedure.variables)
    verdict = verify_chunk(
        ctx.procedure, state.progress.cursor, state.attempt.chunk_end, ctx.env(state), trace,
        truncated=state.attempt.finish_reason == "length",
    )
    _budget_cut(verdict, state, ctx, trace)
    if verdict.deviation is not None and verdict.deviation.kind == "check_failed":
        verdict.deviation = _blame_flagged(verdict.deviation, state, ctx.procedure)
    if state.attempt.restated is not None:  # the window's reply ends before a verified step written again
        _restated_after(verdict, state, trace, ctx.procedure, state.attempt.restated)
    notes = [
        _event(d, state, "note") for d in verdict.others
    ]
    value = format_value(verdict.model_value) if verdict.model_value is not None else None
    step_var = verdict.deviation.step if verdict.deviation is not None else None
    kept = [step_var, value] if step_var is not None and value is not None else state.progress.kept_value
    attempt = replace(state.attempt, verified=[[v, format_value(x)] for v, x in verdict.verified], deviation=verdict.deviation,
                      model_value=value)
    return _go("intend", Update(replace(state.progress, kept_value=kept), attempt, notes))


def _verify_alone(state: GuardState, ctx: RunContext, step: Step) -> Update:
    """:func:`verify` for a step asked alone (a tool, extract or text step): checked by its kind."""
    kv = _check_kind(state, ctx)
    dev = kv.deviation
    return Update(attempt=replace(
        state.attempt, verified=[[step.var, format_value(kv.value)]] if dev is None and kv.value is not None else [], deviation=dev,
        model_value=_readable(step, kv.model_value) if dev is not None else None, pending_call=dev is None and kv.call is not None))


def _budget_cut(verdict: ChunkVerdict, state: GuardState, ctx: RunContext, trace: Trace) -> None:
    """A step the reply stops in because a budget ran out, a ``budget_exhausted`` deviation, not the model's:
    the wall time while the stream was cut, or the tokens left of ``max_total_tokens`` the call was capped at."""
    wall = _wall_left(ctx)
    dev = verdict.deviation
    if state.attempt.finish_reason == "cut" and wall is not None and wall <= 0 and dev is not None and dev.kind == "under_executed":
        # the stream was cut because the wall-time budget ran out while the model wrote this step
        verdict.deviation = Deviation(kind="budget_exhausted", step=dev.step,
                                      detail=f"the wall_time budget ran out while the model was writing step {dev.step}")
    tokens = _tokens_left(state, ctx)
    cut_line = trace.records[-1].var if trace.records else None
    if (state.attempt.finish_reason == "length" and tokens is not None and tokens <= 0 and dev is not None
            and (dev.kind in ("under_executed", "truncated") or dev.step == cut_line)):
        # the call was capped at the tokens left of max_total_tokens, and the reply ran out on this step
        # (no line, or its last line cut short: "patient_share = 900.00 - 72" is no wrong value)
        verdict.deviation = Deviation(kind="budget_exhausted", step=dev.step, got=dev.got,
                                      detail=f"the tokens budget ran out while the model was writing step {dev.step}")


def _restated_after(verdict: ChunkVerdict, state: GuardState, trace: Trace, procedure: Procedure,
                    restated: list[str]) -> None:
    """A streamed window trimmed before a verified step written again (``restated``: its variable and
    line): a missing next step is no deviation (:func:`_past_the_reply`), and the restatement is noted first."""
    verdict.deviation = _past_the_reply(verdict.deviation, verdict.verified, trace, procedure, state.progress.cursor)
    var, line = restated
    again = f" (`{line}`)" if line else ""
    verdict.others.insert(0, Deviation(kind="extra_steps", step=var, got=line or None,
                                       detail=f"{var} was written again{again} after its line was verified; the window's "
                                              f"reply ends before that line, and the verified value stands"))


def _blame_flagged(dev: Deviation, state: GuardState, procedure: Procedure) -> Deviation:
    """``dev``, its detail naming the values it rests on that were flagged earlier (kept unverified
    under ``flag``): there the cause is upstream, not the step's own expression or check."""
    if dev.step not in procedure.index_of:
        return dev
    flagged = [n for n in procedure.reads(procedure.index_of[dev.step])
               if state.progress.provenance.get(n) in ("flagged", "unverifiable")]
    if not flagged:
        return dev
    names = ", ".join(flagged)
    return dev.model_copy(update={"detail": f"{dev.step} rests on {names}, flagged earlier (the model's "
                                            f"value{'s' if len(flagged) > 1 else ''}, kept unverified): {dev.detail}"})


def _past_the_reply(dev: Deviation | None, verified: list[Any], trace: Any, procedure: Procedure, cursor: int) -> Deviation | None:
    """``dev``, unless it only says the step after the verified prefix is missing from a reply that
    ends before it (a streamed window trimmed before a restated step): the model wrote that step
    after the cut, never skipped it; the next window asks it as a first try."""
    if dev is None or dev.kind != "under_executed":
        return dev
    index = cursor + len(verified)
    later = set(procedure.variables[index:]) if index < len(procedure.steps) else set()
    if dev.step != procedure.steps[min(index, len(procedure.steps) - 1)].var or any(r.var in later for r in trace.records):
        return dev  # a step skipped inside the reply: the model's deviation
    return None


EventAction = Literal["reprompt", "repair", "raise", "flag", "note", "stop", "read"]


def _event(dev: Deviation, state: GuardState, action: EventAction, rung: str | None = None,
           ctx: RunContext | None = None) -> DeviationEvent:
    """The event of ``dev`` acted on by ``action`` (``rung``: the re-prompt's), told to the run's observer
    (``ctx``); where the pending step's reply came from a derived rung's nested run that did not
    verify, ``dev`` with the sub-step it ended on added (:func:`_derived_deviation`)."""
    dev = _derived_deviation(dev, state) if action != "note" else dev
    if ctx is not None:
        # a guard's deviation always names its step (only raw-mode scoring has whole-trace kinds)
        ctx.observer.step_checked(dev.step or "", "fail", dev.kind, action, dev.detail, rung=rung)
    return DeviationEvent(deviation=dev, attempt=state.progress.tries, chunk=state.progress.chunk_no - 1, action=action, rung=rung)


def _derived_deviation(dev: Deviation, state: GuardState) -> Deviation:
    """``dev``, for the pending step of a reply a derived rung's nested run gave without verifying it,
    naming the sub-step it ended on (``budget_exhausted`` where a run budget stopped it; ``arithmetic_error``,
    not a skip, where it gave no value); other deviations as they are."""
    a, rung = state.attempt, state.progress.rung
    if not a.derived_note or a.deviation is None or dev.step != a.deviation.step:
        return dev
    kind, detail = dev.kind, dev.detail
    if a.derived_spent:  # the derived run stopped because a run budget ran out, not at a wrong sub-step
        kind = "budget_exhausted"
        detail = f"step {dev.step} has no verified value: the {a.derived_spent} budget ran out inside the {rung} rung"
    elif kind == "under_executed":  # the derived run stopped at a wrong sub-step: no value, not a skip
        kind, detail = "arithmetic_error", f"step {dev.step} has no verified value"
    return dev.model_copy(update={"kind": kind, "detail": f"{detail} (the {rung} rung's {a.derived_note})"})


def _executed(ctx: RunContext, state: GuardState, value: str) -> Update:
    """The executed action's value, checked by its kind (:meth:`~stepguard.kinds.Kind.check_result`):
    committed, or a deviation that stops the run at its step."""
    i = state.progress.cursor
    dev = kind_of(ctx.procedure.steps[i]).check_result(StepContext(ctx.procedure, i), ctx.env(state), value)
    if dev is not None:
        return _tool_stop(ctx, state, dev)
    return Update(attempt=replace(state.attempt, verified=[[ctx.procedure.steps[i].var, value]], pending_call=False))


def _tool_stop(ctx: RunContext, state: GuardState, dev: Deviation) -> Update:
    """The update stopping the run at the step of a tool action that failed (``tool_error``)."""
    return Update(replace(state.progress, stop=Stop("tool_error")),
                  replace(state.attempt, verified=[], deviation=dev, pending_call=False), [_event(dev, state, "stop", ctx=ctx)])


def _tool_failed(ctx: RunContext, state: GuardState, exc: ToolError) -> Update:
    step = ctx.procedure.steps[state.progress.cursor]
    return _tool_stop(ctx, state, Deviation(kind="tool_error", step=step.var, detail=f"{type(exc).__name__}: {exc}"))


def _accepted(state: GuardState, ctx: RunContext) -> KindVerdict:
    kv = _check_kind(state, ctx)  # the same check verify passed, on the same reply: the same call
    assert kv.call is not None
    return kv


def _action_key(ctx: RunContext, var: str) -> str:
    """The idempotency key of step ``var``'s action: its identity in the run (the thread, the run's
    identity and the step), the same on every resume of the thread (32 hex of a sha256)."""
    text = json.dumps([ctx.thread_id, identity_digest(ctx.identity), var])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def intend(state: GuardState, runtime: Runtime[RunContext]) -> Command[Literal["act"]]:
    """Record the intent of the action ``verify`` accepted (:meth:`~stepguard.kinds.Kind.intent`)
    before ``act`` carries it out: this node's checkpoint makes it durable first.

    Where the step already holds a result recorded for an equal intent (a process killed after the
    action, before its commit), nothing is recorded and ``act`` commits that result; for another
    intent the run stops at the step (``tool_error``): its action ran, and is not run again otherwise.

    Raises:
        RunClosed: the run's caller stopped it: no intent is recorded, no action runs.
    """
    return _go("act", _intent(state, runtime.context))


def _intent(state: GuardState, ctx: RunContext) -> Update:
    """:func:`intend`'s update."""
    if not state.attempt.pending_call:
        return Update()
    _refuse_if_closed(ctx)  # a stopped run executes no tool: nothing is recorded, the resume asks the step again
    i = state.progress.cursor
    var = ctx.procedure.steps[i].var
    try:
        intent = kind_of(ctx.procedure.steps[i]).intent(StepContext(ctx.procedure, i), _accepted(state, ctx), ctx.tools,
                                                        _action_key(ctx, var))
    except ToolError as exc:
        return _tool_failed(ctx, state, exc)
    if intent is None:
        return Update()
    old = state.progress.actions.get(var)
    if old is not None and "result" in old:
        if old.get("intent") == intent:
            return Update()
        dev = Deviation(kind="tool_error", step=var, detail=f"step {var}'s action already ran ({json.dumps(old.get('intent'))[:200]}, "
                        f"result {str(old['result'])[:80]!r}); it is not run again as {json.dumps(intent)[:200]}")
        return _tool_stop(ctx, state, dev)
    return Update(replace(state.progress, actions={**state.progress.actions, var: {"intent": intent}}))


def _recorded(state: GuardState, update: Update, var: str, **what: str) -> Update:
    """``update`` with step ``var``'s action record completed by ``what`` (``result=`` or ``error=``)."""
    progress = update.progress or state.progress
    record = progress.actions.get(var)
    return update if record is None else replace(update, progress=replace(progress, actions={**progress.actions, var: {**record, **what}}))


def _withdrawn(state: GuardState, var: str) -> Update:
    """The update of an ``act`` stopped by its caller before the action ran: step ``var``'s intent is
    taken back (nothing ran, so a resume may ask the step again) and nothing is committed; the next
    model call raises :class:`RunClosed` (:func:`_refuse_if_closed`)."""
    actions = {k: v for k, v in state.progress.actions.items() if k != var}
    return Update(replace(state.progress, actions=actions), replace(state.attempt, verified=[], pending_call=False))


def act(state: GuardState, runtime: Runtime[RunContext]) -> Command[Literal["commit"]]:
    """Execute the action ``verify`` accepted (a tool call, once) by the step's kind, and make its
    result the step's value; its result (or error) is recorded beside its intent.

    Nothing happens for other steps. A tool that raises, times out or returns a value its step
    cannot hold is a ``tool_error`` deviation that stops the run at this step. A result already
    recorded for the step (see :func:`intend`) is committed without executing anything. A run
    stopped by its caller executes nothing (:func:`_withdrawn`).
    """
    return _go("commit", _action(state, runtime.context))


def _action(state: GuardState, ctx: RunContext) -> Update:
    """:func:`act`'s update."""
    if not state.attempt.pending_call:
        return Update()
    i = state.progress.cursor
    var = ctx.procedure.steps[i].var
    done = state.progress.actions.get(var) or {}
    if "result" in done:
        return _executed(ctx, state, str(done["result"]))
    if ctx.closed.is_set():  # stopped after the intent was recorded: the action does not run
        return _withdrawn(state, var)
    try:
        value = kind_of(ctx.procedure.steps[i]).execute(StepContext(ctx.procedure, i), _accepted(state, ctx), ctx.tools, ctx.observer,
                                                        key=_action_key(ctx, var))
    except ToolError as exc:
        return _recorded(state, _tool_failed(ctx, state, exc), var, error=str(exc)[:300])
    return _recorded(state, _executed(ctx, state, value), var, result=value)


async def aact(state: GuardState, runtime: Runtime[RunContext]) -> Command[Literal["commit"]]:
    """Async twin of :func:`act` (:meth:`~stepguard.kinds.Kind.aexecute`)."""
    return _go("commit", await _aaction(state, runtime.context))


async def _aaction(state: GuardState, ctx: RunContext) -> Update:
    """:func:`aact`'s update."""
    if not state.attempt.pending_call:
        return Update()
    i = state.progress.cursor
    var = ctx.procedure.steps[i].var
    done = state.progress.actions.get(var) or {}
    if "result" in done:
        return _executed(ctx, state, str(done["result"]))
    if ctx.closed.is_set():  # as in act
        return _withdrawn(state, var)
    try:
        value = await kind_of(ctx.procedure.steps[i]).aexecute(StepContext(ctx.procedure, i), _accepted(state, ctx), ctx.tools,
                                                               ctx.observer, key=_action_key(ctx, var))
    except ToolError as exc:
        return _recorded(state, _tool_failed(ctx, state, exc), var, error=str(exc)[:300])
    return _recorded(state, _executed(ctx, state, value), var, result=value)


CommitHop = Literal["plan", "reprompt", "exhausted", "repair", "flag", "stop", "finish"]


def commit(state: GuardState, runtime: Runtime[RunContext]) -> Command[CommitHop]:
    """Commit the verified prefix (the checkpoint after this node is the resume point), then go on:
    ``finish`` after a failed tool or the last step, ``plan`` after a clean chunk, else the policy's
    node for the deviation (:func:`_policy_hop`)."""
    update = _committed(state, runtime.context)
    return _go(_policy_hop(state.then(update), runtime.context), update)


def _committed(state: GuardState, ctx: RunContext) -> Update:
    """:func:`commit`'s update."""
    verified = state.attempt.verified
    values = dict(state.progress.values)
    prov = dict(state.progress.provenance)
    reprompts = dict(state.progress.step_reprompts)
    chunks = dict(state.progress.step_chunk)
    for i, (var, text) in enumerate(verified):
        values[var] = text
        prov[var] = _provenance(ctx, prov, ctx.procedure.index_of[var])
        reprompts[var] = state.progress.tries if i == 0 else 0
        chunks[var] = state.progress.chunk_no - 1
        ctx.observer.step_checked(var, "pass", None, None)
    dev = state.attempt.deviation
    ctx.observer.chunk_finished(state.progress.chunk_no - 1, len(verified), dev.kind if dev else None)
    out = replace(state.progress, values=values, provenance=prov, step_reprompts=reprompts, step_chunk=chunks,
                  cursor=state.progress.cursor + len(verified))
    if ctx.config.follow and state.progress.rung is None:  # a window's first asks, by position (follow_window)
        at = state.attempt.chunk_start + len(verified)
        own = dev is not None and dev.step is not None and at < state.attempt.chunk_end and ctx.procedure.index_of.get(dev.step) == at
        kind = dev.kind if dev is not None and own else None
        out = replace(out, window_tally=tally_window(out.window_tally, min(state.progress.tries, 1), len(verified), kind))
    if dev is None:
        out = replace(out, tries=0, rung=None, note=None)
    elif verified:  # the failing step is a new one: its ladder starts afresh
        out = replace(out, tries=0)
    return Update(replace(out, chunk_size=_next_size(state, ctx, out, len(verified))))


def _next_size(state: GuardState, ctx: RunContext, committed: Progress, verified: int) -> int:
    """The chunk size after a commit of ``verified`` steps (``committed``: the progress it made): the
    window the accuracy measured so far allows (``follow``), an adaptive one, or as it was."""
    size = state.progress.chunk_size or ctx.config.chunk_size
    failed = state.attempt.deviation is not None
    if ctx.config.follow:  # after every commit (a re-ask's too)
        tally = committed.window_tally
        return follow_window(tally, ctx.config.window, calls_per_deviation(tally, committed.usage.model_calls))
    asked = state.attempt.chunk_end - state.attempt.chunk_start
    if ctx.config.adaptive and ctx.config.streamed:
        if state.progress.rung is None and asked > 1:  # a window read, not a re-ask or a step asked alone
            return next_window(asked, ctx.config.window, verified, failed)
        return state.progress.chunk_size
    if ctx.config.adaptive:
        return min(2 * ctx.config.chunk_size, size + 1) if not failed else max(1, size // 2)
    return state.progress.chunk_size


PolicyHop = Literal["repair", "flag", "stop"]

_ROUTE_OF: dict[str, PolicyHop] = {"repair": "repair", "flag": "flag", "raise": "stop"}
"""The node a policy (or ``on_exhausted``) of repair, flag or raise routes to."""


def _tokens_left(state: GuardState, ctx: RunContext) -> int | None:
    """Tokens left of ``max_total_tokens`` (may be <= 0), or ``None`` when unbounded."""
    if ctx.config.max_total_tokens is None:
        return None
    return int(ctx.config.max_total_tokens - state.progress.usage.input_tokens - state.progress.usage.output_tokens)


def _wall_left(ctx: RunContext) -> float | None:
    """Seconds left of ``max_wall_s`` (may be <= 0), or ``None`` when unbounded."""
    if ctx.config.max_wall_s is None:
        return None
    return ctx.config.max_wall_s - (time.monotonic() - ctx.started)


def _spent_before_call(state: GuardState, ctx: RunContext) -> BudgetName | None:
    """The run-wide budget that forbids another model call (``tokens``, ``wall_time``), or ``None``."""
    tokens, wall = _tokens_left(state, ctx), _wall_left(ctx)
    if tokens is not None and tokens <= 0:
        return "tokens"
    if wall is not None and wall <= 0:
        return "wall_time"
    return None


def _budget_left(state: GuardState, ctx: RunContext) -> BudgetName | None:
    cfg = ctx.config
    spent = _spent_before_call(state, ctx)
    if spent is not None:
        return spent
    if state.progress.tries >= cfg.max_reprompts_per_step:
        return "reprompts_per_step"
    if state.progress.reprompts >= cfg.max_reprompts_per_run:
        return "reprompts_per_run"
    return None


def _policy_hop(state: GuardState, ctx: RunContext) -> CommitHop:
    """Where a committed ``state`` goes: the policy's node for a deviation, or on."""
    n = len(ctx.procedure.steps)
    if state.progress.stop:  # a tool failed: nothing after its step is verified from it
        return "finish"
    if state.attempt.deviation is None:
        return "finish" if state.progress.cursor >= n else "plan"  # plan's hop checks the run-wide budgets
    policy = ctx.config.policy
    if policy == "reprompt":
        return "reprompt" if _budget_left(state, ctx) is None else "exhausted"
    if policy == "flag" and state.attempt.model_value is None:
        return "reprompt" if _budget_left(state, ctx) is None else "exhausted"
    return _ROUTE_OF[policy]


def exhausted(state: GuardState, runtime: Runtime[RunContext]) -> Command[PolicyHop]:
    """Record which budget is spent; ``on_exhausted`` picks what follows: repair, flag or stop."""
    ctx = runtime.context
    spent = _budget_left(state, ctx) or "reprompts_per_step"
    return _go(_ROUTE_OF[ctx.config.on_exhausted], Update(replace(state.progress, spent=spent)))


def _budget_deviation(state: GuardState, var: str) -> Deviation:
    """The step's deviation, or, where a budget ran out before it was asked, a ``budget_exhausted`` one."""
    spent = state.progress.spent or "run"
    return state.attempt.deviation or Deviation(kind="budget_exhausted", step=var, detail=f"the {spent} budget is spent")


def reprompt(state: GuardState, runtime: Runtime[RunContext]) -> Command[Literal["plan"]]:
    """Prepare a corrective prompt for the failing step, on the next ladder rung; then ``plan`` asks it."""
    ctx = runtime.context
    attempt = state.progress.tries + 1
    ladder = ctx.config.ladder
    rung = ladder[min(attempt, len(ladder)) - 1]
    dev = state.attempt.deviation or Deviation(kind="under_executed", step=ctx.procedure.steps[state.progress.cursor].var)
    chosen = get_rung(rung)
    if chosen.derives and _derive(chosen, ctx, state.progress.cursor, ctx.env(state)) is None:
        # the rung cannot split this step: ask it alone (narrow) on its first re-prompt, and
        # resample (a new seed each attempt) after, so that no request is ever sent twice; the
        # event says so, so that a step no rung applies to is never passed over silently. A step
        # already asked alone resamples at once: narrowing it again at temperature 0 got the same
        # wrong value back (13500000 + 810000 = 14210000 three times), while 8 samples at the
        # resample temperature got it right 6 times (benchmarks/probe_single_ops.py --resample)
        alone = state.attempt.chunk_end - state.attempt.chunk_start == 1  # the failing chunk was this step alone
        fallback = "narrow" if attempt == 1 and not alone else "resample"
        if ctx.depth >= MAX_NESTING:
            why = f"nested {MAX_NESTING} derived rungs deep; asked {fallback}"
        else:  # and the form it does not re-ask, named (Rung.refusal)
            why = f"does not apply to this step; asked {fallback}; {_refusal(chosen, ctx, state)}"
        dev = dev.model_copy(update={"detail": f"{dev.detail} [{rung} {why}]".strip()})
        rung = fallback
    note = correction_note(ctx.procedure, state.progress.cursor, state.attempt.deviation or dev, ctx.env(state))
    event = _event(dev, state, "reprompt", rung, ctx)
    return _go("plan", Update(replace(state.progress, tries=attempt, rung=rung, note=note, reprompts=state.progress.reprompts + 1),
                              events=[event]))


PolicyNext = Literal["plan", "finish"]


def repair(state: GuardState, runtime: Runtime[RunContext]) -> Command[PolicyNext]:
    """Supply the evaluator's value for the failing step and mark it ``repaired``; on (:func:`_next`)."""
    return _next(state, runtime.context, _repaired(state, runtime.context))


def _next(state: GuardState, ctx: RunContext, update: Update) -> Command[PolicyNext]:
    """A policy's ``update`` and what follows it: ``finish`` where the run stopped or every step is
    committed, else ``plan`` (whose hop checks the run-wide budgets)."""
    after = state.then(update).progress
    return _go("finish" if after.stop or after.cursor >= len(ctx.procedure.steps) else "plan", update)


def _repaired(state: GuardState, ctx: RunContext) -> Update:
    """:func:`repair`'s update."""
    i = state.progress.cursor
    var = ctx.procedure.steps[i].var
    try:
        value = expected_value(ctx.procedure, i, ctx.env(state))
    except EvaluationError:
        value = None
    dev = _budget_deviation(state, var)
    events = [_event(dev, state, "repair", ctx=ctx)]
    if value is None:  # nothing to supply (no expr): stop here
        return Update(replace(_step_reprompts(state, var), stop=Stop("unrepairable")), events=events)
    return _kept(state, var, format_value(value), "repaired", events)


def _kept(state: GuardState, var: str, text: str, provenance: str, events: list[DeviationEvent]) -> Update:
    """The update of a policy that commits ``text`` for the failing step ``var`` with ``provenance`` and goes on."""
    progress = replace(_step_reprompts(state, var), values={**state.progress.values, var: text},
                       provenance={**state.progress.provenance, var: provenance},
                       cursor=state.progress.cursor + 1, tries=0, rung=None, note=None, spent=None)
    return Update(progress, replace(state.attempt, deviation=None), events)


def _step_reprompts(state: GuardState, var: str) -> Progress:
    """The progress with the re-prompts spent on ``var`` (the step a policy ends) recorded."""
    return replace(state.progress, step_reprompts={**state.progress.step_reprompts, var: state.progress.tries})


def flag(state: GuardState, runtime: Runtime[RunContext]) -> Command[PolicyNext]:
    """Shadow mode: keep the model's value unverified, record the deviation, go on (:func:`_next`)."""
    return _next(state, runtime.context, _flagged(state, runtime.context))


def _flagged(state: GuardState, ctx: RunContext) -> Update:
    """:func:`flag`'s update."""
    i = state.progress.cursor
    var = ctx.procedure.steps[i].var
    dev = _budget_deviation(state, var)
    kept = state.progress.kept_value[1] if state.progress.kept_value and state.progress.kept_value[0] == var else None
    value = state.attempt.model_value if state.attempt.model_value is not None else kept  # this try's, else an earlier try's
    events = [_event(dev, state, "flag", ctx=ctx)]
    if value is None or state.attempt.deviation is None:  # no value of the model's to keep
        return Update(replace(_step_reprompts(state, var), stop=Stop("budget", state.progress.spent or "spent")), events=events)
    return _kept(state, var, value, "flagged", events)


def stop(state: GuardState, runtime: Runtime[RunContext]) -> Command[Literal["finish"]]:
    """Stop early: the ``raise`` policy, or a spent budget with ``on_exhausted='raise'``."""
    ctx = runtime.context
    spent = state.progress.spent
    why = Stop("budget", spent) if spent else Stop("raise")
    var = ctx.procedure.steps[min(state.progress.cursor, len(ctx.procedure.steps) - 1)].var
    dev = state.attempt.deviation or (_budget_deviation(state, var) if spent else None)
    events = [_event(dev, state, "raise", ctx=ctx)] if dev else []
    return _go("finish", Update(replace(_step_reprompts(state, var) if dev else state.progress, stop=why), events=events))


def finish(state: GuardState, runtime: Runtime[RunContext]) -> Command[Literal["__end__"]]:
    """Record the end time; the result is built from the final state."""
    return _go("__end__", Update(replace(state.progress, finished_at=time.time())))  # END: the run is over


def build_graph(use_async: bool = False) -> StateGraph[GuardState, RunContext, GuardState, GuardState]:
    """The controller graph (uncompiled). ``use_async`` picks the async model call node."""
    g = StateGraph(GuardState, context_schema=RunContext)
    nodes = {"plan": plan, "ask": aask if use_async else ask, "verify": verify, "intend": intend, "act": aact if use_async else act,
             "commit": commit, "reprompt": reprompt, "repair": repair, "flag": flag, "stop": stop,
             "exhausted": exhausted, "finish": finish}
    for name, fn in nodes.items():
        g.add_node(name, fn)  # its next hops from its return annotation, Command[Literal[...]]
    g.add_edge(START, "plan")
    return g
