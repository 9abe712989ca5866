"""The ``scale`` rung: decimals asked over whole numbers, the point placed as its own sub-step.

``43 x 18.75`` becomes ``43 * 1875`` (= 80625), then ``t1 / 10`` and ``t2 / 10``: the
multiplication a model does with whole numbers, and the point moved by the count of decimal
places, one place a sub-step (:func:`~stepguard.guard.rungs.arith._arith.point_steps`). A sum or difference is
scaled to the operands' common places: ``57 + 2.7`` becomes ``570 + 27``, then ``t1 / 10`` (the
embedded model wrote ``57 + 2.7 = 60.7`` inside a partial-products chain; docs/lab/production-suite-history.md).
Every sub-step is checked.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from fractions import Fraction

from stepguard.evaluator import Number
from stepguard.guard.rungs import Rung, register
from stepguard.guard.rungs.arith._arith import decimal_places, derived, leaf_values, point_steps, text
from stepguard.guard.rungs.arith._ladders import SUB_STEP_LADDER
from stepguard.procedure import Procedure

__all__ = ["Scale", "scaled_product"]


def scaled_product(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
    """A sub-procedure: the product, sum or difference over the operands scaled to whole numbers,
    then divided back.

    Returns:
        The derived procedure, or ``None`` when the step is not one product, sum or difference of
        two finite decimals at least one of which has decimal places.
    """
    found = leaf_values(procedure, index, env)
    if found is None or not isinstance(found[0], ast.BinOp) or not isinstance(found[0].op, (ast.Mult, ast.Add, ast.Sub)):
        return None
    a, b = found[1]
    pa, pb = decimal_places(a), decimal_places(b)
    if pa is None or pb is None or pa + pb == 0:
        return None
    if isinstance(found[0].op, ast.Mult):
        op, shift = "*", pa + pb
        pa_, pb_ = pa, pb
    else:  # a sum: both operands to the common places
        op, shift = ("+" if isinstance(found[0].op, ast.Add) else "-"), max(pa, pb)
        pa_ = pb_ = shift
    wa, wb = int(Fraction(a) * 10**pa_), int(Fraction(b) * 10**pb_)
    steps: list[dict[str, object]] = [{"var": "t1", "expr": f"{text(wa)} {op} {text(wb)}"}, *point_steps(2, shift)]
    return derived(procedure, index, steps, "scale")


@register
class Scale(Rung):
    """``scale``: a decimal product or sum over whole numbers, then the point placed (:func:`scaled_product`)."""

    name = "scale"
    applies_to = "a sum, difference or product of two finite decimals with decimal places"
    derives = True
    nested_ladder = SUB_STEP_LADDER  # a failing sub-step through the rung for its operation, then resampled
    nested_tries = len(SUB_STEP_LADDER)

    def derive(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
        """See :func:`scaled_product`."""
        return scaled_product(procedure, index, env)
