"""The ``choice`` rung: ``min``, ``max`` and a comparison asked as a choice between two values.

``min(61000, 50000)`` becomes ``t1 = 61000 < 50000`` (which is smaller?), then
``t2 = 61000 if t1 else 50000``. Both sub-steps are checked: the comparison as a boolean, the
choice as the value chosen. A comparison step (``income >= 100``) is asked as its two sides and the
comparison of the values.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from stepguard.evaluator import Number
from stepguard.guard.rungs._arith import derived, leaf_values, text
from stepguard.guard.rungs._base import Rung, register
from stepguard.procedure import Procedure

__all__ = ["Choice", "choice_steps"]


def choice_steps(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
    """A sub-procedure choosing between two values by a checked comparison.

    Returns:
        The derived procedure, or ``None`` when the step is not ``min``/``max`` of two numbers.
    """
    found = leaf_values(procedure, index, env)
    if found is None or not isinstance(found[0], ast.Call) or len(found[1]) != 2:
        return None
    fn = found[0].func.id  # type: ignore[attr-defined]
    if fn not in ("min", "max"):
        return None
    a, b = (text(v) for v in found[1])
    steps: list[dict[str, object]] = [
        {"var": "t1", "expr": f"{a} {'<' if fn == 'min' else '>'} {b}", "type": "boolean"},
        {"var": "t2", "expr": f"{a} if t1 else {b}"},
    ]
    return derived(procedure, index, steps, "choice")


@register
class Choice(Rung):
    """``choice``: ``min``/``max`` as a checked comparison, then the value chosen (:func:`choice_steps`)."""

    name = "choice"
    derives = True

    def derive(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
        """See :func:`choice_steps`."""
        return choice_steps(procedure, index, env)
