"""The ``long_divide`` rung: a quotient by long division to the step's scale, every digit the model's.

``12845.5 / 80000`` (attainment at 4 places) sets the divisor's power of ten aside (a point move)
and divides 128455 by 8, bringing down one digit at a time (the remainder's digits with the next
digit placed after them: reading, not arithmetic). Each quotient digit is a checked choice,
``d = 12 // 8``, whose check is ``q * d <= r < (q + 1) * d``; the product ``q * d`` is a single-digit
product (a row of them for a longer divisor) and the remainder ``r - q * d`` a column subtraction
(:func:`~stepguard.guard.rungs._digits.column_difference`). The quotient is read from the model's
quotient digits, at three places beyond the step's scale, the point placed; the step's rounding is
then its own last sub-step over the number read (``d40 = 0.1605687``, half to even to 4 places), as
the model writes it. The rung applies only where rounding the number read gives the exact quotient's
rounding (checked from the expression, before asking), and to a quotient without a scale only where
it ends. A negative operand adds the sign as a single-digit product of the signs (``(-1) * 1``).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from fractions import Fraction

from stepguard.evaluator import Number
from stepguard.guard.rungs._arith import decimal_places, split_power_of_ten, text
from stepguard.guard.rungs._base import register
from stepguard.guard.rungs._digits import DigitRung, Place, Sheet, binary_operands, column_difference, digits_of, multiply_row
from stepguard.procedure import Procedure, round_to_scale

__all__ = ["LongDivide", "long_division"]

EXTRA_PLACES = 3
"""Quotient digits beyond the step's scale, before its rounding sub-step."""


def long_division(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Sheet | None:
    """The sub-steps of step ``index`` (one ``/`` of two finite decimals) by long division, and their reading.

    Returns:
        The sheet, or ``None`` when the step is not one quotient of two finite decimals by a divisor
        other than 0 and a power of ten (the point alone: ``divide``'s), has no scale while its
        quotient does not end, or would round otherwise than the exact quotient.
    """
    found = binary_operands(procedure, index, env, ast.Div)
    if found is None or found[2] == 0:
        return None
    _, a, b = found
    step = procedure.steps[index]
    m, e = split_power_of_ten(b)
    exact = a / b
    if m == 1:
        return None
    ends = decimal_places(exact)
    if step.scale is None and ends is None:
        return None
    k = decimal_places(a) or 0
    need = (ends or 0) if step.scale is None else step.scale + EXTRA_PLACES
    brought = max(0, need - k - e)  # zeros brought down after the dividend's digits
    sheet = Sheet()
    quotient: list[Place] = []
    written: list[int] = []
    r = 0
    for x in [*digits_of(int(abs(a) * 10**k))[::-1], *[0] * brought]:
        r = 10 * r + x  # the remainder's digits, the next digit placed after them
        q = r // m
        written.append(q)
        quotient.append(Place(sheet.ask(f"{r} // {m}"), "all"))
        if q:
            if m < 10:
                sheet.ask(f"{q} * {m}")
            else:
                multiply_row(sheet, m, q)
            _, r = column_difference(sheet, r, q * m)
    sheet.reading.places, sheet.reading.point = quotient, brought + k + e
    if a < 0 or b < 0:
        sheet.sign_of_product(a, b)
    if step.scale is not None:
        read = Fraction(int("".join(map(str, written))), 10 ** (brought + k + e))
        read = -read if exact < 0 else read
        if round_to_scale(read, step.scale, step.rounding) != round_to_scale(exact, step.scale, step.rounding):
            return None  # the digits read would round otherwise than the exact quotient
        sheet.reading.then = sheet.ask(text(read), type=step.type, scale=step.scale, rounding=step.rounding)
    return sheet


@register
class LongDivide(DigitRung):
    """``long_divide``: a quotient digit by digit, each a checked choice, read by position (:func:`long_division`)."""

    name = "long_divide"
    sheet = staticmethod(long_division)
