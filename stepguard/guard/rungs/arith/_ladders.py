"""The nested ladders the arithmetic rungs run their sub-steps under."""

from __future__ import annotations

__all__ = ["SUB_STEP_LADDER"]

SUB_STEP_LADDER: tuple[str, ...] = ("single", "resample", "resample", "resample", "digits")
"""The nested ladder of the rungs over production expressions: a failing sub-step through the rung for
its operation (``single``), then sampled anew three times, because sampling at the resample
temperature reaches values that temperature 0 repeats wrongly (the probe's figures: docs/lab/production-suite-history.md,
"What stops the rungs"), then, last, digit by digit (``digits``; docs/lab/production-suite-history.md, "Digit rungs").
A derived run stops at its first sub-step no try verified, so the extra tries cost calls only where
a sub-step keeps failing."""
