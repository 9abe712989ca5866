"""The ``decompose`` and ``commute`` rungs: re-ask one arithmetic step in a form the guard derives.

``commute`` writes the failing step once, over its committed operand values, with the operands
swapped and a subtracted negative folded into a sum: ``S11 = S9 - S10`` with 171 and -168
becomes ``S11 = 168 + 171``. On the embedded Qwen2.5-Coder-1.5B at temperature 0,
``171 - (-168)`` was answered 349 on every other rung and ``204 + 192`` 406 as a chunk line,
and both right as ``168 + 171`` and ``192 + 204`` (docs/fidelity.md).

``decompose`` splits the step into smaller sub-steps.

For a failing step ``S7 = S6 + S2`` with committed operands 204 and 192, the guard writes a
small procedure over the literal operands that adds place values one at a time::

    t1 = 204 + 100
    t2 = t1 + 90
    t3 = t2 + 2
    S7 = t3

Every sub-step is checked by the evaluator like any step. Sums of mixed signs become a
subtraction of magnitudes; a product with a small factor becomes a sum of place-value products.
Steps that are not a single ``+``, ``-`` or ``*`` of two operands are not decomposed.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from stepguard.evaluator import Number
from stepguard.procedure import Procedure

__all__ = ["commute_step", "decompose_step"]

_NAME = 100
"""Characters of the parent procedure's name kept in a derived procedure's name (names are capped at 200)."""


def _places(n: int) -> list[int]:
    """``347 -> [300, 40, 7]`` (non-zero parts, largest first); ``0 -> [0]``."""
    parts = [int(d) * 10**i for i, d in enumerate(reversed(str(n))) if d != "0"]
    return list(reversed(parts)) or [0]


def _chain(start: int, op: str, parts: list[int]) -> list[str]:
    exprs = [f"{start} {op} {parts[0]}"]
    exprs += [f"t{i} {op} {p}" for i, p in enumerate(parts[1:], start=1)]
    return exprs


def _operands(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> tuple[int, str, int] | None:
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
    found = _operands(procedure, index, env)
    if found is None:
        return None
    a, op, b = found
    if op == "-":
        op, b = "+", -b
    exprs: list[str]
    if op == "+":
        big, small = (a, b) if abs(a) >= abs(b) else (b, a)
        same_sign = (big >= 0) == (small >= 0) or small == 0
        mag_op = "+" if same_sign else "-"
        if abs(small) < 10:
            return None
        exprs = _chain(abs(big), mag_op, _places(abs(small)))
        negative = big < 0
    else:
        big, small = (a, b) if abs(a) >= abs(b) else (b, a)
        if abs(big) < 10:
            return None
        parts = _places(abs(big))
        exprs = [f"{p} * {abs(small)}" for p in parts]
        n = len(exprs)
        exprs += [f"t1 + t2"] if n >= 2 else []
        exprs += [f"t{n + i} + t{i + 2}" for i in range(1, n - 1)]
        negative = (a < 0) != (b < 0) and a != 0 and b != 0
    var = procedure.steps[index].var
    prefix = "u" if var.startswith("t") else "t"  # sub-step names never collide with the step's own
    exprs = [e.replace("t", prefix) for e in exprs]
    last = f"{prefix}{len(exprs)}"
    steps = [{"var": f"{prefix}{i}", "expr": e} for i, e in enumerate(exprs, start=1)]
    steps.append({"var": var, "expr": f"-{last}" if negative else last})
    return Procedure.model_validate({"name": f"{procedure.name[:_NAME]}:{var}:decompose", "steps": steps})


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
    found = _operands(procedure, index, env)
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
