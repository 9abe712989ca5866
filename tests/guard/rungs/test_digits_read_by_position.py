"""Faults found in the forms-5 digit sheets (a quotient digit read as a count, a carry as its own
column): a value read by position comes from the model's texts only, so a wrong digit in any
sub-step the reading reads never reads back the step's value (issue 30)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from stepguard import Guard, GuardConfig, Procedure
from stepguard.guard.rungs.arith._digits import MAX_SUB_STEPS
from stepguard.guard.rungs.arith.chain import chain_steps
from stepguard.procedure import round_to_scale
from tests._fakes import DIGIT_SUB_STEPS, ScriptedModel

from .test_digit_rungs import _operand, _read, _rung, _step, _texts, _want


def _one_digit_off(text: str, data: st.DataObject) -> str:
    """``text`` with one of its digits changed so that it reads as another number."""
    at = data.draw(st.sampled_from([i for i, c in enumerate(text) if c.isdigit()]))
    digit = data.draw(st.sampled_from([d for d in "0123456789" if d != text[at]]))
    wrong = text[:at] + digit + text[at + 1:]
    if Fraction(wrong.strip("()")) == Fraction(text.strip("()")):  # a leading zero written: the same number
        wrong = text[:at] + ("1" if text[at] != "1" else "2") + text[at + 1:]
    return wrong


def test_a_quotient_digit_the_model_chose_otherwise_is_not_read_as_the_guards_literal() -> None:
    """``59 / 31`` to 2 places: ``max(5, 3) = 5`` (59 and 31 compared at their first digits, after the
    multiple 62's columns the scan compares next) counts the first digit 1. Written ``3``, the multiple's
    digit, the count reads ``0.903``, which is not the number the rounding sub-step's literal ``1.903``
    holds; written ``4``, a digit neither number has. Neither reads a value: not the rounding of the
    guard's own literal, which the model's digits no longer spell."""
    proc, env = _step("/", 2), {"a": Fraction(59), "b": Fraction(31)}
    rung = _rung("/")
    sub = rung.derive(proc, 0, env)
    assert sub is not None
    first = next(s.var for s in sub.steps if s.expression == "max(5, 3)")
    texts = _texts(sub)
    assert _read(rung, proc, env, texts) == Fraction("1.90")
    assert _read(rung, proc, env, {**texts, first: "3"}) is None
    assert _read(rung, proc, env, {**texts, first: "4"}) is None


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(_operand, _operand.filter(lambda v: v != 0), st.integers(0, 4), st.data())
def test_a_single_wrong_digit_in_any_sub_step_a_quotient_reads_never_reads_its_value(a, b, scale, data):
    """The neighbours of the count: every choice a quotient digit is counted from (the remainder
    chosen, or the multiple that stops the scan), the sign and the rounding sub-step."""
    proc, env = _step("/", scale), {"a": a, "b": b}
    rung = _rung("/")
    sub = rung.derive(proc, 0, env)
    if sub is None:
        return
    sheet = rung.sheet(proc, 0, env)
    assert sheet is not None
    read_from = [v for p in sheet.reading.places for v in p.of]
    read_from += [v for v in (sheet.reading.sign, sheet.reading.then) if v is not None]
    var = data.draw(st.sampled_from(read_from))
    texts = _texts(sub)
    wrong = {**texts, var: _one_digit_off(texts[var] or "", data)}
    assert _read(rung, proc, env, wrong) != round_to_scale(a / b, scale, "ROUND_HALF_EVEN")


@pytest.mark.parametrize("op,a,b,wrong", [
    ("*", -7, 8, "-2"),  # (-1) * 1 = -2: still written with a minus
    ("-", -20, -715, "716"),  # max(715, 0) = 716: still not 0
    ("+", 20, -715, "1"),  # max((-715), 0) = 1: not 0, so read as not negative
    ("/", -7, 2, "-2"),
])
def test_a_wrong_digit_in_the_sign_sub_step_never_reads_the_steps_value(op: str, a: int, b: int, wrong: str) -> None:
    proc, env = _step(op), {"a": Fraction(a), "b": Fraction(b)}
    rung = _rung(op)
    sub = rung.derive(proc, 0, env)
    sheet = rung.sheet(proc, 0, env)
    assert sub is not None and sheet is not None and sheet.reading.sign is not None
    texts = _texts(sub)
    assert _read(rung, proc, env, texts) == _want(proc, Fraction(a), Fraction(b))
    assert _read(rung, proc, env, {**texts, sheet.reading.sign: wrong}) != _want(proc, Fraction(a), Fraction(b))


def test_the_scripted_model_is_wrong_on_every_sub_step_of_the_longest_sheet() -> None:
    """``DIGIT_SUB_STEPS`` names every sub-step a sheet may have, ``d1 .. d{MAX_SUB_STEPS}``."""
    assert {f"d{i}" for i in range(1, MAX_SUB_STEPS + 1)} <= DIGIT_SUB_STEPS


@pytest.mark.parametrize("a,want", [(3, 0), (1, 4), (7, 14)])
def test_a_nested_conditional_whose_branch_chosen_is_a_bare_value_is_still_asked(a: int, want: int) -> None:
    """``a * 2 if a > 5 else (0 if a > 2 else a * 4)`` at ``a = 3``: the outer condition chooses the
    inner conditional, whose condition chooses the bare ``0``; as a whole step taking a bare value,
    the inner one keeps its choice sub-step (else the chain ended in a literal, not a sub-step, and did
    not apply). The whole step keeps the outermost conditional's choice, over both branches, as forms 3
    asked it (the commission rate verified so on the embedded model)."""
    proc = Procedure.model_validate({"name": "p", "inputs": ["x"], "steps": [
        {"var": "a", "expr": "x"}, {"var": "r", "expr": "a * 2 if a > 5 else (0 if a > 2 else a * 4)"}]})
    sub = chain_steps(proc, 1, {"a": Fraction(a)})
    assert sub is not None and sub.expected_values({})["r"] == want
    assert (a == 3) == (" if " in (sub.steps[-1].expression or ""))  # a choice only where the step ends in the bare 0
    config = GuardConfig.for_procedure(proc, ladder=("chain",), max_reprompts_per_step=1, on_exhausted="flag")
    result = Guard(ScriptedModel(faults={"r": ["wrong"]}), config).run(proc, {"x": a})  # wrong on the step, right on its sub-steps
    assert result.status == "verified" and result.values["r"] == want


def test_a_tier_inside_an_operation_puts_the_value_chosen_in_with_no_choice_sub_step() -> None:
    """The neighbour: the same tier as an operand is not the whole step's value, so the bare value its
    conditions chose goes into the operation as a literal, after them."""
    proc = Procedure.model_validate({"name": "p", "inputs": ["a"], "steps": [
        {"var": "r", "expr": "(a * 2 if a > 5 else (0 if a > 2 else a * 4)) + 1"}]})
    sub = chain_steps(proc, 0, {"a": Fraction(3)})
    assert sub is not None
    assert [s.expression for s in sub.steps] == ["max(3, 5)", "t1 != 5", "max(3, 2)", "t3 != 2", "0 + 1"]
