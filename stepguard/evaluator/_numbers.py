"""Exact numbers for the safe evaluator: ints stay ints, everything else is a ``Fraction``.

Binary floats never appear: a literal ``0.1`` becomes ``Fraction(1, 10)``, so ``0.1 + 0.2 == 0.3``.
Every arithmetic result passes through :func:`check_size`, which bounds integer and fraction
sizes in bits so that no expression can allocate more than a few kilobytes per value.
"""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction

from stepguard.errors import EvaluationError

Number = int | Fraction | bool
"""A value the evaluator produces: ``int`` (exact), ``Fraction`` (exact), or ``bool`` (checks)."""

DEFAULT_MAX_BITS = 1024
"""Largest integer (or numerator/denominator) size in bits: about 308 decimal digits."""

MAX_DECIMAL_DIGITS = 1000
"""Most digits a ``Decimal`` may have written out (its digits plus its exponent's size) to be taken
as an exact number: ``Decimal("1e10000000")`` would expand to ten million digits."""

_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_NUMBER_TEXT = re.compile(r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]{1,4})?")

_ZERO = "[0\uff10\u0660\u06f0\u0966]"  # zero in ASCII, full-width, Arabic-Indic, Persian, Devanagari
GROUP_SEPARATORS = (",", "{,}", "\\,", "\u2009", "\u202f")
"""Thousands separators a written number may use: comma, LaTeX ``{,}`` and ``\\,``, thin and narrow
no-break space (ISO 80000-1 digit groups). Only between groups of exactly three digits, after a
first group of 1-3 digits that does not start with 0."""

# grouped: a first group of 1-3 digits not starting with zero (0,125 is a decimal comma), then groups of 3
_GROUPED = "|".join(rf"(?!{_ZERO})\d{{1,3}}+(?:{re.escape(sep)}\d{{3}})++(?!\d)" for sep in GROUP_SEPARATORS)
NUMBER_BODY = rf"(?P<int>{_GROUPED}|\d++)(?:\.(?P<frac>\d++))?"
"""Regex source of an unsigned written number (groups ``int`` and ``frac``). Digits are Unicode
decimal digits (``12``, ``１２``, ``١٢``), read by ``int()`` exactly.

A match can stop short of the number the text holds (``12`` of ``12,5``): whoever scans text
with it must look at what follows (see :func:`stepguard.trace.parse_trace`)."""

SIGNS = "-+\u2212"
"""Signs a written number may carry: ASCII minus, plus, and U+2212 MINUS SIGN."""

_WRITTEN = re.compile(rf"(?P<sign>[{SIGNS}]?){NUMBER_BODY}")
_AMBIGUOUS = re.compile(r"\d(?:,|\{,\}|\\,|[\u00a0\u2009\u202f])\d")


def one_script(digits: str) -> bool:
    """True if every decimal digit in ``digits`` comes from one script's run of ten (``12``, ``١٢``).

    ``1٢`` (an ASCII one, an Arabic-Indic two) or ``1２`` is no number anyone writes: it is refused,
    not read as 12. Other characters in ``digits`` (group separators) are ignored.
    """
    if digits.isascii():
        return True
    zeros = {ord(c) - int(c) for c in digits if c.isdecimal()}
    return len(zeros) <= 1


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
        EvaluationError: for floats, strings or other types; a non-finite Decimal, or one with more
            than :data:`MAX_DECIMAL_DIGITS` digits written out.
    """
    if type(value) is bool or type(value) is int:
        return value
    if isinstance(value, Fraction):
        return value.numerator if value.denominator == 1 else value
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise EvaluationError(f"non-finite decimal {value}")
        digits, exponent = value.as_tuple()[1:]
        if len(digits) + abs(int(exponent)) > MAX_DECIMAL_DIGITS:  # 1e10000000 would take seconds to expand
            raise EvaluationError(f"a decimal of {len(digits)} digits and exponent {int(exponent)} has more than "
                                  f"{MAX_DECIMAL_DIGITS} digits written out")
        return normalize(Fraction(value))
    if isinstance(value, int):  # int subclasses other than bool
        return int(value)
    raise EvaluationError(f"value of type {type(value).__name__} is not an exact number")


def parse_number(text: str, max_digits: int = 400) -> Number:
    """Parse decimal text (``"-12"``, ``"3.50"``, ``"1e3"``, ``"1,176.50"``) into an exact number.

    Reads procedure files, ``-i name=value`` inputs and stored values: the notation of
    :func:`read_number` plus exponents (at most 4 digits) and a bare point (``"12."``, ``".5"``).

    Args:
        text: the number alone; surrounding whitespace is ignored.
        max_digits: cap on the digits read, so a 100,000-digit number is refused, not parsed.

    Raises:
        EvaluationError: malformed or ambiguous text (``"12,5"``), or more than ``max_digits`` digits.
    """
    t = text.strip()
    if len(t) <= 18 and _INT_TEXT.fullmatch(t):
        return int(t)  # the common case, fast
    if sum(c.isdigit() for c in t[: 4 * max_digits + 64]) > max_digits:  # before any conversion: int() refuses 4,300
        raise EvaluationError(f"number has more than {max_digits} digits")
    if not _NUMBER_TEXT.fullmatch(t):
        return read_number(t, max_digits)
    value = Fraction(t)
    return normalize(check_size(value, max(DEFAULT_MAX_BITS, 4 * max_digits)))


def read_number(text: str, max_digits: int = 400) -> Number:
    """Read a number a model or a person wrote, exactly, or refuse it; never a prefix of it.

    The accepted notation (docs/hostile-input.md, "How numbers are read"): an optional sign
    (``-``, ``+``, U+2212), decimal digits (ASCII, or any script's, as ``int()`` reads them), optional thousands separators from
    :data:`GROUP_SEPARATORS` between a first group of 1-3 digits and groups of exactly 3
    (``1,176``, ``1{,}176``, ``1\\,176``), and an optional point with at least one digit after it
    (``1,176.50`` -> ``Fraction(2353, 2)``, ``42.0`` -> ``42``). Surrounding whitespace is ignored.
    All digits of one number come from one script (``1٢`` is refused). Everything else is
    refused: a decimal comma (``12,5``, ambiguous with grouping), misplaced
    groups (``1,17``, ``12,3456``), exponents, hex, fractions (``12/5``), percentages.

    Args:
        text: the number alone.
        max_digits: cap on the digits read, so a 100,000-digit number is refused, not parsed.

    Returns:
        An ``int``, or a ``Fraction`` when the point has non-zero digits after it.

    Raises:
        EvaluationError: the text is not one number in the accepted notation (the message says
            whether it is ambiguous), or it has more than ``max_digits`` digits.
    """
    t = text.strip()
    if len(t) > 4 * max_digits + 16:
        raise EvaluationError(f"number has more than {max_digits} digits")
    m = _WRITTEN.fullmatch(t)
    if m is None:
        if _AMBIGUOUS.search(t):
            raise EvaluationError(
                f"ambiguous number {t[:40]!r}: a separator is read only between groups of three digits "
                "(1,176.50); write a decimal with a point (12.5)"
            )
        raise EvaluationError(f"not a number: {t[:40]!r}")
    digits = re.sub(r"\D", "", m.group("int"))
    frac = m.group("frac") or ""
    if not one_script(digits + frac):
        raise EvaluationError(f"not a number: {t[:40]!r} mixes the digits of different scripts")
    if len(digits) + len(frac) > max_digits:
        raise EvaluationError(f"number has more than {max_digits} digits")
    value: Number = int(digits) if not frac.strip("0") else Fraction(int(digits + frac), 10 ** len(frac))
    return -value if m.group("sign") in ("-", "\u2212") else value


def format_number(value: Number) -> str:
    """Render an exact number as a person writes it: ``42``, ``-3.5``, ``1/3`` when not a finite decimal."""
    if type(value) is bool:
        return "true" if value else "false"
    if type(value) is int:
        return str(value)
    frac = Fraction(value)
    if frac.denominator == 1:
        return str(frac.numerator)
    places = decimal_places(frac)
    if places is None:
        return f"{frac.numerator}/{frac.denominator}"
    scaled = frac * 10**places
    sign = "-" if scaled < 0 else ""
    digits = str(abs(scaled.numerator)).rjust(places + 1, "0")
    return f"{sign}{digits[:-places]}.{digits[-places:]}"


def decimal_places(frac: Fraction) -> int | None:
    """The fewest decimal places that write ``frac`` exactly (``Fraction(7, 4)``: 2); ``None`` when
    none do (a denominator with a prime factor other than 2 and 5: ``1/3``)."""
    d, twos, fives = frac.denominator, 0, 0
    while d % 2 == 0:
        d //= 2
        twos += 1
    while d % 5 == 0:
        d //= 5
        fives += 1
    return max(twos, fives) if d == 1 else None
