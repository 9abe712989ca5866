"""The ``split`` rung: the failing step split by its operations, whatever they are.

A step of two or more operations goes through ``chain`` (one checked sub-step per operation, each
failing one through ``single``); a step of one operation through ``single`` (the rung made for that
operation: ``choice``, ``partial``, ``scale``, ``bridge`` or ``decompose``). Where neither applies,
the ladder says so and asks the step alone.
"""

from __future__ import annotations

from collections.abc import Mapping

from stepguard.evaluator import Number
from stepguard.guard.rungs import Rung, get_rung, register
from stepguard.guard.rungs.arith._ladders import SUB_STEP_LADDER
from stepguard.procedure import Procedure

__all__ = ["Split", "composed_refusal"]


@register
class Split(Rung):
    """``split``: ``chain`` for a step of several operations, ``single`` for a step of one."""

    name = "split"
    derives = True
    one_at_a_time = True
    nested_ladder = SUB_STEP_LADDER  # a failing sub-step through the rung for its operation, then resampled
    nested_tries = len(SUB_STEP_LADDER)

    def derive(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
        """The ``chain`` derivation where it applies, else the ``single`` one, else ``None``."""
        return get_rung("chain").derive(procedure, index, env) or get_rung("single").derive(procedure, index, env)

    def refusal(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> str:
        """``chain``'s reason, and ``single``'s where the step has one operation."""
        return composed_refusal(procedure, index, env, "single")


def composed_refusal(procedure: Procedure, index: int, env: Mapping[str, Number | str], other: str) -> str:
    """Why a rung that tries ``chain`` and then the rung ``other`` (``single``, ``digits``'s sheets)
    does not apply: ``chain``'s reason, or ``other``'s where the chain leaves the step's one operation to it."""
    chain = get_rung("chain").refusal(procedure, index, env)
    if chain.startswith(("fewer than two operations", "one operation", "the step is one value")):
        return get_rung(other).refusal(procedure, index, env)
    return f"chain: {chain}"
