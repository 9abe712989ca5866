"""The ``decompose`` and ``commute`` rungs: re-ask one arithmetic step in a form the guard derives.

``commute`` writes the failing step once, over its committed operand values, with the operands
swapped and a subtracted negative folded into a sum: ``S11 = S9 - S10`` with 171 and -168
becomes ``S11 = 168 + 171``. On the embedded Qwen2.5-Coder-1.5B at temperature 0,
``171 - (-168)`` was answered 349 on every other rung and ``204 + 192`` 406 as a chunk line,
and both right as ``168 + 171`` and ``192 + 204`` (docs/fidelity.md). The shared helpers here
(:func:`operands`, :func:`places`, :func:`sub_procedure`) also serve the ``bridge`` rung.

``decompose`` splits the step into smaller sub-steps.

For a failing step ``S7 = S6 + S2`` with committed operands 204 and 192, the guard writes a
small procedure over the literal operands that adds place values one at a time::

    t1 = 204 + 100
    t2 = t1 + 90
    S7 = t2 + 2

Every sub-step is checked by the evaluator like any step. Sums of mixed signs become a
subtraction of magnitudes; a product with a small factor becomes a sum of place-value products.
Steps that are not a single ``+``, ``-`` or ``*`` of two operands are not decomposed.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from stepguard.evaluator import Number
from stepguard.procedure import Procedure

__all__ = ["commute_step", "decompose_step", "magnitudes", "operands", "places", "sub_procedure"]

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


def decompose_step(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
    """A sub-procedure computing step ``index`` from its committed operands in small checked steps.

    Args:
        procedure: the procedure.
        index: 0-based index of the failing step.
        env: committed values (its operands must be there).

    Returns:
        A :class:`Procedure` with no inputs whose last step has the failing step's variable, or
        ``None`` when the step is not a single ``+``, ``-`` or ``*`` of two integers (or is
        already a one-digit operation, where splitting helps nothing).
    """
    found = operands(procedure, index, env)
    if found is None:
        return None
    a, op, b = found
    if op == "-":
        op, b = "+", -b
    exprs: list[str]
    if op == "+":
        big, small, same_sign = magnitudes(a, b)
        if small < 10:
            return None
        exprs = _chain(big, "+" if same_sign else "-", places(small))
        negative = (a if abs(a) >= abs(b) else b) < 0
    else:
        big, small = (a, b) if abs(a) >= abs(b) else (b, a)
        if abs(big) < 10:
            return None
        parts = places(abs(big))
        exprs = [f"{p} * {abs(small)}" for p in parts]
        n = len(exprs)
        exprs += [f"t1 + t2"] if n >= 2 else []
        exprs += [f"t{n + i} + t{i + 2}" for i in range(1, n - 1)]
        negative = (a < 0) != (b < 0) and a != 0 and b != 0
    return sub_procedure(procedure, index, exprs, negative=negative, rung="decompose")


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


def _term(x: int) -> str:
    return f"({x})" if x < 0 else str(x)


def commute_step(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
    """A one-step procedure computing step ``index`` from its operand values, operands swapped.

    ``a - b`` becomes a sum ``(-b) + a`` written with signs folded (``171 - (-168)`` ->
    ``168 + 171``, ``-517 - 168`` -> ``-168 - 517``); ``a + b`` becomes ``b + a``; ``a * b``
    becomes ``b * a`` (negative factors in parentheses).

    Args:
        procedure: the procedure.
        index: 0-based index of the failing step.
        env: committed values (its operands must be there).

    Returns:
        A :class:`Procedure` with no inputs and one step named like the failing one, or ``None``
        when the step is not a single ``+``, ``-`` or ``*`` of two integers.
    """
    found = operands(procedure, index, env)
    if found is None:
        return None
    a, op, b = found
    if op == "*":
        expr = f"{_term(b)} * {_term(a)}"
    else:
        first, second = (-b if op == "-" else b), a
        expr = f"{first} - {-second}" if second < 0 else f"{first} + {second}"
    var = procedure.steps[index].var
    return Procedure.model_validate({"name": f"{procedure.name[:_NAME]}:{var}:commute", "steps": [{"var": var, "expr": expr}]})
