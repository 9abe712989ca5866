"""The ``narrow`` rung: the failing step alone, with its committed operands and the correction."""

from __future__ import annotations

from stepguard.guard.rungs._base import Rung, register

__all__ = ["Narrow"]


@register
class Narrow(Rung):
    """``narrow``: re-ask the failing step alone, at the run's temperature and seed."""

    name = "narrow"
