"""Corrective notes: what a re-prompt says about the first deviation.

A note names the step, its expression and the committed operand values, never the expected
result (issue 4): operands are already verified, so restating them leaks no answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stepguard.evaluator import Number
from stepguard.guard._prompts import format_value
from stepguard.procedure import Procedure

__all__ = ["correction_note"]

_MAX_GOT = 120


def correction_note(procedure: Procedure, index: int, deviation: Mapping[str, Any], env: Mapping[str, Number | str]) -> str:
    """The note that opens a corrective prompt for step ``index`` (0-based).

    Args:
        procedure: the procedure.
        index: the failing step.
        deviation: the :class:`stepguard.verify.Deviation` as a dict.
        env: committed values.

    Returns:
        One or two sentences; bounded (the model's own line is cut to 120 characters), so
        corrective context never grows across re-prompts.
    """
    step = procedure.steps[index]
    var = step.var
    got = (deviation.get("got") or "").strip()[:_MAX_GOT]
    reads = [n for n in procedure.reads(index) if n in env]
    operands = ", ".join(f"{n} = {format_value(env[n])}" for n in reads)
    where = f" where {operands}" if operands else ""
    how = f"{var} = {step.expr}{where}" if step.expr else var
    kind = deviation.get("kind")
    if step.kind != "compute":
        return _kind_note(procedure, index, deviation, got)
    if kind == "arithmetic_error":
        head = f"Your line `{got}` was wrong." if got else f"Your value for {var} was wrong."
        return f"{head} Recompute {how}, carefully, then continue."
    if kind == "lookback_confusion":
        return f"Your line `{got}` used a wrong value: {deviation.get('detail', '')}. Recompute {how}, then continue."
    if kind in ("under_executed", "out_of_order"):
        return f"You did not write {var} in its place. Write every step in order, starting with {how}."
    if kind == "extra_steps":
        return f"Write only the listed steps, in order; {deviation.get('step')} is not the next one. Start with {how}."
    if kind == "code_instead_of_steps":
        return f"Do not write code or program output. Write only the step lines, starting with {how}."
    if kind == "truncated":
        return f"Your reply was cut off. Write only the step lines, nothing else, starting with {how}."
    if kind in ("type_error", "check_failed"):
        return f"Your value for {var} is not acceptable: {deviation.get('detail', '')}. Write {var} again."
    return f"Recompute {how}, then continue."


def _kind_note(procedure: Procedure, index: int, deviation: Mapping[str, Any], got: str) -> str:
    """The note for a tool, extract or text step: what was refused and why (the detail names no
    expected value: an argument's expression and the known values it reads are in the prompt)."""
    step = procedure.steps[index]
    detail = str(deviation.get("detail", "")).split(" [", 1)[0]
    yours = f"Your reply `{got}` was not accepted" if got else "Your reply was not accepted"
    if step.kind == "tool":
        return (f"{yours}: {detail}. It was not executed. Call {step.tool} exactly once, with each argument's "
                "value written out as the step's expression gives it from the known values.")
    if step.kind == "extract":
        return f"{yours}: {detail}. Copy the value for {step.var} exactly as it is written in {step.source}."
    return f"{yours}: {detail}. Write {step.var} again, following every rule on its line."
