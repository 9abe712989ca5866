"""Binomial rates with Wilson score intervals (scipy), for every rate the benchmark reports.

benchmark.md asks for 95% Wilson intervals on every per-configuration rate. The interval comes
from ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")`` (Wilson, 1927), not from a
formula of ours.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

from stepguard.bench._extra import import_extra

__all__ = ["Rate", "rate", "wilson_interval"]


@lru_cache(maxsize=65_536)
def wilson_interval(k: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval for ``k`` successes in ``n`` trials.

    Args:
        k: successes, ``0 <= k <= n``.
        n: trials, ``n >= 1``.
        confidence: the confidence level, in (0, 1).

    Returns:
        ``(low, high)`` as proportions in [0, 1].

    Raises:
        ValueError: ``n < 1``, ``k`` outside ``0..n``, or ``confidence`` outside (0, 1).
    """
    if n < 1 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n and n >= 1, got k={k}, n={n}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    binomtest = import_extra("scipy.stats").binomtest  # imported here: scipy.stats takes a second to import

    ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


class Rate(NamedTuple):
    """A proportion with its Wilson interval."""

    k: int
    """Successes (instances with the property)."""
    n: int
    """Trials (instances counted)."""
    value: float
    """``k / n``."""
    low: float
    """Lower end of the Wilson interval."""
    high: float
    """Upper end of the Wilson interval."""

    def percent(self, intervals: bool = True) -> str:
        """``"61.0 [57.9, 64.0]"`` (percent, one decimal), or ``"61.0"`` without the interval."""
        text = f"{100 * self.value:.1f}"
        return f"{text} [{100 * self.low:.1f}, {100 * self.high:.1f}]" if intervals else text


def rate(k: int, n: int, confidence: float = 0.95) -> Rate:
    """``k`` of ``n`` as a :class:`Rate` with its Wilson interval.

    Raises:
        ValueError: as :func:`wilson_interval`.
    """
    low, high = wilson_interval(k, n, confidence)
    return Rate(k, n, k / n, low, high)
