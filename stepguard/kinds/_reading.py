"""What every asked-alone kind shares: the verdict of one step's check, and reading a step's line.

A kind reads the model's reply, never evaluates it, and returns a :class:`KindVerdict`: the value
to commit, the call to execute, every argument's verdict, and the first deviation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from stepguard.errors import EvaluationError
from stepguard.evaluator import Number, format_number, parse_number
from stepguard.procedure import Procedure
from stepguard.tools import ToolCall
from stepguard.verify import Deviation

__all__ = ["ArgVerdict", "KindVerdict", "check_predicate", "line_of", "lines_of", "same_value", "show_value", "step_line"]

MAX_VALUE = 20_000
"""A reply line longer than this many characters is not read as a step's line."""


@dataclass(frozen=True)
class ArgVerdict:
    """The check of one tool argument: ``ok``, and why not (or what it was checked against)."""

    name: str
    ok: bool
    detail: str
    value: str | None = None


@dataclass
class KindVerdict:
    """The outcome of checking one tool, extract or text step.

    Attributes:
        value: the checked value to commit (extract, text), else ``None``.
        call: the accepted tool call, arguments as the evaluator computes them (tool), else ``None``.
        args: every argument's verdict, in the step's order (tool).
        deviation: the first deviation, or ``None``.
        model_value: what the model wrote, when it wrote a value.
    """

    value: Any = None
    call: ToolCall | None = None
    args: list[ArgVerdict] = field(default_factory=list)
    deviation: Deviation | None = None
    model_value: str | None = None


def show_value(v: Any) -> str:
    """A value as a deviation's detail shows it: ``true``, a string quoted and cut to 80 characters, a number exact."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return repr(v[:80])
    return format_number(v)


def same_value(want: Number | str | bool, got: Number | str | bool) -> bool:
    """Exact equality; a numeric string the model wrote for a number counts as that number."""
    if isinstance(want, bool) or isinstance(got, bool):
        return isinstance(want, bool) and isinstance(got, bool) and want == got
    if isinstance(want, str):
        return isinstance(got, str) and got == want
    if isinstance(got, str):
        try:
            got = parse_number(got.strip())
        except EvaluationError:
            return False
    return got == want


def step_line(reply: str, var: str) -> tuple[KindVerdict, str | None]:
    """A verdict for step ``var`` and the text after ``var =`` in ``reply``; ``None`` (and an
    ``under_executed`` deviation in the verdict) when the reply has no such line."""
    out = KindVerdict()
    raw = line_of(reply, var)
    if raw is None:
        out.deviation = Deviation(kind="under_executed", step=var, detail=f"step {var} is missing", got=reply.strip()[:120] or None)
        return out, None
    out.model_value = raw[:200]
    return out, raw


def line_of(reply: str, var: str) -> str | None:
    """The right-hand side of the reply's first ``var = ...`` line (markdown marks around it stripped)."""
    return next(lines_of(reply, var), None)


def lines_of(reply: str, var: str) -> Iterator[str]:
    """The right-hand side of each ``var = ...`` line of the reply, in order (as :func:`line_of` reads the first)."""
    pat = re.compile(rf"^[ \t>*_`-]*{re.escape(var)}[ \t*_`]*[=:][ \t]*(.*?)[ \t]*$")
    for line in reply.splitlines():
        if len(line) > MAX_VALUE:
            continue
        m = pat.match(line)
        if m:
            yield m.group(1)


def check_predicate(
    procedure: Procedure, index: int, env: Mapping[str, Any], value: Any, out: KindVerdict, got: str, typed: Any = None
) -> KindVerdict:
    """Check ``value`` by step ``index``'s predicate (``check``) and set it as ``out``'s value, or set a
    ``check_failed`` deviation. ``typed``: the value as the evaluator reads it, where that differs
    from the committed form (a list step's items); default ``value``."""
    step = procedure.steps[index]
    check = procedure.compiled_checks[index]
    if check is not None:
        try:
            ok = check.evaluate({**env, "value": value if typed is None else typed}) is True
            why = f"check {step.check!r} is false"
        except EvaluationError as exc:
            ok, why = False, str(exc)
        if not ok:
            out.deviation = Deviation(kind="check_failed", step=step.var, detail=f"{step.var} = {show_value(value)}: {why}", got=got)
            return out
    out.value = value
    return out


