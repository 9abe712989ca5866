"""Prompt forms 6: a digit sheet compares two whole numbers by the first place their digits differ, one
single-digit choice, never two long numbers in one ``max`` (the embedded model wrote
``max(60, 12) = 12`` and ``max(289, 31) = 31`` on every resample; issue 30's one stop)."""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from stepguard.guard.rungs.arith._digits import Sheet, larger_at_first_difference

from .test_digit_rungs import _operand, _read, _rung, _step, _texts

_MAX = re.compile(r"max\((.*), (.*)\)")


@pytest.mark.parametrize("a,b,asked", [(472, 426, "max(7, 2)"), (60, 12, "max(6, 1)"), (12, 60, "max(1, 6)"), (1200, 1095, "max(2, 0)"),
                                       (289, 31, None), (31, 289, None), (365, 365, None), (0, 0, None), (9, 8, "max(9, 8)")])
def test_the_choice_is_the_first_digits_that_differ_the_first_numbers_first(a, b, asked):
    sheet = Sheet()
    var = larger_at_first_difference(sheet, a, b)
    assert [s["expr"] for s in sheet.steps] == ([] if asked is None else [asked])
    assert var == (None if asked is None else "d1")


def test_the_mortgages_quotient_asks_single_digits_where_forms_5_asked_max_60_12() -> None:
    """``interest_3 = 11220.31575 / 12`` stopped the production suite's one unverified case."""
    proc, env = _step("/", 2), {"a": Fraction("11220.31575"), "b": Fraction(12)}
    rung = _rung("/")
    sub = rung.derive(proc, 0, env)
    assert sub is not None
    exprs = [s.expression or "" for s in sub.steps]
    assert "max(60, 12)" not in exprs and "max(6, 1)" in exprs
    assert _read(rung, proc, env, _texts(sub)) == Fraction("935.03")


def test_a_multiple_equal_to_the_remainder_is_read_not_asked_and_counts() -> None:
    """``144 / 12``: the remainder 24 is the second multiple itself (read), the third asked, ``max(2, 3)``."""
    proc, env = _step("/", 0), {"a": Fraction(144), "b": Fraction(12)}
    rung = _rung("/")
    sub = rung.derive(proc, 0, env)
    assert sub is not None
    exprs = [s.expression or "" for s in sub.steps]
    assert not any(_MAX.fullmatch(e) and "24" in e for e in exprs)
    texts = _texts(sub)
    assert _read(rung, proc, env, texts) == 12
    third = next(s.var for s in sub.steps if s.expression == "max(2, 3)")
    assert _read(rung, proc, env, {**texts, third: "2"}) != 12  # the model naming the remainder's digit counts a 3rd


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(_operand, _operand, st.sampled_from(["+", "-", "/"]), st.integers(0, 3))
def test_no_digit_sheet_asks_the_larger_of_two_numbers_of_several_digits(a, b, op, scale):
    """Every choice a sum, difference or quotient's sheet asks is of two single digits, but the sign's
    ``max(L, 0)``, and each still reads back the step's value."""
    if op == "/" and b == 0:
        return
    proc, env = _step(op, scale if op == "/" else None), {"a": a, "b": b}
    rung = _rung(op)
    sub = rung.derive(proc, 0, env)
    if sub is None:
        return
    sheet = rung.sheet(proc, 0, env)
    assert sheet is not None
    for s in sub.steps:
        found = _MAX.fullmatch(s.expression or "")
        if found and s.var != sheet.reading.sign:
            assert len(found[1]) == len(found[2]) == 1, s.expression
    assert _read(rung, proc, env, _texts(sub)) == Fraction(proc.expected_values(env)["r"])
