"""``chain`` asks a conditional as its condition, then the branch the verified condition chose; a
nested run's stop names its own sub-step's stop, all the way down.

The embedded model answered a choice sub-step over a literal condition with its first value
(``t4 = 0 if False else 0.3 = 0``) on every try, and the quotient of a conditional
(``tax / income if income > 0 else 0``, 4 places) had no finite branch value for the choice to take."""

from __future__ import annotations

from fractions import Fraction

import pytest

from stepguard import Guard, GuardConfig, Procedure
from stepguard.evaluator import parse_number
from stepguard.guard.rungs import get_rung
from stepguard.guard.rungs.arith.chain import chain_steps
from tests._fakes import ScriptedModel


def _one(expr: str, inputs: tuple[str, ...], **step: object) -> Procedure:
    return Procedure.model_validate({"name": "p", "inputs": list(inputs), "steps": [{"var": "r", "expr": expr, **step}]})


def _exprs(proc: Procedure, env: dict[str, Fraction | int]) -> list[tuple[str, str | None, int | None]]:
    sub = chain_steps(proc, 0, env)
    assert sub is not None
    return [(s.var, s.expression, s.scale) for s in sub.steps]


def test_a_quotient_in_a_branch_is_asked_to_the_steps_places_after_its_condition() -> None:
    proc = _one("tax / income if income > 0 else 0", ("tax", "income"), type="decimal", scale=4)
    env = {"tax": Fraction(7000), "income": Fraction(52570)}
    assert _exprs(proc, env) == [("t1", "max(52570, 0)", None), ("t2", "t1 != 0", None), ("r", "7000 / 52570", 4)]
    assert chain_steps(proc, 0, env).expected_values({})["r"] == Fraction("0.1332")  # type: ignore[union-attr]


@pytest.mark.parametrize("zone,factor", [(2, "0.15"), (3, "0.3")])
def test_a_conditional_inside_a_product_puts_the_chosen_literal_in_after_its_conditions(zone: int, factor: str) -> None:
    proc = _one("base * (0 if zone == 1 else (0.15 if zone == 2 else 0.30))", ("base", "zone"), type="decimal", scale=2,
                rounding="ROUND_HALF_UP")
    exprs = _exprs(proc, {"base": parse_number("35.7"), "zone": zone})
    assert not any(" if " in (e or "") for _, e, _ in exprs)  # no choice sub-step: the branch is the one chosen
    assert exprs[0] == ("t1", f"{zone} == 1", None)
    assert f"35.7 * {factor}" in [e for _, e, _ in exprs] and exprs[-1][0::2] == ("r", 2)  # its rounding its own sub-step where it rounds


def test_the_untaken_branch_is_never_asked_and_may_not_even_evaluate() -> None:
    """A neighbour: ``a / b if b != 0 else 0`` with an operation in the branch taken and a division by
    zero in the other (inside an operation, so the whole step is not a bare-value choice)."""
    proc = _one("(a / b if b != 0 else a / 1) + 1", ("a", "b"))
    exprs = _exprs(proc, {"a": Fraction(5), "b": Fraction(0)})
    assert [e for _, e, _ in exprs] == ["0 != 0", "5 / 1", "t2 + 1"]


def test_a_whole_step_taking_a_bare_value_keeps_its_choice_sub_step() -> None:
    proc = _one("5 if w <= 1 else w * 2", ("w",))
    exprs = _exprs(proc, {"w": Fraction(1, 2)})
    assert exprs[-1][1] is not None and " if " in exprs[-1][1]


@pytest.mark.slow
def test_a_wrong_condition_stops_the_chain_before_any_branch_is_asked() -> None:
    """The branch asked is the one the model's verified condition chose: a model wrong on the
    condition every time never sees the branch, and the step does not verify."""
    proc = Procedure.model_validate({"name": "p", "inputs": ["tax", "income"], "steps": [
        {"var": "t", "expr": "tax"}, {"var": "i", "expr": "income"},
        {"var": "rate", "expr": "t / i if i > 0 else 0", "type": "decimal", "scale": 4}]})
    inputs = {"tax": "7000", "income": "52570"}
    config = GuardConfig.for_procedure(proc, ladder=("chain",), max_reprompts_per_step=1, on_exhausted="flag")
    right = Guard(ScriptedModel(always_wrong={"rate"}), config).run(proc, inputs)
    assert right.status == "verified" and right.values["rate"] == Fraction("0.1332")
    model = ScriptedModel(always_wrong={"rate", "t2"})
    wrong = Guard(model, config).run(proc, inputs)
    assert wrong.status != "verified"
    asked = " ".join(str(m[-1]["content"]) for m in model.calls)
    assert "7000 / 52570" not in asked.split("t2 = ", 1)[-1]  # nothing after the condition's first ask shows the branch
    assert "sub-step t2 = t1 != 0 never verified" in " ".join(d.detail for d in wrong.deviations)


def test_a_stop_two_runs_down_is_named_in_the_row() -> None:
    """``digits`` over ``a * b / 12``: the chain's product goes digit by digit; a model wrong on one
    digit sub-step every time stops the sheet, the chain, then the step, and the step's deviation
    names each level's stopped sub-step down to the digit one."""
    proc = Procedure.model_validate({"name": "p", "inputs": ["a", "b"], "steps": [
        {"var": "x", "expr": "a"}, {"var": "y", "expr": "b"},
        {"var": "r", "expr": "x * y / 12", "type": "decimal", "scale": 2, "rounding": "ROUND_HALF_UP"}]})
    digits = get_rung("digits")
    chain = digits.derive(proc, 2, {"x": parse_number("17997.5"), "y": parse_number("0.072")})
    assert chain is not None and chain.steps[0].expression == "17997.5 * 0.072"
    model = ScriptedModel(always_wrong={"r", "t1", "d3"})
    config = GuardConfig.for_procedure(proc, ladder=("digits",), max_reprompts_per_step=1, on_exhausted="flag")
    result = Guard(model, config).run(proc, {"a": "17997.5", "b": "0.072"})
    assert result.status != "verified"
    detail = " ".join(d.detail for d in result.deviations if d.step == "r")
    assert "sub-step t1 = 17997.5 * 0.072 never verified" in detail
    assert "in it, the digits rung's sub-step d3 = " in detail


def test_a_whole_step_ending_in_a_bare_value_through_nested_conditionals_keeps_its_choice() -> None:
    """``0.07 if a >= 1.25 else (0.05 if a >= 1 else 0.03)`` at ``a = 0.1606``: the branch taken is a
    conditional taking the bare 0.03; asked as conditions then that branch, the chain ended in no
    sub-step of its own and did not apply (the forms-5 run's commission rate, flagged where forms 3
    verified it). Its neighbours: the same step taking 0.07 at the outer condition, and an operation."""
    proc = _one("0.07 if a >= 1.25 else (0.05 if a >= 1 else 0.03)", ("a",), type="decimal", scale=2)
    for a, want in (("0.1606", "0.03"), ("1.3", "0.07"), ("1.1", "0.05")):
        sub = chain_steps(proc, 0, {"a": parse_number(a)})
        assert sub is not None and " if " in (sub.steps[-1].expression or "")
        assert sub.expected_values({})["r"] == parse_number(want)
    bonus = _one("500 if a >= 1.25 else 0", ("a",), type="decimal", scale=2)
    assert chain_steps(bonus, 0, {"a": parse_number("0.1606")}) is not None
    op = _one("0.07 if a >= 1.25 else (a * 2 if a >= 1 else a * 3)", ("a",), type="decimal", scale=2)
    exprs = [s.expression for s in chain_steps(op, 0, {"a": parse_number("0.5")}).steps]  # type: ignore[union-attr]
    assert exprs[-1] == "0.5 * 3" and not any(" if " in (e or "") for e in exprs)


def test_a_conditional_on_a_boolean_name_is_asked_as_the_branch_it_takes() -> None:
    """``a * 0.15 if f else a * 0.3`` over a committed boolean ``f`` (the breaker's): the condition
    is no sub-step, and the branch taken is one operation, so the chain had one sub-step and refused
    it as the step itself again; it is the branch alone, not the step, and goes on to its own rungs.
    Its neighbour, the same with no conditional, is still refused."""
    proc = Procedure.model_validate({"name": "p", "inputs": ["a", "f"], "steps": [
        {"var": "r", "expr": "a * 0.15 if f else a * 0.3", "type": "decimal", "scale": 2}]})
    for f, want in ((True, "35.7 * 0.15"), (False, "35.7 * 0.3")):
        sub = chain_steps(proc, 0, {"a": parse_number("35.7"), "f": f})
        assert sub is not None and [s.expression for s in sub.steps][0] == want
    assert chain_steps(_one("a * 0.3", ("a",), type="decimal", scale=2), 0, {"a": parse_number("35.7")}) is None
