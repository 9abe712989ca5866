"""What a guarded run returns: values, per-step provenance, deviations, usage. Serializable to JSON."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from stepguard.verify import DeviationKind

__all__ = ["DeviationEvent", "GuardResult", "Provenance", "StepOutcome", "UsageTotals"]

Provenance = Literal["model_verified", "repaired", "flagged", "unverifiable", "missing"]
"""Where a step's value came from.

- ``model_verified``: the model wrote it and the evaluator agreed (``reprompts`` says after how many re-prompts).
- ``repaired``: the guard supplied the evaluator's value (``repair`` policy or ``on_exhausted``): never the model's.
- ``flagged``: the model's value, kept unverified in shadow mode or after a spent budget with ``flag``.
- ``unverifiable``: the model's value for a step with neither ``expr`` nor ``check``, verified for presence, order and type only.
- ``missing``: no value (the run stopped before this step).
"""


class StepOutcome(BaseModel):
    """One step's final state."""

    var: str
    value: str | None = Field(None, description="The committed value as text (exact: '12.5', '1/3'), or None.")
    provenance: Provenance = "missing"
    reprompts: int = Field(0, description="Re-prompts this step needed before it verified.")
    chunk: int | None = Field(None, description="0-based chunk (model call group) that committed it.")


class DeviationEvent(BaseModel):
    """One deviation seen during the run and what the policy did about it."""

    kind: DeviationKind
    step: str | None
    detail: str
    got: str | None = None
    attempt: int = Field(0, description="0 = first try of the chunk; n = n-th re-prompt for this step.")
    chunk: int = 0
    action: Literal["reprompt", "repair", "raise", "flag", "note"] = "reprompt"
    rung: str | None = Field(None, description="The ladder rung used for the re-prompt, if one was sent.")


class UsageTotals(BaseModel):
    """Totals over the run (tokens as the server counts them; seconds of wall time)."""

    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    wall_s: float = 0.0
    model_s: float = Field(0.0, description="Seconds spent waiting on the model.")


class GuardResult(BaseModel):
    """The result of :meth:`stepguard.guard.Guard.run`.

    ``status`` is ``verified`` only when every step is ``model_verified`` (or ``unverifiable``,
    type-checked); ``repaired`` when the run completed with guard-supplied values; ``flagged``
    when deviations were recorded but not corrected; ``failed`` when the run stopped early
    (``first_unverified`` names the step). No value is returned without its provenance.
    """

    model_config = ConfigDict(extra="forbid")

    procedure: str
    model: str
    simulated: bool = False
    inputs: dict[str, str]
    status: Literal["verified", "repaired", "flagged", "failed"]
    answer: str | None = None
    answer_var: str
    first_unverified: str | None = Field(None, description="First step that is not model-verified, or None.")
    steps: list[StepOutcome]
    deviations: list[DeviationEvent] = Field(default_factory=list)
    chunks: int = 0
    reprompts: int = 0
    repaired: int = 0
    usage: UsageTotals = Field(default_factory=UsageTotals)
    thread_id: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """True when every step has a value."""
        return all(s.provenance != "missing" for s in self.steps)

    @property
    def values(self) -> dict[str, str | None]:
        """``{var: value text}`` for every step."""
        return {s.var: s.value for s in self.steps}

    def rung_fixes(self) -> dict[str, int]:
        """How many deviations each ladder rung fixed (a re-prompt whose step then verified)."""
        fixed: dict[str, int] = {}
        reprompted = {s.var for s in self.steps if s.provenance == "model_verified" and s.reprompts}
        last: dict[str, str] = {}
        for d in self.deviations:
            if d.rung and d.step:
                last[d.step] = d.rung
        for step, rung in last.items():
            if step in reprompted:
                fixed[rung] = fixed.get(rung, 0) + 1
        return fixed
