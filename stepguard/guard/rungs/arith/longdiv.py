"""The ``long_divide`` rung: a quotient by long division to the step's scale, every digit the model's.

``120 / 365`` (a daily rate at 4 places) sets the divisor's power of ten aside (a point move) and
divides digit by digit, bringing down one digit at a time (the remainder's digits with the next digit
placed after them: reading, not arithmetic). A quotient digit is chosen as on paper, by comparing the
remainder with the divisor's multiples: the multiples are the model's sums (``2 * 365`` as the column
sum ``365 + 365``, asked as far as a remainder reaches; a one-digit divisor's as single-digit products,
``3 * 7``, all eight asked first), and the model compares
the remainder with each multiple of as many digits in turn by the first place where their digits
differ (``1200`` and ``1095``: ``max(2, 0)``; ``1200`` and ``1460``: ``max(2, 4)``), until a multiple
is the larger; the digit is the number of multiples not larger read from the model's numbers without
a sub-step (fewer digits than the remainder, read from the lengths as a place is, or the same number)
and of those whose digit it named the remainder's over. The multiples a scan compares are asked before
its comparisons, and each comparison is written from the remainder and the multiples, not from another
comparison: a run asking sub-steps together (``GuardConfig.substeps_together``) asks a scan's
comparisons in one call, and every choice in it is checked. A remainder with fewer digits than the divisor is a
0 read from the lengths, not asked. The remainder less the
digit's multiple is a column subtraction (:func:`~stepguard.guard.rungs.arith._digits.column_difference`).
The quotient is read from those digits with the point placed, to one, two or three places beyond the
step's scale, the fewest whose reading rounds as the exact quotient does (checked from the expression,
before asking); the step's rounding is then its own last sub-step over the number read
(``d40 = 0.3287``, half to even to 4 places), as the model writes it. A quotient without a scale is
asked only where it ends. A negative operand adds the sign as a single-digit product of the signs
(``(-1) * 1``).

The embedded model wrote quotient digits asked as ``r // d`` wrong where the divisor has several
digits or the digit is 0 (``59 // 31 = 2``, ``6990 // 31329 = 2``, ``1 // 365 = 0.0027...``), and
named the larger of two whole numbers wrong, of different lengths compared as text
(``max(289, 31) = 31``) and of as many digits too (``max(60, 12) = 12``), on every resample
(docs/lab/production-suite-history.md, "Digit rungs").
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from fractions import Fraction

from stepguard.evaluator import Number
from stepguard.guard.rungs import register
from stepguard.guard.rungs.arith._arith import decimal_places, split_power_of_ten, text
from stepguard.guard.rungs.arith._digits import (
    DigitRung,
    Place,
    Sheet,
    binary_operands,
    column_difference,
    column_sum,
    digits_of,
    larger_at_first_difference,
)
from stepguard.procedure import Procedure, round_to_scale

__all__ = ["LongDivide", "long_division"]

EXTRA_PLACES = 3
"""Most quotient digits beyond the step's scale, before its rounding sub-step (the fewest that round right are asked)."""


def _quotient(digits: list[int], m: int) -> list[int]:
    """The quotient digits of the number with ``digits`` (most significant first) by ``m``, one a digit."""
    out, r = [], 0
    for x in digits:
        r = 10 * r + x
        out.append(r // m)
        r %= m
    return out


def _places(a: Fraction, e: int, m: int, exact: Fraction, step_scale: int | None, ends: int | None,
            rounding: str) -> tuple[list[int], int, Fraction] | None:
    """The dividend's digits with the zeros brought down after them, the places after the quotient's
    point, and the signed number its digits read: for a scale, the fewest places past it whose reading
    rounds as ``exact`` does; ``None`` where none do."""
    k = decimal_places(a) or 0
    dividend = digits_of(int(abs(a) * 10**k))[::-1]
    for extra in ([0] if step_scale is None else range(1, EXTRA_PLACES + 1)):
        need = (ends or 0) if step_scale is None else step_scale + extra
        brought = max(0, need - k - e)
        digits = dividend + [0] * brought
        point = brought + k + e
        read = Fraction(int("".join(map(str, _quotient(digits, m)))), 10**point)
        read = -read if exact < 0 else read
        if step_scale is None or round_to_scale(read, step_scale, rounding) == round_to_scale(exact, step_scale, rounding):
            return digits, point, read
    return None


def _multiple(sheet: Sheet, multiples: dict[int, int], m: int, j: int) -> int:
    """``j * m``, asked where it is not yet on the sheet, as the column sum of the multiple before and
    ``m`` (each multiple before ``j`` first). A one-digit ``m``'s multiples are all on the sheet from its
    start (:func:`long_division`).

    Each is written from every sub-step before it (:meth:`Sheet.ask`'s ``of``): which multiples a scan
    needs follows from the remainder, the value of the sub-steps before (``2 * 365`` is asked because
    the remainder reached 365), so no call asks a multiple with them."""
    while j not in multiples:
        n = max(multiples) + 1
        column_sum(sheet, multiples[n - 1], m)
        multiples[n] = n * m
    return multiples[j]


def _one_digit_multiples(sheet: Sheet, m: int) -> dict[int, int]:
    """``{j: j * m}`` for ``j`` from 1 to 9, a one-digit ``m``'s multiples, each asked (from 2) as a single-digit
    product written from the divisor alone: all of them, whatever the remainders reach, so which are asked
    shows nothing of the quotient, and one call may ask them all (``GuardConfig.substeps_together``)."""
    for j in range(2, 10):
        sheet.ask(f"{j} * {m}", of=0)
    return {j: j * m for j in range(1, 10)}


def _digit(sheet: Sheet, multiples: dict[int, int], m: int, r: int) -> tuple[Place, int]:
    """One quotient digit of the remainder ``r`` by ``m``: its place and value (see the module's text).

    The multiples the scan compares are asked first; each comparison is then written from them and the
    remainder, not from another comparison (:meth:`Sheet.ask`'s ``of``), so a chunk may ask the scan's
    comparisons together (``GuardConfig.substeps_together``): none shows the value another writes.
    """
    scan: list[str] = []
    q = read = 0
    if len(str(m)) <= len(str(r)):  # else fewer digits than the divisor: a 0, read
        last = min(9, r // m + 1)  # the scan stops at the first multiple larger than r, or at 9
        for j in range(1, last + 1):
            _multiple(sheet, multiples, m, j)
        start = len(sheet.steps)
        for j in range(1, last + 1):  # the larger of the remainder and each multiple, until a multiple is
            jm = multiples[j]
            choice = larger_at_first_difference(sheet, r, jm, of=start)
            if choice is not None:
                scan.append(choice)
            elif len(str(jm)) <= len(str(r)):  # read: fewer digits, or the same number, is not larger
                read += 1
            if jm > r:
                break
            q = j
    return Place(str(r), "count", tuple(scan), read), q


def long_division(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Sheet | None:
    """The sub-steps of step ``index`` (one ``/`` of two finite decimals) by long division, and their reading.

    Returns:
        The sheet, or ``None`` when the step is not one quotient of two finite decimals by a divisor
        other than 0 and a power of ten (the point alone: ``divide``'s), has no scale while its
        quotient does not end, or would round otherwise than the exact quotient at each number of
        places past its scale up to :data:`EXTRA_PLACES`.
    """
    found = binary_operands(procedure, index, env, ast.Div)
    if found is None or found[2] == 0:
        return None
    _, a, b = found
    step = procedure.steps[index]
    m, e = split_power_of_ten(b)
    exact = a / b
    ends = decimal_places(exact)
    if m == 1 or (step.scale is None and ends is None):
        return None
    found_places = _places(a, e, m, exact, step.scale, ends, step.rounding)
    if found_places is None:
        return None  # the digits read would round otherwise than the exact quotient
    digits, point, read = found_places
    sheet = Sheet()
    quotient: list[Place] = []
    multiples = _one_digit_multiples(sheet, m) if m < 10 else {1: m}
    r = 0
    for x in digits:
        r = 10 * r + x  # the remainder's digits, the next digit placed after them
        place, q = _digit(sheet, multiples, m, r)
        quotient.append(place)
        if q:
            _, r = column_difference(sheet, r, q * m)
    sheet.reading.places, sheet.reading.point = quotient, point
    if a < 0 or b < 0:
        sheet.sign_of_product(a, b)
    if step.scale is not None:  # the rounding asked over the number the model's digits read
        sheet.reading.then = sheet.ask(text(read), type=step.type, scale=step.scale, rounding=step.rounding)
    return sheet

@register
class LongDivide(DigitRung):
    """``long_divide``: a quotient digit by digit, each a checked choice, read by position (:func:`long_division`)."""

    name = "long_divide"
    applies_to = "a quotient of two finite decimals (/) by a divisor other than a power of ten, to the step's scale"
    sheet = staticmethod(long_division)
