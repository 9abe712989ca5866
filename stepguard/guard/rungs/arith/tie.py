"""The ``tie`` rung: a value exactly halfway between two roundings, resolved by checked arithmetic.

A rounding sub-step (``interest_1 = 81.625``, half to even to 2 places) whose value lies exactly
halfway between its two candidates is where the rule matters, and the embedded model rounded
every such tie up, half to even or not (6 ties, 3 prompt forms, docs/lab/production-suite-history.md). The rule is
asked as the arithmetic it is, over the lower candidate (the value cut to the step's places):

- half to even: ``t1 = 2 % 2`` (the last kept digit's parity), ``t2 = 0.01 * t1``,
  ``interest_1 = 81.62 + t2``: the lower candidate where its last digit is even, else the upper;
- half up (away from zero, as :data:`decimal.ROUND_HALF_UP`): ``t1 = 81.62 + 0.01``;

a negative value's magnitude first, then the sign as a sub-step of its own. Each sub-step is
checked; the last carries the step's variable, scale and rounding (which no longer changes it).
The embedded model writes each kind of sub-step reliably (figures: docs/lab/production-suite-history.md). The rung applies to a step that
only rounds one value (``var = name`` or ``var = number``, as ``chain`` writes its rounding
sub-step) at an exact tie; anywhere else it does not, and the ladder says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from stepguard.evaluator import Number
from stepguard.guard.rungs import Rung, register
from stepguard.guard.rungs.arith._arith import derived, leaf_value, text
from stepguard.procedure import Procedure

__all__ = ["Tie", "tie_steps"]


def _rounded_value(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Fraction | None:
    """The exact value a rounding-only step (``var = name`` / ``var = number``) rounds, else ``None``."""
    compiled = procedure.compiled[index]
    value = None if compiled is None else leaf_value(compiled.tree.body, env)
    return None if value is None else Fraction(value)


def tie_steps(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
    """A sub-procedure resolving a rounding tie by the step's rule, one checked operation a sub-step.

    Args:
        procedure: the procedure.
        index: 0-based index of the failing step.
        env: committed values.

    Returns:
        The derived procedure, or ``None`` when the step is not a rounding of one value, has no
        ``scale``, or its value is not exactly halfway between two values of the step's places.
    """
    step = procedure.steps[index]
    value = _rounded_value(procedure, index, env)
    if value is None or step.scale is None:
        return None
    unit = Fraction(1, 10**step.scale)
    magnitude = abs(value)
    lower = (magnitude // unit) * unit
    if magnitude - lower != unit / 2:
        return None
    if step.rounding == "ROUND_HALF_UP":
        steps: list[dict[str, object]] = [{"var": "t1", "expr": f"{text(lower)} + {text(unit)}"}]
    else:
        last_digit = int(lower / unit) % 10
        steps = [
            {"var": "t1", "expr": f"{last_digit} % 2"},
            {"var": "t2", "expr": f"{text(unit)} * t1"},
            {"var": "t3", "expr": f"{text(lower)} + t2"},
        ]
    if value < 0:
        steps.append({"var": f"t{len(steps) + 1}", "expr": f"-t{len(steps)}"})
    return derived(procedure, index, steps, "tie")


@register
class Tie(Rung):
    """``tie``: a rounding at an exact tie asked as its rule's arithmetic (:func:`tie_steps`)."""

    name = "tie"
    applies_to = "a rounding of one value that lies exactly halfway"
    derives = True
    one_at_a_time = True
    nested_ladder = ("resample",)

    def derive(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
        """See :func:`tie_steps`."""
        return tie_steps(procedure, index, env)
