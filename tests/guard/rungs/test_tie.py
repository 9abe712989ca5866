"""The ``tie`` rung: a rounding at an exact tie asked as its rule's arithmetic (issue 16, deliverable 2).

The embedded model rounded every tie up, half to even included (81.625 -> 81.63); a compound-interest
case flagged on it (docs/lab/production-suite-history.md).
"""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stepguard import Guard, GuardConfig, Procedure
from stepguard.evaluator import parse_number
from stepguard.guard import get_rung
from tests._fakes import ScriptedModel


def _rounding(scale: int, rule: str = "ROUND_HALF_EVEN", expr: str = "a") -> Procedure:
    return Procedure.model_validate({"name": "p", "inputs": ["a"], "steps": [
        {"var": "s", "expr": expr, "type": "decimal", "scale": scale, "rounding": rule}]})


def _sub(value: str, scale: int, rule: str = "ROUND_HALF_EVEN", expr: str = "a") -> list[tuple[str, str]] | None:
    sub = get_rung("tie").derive(_rounding(scale, rule, expr), 0, {"a": parse_number(value)})
    return None if sub is None else [(s.var, s.expr) for s in sub.steps]


@pytest.mark.parametrize(("value", "scale", "rule", "steps"), [
    ("81.625", 2, "ROUND_HALF_EVEN", [("t1", "2 % 2"), ("t2", "0.01 * t1"), ("s", "81.62 + t2")]),
    ("81.635", 2, "ROUND_HALF_EVEN", [("t1", "3 % 2"), ("t2", "0.01 * t1"), ("s", "81.63 + t2")]),
    ("6.5", 0, "ROUND_HALF_EVEN", [("t1", "6 % 2"), ("t2", "1 * t1"), ("s", "6 + t2")]),
    ("-0.125", 2, "ROUND_HALF_EVEN", [("t1", "2 % 2"), ("t2", "0.01 * t1"), ("t3", "0.12 + t2"), ("s", "-t3")]),
    ("130.245", 2, "ROUND_HALF_UP", [("s", "130.24 + 0.01")]),
    ("-2.5", 0, "ROUND_HALF_UP", [("t1", "2 + 1"), ("s", "-t1")]),
])
def test_a_tie_is_asked_as_its_rules_arithmetic(value: str, scale: int, rule: str, steps: list) -> None:
    assert _sub(value, scale, rule) == steps


@pytest.mark.parametrize(("value", "scale", "rule", "expr"), [
    ("81.627", 2, "ROUND_HALF_EVEN", "a"),  # not a tie: nearest, no rule needed
    ("81.62", 2, "ROUND_HALF_EVEN", "a"),  # nothing to round
    ("81.6251", 2, "ROUND_HALF_EVEN", "a"),  # just past the tie
    ("81.625", 2, "ROUND_HALF_EVEN", "a * 1"),  # an operation, not a rounding: chain's first
])
def test_the_rung_does_not_apply_off_a_tie_or_to_an_operation(value: str, scale: int, rule: str, expr: str) -> None:
    assert _sub(value, scale, rule, expr) is None


def test_the_rung_does_not_apply_to_a_step_without_scale_or_over_text() -> None:
    plain = Procedure.model_validate({"name": "p", "inputs": ["a"], "steps": [{"var": "s", "expr": "a"}]})
    assert get_rung("tie").derive(plain, 0, {"a": Fraction(1, 2)}) is None
    assert get_rung("tie").derive(_rounding(2), 0, {"a": "81.625"}) is None


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(whole=st.integers(-10**6, 10**6), scale=st.integers(0, 4), up=st.booleans())
def test_the_derived_value_is_the_rules_rounding_of_every_tie(whole: int, scale: int, up: bool) -> None:
    """Independently of the evaluator: Python's decimal module rounds the same tie."""
    value = Decimal(whole).scaleb(-scale) + Decimal(5).scaleb(-scale - 1) * (1 if whole >= 0 else -1)
    rule = "ROUND_HALF_UP" if up else "ROUND_HALF_EVEN"
    sub = get_rung("tie").derive(_rounding(scale, rule), 0, {"a": parse_number(str(value))})
    assert sub is not None
    want = value.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP if up else ROUND_HALF_EVEN)
    assert Fraction(sub.expected_values({})["s"]) == Fraction(want)
    assert (sub.steps[-1].scale, sub.steps[-1].rounding) == (scale, rule)


class _RoundsTiesUp(ScriptedModel):
    """Writes every rounding of a tie half up, as the embedded model did; right everywhere else."""

    def complete(self, messages, settings=None):  # type: ignore[no-untyped-def]
        text = messages[-1]["content"].replace("round half to even", "round half up")
        return super().complete([*messages[:-1], {**messages[-1], "content": text}], settings)


def test_a_compound_interest_step_at_a_half_cent_verifies_through_chain_and_tie() -> None:
    """6530.00 x 0.05 / 4 = 81.625, half to even 81.62: a model rounding ties up writes 81.63."""
    proc = Procedure.model_validate({"name": "ci", "inputs": [{"name": "p", "type": "decimal"}, {"name": "r", "type": "decimal"}],
                                     "steps": [{"var": "interest_1", "expr": "p * r / 4", "type": "decimal", "scale": 2}]})
    model = _RoundsTiesUp()
    config = GuardConfig(chunk_size=1, inline_known=True, ladder=("split", "resample", "resample"), on_exhausted="flag")
    result = Guard(model, config).run(proc, {"p": "6530.00", "r": "0.05"})
    assert result.status == "verified" and result.answer == Decimal("81.62") and result.repaired == 0
    asked = "\n".join(m[-1]["content"] for m in model.calls)
    assert "2 % 2" in asked and "81.62 + 0" in asked  # the tie asked as parity, then the sum


def test_without_the_tie_rung_the_same_model_ends_flagged() -> None:
    """The neighbour: the rung is what fixes it, not a re-ask."""
    proc = _rounding(2)
    config = GuardConfig(chunk_size=1, inline_known=True, ladder=("resample", "resample"), on_exhausted="flag")
    result = Guard(_RoundsTiesUp(), config).run(proc, {"a": "81.625"})
    assert result.status == "flagged" and result.first_unverified == "s"
    fixed = Guard(_RoundsTiesUp(), GuardConfig(chunk_size=1, ladder=("single",), on_exhausted="flag")).run(proc, {"a": "81.625"})
    assert fixed.status == "verified" and fixed.answer == Decimal("81.62")
