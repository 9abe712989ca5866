"""The ``long_multiply`` rung: a product by long multiplication, every digit the model's, read by position.

``6777.95 * 0.05`` is ``677795 x 5`` with the point four places in: one row per non-zero digit of the
multiplier (the factor with fewer non-zero digits), each digit of the other factor times it as a
single-digit product (``d1 = 5 * 5``), the carry added as its own sub-step (``d3 = 45 + 2``); a row's
digits are the last digits of the model's values, its carry their leading digits. Each row is
placed by position (shifted by its digit's place: reading, not arithmetic) and added to the running
total two at a time by column addition (:func:`~stepguard.guard.rungs.arith._digits.column_sum`). The
guard reads the product from the last addition's columns and places the point; a negative factor
adds the sign as a single-digit product of the factors' signs (``(-1) * 1``). Every sub-step is checked.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from stepguard.evaluator import Number
from stepguard.guard.rungs import register
from stepguard.guard.rungs.arith._arith import decimal_places
from stepguard.guard.rungs.arith._digits import DigitRung, Place, Sheet, binary_operands, column_sum, digits_of, multiply_row
from stepguard.procedure import Procedure

__all__ = ["LongMultiply", "long_multiplication"]


def long_multiplication(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Sheet | None:
    """The sub-steps of step ``index`` (one ``*`` of two finite decimals) by long multiplication, and their reading.

    Returns:
        The sheet, or ``None`` when the step is not one product of two finite decimals, or a factor is 0.
    """
    found = binary_operands(procedure, index, env, ast.Mult)
    if found is None or 0 in found[1:]:
        return None
    _, a, b = found
    pa, pb = decimal_places(a) or 0, decimal_places(b) or 0
    wa, wb = int(abs(a) * 10**pa), int(abs(b) * 10**pb)
    nonzero = {w: sum(d != 0 for d in digits_of(w)) for w in (wa, wb)}
    multiplier, multiplicand = sorted((wa, wb), key=lambda w: (nonzero[w], w))
    sheet = Sheet()
    total_places: list[Place] = []
    total = 0
    for shift, d in enumerate(digits_of(multiplier)):
        if d == 0:  # a zero digit of the multiplier writes no row
            continue
        row, value = multiply_row(sheet, multiplicand, d)
        if total_places:
            total_places, total = column_sum(sheet, total, value * 10**shift)
        else:
            total_places, total = row + [Place("", "zero")] * shift, value * 10**shift
    if (a < 0) != (b < 0):
        sheet.sign_of_product(a, b)
    sheet.reading.places, sheet.reading.point = total_places, pa + pb
    return sheet


@register
class LongMultiply(DigitRung):
    """``long_multiply``: a product by rows of single-digit products, read by position (:func:`long_multiplication`)."""

    name = "long_multiply"
    applies_to = "a product of two non-zero finite decimals"
    sheet = staticmethod(long_multiplication)
