"""Issue 44, part 2: rungs that cover the expression language, not the suite.

A seeded generator of one-step procedures over the whole expression language
(:mod:`stepguard.bench.stepgen`), a SIMULATED model that slips on the embedded model's weak forms
(:mod:`stepguard.adapters.models.sim_slips`), and ``benchmarks/rung_coverage.py``, which runs each step under
its default ladder: every step verifies or each rung that refused it says which form and why.
"""

from __future__ import annotations

import ast
import io
from fractions import Fraction

import pytest

from benchmarks.rung_coverage import EXHAUSTED, FIRST_TRY, refusals, report, run_step
from stepguard import Guard, GuardConfig, Procedure
from stepguard.adapters.models.sim_slips import SlippingExecutor, columns_carry, product_carries, weak_forms
from stepguard.bench.stepgen import GeneratedStep, forms_of, generate_steps
from stepguard.evaluator import CompiledExpression, compile_expression, parse_number
from stepguard.guard import get_rung
from stepguard.guard.rungs.arith.chain import quotient_last

N = 40


@pytest.fixture(scope="module")
def generated() -> list[GeneratedStep]:
    return generate_steps(N, seed=7).steps


def _finite(value: Fraction) -> bool:
    d = value.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    return d == 1


def _signature(steps: list[GeneratedStep]) -> list[tuple[object, ...]]:
    return [(s.expr, tuple(s.inputs.items()), s.procedure.steps[0].type, s.procedure.steps[0].scale,
             s.procedure.steps[0].rounding) for s in steps]


def test_the_generator_is_deterministic_per_seed(generated: list[GeneratedStep]) -> None:
    assert len(generated) == N
    assert _signature(generate_steps(N, seed=7).steps) == _signature(generated)
    assert _signature(generate_steps(N, seed=8).steps) != _signature(generated)
    assert generate_steps(0).steps == []
    with pytest.raises(ValueError, match="n must be at least 0"):
        generate_steps(-1)


@pytest.mark.slow
def test_it_gives_only_valid_procedures_and_counts_what_it_skips(generated: list[GeneratedStep]) -> None:
    for step in generated:
        again = Procedure.model_validate(step.procedure.model_dump(exclude_unset=True))  # what `stepguard check` runs
        value = again.expected_values({k: parse_number(v) for k, v in step.inputs.items()})["v"]
        spec = again.steps[0]
        if spec.type not in ("boolean", "one_of") and spec.scale is None:
            assert _finite(Fraction(value)), (step.expr, value)  # no scale: a value a model can write
        assert spec.scale is None or 0 <= spec.scale <= 4
        assert step.forms == forms_of(again, step.inputs)
    many = generate_steps(300, seed=0)
    assert sum(many.skipped.values()) > 0 and all(reason and "'" not in reason for reason in many.skipped)
    forms = {f for s in many.steps for f in s.forms}
    for form in ("op:+", "op:-", "op:*", "op:/", "op://", "op:%", "op:**", "fn:abs", "fn:min", "fn:max", "fn:round", "fn:max/3",
                 "conditional", "compare:chained", "bool:and", "bool:or", "bool:not", "percentage", "quotient:last",
                 "quotient:inside a product", "quotient:inside a sum", "quotient:inside a call", "quotient:inside a conditional",
                 "rounding:ROUND_HALF_EVEN", "rounding:ROUND_HALF_UP", "sign:negative operand", "type:boolean", "type:one_of",
                 *(f"scale:{k}" for k in range(5))):
        assert form in forms, form


@pytest.mark.slow
def test_the_exact_rewrites_keep_every_generated_value(generated: list[GeneratedStep]) -> None:
    """quotient_last (quotients last, sums over one divisor, powers as products, remainders by floor
    quotients, comparisons times a square, min/max of a quotient as a conditional) changes no value."""
    rewritten = 0
    for step in generate_steps(200, seed=3).steps:
        compiled = step.procedure.compiled[0]
        assert compiled is not None
        tree = quotient_last(compiled.tree.body)
        if tree is None:
            continue
        env = {k: parse_number(v) for k, v in step.inputs.items()}
        again = CompiledExpression(compiled.source, compiled.names, ast.Expression(body=tree), compiled.limits)
        assert again.evaluate(env) == compiled.evaluate(env), step.expr
        rewritten += 1
    assert rewritten > 20


def test_the_simulated_model_knows_the_weak_forms() -> None:
    assert not product_carries(Fraction(19060), Fraction(100)) and product_carries(Fraction(12), Fraction(9))
    assert product_carries(parse_number("1.5"), parse_number("0.5")) and not product_carries(Fraction(21), Fraction(3))
    assert columns_carry(Fraction(468), Fraction(228), False) and not columns_carry(Fraction(123), Fraction(456), False)
    assert columns_carry(Fraction(500), Fraction(123), True) and not columns_carry(Fraction(987), Fraction(123), True)
    assert columns_carry(Fraction(-15), Fraction(8), False) and not columns_carry(Fraction(-5), Fraction(8), False)  # 15 - 8 borrows
    forms = lambda src: [f for _, f in weak_forms(compile_expression(src), {})]  # noqa: E731
    assert forms("19060 * 100") == [] and forms("1906000 / 71400") == ["quotient digits"] and forms("45.5 / 100") == []
    assert forms("3 < 4") == ["comparison"] and forms("3 == 4") == [] and forms("max(3, 3)") == [] and forms("min(3, 4)") == ["comparison"]


def test_its_first_answer_is_wrong_on_a_weak_form_and_its_slips_are_seeded() -> None:
    proc = Procedure.model_validate({"name": "p", "inputs": ["a", "b"], "steps": [{"var": "v", "expr": "a * b"}]})
    easy = Guard(SlippingExecutor(0, 0.25, proc), GuardConfig.for_procedure(proc)).run(proc, {"a": "21", "b": "3"})
    assert easy.status == "verified" and not easy.deviations  # 21 * 3 carries nowhere: right at once
    hard = Guard(SlippingExecutor(0, 0.25, proc), GuardConfig.for_procedure(proc)).run(proc, {"a": "47", "b": "38"})
    assert hard.deviations and hard.deviations[0].got != "1786"
    again = Guard(SlippingExecutor(0, 0.25, proc), GuardConfig.for_procedure(proc)).run(proc, {"a": "47", "b": "38"})
    assert [d.got for d in again.deviations] == [d.got for d in hard.deviations]
    with pytest.raises(ValueError, match="slip_rate"):
        SlippingExecutor(0, 1.5)
    with pytest.raises(ValueError, match="whole_step"):
        SlippingExecutor(0, 0.2, whole_step="never")  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize("whole_step", ["first", "always"])
def test_every_outcome_is_verified_or_names_its_refusals(generated: list[GeneratedStep], whole_step: str) -> None:
    outcomes = [run_step(s, 0, 0.25, whole_step) for s in generated]
    for o in outcomes:
        assert o.outcome == FIRST_TRY or o.outcome == EXHAUSTED or o.outcome.startswith("verified by "), o.outcome
        assert not o.wrong_verified, o.step.expr  # no silent error
        for rung, why in o.refusals:
            assert why and "does not apply to this step" not in why and rung in o.ladder, (rung, why)
        if o.outcome == EXHAUSTED:
            assert o.refusals, f"{o.step.expr}: exhausted with no rung named as refusing it"
    assert sum(o.outcome != EXHAUSTED for o in outcomes) >= N - 2
    if whole_step == "always":  # no resample of the whole step verifies it: the rungs do
        assert not any(o.outcome == "verified by resample" for o in outcomes)
    out = io.StringIO()
    report(outcomes, generate_steps(N, seed=7).skipped, out)
    table = out.getvalue()
    assert "| ladder | steps | verified |" in table and "| form | steps |" in table and "| rung | reason |" in table


def _one(expr: str, inputs: dict[str, str], **step: object) -> GeneratedStep:
    proc = Procedure.model_validate({"name": "named", "inputs": list(inputs), "steps": [{"var": "v", "expr": expr, **step}]})
    return GeneratedStep(proc, inputs, forms_of(proc, inputs))


NAMED = {
    "percentage": _one("a / b * 100", {"a": "19060", "b": "71400"}, type="decimal", scale=2, rounding="ROUND_HALF_EVEN"),
    "quotient in a conditional": _one("a / b * 100 if a < b else b / a", {"a": "19060", "b": "71400"}, type="decimal", scale=2),
    "quotient in a condition": _one("a * 2 if a / b > 0.25 else b", {"a": "19060", "b": "71400"}, scale=2),
    "min of products": _one("min(a * b, c * 12.5)", {"a": "47.5", "b": "38", "c": "147"}),
    "max of products": _one("max(a * b, c * 12.5)", {"a": "-47.5", "b": "38", "c": "-147"}),
    "negative operands": _one("a * b - c", {"a": "-47.25", "b": "38", "c": "-968.5"}),
    "power": _one("a ** 2", {"a": "71.03"}, scale=2, rounding="ROUND_HALF_UP"),
    "remainder": _one("a % 0.15", {"a": "6.4"}, type="decimal", scale=3),
    "chained comparison": _one("0 <= a * b <= 1000", {"a": "47", "b": "19"}, type="boolean"),
    "max of three": _one("max(a, b, c)", {"a": "46354.18", "b": "59325.426", "c": "20.9"}),
    "text choice": _one("'high' if a * b > 1000 else 'low'", {"a": "47", "b": "38"}, type="one_of", choices=["high", "low"]),
}


@pytest.mark.slow
@pytest.mark.parametrize("whole_step", ["first", "always"])
@pytest.mark.parametrize("name", list(NAMED))
def test_the_forms_the_issue_names_verify_on_the_slipping_model(name: str, whole_step: str) -> None:
    o = run_step(NAMED[name], 0, 0.25, whole_step)
    assert o.outcome != EXHAUSTED and not o.wrong_verified, (name, o.outcome, o.refusals)
    assert o.outcome != FIRST_TRY  # every one holds a weak form: the first answer was wrong
    if whole_step == "always":
        assert o.outcome in ("verified by split", "verified by digits"), o.outcome


def test_the_issues_percentage_is_verified_at_its_value() -> None:
    step = NAMED["percentage"]
    result = Guard(SlippingExecutor(0, 0.25, step.procedure, "always"), GuardConfig.for_procedure(step.procedure)).run(
        step.procedure, step.inputs)
    assert result.status == "verified" and result.answer_text == "26.69"


def test_a_refusal_names_the_form_and_the_event_says_it() -> None:
    floor = _one("a // b", {"a": "7773", "b": "5"}, type="integer")
    env = {"a": Fraction(7773), "b": Fraction(5)}
    assert get_rung("split").refusal(floor.procedure, 0, env).endswith("re-asks an integer floor quotient")
    assert "an integer floor quotient" in get_rung("digits").refusal(floor.procedure, 0, env)
    assert get_rung("bridge").refusal(floor.procedure, 0, env) == (
        "re-asks an integer sum or difference of two operands that carries or borrows only, not an integer floor quotient")
    assert refusals(floor, ("split", "resample", "digits")) == [
        ("split", get_rung("split").refusal(floor.procedure, 0, env)), ("digits", get_rung("digits").refusal(floor.procedure, 0, env))]
    endless = _one("min(a / b, c) * 2", {"a": "1", "b": "3", "c": "5"}, scale=2)
    why = get_rung("chain").refusal(endless.procedure, 0, {"a": 1, "b": 3, "c": 5})
    assert "not a finite decimal" in why and "min() reads it" in why
    result = Guard(SlippingExecutor(0, 0.25, floor.procedure, "always"),
                   GuardConfig.for_procedure(floor.procedure, on_exhausted="flag")).run(floor.procedure, floor.inputs)
    details = " ".join(d.detail for d in result.deviations)
    assert "[split does not apply to this step; asked resample; none of tie, choice" in details
    assert "re-asks an integer floor quotient" in details


def test_every_derived_rung_names_the_form_it_refuses() -> None:
    """A registered rung that derives sub-steps says what it re-asks and what the step is, never only
    that it does not apply; a rung that asks the step as it is says so."""
    from stepguard.guard.rungs import rung_names

    floor = _one("a // b", {"a": "7773", "b": "5"})
    env = {"a": Fraction(7773), "b": Fraction(5)}
    for name in rung_names():
        rung = get_rung(name)
        if not type(rung).__module__.startswith("stepguard."):
            continue  # a rung another test registered
        why = rung.refusal(floor.procedure, 0, env)
        assert why and "another form" not in why and "does not apply" not in why, (name, why)
        if rung.derives:
            assert rung.derive(floor.procedure, 0, env) is None, name
            assert "floor quotient" in why or (name == "chain" and why.startswith("fewer than two operations")), (name, why)


def test_a_refusal_of_a_step_of_the_rungs_own_form_does_not_contradict_itself() -> None:
    """New-user pass: bridge on 1 + 2 said it re-asks "an integer sum ... that carries or borrows only,
    not an integer sum", which reads as a contradiction; the step is of its form, short of a condition."""
    from stepguard import Procedure
    from stepguard.guard.rungs import get_rung

    proc = Procedure.model_validate({"name": "m", "inputs": {"x": "integer", "y": "integer"}, "steps": [{"var": "S1", "expr": "x + y"}]})
    why = get_rung("bridge").refusal(proc, 0, {"x": 1, "y": 2})
    assert "not an integer sum" not in why and "this step, an integer sum, is not one" in why
