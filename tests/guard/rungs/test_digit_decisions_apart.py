"""A digit sheet's sub-step whose literals or whose being asked at all an earlier sub-step's value decided is
marked as written from it (:meth:`~stepguard.procedure.Procedure.after`), so a run asking sub-steps together
never asks the two in one call (issue 43.3, the rule ``chain``'s conditions keep).

Two sheets broke it:

- ``columns`` over operands of mixed signs asks which magnitude is larger (``47 + (-26)``: ``d1 = max(4, 2)``),
  then the columns with the larger on top (``d2 = 17 - 6``) and the sign over it (``max(47, 0)``): the layout is
  the comparison's answer, and all four were one call.
- ``long_divide`` by a one-digit divisor asks the multiples the next scan compares (``8 * 7``, ``9 * 7``) as far
  as the remainder reaches, and the remainder is the value of the column difference before: the two were one
  call, and the first digit's comparison (``max(4, 7)``: nothing subtracted) with the multiples up to ``7 * 7``.
"""

from __future__ import annotations

import re
from fractions import Fraction

from hypothesis import HealthCheck, given, settings, strategies as st

from stepguard import Guard, GuardConfig, Procedure
from stepguard.guard.rungs import get_rung
from tests._fakes import ScriptedModel, asked_steps


def _proc(op: str, scale: int | None = None) -> Procedure:
    step: dict[str, object] = {"var": "r", "expr": f"a {op} b"}
    if scale is not None:
        step.update(type="decimal", scale=scale)
    return Procedure.model_validate({"name": "one", "inputs": ["a", "b"], "steps": [step]})


def _calls(rung: str, proc: Procedure, a: Fraction, b: Fraction) -> tuple[Procedure, list[list[str]]] | None:
    """The sheet and the sub-steps each call of its nested run asks, sub-steps together (every run's default)."""
    sub = get_rung(rung).derive(proc, 0, {"a": a, "b": b})
    if sub is None:
        return None
    model = ScriptedModel()
    cfg = get_rung(rung).nested_config(GuardConfig.for_procedure(proc), 0, None, None, sub)
    result = Guard(model, cfg).run(sub, {})
    assert result.status == "verified" and result.values == sub.expected_values({})
    return sub, [asked_steps(m) for m in model.calls]


def test_a_mixed_sign_sums_comparison_is_asked_before_the_columns_it_lays_out() -> None:
    found = _calls("columns", _proc("+"), Fraction(47), Fraction(-26))
    assert found is not None
    sub, calls = found
    assert [s.expression for s in sub.steps] == ["max(4, 2)", "17 - 6", "4 - 2", "max(47, 0)"]
    assert calls[0] == ["d1"]  # the comparison alone: 47 on top, and max(47, 0), show its answer
    assert all(set(sub.after(k)) >= {"d1"} for k in range(1, len(sub.steps)))


_MIXED = st.tuples(st.integers(1, 99999), st.integers(1, 99999), st.sampled_from([0, 1, 2]), st.booleans())


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=_MIXED, op=st.sampled_from(["+", "-"]))
def test_no_call_asks_a_magnitude_comparison_with_a_column_or_sign_it_decided(case: tuple[int, int, int, bool], op: str) -> None:
    x, y, places, negative_first = case
    a, b = Fraction(x, 10**places), Fraction(y, 10**places)
    a, b = (-a, b) if negative_first else (a, -b)
    if op == "-":
        b = -b  # a - b with b of a's sign: still magnitudes of mixed signs
    found = _calls("columns", _proc(op), a, b)
    assert found is not None
    sub, calls = found
    if not (sub.steps[0].expression or "").startswith("max("):
        return  # magnitudes of different lengths, or equal: no comparison asked (a column comes first)
    assert calls[0] == [sub.steps[0].var], (a, op, b, calls[0])


def _multiple(expression: str | None, m: int) -> bool:
    return re.fullmatch(rf"\d \* {m}", expression or "") is not None


def test_a_one_digit_divisors_multiples_wait_for_the_remainder_that_reaches_them() -> None:
    found = _calls("long_divide", _proc("/", 2), Fraction(4789), Fraction(7))
    assert found is not None
    sub, calls = found
    exprs = {s.var: s.expression for s in sub.steps}
    assert exprs["d1"] == "max(4, 7)" and exprs["d16"] == "8 * 7" and exprs["d14"] == "17 - 2"
    assert calls[0] == ["d1"]  # 47 // 7 + 1 multiples follow from the first digit being 0, d1's answer
    assert not any({"d14", "d16"} <= set(c) for c in calls)  # 8 * 7 is asked because 47 - 42 leaves 5


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=st.integers(10, 999999), m=st.integers(2, 9), scale=st.sampled_from([0, 1, 2]))
def test_a_multiple_is_written_from_every_sub_step_before_it(a: int, m: int, scale: int) -> None:
    """Which multiples a scan compares follows from the remainder, and the remainder from every sub-step before
    the scan (the digits chosen, the differences): a multiple asked after any sub-step is marked after them all."""
    found = _calls("long_divide", _proc("/", scale), Fraction(a), Fraction(m))
    if found is None:
        return
    sub, calls = found
    for k, step in enumerate(sub.steps):
        if _multiple(step.expression, m):
            assert set(sub.after(k)) == {s.var for s in sub.steps[:k]}, (a, m, step.var, step.expression)
    for asked in calls:
        if any(_multiple(sub.steps[sub.index_of[v]].expression, m) for v in asked):
            assert all(_multiple(sub.steps[sub.index_of[v]].expression, m) for v in asked), (a, m, asked)
