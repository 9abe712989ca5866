"""Arithmetic the derived rungs share: a step's integer operands, place values, sub-procedures."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from fractions import Fraction

from stepguard.errors import StepguardError
from stepguard.evaluator import Number, format_number
from stepguard.guard.rungs import form_of, leaf_value
from stepguard.procedure import Procedure

__all__ = [
    "decimal_places", "derived", "leaf_value", "leaf_values", "magnitudes", "operands", "form_of", "places", "point_steps",
    "split_power_of_ten",
    "sub_procedure", "text",
]

_NAME = 100
"""Characters of the parent procedure's name kept in a derived procedure's name (names are capped at 200)."""


def places(n: int) -> list[int]:
    """Place values of ``n >= 0``: ``347 -> [300, 40, 7]`` (non-zero parts, largest first); ``0 -> [0]``."""
    parts = [int(d) * 10**i for i, d in enumerate(reversed(str(n))) if d != "0"]
    return list(reversed(parts)) or [0]


def _chain(start: int, op: str, parts: list[int]) -> list[str]:
    exprs = [f"{start} {op} {parts[0]}"]
    exprs += [f"t{i} {op} {p}" for i, p in enumerate(parts[1:], start=1)]
    return exprs


_SYMBOLS: dict[type, str] = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}


def operands(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> tuple[int, str, int] | None:
    """``(a, op, b)`` of step ``index`` over committed integer values, ``op`` one of ``+ - *``; ``None`` for any other step."""
    found = leaf_values(procedure, index, env)
    if found is None:
        return None
    node, values = found
    symbol = _SYMBOLS.get(type(getattr(node, "op", None)))
    if not isinstance(node, ast.BinOp) or symbol is None or any(type(v) is not int for v in values):
        return None
    if any(isinstance(side, ast.UnaryOp) for side in (node.left, node.right)):
        return None  # a negative literal operand: as before, not an integer operation the rungs split
    return int(values[0]), symbol, int(values[1])  # ints already (checked above); int() tells mypy


def magnitudes(a: int, b: int) -> tuple[int, int, bool]:
    """The sum ``a + b`` as ``(|larger|, |smaller|, same_sign)``: add the magnitudes when
    ``same_sign``, else subtract the smaller from the larger; the result has the larger's sign."""
    big, small = (a, b) if abs(a) >= abs(b) else (b, a)
    return abs(big), abs(small), (big >= 0) == (small >= 0) or small == 0


def sub_procedure(procedure: Procedure, index: int, exprs: list[str], *, negative: bool, rung: str) -> Procedure | None:
    """Sub-steps ``t1 .. tn`` over ``exprs`` (which name earlier sub-steps ``t<i>``), the last one
    named as the step's own variable, or followed by ``var = -tn`` when ``negative`` (see :func:`derived`).

    A copy step ``S1 = t4`` is not written: the embedded model answered it ``S1 = t4``, without a
    value, in 2 of 8 bridge runs (``benchmarks/study_rungs.py``).
    """
    steps: list[dict[str, object]] = [{"var": f"t{i}", "expr": e} for i, e in enumerate(exprs, 1)]
    if negative:
        steps.append({"var": f"t{len(steps) + 1}", "expr": f"-t{len(steps)}"})
    return derived(procedure, index, steps, rung)


def leaf_values(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> tuple[ast.AST, list[Number]] | None:
    """``(node, operand values)`` of a step that is one operation over names and constants
    (``a * b``, ``min(a, 50000)``, ``a >= 100``), numbers only; ``None`` for any other step."""
    compiled = procedure.compiled[index]
    if compiled is None:
        return None
    node = compiled.tree.body
    if isinstance(node, ast.BinOp):
        sides: list[ast.AST] = [node.left, node.right]
    elif isinstance(node, ast.Call):
        sides = list(node.args)
    elif isinstance(node, ast.Compare) and len(node.ops) == 1:
        sides = [node.left, node.comparators[0]]
    else:
        return None
    values: list[Number] = []
    for side in sides:
        v = leaf_value(side, env)
        if v is None:
            return None
        values.append(v)
    return node, values


def point_steps(first: int, shift: int) -> list[dict[str, object]]:
    """Sub-steps moving the point of ``t{first - 1}`` by ``shift`` places, one place a sub-step:
    ``t2 = t1 / 10``, ``t3 = t2 / 10`` (``shift > 0``), or ``* 10`` each (``shift < 0``).

    The embedded model placed the point of ``4968285 / 1000`` at 49.68285; asked one place at a
    time it got 30 of 30 such sub-steps right, against 3 of 8 quotients by ``10 ** k`` and 3 of 8
    products by ``0.001`` (``benchmarks/probe_single_ops.py --point``, docs/lab/production-suite-history.md).
    """
    op = "/" if shift > 0 else "*"
    return [{"var": f"t{first + i}", "expr": f"t{first + i - 1} {op} 10"} for i in range(abs(shift))]


def decimal_places(value: Number) -> int | None:
    """Places after the point of a finite decimal (``72.5`` -> 1, ``15`` -> 0); ``None`` for ``1/3``."""
    d = Fraction(value).denominator
    for places_ in range(0, 30):
        if (10**places_) % d == 0:
            return places_
    return None


def split_power_of_ten(b: Fraction) -> tuple[int, int]:
    """``b`` as ``m * 10**e`` with ``m`` a whole number with no trailing zero: ``80000`` -> ``(8, 4)``, ``0.25`` -> ``(25, -2)``."""
    places_ = decimal_places(b) or 0
    m, e = int(abs(b) * 10**places_), -places_
    while m % 10 == 0 and m:
        m, e = m // 10, e + 1
    return m, e


def text(value: Number) -> str:
    """An operand as a sub-step writes it: ``72.5``, ``(-3)``."""
    s = format_number(value)
    return f"({s})" if s.startswith("-") else s


def derived(procedure: Procedure, index: int, steps: list[dict[str, object]], rung: str,
            after: Mapping[str, Sequence[str]] | None = None) -> Procedure | None:
    """A derived procedure from sub-step dicts named ``t1 .. tn`` (expressions name earlier ones).

    The last sub-step takes the step's variable, type, scale and rounding, so the procedure's
    rounding rule is applied once, at the end; the others are renamed ``u1 .. un`` where the step's
    own variable starts with ``t``, so no name collides.

    Args:
        after: ``{sub-step: earlier sub-steps}`` (names as in ``steps``) whose values decided what the
            sub-step is, though it does not read them by name (:meth:`~stepguard.procedure.Procedure.after`):
            a chunk or window never asks it with them.

    Returns:
        The procedure, or ``None`` where our own limits refuse it or a sub-step fails to evaluate.
    """
    step = procedure.steps[index]
    last_var = str(steps[-1]["var"])

    def named(var: str) -> str:
        return step.var if var == last_var else _rename(var) if step.var.startswith("t") else var

    if step.var.startswith("t"):
        steps = [{**d, "var": _rename(str(d["var"])), "expr": _rename(str(d["expr"]))} for d in steps]
    last = {**steps[-1], "var": step.var, "type": step.type}
    if step.scale is not None:
        last.update(scale=step.scale, rounding=step.rounding)
    try:
        sub = Procedure.model_validate({"name": f"{procedure.name[:_NAME]}:{step.var}:{rung}", "steps": [*steps[:-1], last]})
        if after:
            sub = sub.written_from({named(var): [named(n) for n in names] for var, names in after.items()})
        sub.expected_values({}, writable=False)
    except (ValueError, StepguardError):
        return None
    return sub


_NAME_OR_TEXT = re.compile(r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")|\bt(\d+)\b""")
"""A quoted text (group 1: a literal the step writes or compares, kept as it is) or a sub-step name ``t<n>`` (group 2)."""


def _rename(text_: str) -> str:
    """The sub-step names ``t<n>`` in ``text_`` as ``u<n>``; a quoted text (``'t1'``, a value) is left as it is."""
    return _NAME_OR_TEXT.sub(lambda m: m.group(1) or f"u{m.group(2)}", text_)
