"""Exact numbers for the safe evaluator: ints stay ints, everything else is a ``Fraction``.

Binary floats never appear: a literal ``0.1`` becomes ``Fraction(1, 10)``, so ``0.1 + 0.2 == 0.3``.
Every arithmetic result passes through :func:`check_size`, which bounds integer and fraction
sizes in bits so that no expression can allocate more than a few kilobytes per value.
"""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction
from typing import Union

from stepguard.errors import EvaluationError

Number = Union[int, Fraction, bool]
"""A value the evaluator produces: ``int`` (exact), ``Fraction`` (exact), or ``bool`` (checks)."""

DEFAULT_MAX_BITS = 1024
"""Largest integer (or numerator/denominator) size in bits: about 308 decimal digits."""

_INT_TEXT = re.compile(r"[+-]?\d+")
_NUMBER_TEXT = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d{1,4})?")


def check_size(value: object, max_bits: int = DEFAULT_MAX_BITS) -> object:
    """Return ``value`` unchanged if its size is within ``max_bits``.

    Raises:
        EvaluationError: an int, or a Fraction's numerator or denominator, exceeds ``max_bits``.
    """
    if type(value) is int:
        if value.bit_length() > max_bits:
            raise EvaluationError(f"integer result exceeds the {max_bits}-bit bound")
    elif type(value) is Fraction:
        if value.numerator.bit_length() > max_bits or value.denominator.bit_length() > max_bits:
            raise EvaluationError(f"fraction result exceeds the {max_bits}-bit bound")
    return value


def normalize(value: object) -> Number:
    """Turn an int, Fraction, Decimal or bool into the evaluator's exact form.

    Fractions with denominator 1 become ints. Floats are refused: they are never exact.

    Raises:
        EvaluationError: for floats, strings or other types.
    """
    if type(value) is bool or type(value) is int:
        return value  # type: ignore[return-value]
    if isinstance(value, Fraction):
        return value.numerator if value.denominator == 1 else value
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise EvaluationError(f"non-finite decimal {value}")
        return normalize(Fraction(value))
    if isinstance(value, int):  # int subclasses other than bool
        return int(value)
    raise EvaluationError(f"value of type {type(value).__name__} is not an exact number")


def parse_number(text: str, max_digits: int = 400) -> Number:
    """Parse decimal text (``"-12"``, ``"3.50"``, ``"1e3"``) into an exact number.

    Args:
        text: the number, ASCII digits, optional sign, point and exponent (exponent at most 4 digits).
        max_digits: cap on the digits read, so a 100,000-digit number is refused, not parsed.

    Raises:
        EvaluationError: malformed text or more than ``max_digits`` digits.
    """
    t = text.strip()
    if len(t) <= 18 and _INT_TEXT.fullmatch(t):
        return int(t)  # the common case, fast
    if len(t) > max_digits + 8:
        raise EvaluationError(f"number has more than {max_digits} digits")
    if not _NUMBER_TEXT.fullmatch(t):
        raise EvaluationError(f"not a number: {t[:40]!r}")
    value = Fraction(t)
    return normalize(check_size(value, max(DEFAULT_MAX_BITS, 4 * max_digits)))


def format_number(value: Number) -> str:
    """Render an exact number as a person writes it: ``42``, ``-3.5``, ``1/3`` when not a finite decimal."""
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    frac = Fraction(value)
    if frac.denominator == 1:
        return str(frac.numerator)
    d = frac.denominator
    twos = fives = 0
    while d % 2 == 0:
        d //= 2
        twos += 1
    while d % 5 == 0:
        d //= 5
        fives += 1
    if d != 1:
        return f"{frac.numerator}/{frac.denominator}"
    places = max(twos, fives)
    scaled = frac * 10**places
    sign = "-" if scaled < 0 else ""
    digits = str(abs(scaled.numerator)).rjust(places + 1, "0")
    return f"{sign}{digits[:-places]}.{digits[-places:]}"
