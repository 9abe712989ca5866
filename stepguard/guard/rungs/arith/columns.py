"""The ``columns`` rung: a sum or difference written in columns, every digit the model's, read by position.

``S26 = S25 + S24`` with 468 and 228 becomes one sub-step a column, least significant first, each
column's two digits and the carry from the column before written in::

    d1 = 8 + 8          (16: digit 6, carry 1)
    d2 = 6 + 2 + 1      (9)
    d3 = 4 + 2          (6)

and the guard reads 696 from the model's verified values: the last digit of each column, the
most significant column whole (:mod:`~stepguard.guard.rungs.arith._digits`). A difference of magnitudes
(mixed signs) first asks which magnitude is larger, by the first place their digits differ
(:func:`~stepguard.guard.rungs.arith._digits.larger_at_first_difference`: ``472`` and ``226`` as
``d1 = max(4, 2)``; magnitudes of different lengths are read from them, not asked), then columns with a
borrowed ten (``14 - 8``, then the borrow as its own sub-step, ``6 - 1``); an operand below zero adds the sign as its own choice sub-step,
``max(L, 0)`` of the operand of larger magnitude (``-280 - 14``: ``max(-280, 0)``), read as negative
where the model's value is 0. Decimals are aligned at the point and the point placed when reading
(``75.4 + 2.5`` as the columns of 754 and 25, read at one place). Every sub-step is checked.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from stepguard.evaluator import Number
from stepguard.guard.rungs import register
from stepguard.guard.rungs.arith._arith import decimal_places
from stepguard.guard.rungs.arith._digits import (
    DigitRung,
    Sheet,
    binary_operands,
    column_difference,
    column_sum,
    larger_at_first_difference,
    scaled,
)
from stepguard.procedure import Procedure

__all__ = ["Columns", "column_steps"]


def column_steps(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Sheet | None:
    """The sub-steps of step ``index`` (one ``+`` or ``-`` of two finite decimals) by columns, and their reading.

    Returns:
        The sheet, or ``None`` when the step is not one sum or difference of two finite decimals.
    """
    found = binary_operands(procedure, index, env, ast.Add, ast.Sub)
    if found is None:
        return None
    op, a, b = found
    if isinstance(op, ast.Sub):
        b = -b
    places_ = max(decimal_places(a) or 0, decimal_places(b) or 0)
    big, small = sorted((a, b), key=abs, reverse=True)
    wa, wb = scaled([big, small], places_)
    sheet = Sheet()
    if big != 0 and small != 0 and (big < 0) != (small < 0):  # a difference of magnitudes: the larger on top, chosen
        sa, sb = scaled([a, b], places_)
        larger_at_first_difference(sheet, sa, sb, of=0)
        # the columns put the larger on top and the sign is taken over it: both show the comparison's answer,
        # so they are written from it and asked after it (no call holds the two)
        chosen = len(sheet.steps)
        digits, _ = column_difference(sheet, wa, wb, of=chosen)
    else:
        chosen = 0
        digits, _ = column_sum(sheet, wa, wb, of=0)
    if a < 0 or b < 0:
        sheet.sign_of_sum(big, of=chosen)
    sheet.reading.places, sheet.reading.point = digits, places_
    return sheet


@register
class Columns(DigitRung):
    """``columns``: a sum or difference by written columns, read by position (:func:`column_steps`)."""

    name = "columns"
    applies_to = "a sum or difference of two finite decimals"
    sheet = staticmethod(column_steps)
