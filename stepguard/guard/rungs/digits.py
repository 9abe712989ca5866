"""The ``digits`` rung: the digit-level rung for the step's operation, every digit the model's.

It derives the failing step with the first of ``columns`` (a sum or difference), ``long_multiply``
(a product) and ``long_divide`` (a quotient) that applies; the step's value is read by position from
the model's verified sub-steps (:mod:`~stepguard.guard.rungs._digits`), and the result's ``read``
event names the rung and records every sub-step and digit. It comes last in the default ladders,
after the cheaper rungs (:class:`~stepguard.guard.GuardConfig`), so it costs nothing where they
succeed. Where none applies it does not either, and the ladder says so and asks the step alone.
"""

from __future__ import annotations

from collections.abc import Mapping

from stepguard.evaluator import Number
from stepguard.guard.rungs._base import get_rung, register
from stepguard.guard.rungs._digits import DigitRung, Sheet
from stepguard.procedure import Procedure

__all__ = ["DIGIT_ORDER", "Digits"]

DIGIT_ORDER: tuple[str, ...] = ("columns", "long_multiply", "long_divide")
"""The digit rungs ``digits`` tries, in order."""


@register
class Digits(DigitRung):
    """``digits``: the first digit rung of :data:`DIGIT_ORDER` that applies to the step's one operation."""

    name = "digits"

    def sheet(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Sheet | None:
        """The first sheet of :data:`DIGIT_ORDER` that applies, or ``None``."""
        for name in DIGIT_ORDER:
            rung = get_rung(name)
            sheet = rung.sheet(procedure, index, env) if isinstance(rung, DigitRung) else None
            if sheet is not None:
                return sheet
        return None
