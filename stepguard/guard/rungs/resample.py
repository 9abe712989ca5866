"""The ``resample`` rung: the failing step alone, sampled anew."""

from __future__ import annotations

from stepguard.guard.rungs._base import Rung, register

__all__ = ["Resample"]


@register
class Resample(Rung):
    """``resample``: re-ask the failing step alone at ``resample_temperature`` with the seed ``seed + attempt``.

    Re-asking the same prompt at temperature 0 often returns the same wrong value on the embedded
    model (docs/lab/fidelity-history.md); a new seed and a temperature above 0 make each attempt a new request.
    """

    name = "resample"
    resamples = True
