"""The ``tool`` kind: a named tool is called with checked arguments; its result is the step's value.

What is checked, before anything runs: exactly one call, of the step's tool; every argument the
step names and no other; an expression argument equal to the evaluator's value (exactly:
``"ORD-7"`` is not ``"ORD-9"``, ``age ^ 0.23`` as text is not a number); a free argument of its type
and passing its predicate. Only then is the tool executed (once), and its result, in the step's
declared type, is committed with provenance ``tool``; a tool that raises, times out or returns a
value the step cannot hold stops the run at its step (``tool_error``).

Numbers reach the tool at their written or declared scale (:mod:`stepguard.tools._decimals`):
``amount=25.00`` as ``Decimal("25.00")``. A tool's result is bounded as the evaluator's numbers are
(a ``10**5000`` or a ``1e400`` result is a ``tool_error``, never a traceback).

Nothing done twice (docs/agent-workflows.md): the call's intent (tool, arguments as the tool
receives them, idempotency key, data version) is made durable before the call (:meth:`Tool.intent`)
and its result after; on resume :meth:`Tool.resume_refusal` refuses a thread whose call was cut
off by a crash (unless the tool is repeatable) or whose recorded results came from data that has
changed since.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any

from stepguard.errors import EvaluationError, ProcedureError, StepguardError, ToolError
from stepguard.evaluator import DEFAULT_MAX_BITS, CompiledExpression, Number, check_size, format_number
from stepguard.kinds._base import Kind, StepContext, Value, register_kind
from stepguard.kinds._reading import ArgVerdict, KindVerdict, same_value, show_value
from stepguard.procedure import Procedure, Step, ToolArg, ToolStep, apply_scale, coerce_value, format_value
from stepguard.tools import ToolCall, ToolSet, call_kwargs, kwargs_from_json, kwargs_json
from stepguard.verify import Deviation

__all__ = ["Tool", "ToolArg", "ToolStep", "verify_tool_call"]

# ---- the reply's calls: exactly one, of the step's tool, read whole -------------------------------

def _no_call(step: ToolStep, calls: Sequence[ToolCall], reply: str) -> Deviation | None:
    """No call at all: ``under_executed``, with what the model wrote instead."""
    if calls:
        return None
    var, tool = step.var, step.tool
    wrote = reply.strip().splitlines()[0][:120] if reply.strip() else ""
    why = f"; the reply `{wrote}` holds no call (a value written by the model is not the tool's result)" if wrote else ""
    return Deviation(kind="under_executed", step=var, detail=f"step {var} needs one call of tool {tool}{why}", got=wrote or None)


def _broken_call(step: ToolStep, calls: Sequence[ToolCall], reply: str) -> Deviation | None:
    """A call that could not be read: ``bad_argument``, with the reader's error."""
    broken = next((c for c in calls if c.error), None)
    if broken is None:
        return None
    return Deviation(kind="bad_argument", step=step.var, detail=f"call {broken.text[:120]!r}: {broken.error}", got=broken.text[:200])


def _other_tool(step: ToolStep, calls: Sequence[ToolCall], reply: str) -> Deviation | None:
    """A call of another tool than the step's: ``wrong_tool``."""
    other = next((c for c in calls if c.name != step.tool), None)
    if other is None:
        return None
    return Deviation(kind="wrong_tool", step=step.var, detail=f"step {step.var} calls {step.tool}, not {other.name}", got=other.text[:200])


def _repeated_call(step: ToolStep, calls: Sequence[ToolCall], reply: str) -> Deviation | None:
    """More than one call: ``repeated_call``, showing the second."""
    if len(calls) <= 1:
        return None
    return Deviation(kind="repeated_call", step=step.var, detail=f"{step.tool} was called {len(calls)} times; call it once",
                     got=calls[1].text[:200])


_CALL_CHECKS = (_no_call, _broken_call, _other_tool, _repeated_call)
"""The checks of the reply's calls, in the order their deviations are reported."""


# ---- the one call's arguments ----------------------------------------------------------------------

def _expression_arg(name: str, spec: CompiledExpression, got: Number | str | bool,
                    env: Mapping[str, Any]) -> tuple[ArgVerdict, Any]:
    """An expression argument against the evaluator's value (exactly), and that value (None when the
    expression cannot be evaluated)."""
    try:
        want = spec.evaluate(env)
    except EvaluationError as exc:
        return ArgVerdict(name, False, f"argument {name} cannot be evaluated: {exc}", show_value(got)), None
    ok = same_value(want, got)
    said = f"{name} = {spec.source}"
    wrong = f"argument {name} = {show_value(got)} is not {spec.source}"
    verdict = ArgVerdict(name, ok, f"{said}: checked exactly" if ok else wrong
                         + (" (the value of that known variable)" if spec.names else ""), show_value(got))
    return verdict, want


def _check_args(procedure: Procedure, step: ToolStep, call: ToolCall, env: Mapping[str, Any],
                out: KindVerdict) -> tuple[dict[str, Number | str | bool], dict[str, int]]:
    """Each argument the step names, in the step's order, its verdict added to ``out.args``; then one
    verdict for each argument the step does not name. Returns the checked values and the places a
    number reaches the tool with."""
    checked: dict[str, Number | str | bool] = {}
    places: dict[str, int] = {}
    for name, spec in step.compiled_args.items():
        if name not in call.args:
            out.args.append(ArgVerdict(name, False, f"argument {name} is missing"))
            continue
        got = call.args[name]
        verdict, value = _free_arg(name, spec, got, env) if isinstance(spec, ToolArg) else _expression_arg(name, spec, got, env)
        out.args.append(verdict)
        if verdict.ok and value is not None:
            checked[name] = value
            scale = _free_places(spec, call, name) if isinstance(spec, ToolArg) else declared_places(procedure, spec, env)
            if scale is not None and not isinstance(value, (str, bool)):
                places[name] = scale
    out.args.extend(_unknown_args(step, call))
    return checked, places


def _unknown_args(step: ToolStep, call: ToolCall) -> list[ArgVerdict]:
    """A failed verdict for each argument of the call that the step does not name."""
    specs = step.compiled_args
    return [ArgVerdict(name, False, f"argument {name} is not an argument of step {step.var} (its arguments: "
                       f"{', '.join(specs) or 'none'})", show_value(call.args[name]))
            for name in call.args if name not in specs]


def verify_tool_call(procedure: Procedure, index: int, env: Mapping[str, Any], calls: Sequence[ToolCall], reply: str = "") -> KindVerdict:
    """Check the tool call(s) a reply holds for tool step ``index``, before anything is executed.

    Args:
        procedure: the procedure; ``procedure.steps[index]`` is a :class:`ToolStep`.
        index: 0-based step index.
        env: committed values (inputs and verified variables).
        calls: the reply's calls (:func:`stepguard.tools.parse_calls` or native ones).
        reply: the reply text (to say what the model wrote instead of a call).

    Returns:
        A :class:`KindVerdict`; its ``call`` (set only when every check passed) carries the
        evaluator's values of the expression arguments and the model's values of the free ones.
    """
    step = procedure.steps[index]
    assert isinstance(step, ToolStep)
    out = KindVerdict()
    for check in _CALL_CHECKS:
        out.deviation = check(step, calls, reply)
        if out.deviation is not None:
            return out
    call = calls[0]
    checked, places = _check_args(procedure, step, call, env, out)
    bad = next((a for a in out.args if not a.ok), None)
    if bad is not None:
        out.deviation = Deviation(kind="bad_argument", step=step.var, detail=bad.detail, got=call.text[:200])
        return out
    out.call = ToolCall(call.name, checked, call.text, places=places)
    return out


def declared_places(procedure: Procedure, spec: CompiledExpression, env: Mapping[str, Any]) -> int | None:
    """The places an expression argument reaches its tool with: for a bare name of a step with
    ``scale``, that scale; of a decimal input, the places the caller wrote (``env.places``, a
    :class:`stepguard.tools.Env`); else ``None`` (its shortest exact form)."""
    body = spec.tree.body
    if not isinstance(body, ast.Name):
        return None
    index = procedure.index_of.get(body.id)
    if index is not None:
        step = procedure.steps[index]
        return step.scale if step.type in ("decimal", "number") else None
    places: Mapping[str, int] = getattr(env, "places", {})
    return places.get(body.id)


def _free_places(spec: ToolArg, call: ToolCall, name: str) -> int | None:
    """A free decimal or number argument's places as the model wrote them (``25.00``: 2)."""
    return call.places.get(name) if spec.type in ("decimal", "number") else None


def _free_arg(name: str, spec: ToolArg, got: Number | str | bool, env: Mapping[str, Number | str]) -> tuple[ArgVerdict, Any]:
    try:
        exact = got if not isinstance(got, Fraction) else Decimal(format_number(got)) if "/" not in format_number(got) else got
        value = coerce_value(exact, spec.type, f"argument {name}")
    except ProcedureError as exc:
        return ArgVerdict(name, False, f"argument {name} must be of type {spec.type} ({exc})", show_value(got)), None
    if spec.check is None:
        return ArgVerdict(name, True, f"{name}: free, of type {spec.type}", show_value(value)), value
    from stepguard.evaluator import compile_expression

    try:
        ok = compile_expression(spec.check).evaluate({**env, "value": value}) is True
        why = f"check {spec.check!r} is false"
    except EvaluationError as exc:
        ok, why = False, str(exc)
    if not ok:
        return ArgVerdict(name, False, f"argument {name} = {show_value(value)}: {why}", show_value(value)), None
    return ArgVerdict(name, True, f"{name}: {spec.check}", show_value(value)), value


def _arg_text(step: ToolStep) -> str:
    """A tool step's arguments as the prompt shows them: ``sku=sku, note=<string: len(value) <= 80>``."""
    parts = []
    for name, arg in (step.args or {}).items():
        if isinstance(arg, str):
            parts.append(f"{name}={arg}")
        else:
            rule = f": {arg.check}" if arg.check else ""
            parts.append(f"{name}=<{arg.type}{rule}>")
    return ", ".join(parts)


def _call_args_text(call: ToolCall) -> dict[str, str]:
    """The arguments as the tool receives them, as text (``25.00`` for ``Decimal("25.00")``)."""
    try:
        kwargs = call_kwargs(call.args, call.places)
    except ValueError:
        kwargs = dict(call.args)
    return {k: ("true" if v else "false") if isinstance(v, bool) else format(v, "f") if isinstance(v, Decimal) else format_value(v)
            for k, v in kwargs.items()}


@register_kind
class Tool(Kind):
    """A named tool called with checked arguments; asked alone, executed once every argument passes."""

    name = "tool"
    step_model = ToolStep

    def line(self, ctx: StepContext, values: Mapping[str, Value], note: str) -> str:
        """``var = CALL tool(sku=sku, note=<string: len(value) <= 80>)``."""
        step = _tool_step(ctx)
        return f"{step.var} = CALL {step.tool}({_arg_text(step)}){note}"

    def example(self, ctx: StepContext, values: Mapping[str, Value]) -> str:
        """``CALL tool(sku=<value>)``."""
        step = _tool_step(ctx)
        return f"CALL {step.tool}({', '.join(f'{n}=<value>' for n in (step.args or {}))})"

    def count_line(self, chunk: Sequence[StepContext]) -> str | None:
        """One call, with each argument's value written out."""
        step = _tool_step(chunk[0])
        return (f"Call the tool {step.tool} once, for step {step.var}. Write each argument's value itself "
                "(a string in double quotes, or a number), never a name or a formula, as")

    def offered_tools(self, step: Step, tools: ToolSet) -> tuple[dict[str, Any], ...]:
        """The step's tool, with only the step's arguments, where the guard was given it."""
        assert isinstance(step, ToolStep)
        return (tools[step.tool].schema(only=list(step.args or {})),) if step.tool in tools else ()

    def check(
        self, ctx: StepContext, env: Mapping[str, Value], reply: str, tool_calls: Sequence[ToolCall] = ()
    ) -> KindVerdict:
        """The reply's call (its native calls, else its ``CALL`` lines): :func:`verify_tool_call`."""
        from stepguard.tools import parse_calls

        return verify_tool_call(ctx.procedure, ctx.index, env, list(tool_calls) or parse_calls(reply), reply)

    def correction_note(self, ctx: StepContext, deviation: Deviation, env: Mapping[str, Value]) -> str:
        """What was refused, that nothing was executed, and how to call again."""
        got = (deviation.got or "").strip()[:120]
        yours = f"Your reply `{got}` was not accepted" if got else "Your reply was not accepted"
        detail = deviation.detail.split(" [", 1)[0]
        return (f"{yours}: {detail}. It was not executed. Call {_tool_step(ctx).tool} exactly once, with each "
                "argument's value written out as the step's expression gives it from the known values.")

    def provenance(self, ctx: StepContext) -> str:
        """``tool``: the value is the tool's result, not the model's."""
        return "tool"

    def execute(self, ctx: StepContext, verdict: KindVerdict, tools: ToolSet, observer: Any, key: str = "") -> str:
        """Call the tool with the checked arguments (at their places; ``key`` as its idempotency key
        where it takes one); its result in the step's type, as value text.

        Raises:
            ToolError: it raised, timed out, returned a value the step cannot hold (or one past the
                evaluator's bounds), or an argument has no exact decimal form (it is then not called).
        """
        step, call = _tool_step(ctx), verdict.call
        assert call is not None
        verdicts = [(a.name, a.ok, a.detail) for a in verdict.args]
        with observer.tool_call(step.var, call.name, _call_args_text(call), verdicts) as record:
            value = _result_text(step, tools[call.name].call(call.args, step.var, places=call.places, key=key or None))
            record.result(value)
        return value

    async def aexecute(self, ctx: StepContext, verdict: KindVerdict, tools: ToolSet, observer: Any, key: str = "") -> str:
        """Async twin of :meth:`execute` (the tool through :meth:`stepguard.tools.Tool.acall`)."""
        step, call = _tool_step(ctx), verdict.call
        assert call is not None
        verdicts = [(a.name, a.ok, a.detail) for a in verdict.args]
        with observer.tool_call(step.var, call.name, _call_args_text(call), verdicts) as record:
            value = _result_text(step, await tools[call.name].acall(call.args, step.var, places=call.places, key=key or None))
            record.result(value)
        return value

    def intent(self, ctx: StepContext, verdict: KindVerdict, tools: ToolSet, key: str) -> dict[str, Any] | None:
        """``{"tool", "args", "key"[, "data_version"]}``: the call about to be made, with its arguments
        as the tool receives them (:func:`stepguard.tools.kwargs_json`: ``{"decimal": "25.00"}``).

        Raises:
            ToolError: an argument has no exact decimal form, or the tool's ``data_version`` raised.
        """
        step, call = _tool_step(ctx), verdict.call
        assert call is not None
        tool = tools[call.name]
        try:
            args = kwargs_json(call_kwargs(call.args, call.places))
        except ValueError as exc:
            raise ToolError(f"tool {tool.name} was not called: {exc}", tool.name, step.var) from None
        out: dict[str, Any] = {"tool": tool.name, "args": args, "key": key}
        if tool.data_version is not None:
            out["data_version"] = _data_version(tool, step.var)
        return out

    def resume_refusal(self, ctx: StepContext, record: Mapping[str, Any], tools: ToolSet) -> str | None:
        """Why a thread holding ``record`` for this step cannot be resumed, or ``None``.

        * started and no result recorded (a crash during the call): refused, unless the tool is
          ``read_only``, ``idempotent`` or takes an ``idempotency_key`` (then it is called again,
          with the same key);
        * a recorded result, and the tool's ``data_version`` is another now: refused, unless the
          tool is ``read_only`` and, called again with the same arguments, returns the same result;
        * a recorded result of a ``read_only`` tool with no ``data_version``: called again; a
          different result is refused.
        """
        step = _tool_step(ctx)
        intent = record.get("intent") or {}
        name = str(intent.get("tool", step.tool))
        tool = tools.get(name)
        shown = f"{name}({_shown_args(intent.get('args') or {})})"
        if tool is None:
            return f"step {step.var}: its tool {name} is not among the tools given"
        if "result" not in record:
            if tool.repeatable or "error" in record:
                return None
            return (f"step {step.var}: the call {shown} was started and no result was recorded (the process stopped during "
                    f"the call), so it may have run; it is not called again. Check by hand whether it ran, then finish the work "
                    f"on a new thread; declare the tool idempotent=True, or give it an idempotency_key parameter, to let a "
                    f"resume call it again")
        result = str(record["result"])
        if tool.data_version is not None:
            try:
                now = _data_version(tool, step.var)
            except ToolError as exc:
                return f"step {step.var}: {exc}"
            then = intent.get("data_version")
            if now == then:
                return None
            if not tool.read_only:
                return (f"step {step.var}: tool {name}'s data was version {then} when it returned {result[:80]!r}, and is "
                        f"version {now} now; resuming would verify old results beside new ones: run the work on a new thread")
        if not tool.read_only:
            return None
        try:
            again = _result_text(step, tool.call(kwargs_from_json(intent.get("args") or {}), step.var,
                                                 key=str(intent.get("key") or "") or None))
        except ToolError as exc:
            return f"step {step.var}: re-checking {shown} on resume failed: {exc}"
        if again != result:
            return (f"step {step.var}: {shown} returned {result[:80]!r} before, and returns {again[:80]!r} now; resuming would "
                    "verify old results beside new ones: run the work on a new thread")
        return None

    def check_result(self, ctx: StepContext, env: Mapping[str, Value], value: str) -> Deviation | None:
        """The step's predicate on the tool's result: a ``tool_error`` deviation when it is false."""
        step = _tool_step(ctx)
        check = ctx.compiled_check
        if check is None:
            return None
        try:
            ok = check.evaluate({**env, "value": self.value_of(step, value)}) is True
        except EvaluationError:
            ok = False
        if ok:
            return None
        return Deviation(kind="tool_error", step=step.var,
                         detail=f"tool {step.tool} returned {value[:80]}, and check {step.check!r} is false for it")

    def grade(self, ctx: StepContext) -> str:
        """``tool``: the value is its tool's result, for arguments every check passed."""
        return "tool"

    def describe(self, ctx: StepContext) -> list[str]:
        """The tool, each argument's rule, and what a failing tool does."""
        step = _tool_step(ctx)
        out = [f"tool: {step.tool}, called once, only after every argument passes; its result is the value (provenance tool)"]
        for name, arg in (step.args or {}).items():
            if isinstance(arg, str):
                out.append(f"argument {name}: must equal {arg}, exactly (a literal value, never a name or formula)")
            else:
                out.append(f"argument {name}: free, type {arg.type}" + (f", predicate {arg.check}" if arg.check else ""))
        out.append("a tool that raises or times out: tool_error, the run stops at this step")
        return out


def _tool_step(ctx: StepContext) -> ToolStep:
    step = ctx.step
    assert isinstance(step, ToolStep)
    return step


def _result_text(step: ToolStep, result: Any) -> str:
    """A tool's result as the value text its step commits, in the step's declared type.

    Numbers are bounded as the evaluator's are (:data:`stepguard.evaluator.DEFAULT_MAX_BITS` bits,
    1,000 digits written out for a ``Decimal``), so a result the evaluator could not hold is this
    step's ``tool_error``, never a traceback or a value that exhausts memory.

    Raises:
        ToolError: the result does not fit the step's type (a dict for a number step, ``None``, a
            number past the bounds, ...).
    """
    try:
        if step.type in ("string", "one_of") and isinstance(result, (dict, list)):
            result = json.dumps(result, sort_keys=True, separators=(",", ":"), default=str)
        value = coerce_value(result, step.type, f"result of {step.tool}")
        if step.type == "one_of" and value not in (step.choices or ()):
            raise ToolError(f"tool {step.tool} returned {_shown(result)}, not one of {', '.join(step.choices or ())}", step.tool, step.var)
        if not isinstance(value, (str, bool)):
            check_size(value)
        return format_value(apply_scale(value, step))
    except ToolError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever the user's result makes fail is this step's tool_error
        why = str(exc)[:200] if isinstance(exc, StepguardError) else f"{type(exc).__name__}: {str(exc)[:200]}"
        if isinstance(exc, EvaluationError) and "bit bound" in why:
            why = f"a number of more than {DEFAULT_MAX_BITS} bits, past the evaluator's bound"
        raise ToolError(f"tool {step.tool} returned {type(result).__name__} {_shown(result)}, which step {step.var} "
                        f"(type {step.type}) cannot hold: {why}", step.tool, step.var) from None


def _shown(result: Any) -> str:
    """A result, shortly and safely (a 5,000-digit int is not written out: ``str`` would raise)."""
    if isinstance(result, int) and not isinstance(result, bool) and result.bit_length() > 256:
        return f"<an integer of {result.bit_length()} bits>"
    try:
        return repr(str(result)[:80])
    except Exception:  # noqa: BLE001 - a result whose str() fails is shown by its type
        return f"<a {type(result).__name__}>"


def _shown_args(args: Mapping[str, Any]) -> str:
    """Recorded arguments as a call writes them: ``order_id="ORD-7", amount=25.00``."""
    return ", ".join(f"{k}={v['decimal'] if isinstance(v, Mapping) else json.dumps(v)}" for k, v in args.items())


def _data_version(tool: Any, step: str) -> str:
    """The tool's data version now, as text.

    Raises:
        ToolError: its ``data_version`` raised.
    """
    try:
        return str(tool.data_version())[:200]
    except Exception as exc:  # noqa: BLE001 - the user's callable
        raise ToolError(f"tool {tool.name}'s data_version raised {type(exc).__name__}: {str(exc)[:200]}", tool.name, step) from None
