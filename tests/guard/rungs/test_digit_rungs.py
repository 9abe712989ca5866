"""The digit rungs: every digit the model's, each sub-step checked, the value read by position."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from stepguard import Guard, GuardConfig, Procedure
from stepguard.adapters import load_model
from stepguard.evaluator import format_number
from stepguard.guard.rungs import get_rung
from stepguard.guard.rungs._digits import DIGIT_LADDER, MAX_SUB_STEPS, DigitRung
from stepguard.guard.rungs.digits import DIGIT_CHAIN_LADDER
from stepguard.procedure import round_to_scale
from tests._fakes import ScriptedModel

DIGIT_RUNGS = ("columns", "long_multiply", "long_divide", "digits")


def _step(op: str, scale: int | None = None, rounding: str = "ROUND_HALF_EVEN") -> Procedure:
    step: dict[str, object] = {"var": "r", "expr": f"a {op} b"}
    if scale is not None:
        step.update(type="decimal", scale=scale, rounding=rounding)
    return Procedure.model_validate({"name": "one", "inputs": ["a", "b"], "steps": [step]})


def _want(proc: Procedure, a: Fraction, b: Fraction) -> Fraction:
    return Fraction(proc.expected_values({"a": a, "b": b})["r"])


def _texts(sub: Procedure) -> dict[str, str | None]:
    """The sub-steps' values as a right model writes them (the evaluator's, at each one's scale)."""
    return {var: format_number(v) for var, v in sub.expected_values({}).items()}


def _rung(op: str) -> DigitRung:
    rung = get_rung({"+": "columns", "-": "columns", "*": "long_multiply", "/": "long_divide"}[op])
    assert isinstance(rung, DigitRung)
    return rung


def _derived(op: str, a: Fraction, b: Fraction) -> tuple[Procedure, dict[str, Fraction], DigitRung, Procedure | None]:
    """The one-step procedure ``r = a op b``, its values, the digit rung for ``op`` and what it derives."""
    proc, env = _step(op), {"a": a, "b": b}
    rung = _rung(op)
    return proc, env, rung, rung.derive(proc, 0, env)


def _on_sim(rung: DigitRung, sub: Procedure) -> dict[str, str | None]:
    """The sub-procedure run on ``sim:perfect`` as the rung runs it; its values, verified."""
    with load_model("sim:perfect") as model:
        result = Guard(model, rung.nested_config(GuardConfig(), 0, None, None)).run(sub, {})
    assert result.status == "verified"
    return result.texts


def _read(rung: DigitRung, proc: Procedure, env: dict[str, Fraction], texts: dict[str, str | None]) -> Fraction | None:
    read = rung.read(proc, 0, env, texts)
    return None if read is None else Fraction(read.value)


# operands: whole numbers and decimals, both signs, long and short
_places = st.integers(0, 4)
_number = st.builds(lambda n, p: Fraction(n, 10**p), st.integers(-10**9, 10**9), _places)
_short = st.builds(lambda n, p: Fraction(n, 10**p), st.integers(-99, 99), _places)
_operand = st.one_of(_number, _short, st.sampled_from([Fraction(0), Fraction(1), Fraction(-1), Fraction(10**8), Fraction(99999999)]))


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_operand, _operand, st.sampled_from(["+", "-", "*"]))
def test_a_sum_difference_or_product_read_from_right_digits_is_the_steps_value(a, b, op):
    proc, env, rung, sub = _derived(op, a, b)
    if sub is None:  # a product with a zero factor has no row to write; one of two long factors is too long to ask
        sheet = rung.sheet(proc, 0, env)
        assert op == "*" and (0 in (a, b) or (sheet is not None and len(sheet.steps) > MAX_SUB_STEPS))
        return
    assert "r" not in sub.variables  # the step's value is read, never asked
    assert _read(rung, proc, env, _texts(sub)) == _want(proc, a, b)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(_operand, _operand.filter(lambda v: v != 0), st.integers(0, 4), st.sampled_from(["ROUND_HALF_EVEN", "ROUND_HALF_UP"]))
def test_a_quotient_is_read_from_right_digits_then_rounded_to_the_steps_scale(a, b, scale, rounding):
    proc, env = _step("/", scale, rounding), {"a": a, "b": b}
    rung = _rung("/")
    sub = rung.derive(proc, 0, env)
    if sub is None:
        return  # a power-of-ten divisor (the point alone) or a truncation that would round otherwise: not asked
    texts = _texts(sub)
    assert _read(rung, proc, env, texts) == round_to_scale(a / b, scale, rounding)
    assert sub.steps[-1].scale == scale and sub.steps[-1].rounding == rounding  # the rounding is its own last sub-step


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(_operand, _operand, st.sampled_from(["+", "-", "*"]), st.data())
def test_a_single_wrong_digit_anywhere_reads_a_wrong_value(a, b, op, data):
    """Every place the value is read from is a digit of the model's: one digit changed, the number changes."""
    proc, env, rung, sub = _derived(op, a, b)
    if sub is None:
        return
    texts = _texts(sub)
    sheet = rung.sheet(proc, 0, env)
    assert sheet is not None
    read_from = [p for p in sheet.reading.places if p.part != "zero"]
    place = data.draw(st.sampled_from(read_from))
    text = texts[place.var] or ""
    start, end = len(text) - len(text.lstrip("-")), len(text) - (2 if place.part == "lead" else 1)  # a lead: every digit but the last
    at = len(text) - 1 if place.part == "last" else data.draw(st.integers(start, end))
    digit = data.draw(st.sampled_from([d for d in "0123456789" if d != text[at]]))
    if place.part in ("all", "lead") and at == len(text) - len(text.lstrip("-")) and digit == "0" and len(text.lstrip("-")) > 1:
        digit = "1" if text[at] != "1" else "2"  # a leading zero reads the same number: write another wrong digit
    wrong = {**texts, place.var: text[:at] + digit + text[at + 1:]}
    assert _read(rung, proc, env, wrong) != _want(proc, a, b)


@pytest.mark.slow
@pytest.mark.parametrize("a,op,b", [
    (468, "+", 228), (-280, "-", 14), (365, "-", -633), (-472, "+", -226), (-454, "+", -144), (-288, "+", -8),  # the 95-step stops
    ("75.4", "+", "2.5"), (0, "+", 0), (0, "-", 7), (999999, "+", 1), (1, "-", 1000000), (1000, "-", 999), (-5, "+", 5),
    ("6777.95", "*", "0.05"), ("17676.76", "*", "0.072"), ("23.5", "*", "38.31"), (99999, "*", 99999), (-7, "*", 8),
])
def test_the_digit_rungs_verify_the_steps_that_stopped_runs_on_a_right_model(a, op, b):
    """End to end on a model wrong on the step every time and right on every digit: verified, and the
    ``read`` event names the rung and records every sub-step the model wrote."""
    proc = Procedure.model_validate({"name": "d", "inputs": ["a", "b"], "steps": [
        {"var": "x", "expr": "a"}, {"var": "y", "expr": "b"}, {"var": "r", "expr": f"x {op} y"}]})
    model = ScriptedModel(always_wrong={"r"})
    result = Guard(model, GuardConfig(ladder=("digits",), max_reprompts_per_step=1)).run(proc, {"a": a, "b": b})
    assert result.status == "verified", result.deviations
    assert result.values["r"] == proc.expected_values({"a": Fraction(str(a)), "b": Fraction(str(b))})["r"]
    read = [e for e in result.deviations if e.action == "read"]
    assert len(read) == 1 and read[0].rung == "digits" and read[0].step == "r"
    sub = get_rung("digits").derive(proc, 2, {"x": Fraction(str(a)), "y": Fraction(str(b))})
    assert sub is not None and all(f"{s.var} = {s.expr} = " in read[0].detail for s in sub.steps)
    assert next(s for s in result.steps if s.var == "r").provenance == "model_verified"


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_operand, _operand, st.sampled_from(["+", "-", "*"]), st.data())
def test_a_model_wrong_on_one_digit_sub_step_never_verifies_the_step(a, b, op, data):
    proc = Procedure.model_validate({"name": "d", "inputs": ["a", "b"], "steps": [
        {"var": "x", "expr": "a"}, {"var": "y", "expr": "b"}, {"var": "r", "expr": f"x {op} y"}]})
    sub = get_rung("digits").derive(proc, 2, {"x": a, "y": b})
    if sub is None:
        return
    wrong = data.draw(st.sampled_from([s.var for s in sub.steps]))
    model = ScriptedModel(always_wrong={"r", wrong})
    result = Guard(model, GuardConfig(ladder=("digits",), max_reprompts_per_step=1, on_exhausted="flag")).run(proc, {"a": a, "b": b})
    assert result.status != "verified"
    assert next(s for s in result.steps if s.var == "r").provenance != "model_verified"
    assert not any(e.action == "read" for e in result.deviations)
    assert f"sub-step {wrong} = " in " ".join(e.detail for e in result.deviations)


@pytest.mark.slow
@pytest.mark.parametrize("a,b,scale", [("12845.5", "80000", 4), ("1350.43", "12", 2), ("99365.7", "8", 2), ("-7", "3", 3),
                                       ("1", "-0.25", 1)])
def test_a_quotient_is_verified_on_the_simulator_through_its_rounding_sub_step(a, b, scale):
    proc, env = _step("/", scale), {"a": Fraction(a), "b": Fraction(b)}
    rung = get_rung("digits")
    assert isinstance(rung, DigitRung)
    sub = rung.derive(proc, 0, env)
    exprs = [s.expression or "" for s in sub.steps]
    assert sub is not None and not any("//" in e for e in exprs)  # no quotient digit asked whole
    assert any(e.startswith("max(") for e in exprs)  # each one a choice of the larger of the remainder and a multiple
    read = rung.read(proc, 0, env, _on_sim(rung, sub))
    assert read is not None and Fraction(read.value) == round_to_scale(Fraction(a) / Fraction(b), scale, "ROUND_HALF_EVEN")


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_operand, _operand, st.sampled_from(["+", "-", "*"]))
def test_every_digit_rungs_sub_procedure_reads_back_the_steps_value_on_sim_perfect(a, b, op):
    proc, env, rung, sub = _derived(op, a, b)
    if sub is not None:
        assert _read(rung, proc, env, _on_sim(rung, sub)) == _want(proc, a, b)


@pytest.mark.parametrize("a,b", [(999999, 1), (99999999, 99999999), (5, 5)])
def test_a_carry_that_ripples_through_every_column_is_read_into_the_leading_digit(a, b):
    proc, env = _step("+"), {"a": Fraction(a), "b": Fraction(b)}
    sub = _rung("+").derive(proc, 0, env)
    assert sub is not None
    exprs = [s.expression or "" for s in sub.steps]
    assert all(e.count("+") == 1 for e in exprs)  # one addition a sub-step: a carry is a column of its own
    assert sum(e.endswith(" + 1") for e in exprs) >= len(str(max(a, b))) - 1  # every column after the first takes a carry
    assert _read(_rung("+"), proc, env, _texts(sub)) == a + b


def test_a_difference_of_mixed_signs_chooses_the_larger_and_asks_the_sign_alone():
    proc, env = _step("-"), {"a": Fraction(-280), "b": Fraction(14)}
    sub = _rung("-").derive(proc, 0, env)
    assert sub is not None
    assert [s.expression for s in sub.steps] == ["0 + 4", "8 + 1", "2 + 0", "max((-280), 0)"]  # 280 + 14 by columns, then the sign
    proc2, env2 = _step("+"), {"a": Fraction(20), "b": Fraction(-715)}
    sub2 = _rung("+").derive(proc2, 0, env2)
    assert sub2 is not None
    assert [s.expression for s in sub2.steps] == ["15 - 0", "11 - 2", "7 - 0", "7 - 1", "max((-715), 0)"]  # 715 is longer: read
    proc3, env3 = _step("+"), {"a": Fraction(472), "b": Fraction("-426.5")}
    sub3 = _rung("+").derive(proc3, 0, env3)
    assert sub3 is not None  # 4720 and 4265 aligned at the point first differ in their second digit
    assert [s.expression for s in sub3.steps][0] == "max(7, 2)"
    assert _read(_rung("+"), proc3, env3, _texts(sub3)) == Fraction("45.5")


def test_the_digit_rungs_come_last_in_the_default_ladders():
    from stepguard.guard._config import PRODUCTION_SETTINGS
    from stepguard.guard.rungs._base import SUB_STEP_LADDER

    for ladder in (GuardConfig().ladder, PRODUCTION_SETTINGS["ladder"], SUB_STEP_LADDER):
        assert ladder[-1] == "digits" and "digits" not in ladder[:-1]
    assert GuardConfig().max_reprompts_per_step >= len(GuardConfig().ladder)  # the last rung is reached


def test_a_digit_rung_costs_nothing_where_a_cheaper_rung_succeeds():
    proc = Procedure.model_validate({"name": "d", "inputs": ["a", "b"], "steps": [
        {"var": "x", "expr": "a"}, {"var": "y", "expr": "b"}, {"var": "r", "expr": "x + y"}]})
    model = ScriptedModel(faults={"r": ["wrong"]})
    result = Guard(model, GuardConfig()).run(proc, {"a": 468, "b": 228})
    assert result.status == "verified" and not any(e.rung == "digits" for e in result.deviations)
    assert not any("d1 = " in m[-1]["content"] for m in model.calls)


@pytest.mark.parametrize("name", DIGIT_RUNGS)
def test_a_digit_rung_does_not_apply_beyond_one_operation_of_finite_decimals(name):
    rung = get_rung(name)
    two = Procedure.model_validate({"name": "d", "inputs": ["a", "b"], "steps": [{"var": "r", "expr": "a * b + 1"}]})
    if name != "digits":  # digits chains a step of several operations (below)
        assert rung.derive(two, 0, {"a": Fraction(3), "b": Fraction(4)}) is None
    third = _step("+")
    assert rung.derive(third, 0, {"a": Fraction(1, 3), "b": Fraction(1)}) is None


def test_digits_asks_a_step_of_several_operations_one_a_sub_step_each_failing_one_digit_by_digit():
    proc = Procedure.model_validate({"name": "d", "inputs": ["a", "b", "c"], "steps": [
        {"var": "r", "expr": "a * b / c", "type": "decimal", "scale": 2, "rounding": "ROUND_HALF_UP"}]})
    env = {"a": Fraction(1595108, 100), "b": Fraction(9, 100), "c": Fraction(12)}
    sub = get_rung("digits").derive(proc, 0, env)
    assert [(s.var, s.expr) for s in sub.steps] == [("t1", "15951.08 * 0.09"), ("t2", "t1 / 12"), ("r", "t2")]
    cfg = get_rung("digits").nested_config(GuardConfig(), 0, None, None, sub)
    assert cfg.ladder == DIGIT_CHAIN_LADDER and cfg.chunk_size == 1 and cfg.inline_known
    sheet = get_rung("digits").derive(_step("*"), 0, {"a": Fraction(37), "b": Fraction(46)})
    assert get_rung("digits").nested_config(GuardConfig(), 0, None, None, sheet).ladder == DIGIT_LADDER  # a sheet's own
    # the model never writes the product or the quotient right: each is read from its digits
    model = ScriptedModel(faults={"r": ["wrong"]}, always_wrong={"t1", "t2"})
    config = GuardConfig.for_procedure(proc, ladder=("digits",), max_reprompts_per_step=1, on_exhausted="flag")
    result = Guard(model, config).run(proc, {"a": "15951.08", "b": "0.09", "c": "12"})
    assert result.status == "verified" and str(result.answer) == "119.63"
    assert any("d1 = " in m[-1]["content"] for m in model.calls)  # digit sub-steps were asked


def test_a_read_event_is_a_record_not_a_deviation_the_benchmark_counts():
    from stepguard.bench.instances import Instance
    from stepguard.bench.rows import caught_deviations, guarded_row

    proc = Procedure.model_validate({"name": "d", "inputs": ["a", "b"], "steps": [
        {"var": "x", "expr": "a"}, {"var": "y", "expr": "b"}, {"var": "r", "expr": "x + y"}]})
    config = GuardConfig(ladder=("digits",), max_reprompts_per_step=1)
    result = Guard(ScriptedModel(always_wrong={"r"}), config).run(proc, {"a": 468, "b": 228})
    assert [e.action for e in result.deviations] == ["reprompt", "read"]
    assert result.rung_fixes() == {"digits": 1}
    inst = Instance(id="d", n_steps=3, inputs={"a": 468, "b": 228}, steps=[{"var": s.var, "expr": s.expr} for s in proc.steps],
                    expected={"x": 468, "y": 228, "r": 696}, answer=696)
    row = guarded_row(inst, result)
    assert row["deviation_counts"] == {"arithmetic_error": 1}
    assert [d.action for d in caught_deviations(row)] == ["reprompt"]


def test_the_default_ladder_reaches_digits_where_every_cheaper_rung_fails():
    """The 95-step store's S78 = S77 - S71 (-280 - 14): bridge, decompose and commute all failed on the model."""
    proc = Procedure.model_validate({"name": "d", "inputs": ["a", "b"], "steps": [
        {"var": "x", "expr": "a"}, {"var": "y", "expr": "b"}, {"var": "r", "expr": "x - y"}]})
    model = ScriptedModel(always_wrong={"r", *(f"t{i}" for i in range(1, 20))})  # the cheaper rungs' sub-steps: t1 .. tn, then r
    result = Guard(model, GuardConfig(on_exhausted="flag")).run(proc, {"a": -280, "b": 14})
    assert result.status == "verified" and result.answer == -294
    assert [e.rung for e in result.deviations if e.action == "reprompt"] == ["bridge", "decompose", "commute", "digits"]
    assert result.rung_fixes() == {"digits": 1}


@pytest.mark.slow
@pytest.mark.parametrize(("op", "a", "b", "scale"), [("*", 4789, 356, None), ("+", 4789, 356, None), ("-", 356, 4789, None),
                                                  ("/", 4789, 7, 2)])
def test_no_call_shows_a_value_the_model_is_about_to_write(op: str, a: int, b: int, scale: int | None) -> None:
    """A sheet's later literals are earlier sub-steps' values (``d3 = 48 + 5`` after ``d2 = 8 * 6``):
    every call of the nested run asks one sub-step, and no prompt holds the value of the sub-step it
    asks, or of a later one, as a literal before the model wrote it."""
    proc, env = _step(op, scale), {"a": Fraction(a), "b": Fraction(b)}
    sub = _rung(op).derive(proc, 0, env)
    assert sub is not None
    values = {var: format_number(v) for var, v in sub.expected_values({}).items()}
    model = ScriptedModel()
    result = Guard(model, _rung(op).nested_config(GuardConfig(), 0, None, None)).run(sub, {})
    assert result.status == "verified" and len(model.calls) == len(sub.steps)
    for i, messages in enumerate(model.calls):
        asked = sub.steps[i]
        lines = str(messages[-1]["content"]).split("Steps:", 1)[-1].split("Write", 1)[0].split()
        assert asked.var in lines and not any(later.var in lines for later in sub.steps[i + 1:])
        shown = set(lines) - set((asked.expression or "").split())  # the literals beside the asked line's own
        for later in sub.steps[i:]:
            assert values[later.var] not in shown or len(values[later.var]) == 1, (asked.var, later.var, lines)
