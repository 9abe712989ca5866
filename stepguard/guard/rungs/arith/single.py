"""The ``single`` rung: one operation re-asked through the rung made for it.

It derives the failing step with the first of ``tie`` (a rounding at an exact tie), ``choice`` (``min``/``max``), ``partial`` (a product
with a decimal factor), ``scale`` (a product of decimals), ``divide`` (a quotient), ``bridge`` (an integer sum that carries)
and ``decompose`` (an integer product or sum by place value) that applies (a failing sub-step of
what it derives goes through ``single`` again: ``57 + 2.7`` to ``scale``'s ``570 + 27``, that to
``bridge``); the nested ladder of a
``chain`` uses it on each failing sub-step. Where none applies it does not either, and the ladder
says so and asks the step alone.
"""

from __future__ import annotations

from collections.abc import Mapping

from stepguard.evaluator import Number
from stepguard.guard.rungs import Rung, get_rung, register
from stepguard.guard.rungs.arith._ladders import SUB_STEP_LADDER
from stepguard.procedure import Procedure

__all__ = ["SINGLE_ORDER", "Single"]

SINGLE_ORDER: tuple[str, ...] = ("tie", "choice", "partial", "scale", "divide", "bridge", "decompose")
"""The rungs ``single`` tries, in order."""


@register
class Single(Rung):
    """``single``: the first rung of :data:`SINGLE_ORDER` that applies to the step's one operation."""

    name = "single"
    derives = True
    one_at_a_time = True
    nested_ladder = SUB_STEP_LADDER  # a failing sub-step through the rung for its operation, then resampled
    nested_tries = len(SUB_STEP_LADDER)

    def derive(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
        """The first derivation of :data:`SINGLE_ORDER` that applies, or ``None``."""
        for name in SINGLE_ORDER:
            sub = get_rung(name).derive(procedure, index, env)
            if sub is not None:
                return sub
        return None

    def refusal(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> str:
        """None of :data:`SINGLE_ORDER` re-asks the step's form (``a floor quotient with a decimal operand``)."""
        from stepguard.guard.rungs import form_of

        return f"none of {', '.join(SINGLE_ORDER)} re-asks {form_of(procedure, index, env)}"
