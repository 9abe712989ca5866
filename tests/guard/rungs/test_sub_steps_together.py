"""Issue 43.3: a derived rung's independent sub-steps asked together (``chunk_by="independent"``).

A long multiplication's row of single-digit products reads only the step's operands, so one call asks
it; each carry column is written from earlier sub-steps' values, so it waits until they are verified
and is asked in a call that holds none of them. No call shows a value a sub-step of it is to write.
"""

from __future__ import annotations

import re
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from stepguard import Guard, GuardConfig, Procedure
from stepguard.guard.rungs import get_rung
from tests._fakes import DIGIT_PRODUCT, ScriptedModel, asked_steps

_INPUTS = {"a": 4789, "b": 356}
_CONFIG = GuardConfig(ladder=("digits",), max_reprompts_per_step=1)


def _nested(model: ScriptedModel) -> list[list[str]]:
    """The sub-steps each call of the digit rung's nested run asked, in order."""
    return [a for a in map(asked_steps, model.calls) if a and all(v.startswith("d") for v in a)]


def test_a_long_multiplications_row_is_asked_in_one_call_and_verifies() -> None:
    model = ScriptedModel(always_wrong={"r"})
    result = Guard(model, _CONFIG).run(DIGIT_PRODUCT, _INPUTS)
    assert result.status == "verified" and result.values["r"] == 4789 * 356
    calls = _nested(model)
    assert calls[0] == ["d1", "d2", "d3", "d4"]  # 9 * 6, 8 * 6, 7 * 6, 4 * 6: the first row's products
    prompt = str(next(m for m in model.calls if asked_steps(m) == calls[0])[-1]["content"])
    for line in ("d1 = 9 * 6", "d2 = 8 * 6", "d3 = 7 * 6", "d4 = 4 * 6"):
        assert f"\n{line}\n" in prompt  # each sub-step's line as the one-a-call prompt wrote it
    sub = get_rung("digits").derive(DIGIT_PRODUCT, 2, {"x": 4789, "y": 356})
    assert sub is not None and len(calls) < len(sub.steps)
    assert [v for c in calls for v in c] == [s.var for s in sub.steps]  # each asked once, in order


@pytest.mark.parametrize("fault", ["wrong", "skip"])
def test_a_wrong_digit_in_a_row_is_re_asked_alone_and_never_verified_wrong(fault: str) -> None:
    model = ScriptedModel(faults={"d2": [fault]}, always_wrong={"r"})
    result = Guard(model, _CONFIG).run(DIGIT_PRODUCT, _INPUTS)
    assert result.status == "verified" and result.values["r"] == 4789 * 356
    calls = _nested(model)
    assert calls[0] == ["d1", "d2", "d3", "d4"]
    assert calls[1] == ["d2"]  # alone, on the nested ladder's resample; d1 verified and kept
    assert calls[2][0] == "d3" and "d1" not in {v for c in calls[1:] for v in c}
    read = next(e for e in result.deviations if e.action == "read")
    assert "d2 = 8 * 6 = 48" in read.detail  # the value read from is the re-asked one, right


def test_a_digit_wrong_on_every_try_is_never_verified() -> None:
    model = ScriptedModel(always_wrong={"r", "d3"})
    result = Guard(model, GuardConfig(ladder=("digits",), max_reprompts_per_step=1, on_exhausted="flag")).run(DIGIT_PRODUCT, _INPUTS)
    assert result.status != "verified" and result.steps[-1].provenance == "flagged"
    assert not any(e.action == "read" for e in result.deviations)


def test_a_carry_is_never_asked_with_what_it_was_written_from() -> None:
    """``d5 = 8 + 5`` is written from ``d1 = 9 * 6`` (carry 5) and ``d2 = 8 * 6`` (units 8)."""
    sub = get_rung("digits").derive(DIGIT_PRODUCT, 2, {"x": 4789, "y": 356})
    assert sub is not None
    assert sub.steps[4].expression == "8 + 5" and {"d1", "d2"} <= set(sub.after(4))
    assert sub.independent(0, 10) == 4 and sub.independent(4, 10) == 1


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(op=st.sampled_from(["+", "-", "*", "/"]), a=st.integers(-99999, 99999), b=st.integers(-9999, 9999).filter(bool))
def test_no_chunk_shows_a_value_a_sub_step_of_it_writes(op: str, a: int, b: int) -> None:
    step: dict[str, object] = {"var": "r", "expr": f"a {op} b"}
    if op == "/":
        step.update(type="decimal", scale=2)
    proc = Procedure.model_validate({"name": "one", "inputs": ["a", "b"], "steps": [step]})
    rung = get_rung({"+": "columns", "-": "columns", "*": "long_multiply", "/": "long_divide"}[op])
    sub = rung.derive(proc, 0, {"a": Fraction(a), "b": Fraction(b)})
    if sub is None:
        return
    digits = {c for n in (a, b) for c in str(abs(n))}
    operands = digits | {"0", "1", str(abs(a)), str(abs(b))} | {str(10 + int(d)) for d in digits}  # 10 + d: a borrowed ten
    for i, sub_step in enumerate(sub.steps):  # a sub-step marked as written from the operands alone shows only them
        if not sub.after(i):
            shown = set(re.findall(r"\d+", sub_step.expression or ""))
            assert shown <= operands or (op == "/" and all(len(n) == 1 for n in shown)), (sub_step.var, sub_step.expression)
    model = ScriptedModel()
    result = Guard(model, rung.nested_config(GuardConfig(), 0, None, None, sub)).run(sub, {})
    assert result.status == "verified" and result.values == sub.expected_values({})
    assert [v for m in model.calls for v in asked_steps(m)] == [s.var for s in sub.steps]
    for messages in model.calls:
        asked = asked_steps(messages)
        for var in asked:  # no sub-step asked with one whose value its literals were written from
            assert not set(sub.after(sub.index_of[var])) & set(asked), (var, asked)


def test_independent_chunks_end_before_a_step_reading_one_of_them_by_name() -> None:
    """The rule on a procedure from a file: ``s = x + y`` reads ``x`` and ``y``, so it is asked after them,
    their values listed as known values, never in the chunk that writes them."""
    proc = Procedure.model_validate({"name": "p", "inputs": ["a", "b"], "steps": [
        {"var": "x", "expr": "a * 2"}, {"var": "y", "expr": "b * 3"}, {"var": "s", "expr": "x + y"}, {"var": "t", "expr": "a + b"}]})
    model = ScriptedModel()
    result = Guard(model, GuardConfig(chunk_size=5, chunk_by="independent")).run(proc, {"a": 4, "b": 5})
    assert result.status == "verified" and result.values["s"] == 23
    assert [asked_steps(m) for m in model.calls] == [["x", "y"], ["s", "t"]]
    assert "x = 8" in str(model.calls[1][-1]["content"]).split("Steps:", 1)[0]
    model = ScriptedModel()
    Guard(model, GuardConfig(chunk_size=5)).run(proc, {"a": 4, "b": 5})
    assert [asked_steps(m) for m in model.calls] == [["x", "y", "s", "t"]]  # "size", the default: as before


def test_chunk_by_refuses_an_unknown_rule_and_written_from_a_later_step() -> None:
    with pytest.raises(ValueError, match="chunk_by"):
        GuardConfig(chunk_by="together")  # type: ignore[arg-type]
    proc = Procedure.model_validate({"name": "p", "steps": [{"var": "x", "expr": "1 + 2"}, {"var": "y", "expr": "3 + 4"}]})
    with pytest.raises(ValueError, match="only from earlier steps"):
        proc.written_from({"x": ["y"]})
    assert proc.written_from({"y": ["x"]}).after(1) == ("x",) and proc.after(1) == ()
