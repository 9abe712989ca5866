"""Faults found by the breaker in ``digits`` over a step of several operations and in ``chain``'s
last quotient carrying the step's rounding (the folded last operation)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from stepguard import Guard, GuardConfig, Procedure
from stepguard.evaluator import parse_number
from stepguard.guard.rungs import get_rung
from tests._fakes import ScriptedModel


def _one(expr: str, inputs: tuple[str, ...], **step: object) -> Procedure:
    return Procedure.model_validate({"name": "p", "inputs": list(inputs), "steps": [{"var": "r", "expr": expr, **step}]})


@pytest.mark.parametrize("name", ["chain", "digits"])
def test_a_single_operation_whose_rounding_folds_in_is_not_asked_as_itself(name: str) -> None:
    """``r = 3 ** -1`` at 2 places (and a quotient ``long_divide`` refuses, its digits rounding
    otherwise than the exact value): the folded last operation made the chain one sub-step, the step
    itself, so ``digits`` re-asked the same line ten times through rungs of rungs (depth 1, then 2)
    where it does not apply and the ladder should say so."""
    rung = get_rung(name)
    power = _one("a ** -1", ("a",), type="decimal", scale=2)
    assert rung.derive(power, 0, {"a": Fraction(3)}) is None
    tie = _one("a / b", ("a", "b"), type="decimal", scale=2)
    env = {"a": parse_number("0.375000001"), "b": Fraction(3)}  # 0.1250000003...: its digits at 5 places round to 0.12
    assert get_rung("long_divide").derive(tie, 0, env) is None
    assert rung.derive(tie, 0, env) is None
    # the neighbours: a rounding that is its own sub-step still applies to one operation, and a fold after one does
    finite = rung.derive(_one("a * b", ("a", "b"), type="decimal", scale=2), 0, {"a": parse_number("1.05"), "b": parse_number("1.05")})
    assert finite is not None and len(finite.steps) >= 2
    bmi = rung.derive(_one("a / (b * b)", ("a", "b"), type="decimal", scale=1), 0, {"a": parse_number("75.8"), "b": parse_number("1.9")})
    assert bmi is not None and [s.expression for s in bmi.steps] == ["1.9 * 1.9", "75.8 / t1"]


def test_digits_says_it_does_not_apply_to_a_single_operation_it_cannot_split() -> None:
    """The run: one re-ask, said to be the ladder's fallback, not ten calls of the same line."""
    proc = _one("a ** -1", ("a",), type="decimal", scale=2)
    model = ScriptedModel(always_wrong={"r"})
    config = GuardConfig.for_procedure(proc, ladder=("digits",), max_reprompts_per_step=1, on_exhausted="flag")
    with pytest.warns(UserWarning):
        result = Guard(model, config).run(proc, {"a": "3"})
    assert result.status == "flagged" and len(model.calls) == 2
    assert any("digits does not apply" in (d.detail or "") for d in result.deviations)


@pytest.mark.parametrize("name", ["chain", "digits"])
def test_a_last_value_with_no_finite_form_and_no_scale_is_not_asked(name: str) -> None:
    """``r = (a + b) / 3`` with no scale: the last sub-step ``r = 2 / 3`` asked a value no model can
    write (``2/3`` is not a number a reply may hold) through every rung of the nested ladder."""
    rung = get_rung(name)
    proc = _one("(a + b) / 3", ("a", "b"))
    assert rung.derive(proc, 0, {"a": Fraction(1), "b": Fraction(1)}) is None
    assert rung.derive(proc, 0, {"a": Fraction(1), "b": Fraction(2)}) is not None  # 3 / 3 ends: still asked


@pytest.mark.parametrize("name", ["chain", "digits"])
def test_a_step_that_cannot_be_evaluated_on_its_values_is_not_derived(name: str) -> None:
    """A division by zero over the committed values: no sub-procedure, and no error out of ``derive``."""
    proc = _one("a / (b - b) + 1", ("a", "b"), type="decimal", scale=2)
    assert get_rung(name).derive(proc, 0, {"a": Fraction(1), "b": Fraction(2)}) is None
