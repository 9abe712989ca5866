"""The ``compute`` kind: the model computes the step's value, checked against the evaluator's.

Its steps go several to a chunk and are read by the trace parser and checked step by step
(:func:`stepguard.verify.verify_chunk`); the derived rungs re-derive them from their expression.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence

from stepguard.kinds._base import Kind, StepContext, Value, register_kind
from stepguard.kinds._prompting import NUMBER, inline
from stepguard.procedure import ComputeStep, Step, format_value
from stepguard.verify import Deviation

__all__ = ["Compute", "ComputeStep"]

_MAX_GOT = 120


def _copies(step: Step) -> bool:
    """Whether the step's expression is one name alone (``S2 = y``): a copy, nothing to compute."""
    expression = step.expression
    if expression is None:
        return False
    try:
        body = ast.parse(expression.strip(), mode="eval").body
    except SyntaxError:
        return False
    return isinstance(body, ast.Name)


def _pins_value(node: ast.expr) -> bool:
    """Whether a predicate is ``value == E`` (or ``E == value``) with ``E`` not reading ``value``: it holds
    for one value only, the one the evaluator computes from ``E``."""
    if not (isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], ast.Eq)):
        return False
    left, right = node.left, node.comparators[0]

    def is_value(n: ast.expr) -> bool:
        return isinstance(n, ast.Name) and n.id == "value"

    def reads_value(n: ast.expr) -> bool:
        return any(isinstance(x, ast.Name) and x.id == "value" for x in ast.walk(n))

    return (is_value(left) and not reads_value(right)) or (is_value(right) and not reads_value(left))


@register_kind
class Compute(Kind):
    """The model computes the value; several steps to a chunk."""

    name = "compute"
    step_model = ComputeStep
    asked_alone = False

    names_type = True

    def line(self, ctx: StepContext, values: Mapping[str, Value], note: str) -> str:
        """``var = expr`` with the names in ``values`` written as values, or ``var = ?`` without one."""
        step = ctx.step
        if step.expression is not None:
            return f"{step.var} = {inline(step.expression, values)}{note}"
        return super().line(ctx, values, note)

    def example(self, ctx: StepContext, values: Mapping[str, Value]) -> str:
        """The answer line's shape for the chunk's first step.

        A step over numbers alone (``t1 = 219 - 19``, as the derived rungs write them) shows its
        expression before the result: with ``t1 = <result>`` the embedded model copied the
        expression and stopped (docs/lab/fidelity-history.md, the derived rungs).
        """
        step = ctx.step
        expr = None if step.expression is None else inline(step.expression, values)
        if expr is not None and any(name not in values for name in ctx.reads):
            return f"{step.var} = {expr} = <the numbers substituted> = <result>"
        if expr is not None and not NUMBER.fullmatch(expr.strip()):
            return f"{step.var} = {expr} = <result>"
        return f"{step.var} = <result>"

    def chunk_example(self, chunk: Sequence[StepContext], values: Mapping[str, Value]) -> str:
        """:meth:`example` of the chunk's first step, except for a copy (``S2 = y``) asked alone, which
        shows ``S2 = y = <result>``: shown ``S2 = y = <the numbers substituted> = <result>``, the
        embedded model wrote ``S2 = y = 19 = 38`` on every re-ask. A chunk that opens with copies keeps
        its first step's shape: shown the first operation's instead, the model began at that step
        and skipped the copies (docs/lab/fidelity-history.md, "A copy step's example")."""
        step = chunk[0].step
        expr = None if step.expression is None else inline(step.expression, values)
        if len(chunk) == 1 and expr is not None and _copies(step) and not NUMBER.fullmatch(expr.strip()):
            return f"{step.var} = {expr} = <result>"
        return self.example(chunk[0], values)

    def correction_note(self, ctx: StepContext, deviation: Deviation, env: Mapping[str, Value]) -> str:
        """Names the step, its expression and the committed operands, never the expected result:
        the operands are verified already, so restating them leaks no answer; the model's own line
        is cut to 120 characters, so the note never grows across re-prompts."""
        step = ctx.step
        var = step.var
        got = (deviation.got or "").strip()[:_MAX_GOT]
        reads = [n for n in ctx.reads if n in env]
        operands = ", ".join(f"{n} = {format_value(env[n])}" for n in reads)
        where = f" where {operands}" if operands else ""
        how = f"{var} = {step.expression}{where}" if step.expression else var
        notes = {
            "arithmetic_error": f"{f'Your line `{got}` was wrong.' if got else f'Your value for {var} was wrong.'}"
                                f" Recompute {how}, carefully, then continue.",
            "lookback_confusion": f"Your line `{got}` used a wrong value: {deviation.detail}. Recompute {how}, then continue.",
            "under_executed": f"You did not write {var} in its place. Write every step in order, starting with {how}.",
            "extra_steps": f"Write only the listed steps, in order; {deviation.step} is not the next one. Start with {how}.",
            "code_instead_of_steps": f"Do not write code or program output. Write only the step lines, starting with {how}.",
            "truncated": f"Your reply was cut off. Write only the step lines, nothing else, starting with {how}.",
            "type_error": f"Your value for {var} is not acceptable: {deviation.detail}. Write {var} again.",
        }
        notes["out_of_order"] = notes["under_executed"]
        notes["check_failed"] = notes["type_error"]
        return notes.get(deviation.kind, f"Recompute {how}, then continue.")

    def provenance(self, ctx: StepContext) -> str:
        """``unverifiable`` for a step with neither ``expr`` nor ``check``, else ``model_verified``."""
        unchecked = ctx.compiled is None and ctx.compiled_check is None
        return "unverifiable" if unchecked else "model_verified"

    def grade(self, ctx: StepContext) -> str:
        """``exact`` for a step with an ``expr`` or an expected-value ``check`` (one naming no ``value``, or
        ``value == E`` with ``E`` naming no ``value``: the evaluator computed the value the model's must
        equal), ``bounded`` for one whose only check is a predicate over ``value`` (``0 <= value <=
        subtotal``: any value in range passes), ``unchecked`` for neither."""
        check = ctx.compiled_check
        if ctx.compiled is not None or ctx.procedure.check_is_expected[ctx.index]:
            return "exact"
        if check is None:
            return "unchecked"
        return "exact" if _pins_value(check.tree.body) else "bounded"

    def describe(self, ctx: StepContext) -> list[str]:
        """Nothing beyond the expected value, predicate and type lines every step has."""
        return []

