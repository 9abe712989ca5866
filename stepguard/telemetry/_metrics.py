"""The metric instruments: two GenAI client histograms and four stepguard counters.

Names, units and bucket boundaries come from :mod:`stepguard.telemetry._names` (each cites its
convention). Every instrument is created once per :class:`~stepguard.telemetry.OtelObserver`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from opentelemetry.metrics import Meter

from stepguard.telemetry import _names as n

__all__ = ["Instruments"]


def _histogram(meter: Meter, name: str, unit: str, description: str, buckets: tuple[float, ...]) -> Any:
    try:  # the advisory parameter needs opentelemetry-api >= 1.23
        return meter.create_histogram(name, unit=unit, description=description, explicit_bucket_boundaries_advisory=list(buckets))
    except TypeError:  # pragma: no cover - older API
        return meter.create_histogram(name, unit=unit, description=description)


class Instruments:
    """The six instruments on one meter.

    Attributes:
        token_usage: ``gen_ai.client.token.usage`` histogram ({token}), one record per call and
            ``gen_ai.token.type`` (``input``, ``output``).
        duration: ``gen_ai.client.operation.duration`` histogram (s), one record per call.
        steps_verified: ``stepguard.steps.verified`` counter ({step}).
        deviations: ``stepguard.deviations`` counter ({deviation}), by kind and action.
        reprompts: ``stepguard.reprompts`` counter ({reprompt}).
        repairs: ``stepguard.repairs`` counter ({repair}).
    """

    def __init__(self, meter: Meter) -> None:
        self.token_usage = _histogram(
            meter, n.METRIC_TOKEN_USAGE, "{token}", "Number of input and output tokens used.", n.TOKEN_USAGE_BUCKETS)
        self.duration = _histogram(meter, n.METRIC_OPERATION_DURATION, "s", "GenAI operation duration.", n.DURATION_BUCKETS)
        self.steps_verified = meter.create_counter(
            n.METRIC_STEPS_VERIFIED, unit="{step}", description="Steps verified and committed by the guard.")
        self.deviations = meter.create_counter(
            n.METRIC_DEVIATIONS, unit="{deviation}", description="Deviations found by the guard, by kind and policy action.")
        self.reprompts = meter.create_counter(n.METRIC_REPROMPTS, unit="{reprompt}", description="Corrective prompts sent by the guard.")
        self.repairs = meter.create_counter(n.METRIC_REPAIRS, unit="{repair}", description="Steps repaired with the evaluator's value.")

    def record_call(self, attrs: Mapping[str, Any], seconds: float, input_tokens: int | None, output_tokens: int | None) -> None:
        """Record one model call: its duration (with ``error.type`` in ``attrs`` on failure) and tokens."""
        self.duration.record(seconds, attrs)
        if input_tokens is not None:
            self.token_usage.record(input_tokens, {**attrs, n.GEN_AI_TOKEN_TYPE: "input"})
        if output_tokens is not None:
            self.token_usage.record(output_tokens, {**attrs, n.GEN_AI_TOKEN_TYPE: "output"})

    def record_step(self, attrs: Mapping[str, Any], outcome: str, kind: str | None, action: str | None) -> None:
        """Count one step check: a pass, or a deviation with the policy's action."""
        if outcome == "pass":
            self.steps_verified.add(1, attrs)
            return
        self.deviations.add(1, {**attrs, n.DEVIATION_KIND: kind or "unknown", n.POLICY_ACTION: action or "none"})
        if action == "reprompt":
            self.reprompts.add(1, attrs)
        elif action == "repair":
            self.repairs.add(1, attrs)
