"""Each step's verdict as span attributes, beside the ``gen_ai.evaluation.result`` events.

Some backends drop span events (Langfuse collects no OpenTelemetry events; Datadog takes
evaluations through its own API), so a user of one would see the chat spans and no verdict. The
chunk span therefore also carries its checks as parallel string arrays (:data:`~._names.CHECKED_STEPS`
and the next three), and the run span each step's final provenance (:data:`~._names.RESULT_STEPS`,
:data:`~._names.RESULT_PROVENANCE`): every backend that shows span attributes shows what was checked.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from stepguard.telemetry import _names as n

__all__ = ["checked_attributes", "result_attributes"]

Verdict = tuple[str, str, str, str]
"""``(step, "pass" | "fail", deviation kind or "", policy action or "")``."""


def checked_attributes(verdicts: Sequence[Verdict]) -> dict[str, Any]:
    """A chunk span's verdict attributes: four parallel string arrays (none where nothing was checked)."""
    if not verdicts:
        return {}
    steps, labels, kinds, actions = (tuple(column) for column in zip(*verdicts, strict=True))
    return {n.CHECKED_STEPS: steps, n.CHECKED_LABELS: labels, n.CHECKED_KINDS: kinds, n.CHECKED_ACTIONS: actions}


def result_attributes(result: Any) -> dict[str, Any]:
    """A run span's per-step attributes: the steps and their provenance in the result, parallel."""
    steps = list(getattr(result, "steps", None) or ())
    if not steps:
        return {}
    return {n.RESULT_STEPS: tuple(s.var for s in steps), n.RESULT_PROVENANCE: tuple(str(s.provenance) for s in steps)}
