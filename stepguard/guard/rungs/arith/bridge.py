"""The ``bridge`` rung: re-ask a sum or difference that carries or borrows through a round number.

"Bridging through ten" (and a hundred, a thousand) is the standard mental-arithmetic strategy for
a carry or borrow: go to the round number first, then the rest. For a failing step
``S43 = S42 - S36`` with committed operands 20 and 715, the guard writes::

    t1 = 715 - 15      (to the round number 700)
    t2 = t1 - 5
    S43 = -t2

and for ``168 + 171``::

    t1 = 171 + 29      (up to 200)
    t2 = t1 + 100
    t3 = t2 + 30
    S = t3 + 9

A step that crosses no round number has the round part of its larger operand set aside
(``280 + 14`` as ``80 + 14``, then ``200 + t1``). Every sub-step is checked by the evaluator like
any step. Four steps the embedded
Qwen2.5-Coder-1.5B got wrong on every other rung at temperature 0 were borrows or near-borrows
(``-219 - (-21)``, ``6 - 504``, ``-280 - 14``, ``20 - 715``; docs/lab/fidelity-history.md).
"""

from __future__ import annotations

from collections.abc import Mapping

from stepguard.evaluator import Number
from stepguard.guard.rungs import Rung, register
from stepguard.guard.rungs.arith._arith import magnitudes, operands, places, sub_procedure
from stepguard.procedure import Procedure

__all__ = ["Bridge", "bridge_step"]


@register
class Bridge(Rung):
    """``bridge``: a carry or borrow asked through the round number, each sub-step checked (:func:`bridge_step`)."""

    name = "bridge"
    applies_to = "an integer sum or difference of two operands that carries or borrows"
    derives = True

    def derive(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
        """See :func:`bridge_step`."""
        return bridge_step(procedure, index, env)


def _down(big: int, small: int) -> list[str]:
    """``big - small`` (``big >= small > 0``) as steps: down to the largest round number first."""
    for j in range(len(str(big)), 0, -1):
        rem = big % 10**j
        if 0 < rem <= small:
            rest = small - rem
            return [f"{big} - {rem}"] + [f"- {p}" for p in places(rest) if p] if rest else [f"{big} - {rem}"]
    return []


def _up(big: int, small: int) -> list[str]:
    """``big + small`` (both > 0) as steps: up to the largest round number first."""
    for j in range(len(str(big)), 0, -1):
        rem = big % 10**j
        need = 10**j - rem
        if rem and need <= small:
            rest = small - need
            return [f"{big} + {need}"] + [f"+ {p}" for p in places(rest) if p] if rest else [f"{big} + {need}"]
    return []


def _aside(big: int, small: int, sign: str) -> list[str]:
    """``big +/- small`` that crosses no round number: the round part of ``big`` set aside.

    ``331 + 8`` -> ``31 + 8``, then ``300 + t1``; ``492 + 2`` -> ``92 + 2``, then ``400 + t1``.
    """
    k = min(len(str(small)) + 1, len(str(big)) - 1)
    low = big % 10**k if k > 0 else 0
    if k <= 0 or big == low or (sign == "-" and low < small):
        return []
    return [f"{low} {sign} {small}", f"{big - low} + t1"]


def bridge_step(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
    """A sub-procedure computing step ``index`` through a round number, each sub-step checked.

    Args:
        procedure: the procedure.
        index: 0-based index of the failing step.
        env: committed values (its operands must be there).

    Returns:
        A :class:`Procedure` with no inputs whose last step has the failing step's variable, or
        ``None`` when the step is not a single ``+`` or ``-`` of two integers, or is one sub-step
        already (``700 - 5``). A step that crosses no round number has the round part of its
        larger operand set aside instead (``331 + 8`` as ``31 + 8``, then ``300 + t1``).
    """
    found = operands(procedure, index, env)
    if found is None or found[1] == "*":
        return None
    a, op, b = found
    if op == "-":
        b = -b
    big, small, same_sign = magnitudes(a, b)
    parts = (_up if same_sign else _down)(big, small)
    if parts:
        exprs = [parts[0]] + [f"t{i} {p}" for i, p in enumerate(parts[1:], start=1)]
    else:
        exprs = _aside(big, small, "+" if same_sign else "-")
    negative = a + b < 0  # the magnitude steps above, then the sign
    if not exprs or len(exprs) + negative < 2:
        return None
    return sub_procedure(procedure, index, exprs, negative=negative, rung="bridge")

