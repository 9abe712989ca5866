"""The ``bridge`` rung: a carry or borrow asked through the round number, each sub-step checked."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stepguard import Guard, GuardConfig, Procedure
from stepguard.evaluator import compile_expression
from stepguard.guard.rungs.arith.bridge import bridge_step
from tests._fakes import ScriptedModel


def _one_step(op: str) -> Procedure:
    return Procedure.model_validate({"name": "b", "inputs": ["a", "b"], "steps": [{"var": "S1", "expr": f"a {op} b"}]})


def _run(sub: Procedure) -> int:
    """The sub-procedure's last value, evaluated exactly as the guard checks it."""
    return sub.expected_values({})[sub.answer_var]


@pytest.mark.parametrize("a,op,b,steps", [
    (20, "-", 715, ["715 - 15", "t1 - 5", "-t2"]),        # -695: down to 700 first
    (-219, "-", -21, ["219 - 19", "t1 - 2", "-t2"]),      # -198: down to 200 first
    (6, "-", 504, ["504 - 4", "t1 - 2", "-t2"]),          # -498
    (171, "-", -168, ["171 + 29", "t1 + 100", "t2 + 30", "t3 + 9"]),  # 339: up to 200 first
    (504, "+", -416, ["504 - 4", "t1 - 400", "t2 - 10", "t3 - 2"]),   # 88
    (331, "+", 8, ["31 + 8", "300 + t1"]),                            # crosses nothing: 300 set aside
    (2, "-", -492, ["92 + 2", "400 + t1"]),
    (-280, "-", 14, ["80 + 14", "200 + t1", "-t2"]),
])
def test_bridge_goes_to_the_round_number_first(a, op, b, steps):
    sub = bridge_step(_one_step(op), 0, {"a": a, "b": b})
    assert sub is not None and [s.expr for s in sub.steps] == steps
    assert sub.steps[-1].var == "S1" and _run(sub) == compile_expression(f"a {op} b").evaluate({"a": a, "b": b})


@pytest.mark.parametrize("a,op,b", [(700, "-", 5), (7, "+", 2), (12, "*", 31)])
def test_bridge_does_not_apply_to_a_step_it_cannot_split(a, op, b):
    """One sub-step already (700 - 5, 7 + 2), or not a sum: the ladder asks it plainly."""
    assert bridge_step(_one_step(op), 0, {"a": a, "b": b}) is None


@pytest.mark.slow
@given(st.integers(-10**6, 10**6), st.integers(-10**6, 10**6), st.sampled_from(["+", "-"]))
def test_bridge_sub_steps_always_compute_the_step_in_more_than_one_sub_step(a, b, op):
    sub = bridge_step(_one_step(op), 0, {"a": a, "b": b})
    if sub is None:
        return
    want = compile_expression(f"a {op} b").evaluate({"a": a, "b": b})
    assert _run(sub) == want
    assert len(sub.steps) >= 2


def test_bridge_rung_fixes_a_wrong_borrow_with_checked_sub_steps():
    proc = Procedure.model_validate({"name": "d", "inputs": ["a", "b"], "steps": [
        {"var": "S1", "expr": "a"}, {"var": "S2", "expr": "b"}, {"var": "S3", "expr": "S1 - S2"}]})
    model = ScriptedModel(faults={"S3": ["wrong"]})
    result = Guard(model, GuardConfig(ladder=("bridge",))).run(proc, {"a": 20, "b": 715})
    assert result.status == "verified" and result.answer == -695
    assert result.rung_fixes() == {"bridge": 1}
    sub_prompt = model.calls[1][-1]["content"]
    assert "t1 = 715 - 15\nt2 = t1 - 5\nS3 = -t2" in sub_prompt and "695" not in sub_prompt
    assert all(s.provenance == "model_verified" for s in result.steps)


def test_a_step_over_numbers_alone_is_asked_with_its_expression_before_the_result():
    """With ``t1 = <result>`` the embedded model copied ``t1 = 715 - 15`` and stopped (25 of 27 first tries)."""
    from stepguard.guard._prompts import PromptSet

    sub = bridge_step(_one_step("-"), 0, {"a": 20, "b": 715})
    text = PromptSet().chunk_messages(sub, [0, 1, 2], {})[-1]["content"]
    assert "\nt1 = 715 - 15 = <result>\n" in text
    const = Procedure.model_validate({"steps": [{"var": "S1", "expr": "12"}]})
    assert "\nS1 = <result>\n" in PromptSet().chunk_messages(const, [0], {})[-1]["content"]
