"""The guard: stepwise execution of a procedure under a LangGraph controller.

Public face: :class:`Guard`, :class:`GuardConfig`, :class:`GuardResult` and its parts,
:func:`sqlite_checkpointer`, :class:`PromptSet`, :func:`render_raw_prompt`.
"""

from stepguard.guard._config import RUNGS, ExhaustedAction, GuardConfig, Policy, Rung
from stepguard.guard._guard import Guard, build_result, sqlite_checkpointer
from stepguard.guard._identity import identity_diff, identity_digest, run_identity
from stepguard.guard._observer import GuardObserver, ModelCallRecord, NullObserver
from stepguard.guard._prompts import PromptSet, format_value, render_raw_prompt
from stepguard.guard._result import DeviationEvent, GuardResult, Provenance, StepOutcome, StepValue, UsageTotals

__all__ = [
    "DeviationEvent",
    "ExhaustedAction",
    "Guard",
    "GuardConfig",
    "GuardObserver",
    "GuardResult",
    "ModelCallRecord",
    "NullObserver",
    "Policy",
    "PromptSet",
    "Provenance",
    "RUNGS",
    "Rung",
    "StepOutcome",
    "StepValue",
    "UsageTotals",
    "build_result",
    "format_value",
    "identity_diff",
    "identity_digest",
    "render_raw_prompt",
    "run_identity",
    "sqlite_checkpointer",
]
