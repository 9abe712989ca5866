"""Issue 43.3: where a run follows the model with sub-steps together (every run's default), the rungs that ask
sub-steps alone (``chain``, ``choice``, ``tie``, and ``split`` and ``single`` that reach them) ask them in windows
that follow the model; a sub-step that deviates is then asked alone with its values written in. No window asks a
sub-step with one that decided whether it is asked or what its literals are (a condition and the branch it took).
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from stepguard import Guard, GuardConfig, Procedure
from stepguard.guard.rungs import get_rung
from tests._fakes import ScriptedModel, asked_steps

STEP = Procedure.model_validate({"name": "p", "inputs": ["a", "b", "c"], "steps": [
    {"var": "r", "expr": "a * b + c * 2 - 7", "type": "decimal", "scale": 2}]})
INPUTS = {"a": "12.5", "b": "3", "c": "4.25"}


def _nested(model: ScriptedModel) -> list[list[str]]:
    """The sub-steps each call of the nested runs asked (every call after the first, which asks ``r``)."""
    return [asked_steps(m) for m in model.calls[1:]]


def test_a_chain_re_ask_is_one_window_where_the_run_follows_the_model() -> None:
    model = ScriptedModel(faults={"r": ["wrong"]})
    result = Guard(model, GuardConfig.for_procedure(STEP)).run(STEP, INPUTS)
    assert result.status == "verified" and result.values["r"] == Fraction("39")
    sub = get_rung("split").derive(STEP, 0, {k: Fraction(v) for k, v in INPUTS.items()})
    assert sub is not None and len(sub.steps) >= 3
    assert _nested(model) == [[s.var for s in sub.steps]]  # every sub-step in one window


@pytest.mark.parametrize("run", [{"substeps_together": False}, {"follow": False}, {"streamed": True}])
def test_without_following_with_sub_steps_together_a_chain_asks_one_sub_step_a_call(run: dict[str, object]) -> None:
    model = ScriptedModel(faults={"r": ["wrong"]})
    result = Guard(model, GuardConfig.for_procedure(STEP, **run)).run(STEP, INPUTS)
    assert result.status == "verified"
    assert all(len(asked) == 1 for asked in _nested(model)) and len(_nested(model)) >= 3


def test_a_sub_step_that_deviates_in_the_window_goes_up_its_ladder_and_the_window_resumes_after_it() -> None:
    """``t2 = 4.25 * 2`` written wrong: the window is cut there (``t1`` kept), ``t2`` is re-asked by the nested
    ladder's first rung (``single``: ``425 * 2``, then the point, itself one window), and a window asks the rest
    with the verified values written in (``t3 = 37.5 + 8.5``)."""
    model = ScriptedModel(faults={"r": ["wrong"], "t2": ["wrong"]})
    result = Guard(model, GuardConfig.for_procedure(STEP)).run(STEP, INPUTS)
    assert result.status == "verified" and result.values["r"] == Fraction("39")
    assert _nested(model) == [["t1", "t2", "t3", "r"], ["u1", "u2", "t2"], ["t3", "r"]]
    lines = str(model.calls[-1][-1]["content"]).split("Steps:\n", 1)[1].splitlines()
    assert lines[0] == "t3 = 37.5 + 8.5" and lines[1].startswith("r = t3 - 7")


RATE = Procedure.model_validate({"name": "c", "inputs": ["x"], "steps": [
    {"var": "rate", "expr": "0.07 if x >= 1.25 else (0.05 if x >= 1 else 0.03)", "type": "decimal", "scale": 2}]})


def test_no_window_asks_a_sub_step_with_the_condition_that_decided_it() -> None:
    """``rate`` for ``x = 0.1606``: ``max(0.1606, 1.25)``, ``t1 == 0.1606`` (False), then the inner condition's
    sub-steps, whose being asked shows the outer was False, then ``rate`` over the branch the inner one took."""
    model = ScriptedModel(faults={"rate": ["wrong"]})
    result = Guard(model, GuardConfig.for_procedure(RATE)).run(RATE, {"x": "0.1606"})
    assert result.status == "verified" and result.values["rate"] == Fraction("0.03")
    assert _nested(model) == [["t1", "t2"], ["t3", "t4"], ["rate"]]


_COND = st.sampled_from(["x >= 1.25", "x < 1", "x == 0.5", "x >= 1 and x < 2"])
_LEAF = st.sampled_from(["0.03", "x * 2", "x + 1.5", "min(x, 3)"])


@settings(max_examples=60, deadline=None)
@given(outer=_COND, inner=_COND, a=_LEAF, b=_LEAF, c=_LEAF, x=st.sampled_from(["0.1606", "0.5", "1.1", "1.3", "2.5"]),
       tail=st.sampled_from(["", " + x * 3"]))
def test_every_sub_step_a_conditions_value_decided_is_written_from_the_conditions_sub_steps(
        outer: str, inner: str, a: str, b: str, c: str, x: str, tail: str) -> None:
    """Derive the same step over a value of ``x`` and over one where a condition goes the other way: the
    first sub-step where the two derivations differ is marked written from every comparison and boolean
    sub-step before it, so no window or chunk asks it with them."""
    expr = f"({a} if {outer} else ({b} if {inner} else {c})){tail}"
    proc = Procedure.model_validate({"name": "c", "inputs": ["x"], "steps": [
        {"var": "r", "expr": expr, "type": "decimal", "scale": 2}]})
    chain = get_rung("chain")
    subs = [chain.derive(proc, 0, {"x": Fraction(v)}) for v in (x, "0.1606", "0.5", "1.1", "1.3", "2.5")]
    first = subs[0]
    if first is None:
        return
    shape = [(s.var, s.expression) for s in first.steps]
    for other in subs[1:]:
        if other is None:
            continue
        theirs = [(s.var, s.expression) for s in other.steps]
        f = next((k for k, (mine, their) in enumerate(zip(shape, theirs)) if mine[0] != their[0] or _ops(mine[1]) != _ops(their[1])),
                 None)
        if f is None:
            continue
        decided_by = {s.var for s in first.steps[:f] if s.type == "boolean" or (s.expression or "").startswith("max(")}
        assert decided_by <= set(first.after(f)), (expr, x, first.steps[f].var, first.after(f))
        for k in range(f):  # a window or chunk from any earlier sub-step ends before it, or after them all
            end = k + first.written_apart(k, 100)
            assert end <= f or not decided_by & {s.var for s in first.steps[k:end]}


def _ops(expression: str | None) -> str:
    """An expression with its numbers left out: the operation a sub-step asks, whatever the operands."""
    import re

    return re.sub(r"[\d.]+", "#", expression or "")
