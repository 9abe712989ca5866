"""Arithmetic the derived rungs share: a step's integer operands, place values, sub-procedures."""

from __future__ import annotations

import ast
from collections.abc import Mapping

from stepguard.evaluator import Number
from stepguard.procedure import Procedure

__all__ = ["magnitudes", "operands", "places", "sub_procedure"]

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


def operands(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> tuple[int, str, int] | None:
    """``(a, op, b)`` of step ``index`` over committed integer values, ``op`` one of ``+ - *``; ``None`` for any other step."""
    compiled = procedure.compiled[index]
    if compiled is None:
        return None
    node = compiled.tree.body
    if not isinstance(node, ast.BinOp) or type(node.op) not in (ast.Add, ast.Sub, ast.Mult):
        return None
    values = []
    for side in (node.left, node.right):
        if isinstance(side, ast.Name):
            v = env.get(side.id)
        elif isinstance(side, ast.Constant):
            v = side.value
        else:
            return None
        if type(v) is not int:
            return None
        values.append(v)
    op = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}[type(node.op)]
    return values[0], op, values[1]


def magnitudes(a: int, b: int) -> tuple[int, int, bool]:
    """The sum ``a + b`` as ``(|larger|, |smaller|, same_sign)``: add the magnitudes when
    ``same_sign``, else subtract the smaller from the larger; the result has the larger's sign."""
    big, small = (a, b) if abs(a) >= abs(b) else (b, a)
    return abs(big), abs(small), (big >= 0) == (small >= 0) or small == 0


def sub_procedure(procedure: Procedure, index: int, exprs: list[str], *, negative: bool, rung: str) -> Procedure:
    """Sub-steps ``t1 .. tn`` over ``exprs`` (which name earlier sub-steps ``t<i>``), the last one
    named as the step's own variable, or followed by ``var = -tn`` when ``negative``; sub-steps are
    named ``u<i>`` when the step's variable starts with ``t``.

    A copy step ``S1 = t4`` is not written: the embedded model answered it ``S1 = t4``, without a
    value, in 2 of 8 bridge runs (``benchmarks/study_rungs.py``).

    Raises:
        pydantic.ValidationError: the derived procedure breaks a procedure limit.
    """
    var = procedure.steps[index].var
    prefix = "u" if var.startswith("t") else "t"  # sub-step names never collide with the step's own
    exprs = [e.replace("t", prefix) for e in exprs]
    names = [f"{prefix}{i}" for i in range(1, len(exprs) + 1)]
    if negative:
        exprs, names = exprs + [f"-{names[-1]}"], names + [var]
    else:
        names[-1] = var
    steps = [{"var": n, "expr": e} for n, e in zip(names, exprs)]
    return Procedure.model_validate({"name": f"{procedure.name[:_NAME]}:{var}:{rung}", "steps": steps})
