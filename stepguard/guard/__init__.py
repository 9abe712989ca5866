"""The guard: stepwise execution of a procedure under a LangGraph controller.

Public face: :class:`Guard`, :class:`GuardConfig`, :class:`GuardResult` and its parts,
:func:`sqlite_checkpointer`, :func:`postgres_checkpointer`, :class:`PromptSet`, :func:`render_raw_prompt`,
and the one options model every way in reads (:class:`GuardOptions`, :class:`OptionError`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepguard._lazy import lazy_names

if TYPE_CHECKING:
    from stepguard.guard._config import (
        ADDED_AFTER_STORES as ADDED_AFTER_STORES,
        BENCHMARK_SETTINGS as BENCHMARK_SETTINGS,
        MODE_SETTINGS as MODE_SETTINGS,
        PRODUCTION_SETTINGS as PRODUCTION_SETTINGS,
        RUN_SETTINGS as RUN_SETTINGS,
        RUNGS,
        ChunkBy,
        ExhaustedAction,
        GuardConfig,
        LadderWarning,
        Policy,
        beyond_integer_sums as beyond_integer_sums,
        defaults_for,
        settings_resume_hint as settings_resume_hint,
    )
    from stepguard.guard._fields import FieldSpec as FieldSpec, Option as Option, fields_of as fields_of
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
    from stepguard.guard._options_table import options_schema as options_schema, options_table as options_table
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
# old rows), bounded_steps (the check command, a response schema's status), PRODUCTION_SETTINGS,
# RUN_SETTINGS, MODE_SETTINGS and BENCHMARK_SETTINGS (the CLI's help), settings_resume_hint (a run store's
# refusal), OPTION_NAMES, check_thread_id and thread_needs_checkpointer (the ways
# in that read options), fields_of, FieldSpec and Option (the configuration model's declarations, read by the CLI's
# flags), options_table and options_schema (docs/options.md and its schema, written by scripts/gen_docs.py).

__all__ = [
    "ChunkBy",
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
    "defaults_for",
    "get_rung",
    "identity_diff",
    "postgres_checkpointer",
    "register_rung",
    "render_raw_prompt",
    "run_identity",
    "rung_names",
    "sqlite_checkpointer",
]

_HOMES: dict[str, tuple[str, str]] = {
    "BENCHMARK_SETTINGS": ("stepguard.guard._config", "BENCHMARK_SETTINGS"),
    "PRODUCTION_SETTINGS": ("stepguard.guard._config", "PRODUCTION_SETTINGS"),
    "RUN_SETTINGS": ("stepguard.guard._config", "RUN_SETTINGS"),
    "MODE_SETTINGS": ("stepguard.guard._config", "MODE_SETTINGS"),
    "defaults_for": ("stepguard.guard._config", "defaults_for"),
    "settings_resume_hint": ("stepguard.guard._config", "settings_resume_hint"),
    "FieldSpec": ("stepguard.guard._fields", "FieldSpec"),
    "Option": ("stepguard.guard._fields", "Option"),
    "fields_of": ("stepguard.guard._fields", "fields_of"),
    "options_schema": ("stepguard.guard._options_table", "options_schema"),
    "options_table": ("stepguard.guard._options_table", "options_table"),
    "RUNGS": ("stepguard.guard._config", "RUNGS"),
    "ADDED_AFTER_STORES": ("stepguard.guard._config", "ADDED_AFTER_STORES"),
    "ChunkBy": ("stepguard.guard._config", "ChunkBy"),
    "ExhaustedAction": ("stepguard.guard._config", "ExhaustedAction"),
    "GuardConfig": ("stepguard.guard._config", "GuardConfig"),
    "LadderWarning": ("stepguard.guard._config", "LadderWarning"),
    "Policy": ("stepguard.guard._config", "Policy"),
    "beyond_integer_sums": ("stepguard.guard._config", "beyond_integer_sums"),
    "Guard": ("stepguard.guard._guard", "Guard"),
    "GuardUpdate": ("stepguard.guard._guard", "GuardUpdate"),
    "build_result": ("stepguard.guard._guard", "build_result"),
    "sqlite_checkpointer": ("stepguard.guard._guard", "sqlite_checkpointer"),
    "identity_diff": ("stepguard.guard._identity", "identity_diff"),
    "identity_digest": ("stepguard.guard._identity", "identity_digest"),
    "run_identity": ("stepguard.guard._identity", "run_identity"),
    "GlobalTelemetry": ("stepguard.guard._observer", "GlobalTelemetry"),
    "GuardObserver": ("stepguard.guard._observer", "GuardObserver"),
    "ModelCallRecord": ("stepguard.guard._observer", "ModelCallRecord"),
    "NullObserver": ("stepguard.guard._observer", "NullObserver"),
    "OPTION_NAMES": ("stepguard.guard._options", "OPTION_NAMES"),
    "GuardOptions": ("stepguard.guard._options", "GuardOptions"),
    "OptionError": ("stepguard.guard._options", "OptionError"),
    "check_thread_id": ("stepguard.guard._options", "check_thread_id"),
    "thread_needs_checkpointer": ("stepguard.guard._options", "thread_needs_checkpointer"),
    "postgres_checkpointer": ("stepguard.guard._postgres", "postgres_checkpointer"),
    "PromptSet": ("stepguard.guard._prompts", "PromptSet"),
    "context_block": ("stepguard.guard._prompts", "context_block"),
    "format_value": ("stepguard.guard._prompts", "format_value"),
    "render_raw_prompt": ("stepguard.guard._prompts", "render_raw_prompt"),
    "DeviationEvent": ("stepguard.guard._result", "DeviationEvent"),
    "Grade": ("stepguard.guard._result", "Grade"),
    "GuardResult": ("stepguard.guard._result", "GuardResult"),
    "Provenance": ("stepguard.guard._result", "Provenance"),
    "StepOutcome": ("stepguard.guard._result", "StepOutcome"),
    "StepValue": ("stepguard.guard._result", "StepValue"),
    "UsageTotals": ("stepguard.guard._result", "UsageTotals"),
    "bounded_steps": ("stepguard.guard._result", "bounded_steps"),
    "provenance_grade": ("stepguard.guard._result", "provenance_grade"),
    "value_text": ("stepguard.guard._result", "value_text"),
    "RunStop": ("stepguard.guard._stop", "RunStop"),
    "Rung": ("stepguard.guard.rungs", "Rung"),
    "get_rung": ("stepguard.guard.rungs", "get_rung"),
    "register_rung": ("stepguard.guard.rungs", "register"),
    "rung_names": ("stepguard.guard.rungs", "rung_names"),
}
"""Where each name lives: the package loads a module on a name's first use (PEP 562), so that
``stepguard --help`` and the CLI's option help (the rung list) do not import LangGraph."""


__getattr__, __dir__ = lazy_names(__name__, _HOMES)
