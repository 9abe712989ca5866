"""Issue 16, deliverable 1: any expression as a chain of checked single operations."""

from __future__ import annotations

from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st
import pytest

from stepguard import Guard, GuardConfig, Procedure
from stepguard.evaluator import parse_number
from stepguard.guard import get_rung
from tests._fakes import ScriptedModel

CHAIN = get_rung("chain")


def _one(expr: str, inputs: tuple[str, ...] = ("income",), **step: object) -> Procedure:
    return Procedure.model_validate({"name": "p", "inputs": list(inputs), "steps": [{"var": "band2", "expr": expr, **step}]})


def test_the_issue_example_becomes_four_single_operations() -> None:
    proc = _one("max(0, min(income, 50000) - 12000) * 0.25", type="decimal", scale=2, rounding="ROUND_HALF_UP")
    sub = CHAIN.derive(proc, 0, {"income": 61000})
    assert [(s.var, s.expr) for s in sub.steps] == [
        ("t1", "min(61000, 50000)"), ("t2", "t1 - 12000"), ("t3", "max(0, t2)"), ("band2", "t3 * 0.25"),
    ]
    last = sub.steps[-1]
    assert (last.type, last.scale, last.rounding) == ("decimal", 2, "ROUND_HALF_UP")  # the rule applied once, at the end


def test_a_conditional_becomes_its_condition_then_the_branch_it_takes() -> None:
    proc = _one("income * 0.05 if income >= 100 else 0", type="decimal", scale=2)
    sub = CHAIN.derive(proc, 0, {"income": parse_number("100.10")})
    assert [(s.var, s.expr, s.type) for s in sub.steps] == [
        ("t1", "max(100.1, 100)", "number"), ("t2", "t1 == 100.1", "boolean"),  # the comparison as a choice
        ("t3", "100.1 * 0.05", "number"),  # the branch taken: no choice sub-step (tests/guard/rungs/test_chain_branch.py)
        ("band2", "t3", "decimal"),  # 5.005 rounded to 2 places: a sub-step of its own
    ]
    assert (sub.steps[-1].scale, sub.steps[-1].rounding) == (2, "ROUND_HALF_EVEN")
    below = CHAIN.derive(proc, 0, {"income": parse_number("99.5")})  # the bare 0 taken: the whole step keeps its choice
    assert below is not None and below.steps[-1].expr.endswith("if t2 else 0")


def test_a_last_quotient_with_no_finite_value_carries_the_rounding_itself() -> None:
    bmi = _one("income / (height * height)", ("income", "height"), type="decimal", scale=1, rounding="ROUND_HALF_UP")
    sub = CHAIN.derive(bmi, 0, {"income": parse_number("75.8"), "height": parse_number("1.9")})
    assert [(s.var, s.expr, s.scale, s.rounding) for s in sub.steps] == [
        ("t1", "1.9 * 1.9", None, "ROUND_HALF_EVEN"), ("band2", "75.8 / t1", 1, "ROUND_HALF_UP"),
    ]  # 75.8 / 3.61 = 20.99722...: asked to 1 place, not as an exact sub-step no model could write
    assert sub.expected_values({})["band2"] == 21
    # a finite quotient keeps its exact sub-step and the rounding after it
    sub = CHAIN.derive(bmi, 0, {"income": parse_number("75.8"), "height": parse_number("2")})
    assert [(s.var, s.expr) for s in sub.steps] == [("t1", "2 * 2"), ("t2", "75.8 / t1"), ("band2", "t2")]
    # an endless quotient before a product: the product first, the quotient last (an exact rewrite)
    sub = CHAIN.derive(_one("income / height * 2", ("income", "height"), type="decimal", scale=1), 0,
                       {"income": parse_number("75.8"), "height": parse_number("3")})
    assert [(s.var, s.expr, s.scale) for s in sub.steps] == [("t1", "75.8 * 2", None), ("band2", "t1 / 3", 1)]
    # an endless quotient before a sum: the sum over the one divisor, the quotient last (an exact rewrite)
    sub = CHAIN.derive(_one("income / height + 2", ("income", "height"), type="decimal", scale=1), 0,
                       {"income": parse_number("75.8"), "height": parse_number("3")})
    assert [(s.var, s.expr, s.scale) for s in sub.steps] == [("t1", "2 * 3", None), ("t2", "75.8 + t1", None), ("band2", "t2 / 3", 1)]
    assert sub.expected_values({})["band2"] == parse_number("27.3")


def test_it_does_not_apply_where_it_cannot_help_or_cannot_be_exact() -> None:
    assert CHAIN.derive(_one("income * 2"), 0, {"income": 3}) is None  # one operation: other rungs
    assert CHAIN.derive(_one("income / 3 + 3"), 0, {"income": 1}) is None  # 1/3 cannot be written exactly
    label = Procedure.model_validate({"name": "p", "inputs": [{"name": "tier", "type": "string"}],
                                      "steps": [{"var": "s", "expr": "1 if tier == 'gold' else 2 + 1"}]})
    # a text compared is a sub-step of its own (it was refused as a text operand; issue 44, part 2)
    sub = CHAIN.derive(label, 0, {"tier": "gold"})
    assert sub is not None
    assert [(x.var, x.expr) for x in sub.steps] == [("t1", "'gold' == 'gold'"), ("t2", "2 + 1"), ("s", "1 if t1 else t2")]


def _operations(expr: str) -> int:
    """Operations in an expression: operators, calls, comparisons, choices (a negative literal is none)."""
    import ast

    tree = ast.parse(expr, mode="eval")
    return sum(isinstance(n, (ast.BinOp, ast.Call, ast.Compare, ast.IfExp, ast.BoolOp))
               or (isinstance(n, ast.UnaryOp) and not isinstance(n.operand, ast.Constant)) for n in ast.walk(tree))


_leaf = st.one_of(st.sampled_from(["a", "b", "c"]), st.decimals(min_value=-500, max_value=500, places=2).map(str))


def _expr(depth: int) -> st.SearchStrategy[str]:
    if depth == 0:
        return _leaf
    sub = _expr(depth - 1)
    return st.one_of(
        _leaf,
        st.tuples(sub, st.sampled_from(["+", "-", "*"]), sub).map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        st.tuples(st.sampled_from(["min", "max"]), sub, sub).map(lambda t: f"{t[0]}({t[1]}, {t[2]})"),
        st.tuples(sub, sub, sub).map(lambda t: f"({t[0]} if {t[1]} > {t[2]} else {t[2]})"),
    )


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(expr=_expr(3), a=st.decimals(-999, 999, places=2), b=st.integers(-50, 50), c=st.decimals(0, 99, places=1))
def test_the_chain_always_computes_the_steps_own_value(expr: str, a: Decimal, b: int, c: Decimal) -> None:
    proc = Procedure.model_validate({"name": "p", "inputs": ["a", "b", "c"],
                                     "steps": [{"var": "s", "expr": expr, "type": "decimal", "scale": 2, "rounding": "ROUND_HALF_UP"}]})
    env = {"a": parse_number(str(a)), "b": b, "c": parse_number(str(c))}
    try:
        want = proc.expected_values(env)["s"]
    except Exception:  # noqa: BLE001 - a value beyond the evaluator's bounds: nothing to compare
        return
    sub = CHAIN.derive(proc, 0, env)
    if sub is None:
        return
    *ops, last = sub.steps
    assert all(_operations(s.expr) == 1 for s in ops), [s.expr for s in sub.steps]
    assert _operations(last.expr) == 1 or (last.expr == ops[-1].var and last.scale == 2)  # or the rounding alone
    assert sub.expected_values({})["s"] == want


def test_the_guard_verifies_a_multi_operation_step_through_the_chain() -> None:
    proc = Procedure.model_validate({
        "name": "tax", "inputs": [{"name": "income", "type": "decimal"}],
        "steps": [{"var": "band2", "expr": "max(0, min(income, 50000) - 12000) * 0.25", "type": "decimal", "scale": 2}],
    })
    model = ScriptedModel(faults={"band2": ["wrong"]})
    result = Guard(model, GuardConfig(ladder=("chain",))).run(proc, {"income": "61000"})
    assert result.status == "verified" and result.answer == Decimal("9500.00")
    assert [(d.action, d.rung) for d in result.deviations] == [("reprompt", "chain")]
    nested = [call[-1]["content"] for call in model.calls[1:]]  # one sub-step a call, values written in
    assert len(nested) == 4 and "t1 = min(61000, 50000)" in nested[0] and "band2 = 38000 * 0.25" in nested[-1]


def test_a_rung_that_does_not_apply_is_named_in_the_result() -> None:
    proc = _one("income * 2")
    result = Guard(ScriptedModel(faults={"band2": ["wrong"]}), GuardConfig(ladder=("chain",))).run(proc, {"income": 3})
    event = next(d for d in result.deviations if d.action == "reprompt")
    # a one-step procedure was already asked alone: resampled, not narrowed (the same request again)
    assert event.rung == "resample" and "chain does not apply to this step; asked resample" in event.detail
    assert "fewer than two operations" in event.detail  # and why, named (Rung.refusal)
