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
    # the power is asked as the quotient it is (an exact rewrite, issue 44 part 2), which the division rungs re-ask
    sub = rung.derive(power, 0, {"a": Fraction(3)})
    assert sub is not None and [(s.var, s.expr, s.scale) for s in sub.steps] == [("r", "1 / 3", 2)]
    assert rung.derive(_one("a // b", ("a", "b")), 0, {"a": Fraction(7), "b": Fraction(2)}) is None  # nothing to rewrite: not itself again
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
    proc = _one("a // b", ("a", "b"), type="decimal", scale=2)
    model = ScriptedModel(always_wrong={"r"})
    config = GuardConfig.for_procedure(proc, ladder=("digits",), max_reprompts_per_step=1, on_exhausted="flag")
    with pytest.warns(UserWarning):
        result = Guard(model, config).run(proc, {"a": "7", "b": "2"})
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


class _TiesUp(ScriptedModel):
    """A scripted model that rounds every half-to-even tie up, as the embedded model did on every tie
    (docs/lab/production-suite-history.md, the ``tie`` rung's figures)."""

    def complete(self, messages, settings=None):
        last = {**messages[-1], "content": str(messages[-1]["content"]).replace("round half to even", "round half up")}
        return super().complete([*messages[:-1], last], settings)


TIE = _one("a * b / c", ("a", "b", "c"), type="decimal", scale=2, rounding="ROUND_HALF_EVEN")
"""``1 * 0.25 / 2 = 0.125``, half to even to 2 places: ``0.12``."""


def test_digits_resolves_the_chains_rounding_at_a_half_even_tie() -> None:
    """The step's rounding sub-step ``r = 0.125`` is at a tie the model rounds up: ``chain`` (its
    sub-steps through ``single``, hence ``tie``) verified it, and ``digits``, whose nested ladder has
    no rung for a rounding, stopped there on every try: the step had no verified value."""
    for ladder in (("chain",), ("digits",)):
        model = _TiesUp(faults={"r": ["wrong"]})
        config = GuardConfig.for_procedure(TIE, ladder=ladder, max_reprompts_per_step=1, on_exhausted="flag")
        with pytest.warns(UserWarning) if ladder == ("digits",) else _no_warning():
            result = Guard(model, config).run(TIE, {"a": "1", "b": "0.25", "c": "2"})
        assert result.status == "verified" and str(result.answer) == "0.12", ladder
        asked = [str(m[-1]["content"]) for m in model.calls]
        assert any("= 2 % 2 = <result>" in a for a in asked), ladder  # the last kept digit's parity, asked


def test_digits_asks_a_tie_as_the_tie_rung_asks_it() -> None:
    """The tie's sub-steps one a call with the values they read written in, as ``tie`` asks them."""
    rung = get_rung("digits")
    proc = _one("a", ("a",), type="decimal", scale=2, rounding="ROUND_HALF_EVEN")
    sub = rung.derive(proc, 0, {"a": parse_number("0.125")})
    assert sub is not None and [s.expression for s in sub.steps] == ["2 % 2", "0.01 * t1", "0.12 + t2"]
    cfg = rung.nested_config(GuardConfig(), 0, None, None, sub)
    want = get_rung("tie").nested_config(GuardConfig(), 0, None, None, sub)
    assert (cfg.ladder, cfg.chunk_size, cfg.inline_known) == (want.ladder, want.chunk_size, want.inline_known)
    # not a tie: nothing for digits to do with a rounding alone
    assert rung.derive(proc, 0, {"a": parse_number("0.126")}) is None


class _MinAsMax(ScriptedModel):
    """A scripted model that answers every ``min`` with the larger value."""

    def complete(self, messages, settings=None):
        last = {**messages[-1], "content": str(messages[-1]["content"]).replace("min(", "max(")}
        return super().complete([*messages[:-1], last], settings)


def test_digits_asks_the_chains_min_as_choice_asks_it() -> None:
    """``min(61000, 50000)``, a sub-step of ``min(a, 50000) * 0.25`` the model answers with the
    larger: ``chain`` verified the step (``single``, hence ``choice``: the larger, an equality, the
    value chosen), ``digits`` asked the same line four times and stopped there."""
    proc = _one("min(a, 50000) * 0.25", ("a",), type="decimal", scale=2, rounding="ROUND_HALF_UP")
    for ladder in (("chain",), ("digits",)):
        model = _MinAsMax()
        config = GuardConfig.for_procedure(proc, ladder=ladder, max_reprompts_per_step=1, on_exhausted="flag")
        with pytest.warns(UserWarning) if ladder == ("digits",) else _no_warning():
            result = Guard(model, config).run(proc, {"a": "61000"})
        assert result.status == "verified" and str(result.answer) == "12500.00", ladder
    rung = get_rung("digits")
    sub = rung.derive(_one("min(a, b)", ("a", "b")), 0, {"a": Fraction(61000), "b": Fraction(50000)})
    assert sub is not None and [s.expression for s in sub.steps] == ["max(61000, 50000)", "t1 == 61000", "50000 if t2 else 61000"]
    cfg, want = (r.nested_config(GuardConfig(), 0, None, None, sub) for r in (rung, get_rung("choice")))
    assert (cfg.ladder, cfg.chunk_size, cfg.inline_known) == (want.ladder, want.chunk_size, want.inline_known)


def _no_warning():
    import contextlib

    return contextlib.nullcontext()


def test_which_derivation_digits_configures_does_not_depend_on_the_procedures_or_steps_name() -> None:
    """A procedure named ``x:chain`` or ``y:tie`` and a step named ``chain``: a sheet is still asked as
    a sheet, a chain as a chain (the derivation's rung ends the derived name, after them)."""
    rung = get_rung("digits")
    for name in ("x:chain", "y:tie", "z:digits:chain"):
        for var in ("chain", "tie", "r"):
            one = Procedure.model_validate({"name": name, "inputs": ["a", "b"], "steps": [{"var": var, "expr": "a * b"}]})
            sheet = rung.derive(one, 0, {"a": Fraction(37), "b": Fraction(46)})
            assert sheet is not None and rung.nested_config(GuardConfig(), 0, None, None, sheet).ladder == ("resample",) * 3
            two = Procedure.model_validate({"name": name, "inputs": ["a", "b"], "steps": [{"var": var, "expr": "a * b + 1"}]})
            chain = rung.derive(two, 0, {"a": Fraction(37), "b": Fraction(46)})
            assert chain is not None and rung.nested_config(GuardConfig(), 0, None, None, chain).inline_known


def test_divide_carries_a_quotient_by_a_decimal_divisor_three_places_past_the_scale() -> None:
    """``75.628 / 3.61`` at 1 place (a folded last sub-step such as ``bmi = 75.628 / t1``): ``divide``
    carried ``75.628 / 361`` at 4 places and moved the point two places right, 1 place past the scale,
    where ``20.95`` rounds half up to 21.0 against the exact 20.9495...'s 20.9, so it refused a quotient
    it is made for; carried at 6, the value it asks rounds as the exact one does."""
    rung = get_rung("divide")
    proc = _one("a / b", ("a", "b"), type="decimal", scale=1, rounding="ROUND_HALF_UP")
    sub = rung.derive(proc, 0, {"a": parse_number("75.628"), "b": parse_number("3.61")})
    assert sub is not None and [(s.expression, s.scale) for s in sub.steps] == [
        ("75.628 / 361", 6), ("t1 * 10", None), ("t2 * 10", None), ("t3", 1)]
    assert sub.expected_values({})["r"] == parse_number("20.9")
    # the neighbours: a divisor with a power of ten above one keeps its places, and a finite quotient carries none
    big = rung.derive(proc, 0, {"a": Fraction(2), "b": Fraction(30000)})
    assert big is not None and big.steps[0].scale == 8
    ends = rung.derive(proc, 0, {"a": parse_number("7.5"), "b": parse_number("0.4")})
    assert ends is not None and ends.steps[0].scale is None
    model = ScriptedModel(faults={"r": ["wrong"]})
    config = GuardConfig.for_procedure(proc, ladder=("divide",), max_reprompts_per_step=1, on_exhausted="flag")
    result = Guard(model, config).run(proc, {"a": "75.628", "b": "3.61"})
    assert result.status == "verified" and str(result.answer) == "20.9"
    assert any("75.628 / 361" in str(m[-1]["content"]) for m in model.calls)
