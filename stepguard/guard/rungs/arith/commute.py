"""The ``commute`` rung: re-ask one arithmetic step over its operand values, operands swapped.

``commute`` writes the failing step once, over its committed operand values, with the operands
swapped and a subtracted negative folded into a sum: ``S11 = S9 - S10`` with 171 and -168
becomes ``S11 = 168 + 171``. On the embedded Qwen2.5-Coder-1.5B at temperature 0,
``171 - (-168)`` was answered 349 on every other rung and ``204 + 192`` 406 as a chunk line,
and both right as ``168 + 171`` and ``192 + 204`` (docs/lab/fidelity-history.md).
"""

from __future__ import annotations

from collections.abc import Mapping

from stepguard.evaluator import Number
from stepguard.guard.rungs import Rung, register
from stepguard.guard.rungs.arith._arith import _NAME, operands
from stepguard.procedure import Procedure

__all__ = ["Commute", "commute_step"]


@register
class Commute(Rung):
    """``commute``: the failing step once over its operand values, swapped, signs folded; one resampled retry."""

    name = "commute"
    applies_to = "an integer sum or difference of two operands"
    derives = True
    nested_ladder = ("resample",)
    nested_tries = 1

    def derive(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
        """See :func:`commute_step`."""
        return commute_step(procedure, index, env)


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
