"""Rounding to a step's scale is exact for a number of any length the bounds allow (issue 33, item 7).

It was done in a ``Decimal`` context of 400 digits: a decimal of about 450 digits was rounded once
to 400 digits before the rounding asked for (``0.005...01`` became ``0.005``, then ``0.00`` where
``0.01`` is right), and the wrong value was verified; one whose rounded form has more than 400
digits raised ``InvalidOperation``. Neighbours: quantize-like scales, both rules at the boundary
digit, negative values, 450-digit integers, fractions, a suite's expected value past 28 digits.
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal, localcontext
from fractions import Fraction
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepguard import Guard, GuardConfig, Procedure
from stepguard.bench.suites import load_suite
from stepguard.procedure import round_to_scale
from tests._fakes import ReplyModel

RULES = {"ROUND_HALF_EVEN": ROUND_HALF_EVEN, "ROUND_HALF_UP": ROUND_HALF_UP}


def _reference(value: Fraction, scale: int, rounding: str) -> Fraction:
    """The rounding done by :mod:`decimal` at a precision wide enough for every digit (the oracle)."""
    with localcontext() as ctx:
        ctx.prec = 5000
        exact = Decimal(value.numerator) / Decimal(value.denominator)  # a finite decimal: exact at 5000 digits
        return Fraction(exact.quantize(Decimal(1).scaleb(-scale), rounding=RULES[rounding]))


def _long_just_over_half() -> Decimal:
    """``0.005`` then 445 zeros then ``1``: 449 places, a hair above the half at 2 places."""
    return Decimal("0.005" + "0" * 445 + "1")


def test_450_digit_decimal_just_over_a_half_rounds_up() -> None:
    x = _long_just_over_half()
    assert round_to_scale(Fraction(x), 2, "ROUND_HALF_EVEN") == Fraction(1, 100)  # was 0 (0.005 at 400 digits, then even)
    assert round_to_scale(Fraction(x), 2, "ROUND_HALF_UP") == Fraction(1, 100)


def test_450_digit_decimal_just_under_a_half_rounds_down() -> None:
    x = Decimal("0.004" + "9" * 446)
    assert round_to_scale(Fraction(x), 2, "ROUND_HALF_UP") == 0  # 400 digits made it 0.005, then HALF_UP 0.01


@pytest.mark.parametrize(("reply", "status"), [("y = 0.01", "verified"), ("y = 0.00", "flagged")])
def test_guard_verifies_the_exact_rounding_of_a_450_digit_input(reply: str, status: str) -> None:
    proc = Procedure.model_validate({"name": "long", "inputs": {"x": "decimal"},
                                     "steps": [{"var": "y", "expr": "x", "type": "decimal", "scale": 2}]})
    run = Guard(ReplyModel([reply] * 5), GuardConfig(on_exhausted="flag")).run(proc, {"x": _long_just_over_half()})
    assert run.status == status  # the 400-digit context verified 0.00 and flagged 0.01


@pytest.mark.parametrize("rounding", ["ROUND_HALF_EVEN", "ROUND_HALF_UP"])
def test_integer_of_450_digits_with_a_half(rounding: str) -> None:
    big = int("7" * 449 + "2")  # even last digit: HALF_EVEN keeps it, HALF_UP adds one
    half = Fraction(2 * big + 1, 2)
    want = big if rounding == "ROUND_HALF_EVEN" else big + 1
    assert round_to_scale(half, 0, rounding) == want  # raised InvalidOperation (450 digits > 400)
    assert round_to_scale(big, 2, rounding) == big
    assert type(round_to_scale(big, 2, rounding)) is int


@pytest.mark.parametrize(("text", "scale", "even", "up"), [
    ("2.5", 0, 2, 3), ("3.5", 0, 4, 4), ("-2.5", 0, -2, -3), ("-3.5", 0, -4, -4),
    ("0.125", 2, "0.12", "0.13"), ("-0.125", 2, "-0.12", "-0.13"), ("0.135", 2, "0.14", "0.14"),
    ("-0.001", 2, 0, 0), ("1.005", 2, "1", "1.01"), ("9.995", 2, "10", "10"),
])
def test_both_rules_at_the_boundary_digit(text: str, scale: int, even: object, up: object) -> None:
    value = Fraction(Decimal(text))
    assert round_to_scale(value, scale, "ROUND_HALF_EVEN") == Fraction(Decimal(str(even)))
    assert round_to_scale(value, scale, "ROUND_HALF_UP") == Fraction(Decimal(str(up)))


@pytest.mark.parametrize("rounding", ["ROUND_HALF_EVEN", "ROUND_HALF_UP"])
def test_negative_450_digit_decimal_rounds_as_its_magnitude(rounding: str) -> None:
    x = Decimal("-" + str(_long_just_over_half()))  # not -Decimal(...): unary minus rounds to the 28-digit context
    assert round_to_scale(Fraction(x), 2, rounding) == Fraction(-1, 100)


def test_fractions_that_never_end_round_exactly() -> None:
    assert round_to_scale(Fraction(1, 3), 2) == Fraction(33, 100)
    assert round_to_scale(Fraction(2, 3), 30) == Fraction(int("6" * 29 + "7"), 10**30)
    # a half at 2 places plus 1/10**500: only the tail decides, far past any 400-digit context
    near = Fraction(5, 1000) + Fraction(1, 10**500)
    assert round_to_scale(near, 2, "ROUND_HALF_EVEN") == Fraction(1, 100)
    assert round_to_scale(Fraction(5, 1000) - Fraction(1, 10**500), 2, "ROUND_HALF_UP") == 0


def test_unknown_rule_or_negative_scale_is_refused() -> None:
    with pytest.raises(ValueError, match="rounding must be one of"):
        round_to_scale(Fraction(1, 2), 0, "ROUND_DOWN")
    with pytest.raises(ValueError, match="scale must be"):
        round_to_scale(Fraction(1, 2), -1)


def test_suite_expected_value_past_28_digits_keeps_every_digit(tmp_path: Path) -> None:
    # the suite turned the exact value into a Decimal at the default 28-digit context: quantize raised
    (tmp_path / "long.yaml").write_text(
        "name: long\ninputs: {x: decimal}\nsteps:\n  - {var: y, expr: x / 3, type: decimal, scale: 2}\n", encoding="utf-8")
    x = "1" * 40 + ".5"
    (tmp_path / "long.inputs.yaml").write_text(f'- inputs: {{x: "{x}"}}\n', encoding="utf-8")
    (case,) = load_suite(tmp_path)
    want = _reference(Fraction(Decimal(x)) / 3, 2, "ROUND_HALF_EVEN")
    assert case.expected["y"] == want and str(case.expected["y"]) == "370370370370370370370370370370370370370.50"
    assert case.expected["y"].as_tuple().exponent == -2


_PLACES = st.integers(min_value=0, max_value=30)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(digits=st.integers(min_value=1, max_value=10**600), places=st.integers(min_value=0, max_value=620),
       negative=st.booleans(), scale=_PLACES, rounding=st.sampled_from(sorted(RULES)))
def test_rounding_matches_a_wide_decimal_context(digits: int, places: int, negative: bool, scale: int, rounding: str) -> None:
    value = Fraction(-digits if negative else digits, 10**places)
    assert round_to_scale(value, scale, rounding) == _reference(value, scale, rounding)
