"""Issue 14, kind 3: every check a procedure file states is enforced, or the file is refused."""

from __future__ import annotations

import json

import pytest

from stepguard import Guard, GuardConfig, ProcedureError, parse_procedure
from stepguard.adapters import load_model
from tests._fakes import DIGIT_SUB_STEPS, ScriptedModel


def _proc(step: dict, inputs=("a", "b")) -> object:
    return parse_procedure(json.dumps({"name": "p", "inputs": list(inputs), "steps": [step]}), "p.json", fmt="json")


def test_an_expr_and_a_disagreeing_expected_check_refuse_the_run_before_any_call() -> None:
    proc = _proc({"var": "s", "expr": "a + b", "check": "a + b + 1"})
    model = ScriptedModel()
    with pytest.raises(ProcedureError, match=r"contradicts itself.*gives 7.*gives 8"):
        Guard(model).run(proc, {"a": 3, "b": 4})
    assert model.calls == []
    with pytest.raises(ProcedureError, match="contradicts itself"):
        proc.expected_values({"a": 3, "b": 4})


def test_a_check_that_agrees_only_for_some_inputs_is_enforced_for_each() -> None:
    proc = _proc({"var": "s", "expr": "a * b", "check": "a + b"})  # equal only at a = b = 2 (and 0, 0)
    assert Guard(load_model("sim:perfect")).run(proc, {"a": 2, "b": 2}).status == "verified"
    with pytest.raises(ProcedureError, match="contradicts itself"):
        Guard(load_model("sim:perfect")).run(proc, {"a": 3, "b": 4})


@pytest.mark.slow
def test_an_expected_check_is_enforced_on_the_models_value() -> None:
    """The value must equal both; with expr alone the model's 7 would pass, the check wants 7 too."""
    proc = _proc({"var": "s", "expr": "a + b", "check": "b + a"})
    result = Guard(ScriptedModel()).run(proc, {"a": 3, "b": 4})
    assert result.status == "verified" and result.answer == 7
    wrong = Guard(ScriptedModel(always_wrong={"s", *DIGIT_SUB_STEPS}), GuardConfig(on_exhausted="flag")).run(proc, {"a": 3, "b": 4})
    assert wrong.status == "flagged"


def test_a_predicate_false_for_the_exprs_own_value_refuses_the_run_before_any_call() -> None:
    proc = _proc({"var": "s", "expr": "a - b", "check": "value >= 0"})
    model = ScriptedModel()
    with pytest.raises(ProcedureError, match=r"a = 3, b = 4 give step s no value that passes its check: its expr 'a - b' "
                                             r"gives -1, for which its check 'value >= 0' is false; check the inputs"):
        Guard(model).run(proc, {"a": 3, "b": 4})
    assert model.calls == []
    assert Guard(ScriptedModel()).run(proc, {"a": 4, "b": 3}).status == "verified"


@pytest.mark.parametrize(("step", "inputs", "why"), [
    ({"var": "s", "expr": "a / 2", "type": "integer"}, {"a": 5, "b": 0}, "declared integer, but its expr gives 2.5"),
    ({"var": "s", "expr": "a + 1", "type": "boolean"}, {"a": 5, "b": 0}, "declared boolean"),
    ({"var": "s", "expr": "'big' if a > b else 'small'", "type": "one_of", "choices": ["large", "small"]}, {"a": 5, "b": 0}, "choices: large, small"),
    ({"var": "s", "expr": "a * 2", "type": "string"}, {"a": 5, "b": 0}, "declared string"),
])
def test_an_expected_value_its_type_cannot_hold_is_refused_not_rounded(step: dict, inputs: dict, why: str) -> None:
    """An integer step's x / 2 was rounded half-to-even, a rule the file never states."""
    model = ScriptedModel()
    with pytest.raises(ProcedureError, match=why):
        Guard(model).run(_proc(step), inputs)
    assert model.calls == []


@pytest.mark.parametrize(
    ("step", "why"),
    [
        ({"var": "s", "expr": "a", "choices": ["x", "y"]}, "choices apply only to type one_of"),
        ({"var": "s", "expr": "a", "rounding": "ROUND_HALF_UP"}, "rounding applies only with scale"),
        ({"var": "s", "expr": "a > b", "type": "boolean", "scale": 2}, "scale applies only to type decimal or number"),
    ],
)
def test_a_rule_that_would_be_ignored_refuses_the_file(step: dict, why: str) -> None:
    with pytest.raises(ProcedureError, match=why):
        _proc(step)
