"""The ``restate`` rung: the same chunk again from the failing step, with the committed operands and the correction."""

from __future__ import annotations

from stepguard.guard.rungs._base import Rung, register

__all__ = ["Restate"]


@register
class Restate(Rung):
    """``restate``: re-ask the chunk from the failing step (the only rung that asks more than one step)."""

    name = "restate"
    whole_chunk = True
