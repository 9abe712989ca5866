"""The ``decompose`` rung: re-ask one arithmetic step as place-value sub-steps the guard derives.

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

from collections.abc import Mapping

from stepguard.evaluator import Number
from stepguard.guard.rungs import Rung, register
from stepguard.guard.rungs.arith._arith import _chain, magnitudes, operands, places, sub_procedure
from stepguard.procedure import Procedure

__all__ = ["Decompose", "decompose_step"]


@register
class Decompose(Rung):
    """``decompose``: the failing step as place-value sub-steps, each checked (:func:`decompose_step`)."""

    name = "decompose"
    applies_to = "an integer sum, difference or product of two operands"
    derives = True

    def derive(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
        """See :func:`decompose_step`."""
        return decompose_step(procedure, index, env)


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
        exprs += ["t1 + t2"] if n >= 2 else []
        exprs += [f"t{n + i} + t{i + 2}" for i in range(1, n - 1)]
        negative = (a < 0) != (b < 0) and a != 0 and b != 0
    return sub_procedure(procedure, index, exprs, negative=negative, rung="decompose")
