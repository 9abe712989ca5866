"""The ``divide`` rung: a quotient asked to the step's scale in steps a person can check.

The divisor's power of ten is set aside, so the division left is by a small whole number, and the
point is placed as a sub-step of its own; the rounding to the step's scale is the last sub-step,
naming its rule. ``99365.70 / 80000`` (attainment at 4 places) becomes::

    t1 = 99365.7 / 8         (= 12420.7125)
    t2 = t1 / 10             (= 1242.07125), and so on, one place a sub-step, to
    t5 = t4 / 10             (= 1.24207125)
    attainment = t5          (round half to even to 4 decimal places)

A dividend with decimal places is first made a whole number that the small divisor divides exactly
(``1234.3412 / 4`` as ``12343412 / 4``, then the point): the embedded model wrote
``1234.3412 / 4 = 308.585305`` on every try, and 5 of 5 such whole-number quotients right
(``benchmarks/probe_single_ops.py --divide``). A divisor that is a power of ten (``x / 100``, a
rate in percent) is the point alone, moved one place a sub-step from the dividend (``4.5 / 10``,
``t1 / 10``).

A quotient that is not a finite decimal is carried at three more places than the step's scale,
and the rung applies only where rounding that value gives the exact quotient's rounding (the
guard checks, from the expression, before asking). Every sub-step is checked.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction

from stepguard.evaluator import Number
from stepguard.guard.rungs import Rung, register
from stepguard.guard.rungs.arith._arith import decimal_places, derived, leaf_values, point_steps, split_power_of_ten, text
from stepguard.guard.rungs.arith._ladders import SUB_STEP_LADDER
from stepguard.procedure import Procedure, round_to_scale

__all__ = ["Divide", "divide_steps"]

_EXTRA = 3
"""Places beyond the step's scale at which a non-terminating quotient is carried."""


_MAX_MOVES = 4
"""Point moves (one sub-step each) a whole-number dividend may bring; beyond, the decimal is divided
(the commission's ``99365.7 / 8``, which the model wrote right, rather than ``993657000 / 8`` and 8 moves)."""


def _whole_dividend(a: Fraction, m: int, e: int) -> tuple[int, int] | None:
    """``(a * 10**k, k)`` for the least ``k`` at which ``a * 10**k`` is a whole number that ``m``
    divides exactly (``326.5``, 4 -> ``(326500, 3)``), or ``None`` when ``a`` is already whole or
    the point would then move more than :data:`_MAX_MOVES` places (``k + e``, ``e`` the divisor's
    power of ten)."""
    k = decimal_places(a) or 0
    if k == 0:
        return None
    while abs(k + e) <= _MAX_MOVES:
        scaled = a * 10**k
        if scaled.denominator == 1 and scaled.numerator % m == 0:
            return int(scaled), k
        k += 1
    return None


@dataclass(frozen=True)
class _Division:
    """A step's division ``a / b`` split as ``b = ±m * 10**e``: ``a`` by the small divisor ``m`` (its
    sign kept), then the point moved ``e`` places."""

    a: Fraction
    b: Fraction
    m: int
    e: int
    first: Fraction
    """``a`` by the small divisor, signed: the quotient before the point is moved."""

    @property
    def finite(self) -> bool:
        """Whether :attr:`first` is a finite decimal."""
        return decimal_places(self.first) is not None

    @property
    def sign(self) -> str:
        """``"-"`` for a negative divisor, else ``""``."""
        return "-" if self.b < 0 else ""

    @property
    def divisor(self) -> str:
        """The small divisor as a sub-step writes it: ``8``, ``(-8)``."""
        sign = self.sign
        return f"{sign and '('}{sign}{self.m}{sign and ')'}"


def _division(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> _Division | None:
    """Step ``index`` over ``env`` as one division of two finite decimals by a non-zero divisor, or ``None``."""
    found = leaf_values(procedure, index, env)
    if found is None or not isinstance(found[0], ast.BinOp) or not isinstance(found[0].op, ast.Div):
        return None
    a, b = (Fraction(v) for v in found[1])
    if b == 0 or decimal_places(a) is None or decimal_places(b) is None:
        return None
    m, e = split_power_of_ten(b)
    return _Division(a, b, m, e, a / (-m if b < 0 else m))


def _quotient(d: _Division, scale: int | None) -> tuple[list[dict[str, object]], Fraction]:
    """The sub-steps before the rounding, and the value they give (``a / b`` unless the first is carried
    at finite places, at ``scale`` plus :data:`_EXTRA` and the point's moves, which needs ``scale``)."""
    a, m, e = d.a, d.m, d.e
    whole = _whole_dividend(a, m, e) if m != 1 and d.finite else None
    if whole is not None:  # a whole number by the small divisor, then the point: 326.5 / 4 as 326500 / 4
        return [{"var": "t1", "expr": f"{text(whole[0])} / {d.divisor}"}, *point_steps(2, whole[1] + e)], a / d.b
    if m != 1:  # the decimal by the small divisor (carried at finite places if it does not end), then the point
        steps: list[dict[str, object]] = [{"var": "t1", "expr": f"{text(a)} / {d.divisor}"}, *point_steps(2, e)]
        if d.finite:
            return steps, a / d.b
        assert scale is not None  # the caller returned: a quotient that does not end needs the step's scale
        places_ = scale + abs(e) + _EXTRA  # a point moved right (``* 10``, a decimal divisor) takes places off
        steps[0].update(type="decimal", scale=places_)
        return steps, Fraction(round_to_scale(d.first, places_, "ROUND_HALF_EVEN")) / Fraction(10) ** e
    if e:  # a power of ten alone is the point, its first place moved from the dividend: 4968285 / 10, t1 / 10
        return [{"var": "t1", "expr": f"{text(a)} {'/' if e > 0 else '*'} {'(-10)' if d.sign else '10'}"},
                *point_steps(2, e)[:-1]], a / d.b
    return [], a / d.b


def divide_steps(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
    """A sub-procedure computing the quotient of step ``index`` by a small divisor, the point, then the rounding.

    Returns:
        The derived procedure, or ``None`` when the step is not one division of two finite decimals
        by a non-zero divisor, has no scale while its quotient is not a finite decimal, or would
        round differently from the exact quotient.
    """
    d = _division(procedure, index, env)
    if d is None:
        return None
    step = procedure.steps[index]
    if not d.finite and step.scale is None:
        return None
    steps, point = _quotient(d, step.scale)
    if step.scale is not None:
        exact = round_to_scale(d.a / d.b, step.scale, step.rounding)
        if round_to_scale(point, step.scale, step.rounding) != exact:
            return None  # carrying the quotient at finite places would round it otherwise
        steps.append({"var": f"t{len(steps) + 1}", "expr": f"t{len(steps)}"})
    if len(steps) < 2:
        return None
    return derived(procedure, index, steps, "divide")


@register
class Divide(Rung):
    """``divide``: a quotient by a small divisor, the point placed, then rounded to the step's scale (:func:`divide_steps`)."""

    name = "divide"
    applies_to = "a quotient of two operands (/) whose digits, carried three places past the scale, round as the exact one"
    derives = True
    nested_ladder = SUB_STEP_LADDER  # a failing sub-step through the rung for its operation, then resampled
    nested_tries = len(SUB_STEP_LADDER)

    def derive(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
        """See :func:`divide_steps`."""
        return divide_steps(procedure, index, env)
