"""The guard: stepwise execution of a procedure under a LangGraph controller.

Public face: :class:`Guard`, :class:`GuardConfig`, :class:`GuardResult` and its parts,
:func:`sqlite_checkpointer`, :func:`postgres_checkpointer`, :class:`PromptSet`, :func:`render_raw_prompt`,
and the one options model every way in reads (:class:`GuardOptions`, :class:`OptionError`).
"""

from stepguard.guard._config import (
    PRODUCTION_SETTINGS as PRODUCTION_SETTINGS,
    RUNGS,
    ExhaustedAction,
    GuardConfig,
    LadderWarning,
    Policy,
    beyond_integer_sums as beyond_integer_sums,
)
from stepguard.guard._guard import Guard, GuardUpdate, build_result as build_result, sqlite_checkpointer
from stepguard.guard._identity import identity_diff, identity_digest as identity_digest, run_identity
from stepguard.guard._observer import GlobalTelemetry, GuardObserver, ModelCallRecord, NullObserver
from stepguard.guard._options import (
    OPTION_NAMES as OPTION_NAMES,
    GuardOptions,
    OptionError,
    check_thread_id as check_thread_id,
    thread_needs_checkpointer as thread_needs_checkpointer,
)
from stepguard.guard._postgres import postgres_checkpointer
from stepguard.guard._prompts import PromptSet, context_block, format_value as format_value, render_raw_prompt
from stepguard.guard._result import (
    DeviationEvent,
    Grade,
    GuardResult,
    Provenance,
    StepOutcome,
    StepValue,
    UsageTotals,
    bounded_steps as bounded_steps,
    provenance_grade as provenance_grade,
    value_text as value_text,
)
from stepguard.guard._stop import RunStop
from stepguard.guard.rungs import Rung, get_rung, register as register_rung, rung_names

# Helpers, importable here (``X as X``) for stepguard's other packages, which never import this
# package's private modules (tests/project/test_layering.py), but not public: build_result, format_value,
# identity_digest (adapters.langgraph_node), value_text (adapters' replies), provenance_grade (the bench's
# old rows), bounded_steps (the check command, a response schema's status), PRODUCTION_SETTINGS
# (the CLI's help), OPTION_NAMES, check_thread_id and thread_needs_checkpointer (the ways in that read options).

__all__ = [
    "DeviationEvent",
    "ExhaustedAction",
    "Grade",
    "Guard",
    "GuardConfig",
    "GlobalTelemetry",
    "GuardObserver",
    "GuardOptions",
    "GuardResult",
    "GuardUpdate",
    "LadderWarning",
    "ModelCallRecord",
    "NullObserver",
    "OptionError",
    "Policy",
    "PromptSet",
    "Provenance",
    "RUNGS",
    "Rung",
    "RunStop",
    "StepOutcome",
    "StepValue",
    "UsageTotals",
    "context_block",
    "get_rung",
    "identity_diff",
    "postgres_checkpointer",
    "register_rung",
    "render_raw_prompt",
    "run_identity",
    "rung_names",
    "sqlite_checkpointer",
]
