"""A digit sheet's sub-step whose literals or whose being asked at all an earlier sub-step's value decided is
marked as written from it (:meth:`~stepguard.procedure.Procedure.after`), so a run asking sub-steps together
never asks the two in one call (issue 43.3, the rule ``chain``'s conditions keep).

Two sheets broke it:

- ``columns`` over operands of mixed signs asks which magnitude is larger (``47 + (-26)``: ``d1 = max(4, 2)``),
  then the columns with the larger on top (``d2 = 17 - 6``) and the sign over it (``max(47, 0)``): the layout is
  the comparison's answer, and all four were one call.
- ``long_divide`` by a one-digit divisor asked the multiples the next scan compares (``8 * 7``, ``9 * 7``) as far
  as the remainder reached, and the remainder is the value of the column difference before: the two were one
  call, and the first digit's comparison (``max(4, 7)``: nothing subtracted) with the multiples up to ``7 * 7``.
  A one-digit divisor's eight multiples are now all asked first, from the divisor alone; a longer divisor's
  column sums are asked as far as a remainder reaches, written from every sub-step before them.
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


def test_a_one_digit_divisors_multiples_are_all_asked_first_from_the_divisor_alone() -> None:
    """``4789 / 7``: ``2 * 7`` to ``9 * 7`` are the first sub-steps, whatever the remainders reach, so which are asked
    shows nothing of the quotient; they go in the first call, and none is asked after a remainder."""
    found = _calls("long_divide", _proc("/", 2), Fraction(4789), Fraction(7))
    assert found is not None
    sub, calls = found
    assert [s.expression for s in sub.steps[:8]] == [f"{j} * 7" for j in range(2, 10)]
    assert calls[0] == [f"d{k}" for k in range(1, 9)]
    assert not any(_multiple(s.expression, 7) for s in sub.steps[8:])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=st.integers(10, 999999), m=st.integers(2, 9), scale=st.sampled_from([0, 1, 2]))
def test_a_one_digit_divisors_multiples_read_nothing_and_no_remainder_decides_them(a: int, m: int, scale: int) -> None:
    """The neighbours of the first sheet: for any one-digit divisor the eight multiples come first, each marked as
    written from nothing, and no call asks a multiple with a sub-step that is not one."""
    found = _calls("long_divide", _proc("/", scale), Fraction(a), Fraction(m))
    if found is None:
        return
    sub, calls = found
    assert [s.expression for s in sub.steps[:8]] == [f"{j} * {m}" for j in range(2, 10)], (a, m)
    assert all(sub.after(k) == () for k in range(8))
    assert not any(_multiple(s.expression, m) for s in sub.steps[8:])
    for asked in calls:
        kinds = {k < 8 for k in (sub.index_of[v] for v in asked)}
        assert len(kinds) == 1, (a, m, asked)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(a=st.integers(100, 999999), m=st.integers(11, 99), scale=st.sampled_from([0, 1, 2]))
def test_a_longer_divisors_multiple_is_written_from_every_sub_step_before_it(a: int, m: int, scale: int) -> None:
    """A divisor of two digits has its multiples as column sums, asked as far as a remainder reaches: each such
    column is marked as written from every sub-step before it, so no call asks it with the remainder."""
    found = _calls("long_divide", _proc("/", scale), Fraction(a), Fraction(m))
    if found is None:
        return
    sub, calls = found
    scans = [k for k, s in enumerate(sub.steps) if (s.expression or "").startswith("max(")]
    for k, step in enumerate(sub.steps):
        if scans and k > scans[0] and " + " in (step.expression or "") and not sub.after(k) == ():
            assert set(sub.after(k)) >= {s.var for s in sub.steps[:scans[0]]}, (a, m, step.var)
    for asked in calls:
        for v in asked:
            assert not set(sub.after(sub.index_of[v])) & set(asked), (a, m, asked)


def _multiple(expression: str | None, m: int) -> bool:
    return re.fullmatch(rf"\d \* {m}", expression or "") is not None
