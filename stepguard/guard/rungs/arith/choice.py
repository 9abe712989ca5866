"""The ``choice`` rung: ``min`` and ``max`` asked as the other choice, then the value chosen.

``min(61000, 50000)`` becomes ``t1 = max(61000, 50000)`` (which is larger?), ``t2 = t1 == 61000``
and ``t3 = 50000 if t2 else 61000``; ``max`` the same way over ``min``. Every sub-step is checked,
and the nested guard asks them one a call with the values written in (``t2 = 61000 == 61000``),
because the embedded model names the larger of two decimals more reliably than it writes a
comparison's truth (figures: docs/lab/production-suite-history.md). A comparison step (``income >= 100``) is the
``chain`` rung's: a choice of the larger, then an equality.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from stepguard.evaluator import Number
from stepguard.guard.rungs import Rung, register
from stepguard.guard.rungs.arith._arith import derived, leaf_values, text
from stepguard.procedure import Procedure

__all__ = ["Choice", "choice_steps"]


def choice_steps(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
    """A sub-procedure choosing between two values by a checked comparison.

    Returns:
        The derived procedure, or ``None`` when the step is not ``min``/``max`` of two numbers.
    """
    found = leaf_values(procedure, index, env)
    if found is None or not isinstance(found[0], ast.Call) or not isinstance(found[0].func, ast.Name) or len(found[1]) != 2:
        return None
    fn = found[0].func.id
    if fn not in ("min", "max"):
        return None
    a, b = (text(v) for v in found[1])
    other = "max" if fn == "min" else "min"
    steps: list[dict[str, object]] = [
        {"var": "t1", "expr": f"{other}({a}, {b})"},
        {"var": "t2", "expr": f"t1 == {a}", "type": "boolean"},
        {"var": "t3", "expr": f"{b} if t2 else {a}"},
    ]
    return derived(procedure, index, steps, "choice")


@register
class Choice(Rung):
    """``choice``: ``min``/``max`` as a checked comparison, then the value chosen (:func:`choice_steps`)."""

    name = "choice"
    applies_to = "min or max of two numbers"
    derives = True
    one_at_a_time = True

    def derive(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
        """See :func:`choice_steps`."""
        return choice_steps(procedure, index, env)
