"""stepguard: make language models execute multi-step procedures faithfully, and measure it.

The public API, importable from ``stepguard`` alone::

    from stepguard import Guard, GuardConfig, load_model, load_procedure

    result = Guard(load_model("sim:paper")).run(procedure, {"x": 7, "y": 3})
    config = GuardConfig.for_procedure(procedure, on_exhausted="flag")   # one option changed, the rest by procedure

Rooms (see ``docs/concepts.md``): ``procedure`` (the model of a procedure), ``evaluator`` (the
safe evaluator), ``trace`` (model text -> records), ``verify`` (deviations), ``guard`` (the
controller), ``telemetry`` (OpenTelemetry), ``bench`` (the benchmark), ``cli``; adapters to
outside systems live in ``stepguard.adapters``.

Public names load on first use (PEP 562), so ``import stepguard`` and the command line's start-up
stay light: ``stepguard.Guard`` imports LangGraph when it is first read, not before. One table,
``_PUBLIC`` (module -> names), makes both ``__all__`` and the loader; the ``TYPE_CHECKING`` imports
repeat it for type checkers, and tests/project/test_public_api.py fails when the two differ.
The TYPE_CHECKING imports say ``X as X``: a typed package's ``__init__`` re-exports a name to
type checkers that way (or by a literal ``__all__``, which a derived one is not).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time ``__getattr__`` loads each name
    from stepguard.adapters import load_model as load_model
    from stepguard.errors import (
        BudgetExhausted as BudgetExhausted,
        CheckpointError as CheckpointError,
        EvaluationError as EvaluationError,
        LocalServerError as LocalServerError,
        LocalServerSettingError as LocalServerSettingError,
        MissingExtraError as MissingExtraError,
        ModelError as ModelError,
        ModelOutputTruncated as ModelOutputTruncated,
        ModelSpecError as ModelSpecError,
        ModelTimeout as ModelTimeout,
        ModelUnavailable as ModelUnavailable,
        ProcedureError as ProcedureError,
        RunClosed as RunClosed,
        RunStoreError as RunStoreError,
        StepDeviation as StepDeviation,
        StepguardError as StepguardError,
        ThreadInFlight as ThreadInFlight,
        ToolError as ToolError,
        ToolTimeout as ToolTimeout,
        TraceError as TraceError,
    )
    from stepguard.evaluator import CompiledExpression as CompiledExpression, compile_expression as compile_expression, evaluate as evaluate
    from stepguard.guard import (
        DeviationEvent as DeviationEvent,
        Guard as Guard,
        GuardConfig as GuardConfig,
        GuardResult as GuardResult,
        StepOutcome as StepOutcome,
        postgres_checkpointer as postgres_checkpointer,
        render_raw_prompt as render_raw_prompt,
        sqlite_checkpointer as sqlite_checkpointer,
    )
    from stepguard.model import (
        ChatMessage as ChatMessage,
        ChatModel as ChatModel,
        ChatResponse as ChatResponse,
        GenerationSettings as GenerationSettings,
        Usage as Usage,
    )
    from stepguard.procedure import (
        InputSpec as InputSpec,
        Procedure as Procedure,
        Step as Step,
        load_procedure as load_procedure,
        parse_procedure as parse_procedure,
        save_procedure as save_procedure,
    )
    from stepguard.tools import Tool as Tool, ToolSet as ToolSet
    from stepguard.trace import Answer as Answer, Record as Record, Trace as Trace, parse_trace as parse_trace
    from stepguard.verify import Deviation as Deviation, DeviationKind as DeviationKind

__version__ = "0.1.0"

_PUBLIC: dict[str, tuple[str, ...]] = {
    "stepguard.adapters": ("load_model",),
    "stepguard.errors": (
        "BudgetExhausted", "CheckpointError", "EvaluationError", "LocalServerError", "LocalServerSettingError", "MissingExtraError",
        "ModelError", "ModelOutputTruncated", "ModelSpecError", "ModelTimeout", "ModelUnavailable", "ProcedureError", "RunClosed",
        "RunStoreError",
        "StepDeviation", "StepguardError", "ThreadInFlight", "ToolError", "ToolTimeout", "TraceError",
    ),
    "stepguard.evaluator": ("CompiledExpression", "compile_expression", "evaluate"),
    "stepguard.guard": (
        "DeviationEvent", "Guard", "GuardConfig", "GuardResult", "StepOutcome", "postgres_checkpointer", "render_raw_prompt",
        "sqlite_checkpointer",
    ),
    "stepguard.model": ("ChatMessage", "ChatModel", "ChatResponse", "GenerationSettings", "Usage"),
    "stepguard.procedure": ("InputSpec", "Procedure", "Step", "load_procedure", "parse_procedure", "save_procedure"),
    "stepguard.tools": ("Tool", "ToolSet"),
    "stepguard.trace": ("Answer", "Record", "Trace", "parse_trace"),
    "stepguard.verify": ("Deviation", "DeviationKind"),
}
"""The public names, by the subpackage whose public face holds each: the one list of them."""

_HOMES: dict[str, str] = {name: module for module, names in _PUBLIC.items() for name in names}
"""Each public name and the module it is loaded from (derived from ``_PUBLIC``)."""

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    """Load the public name ``name`` from its module on first access and keep it here (PEP 562).

    Raises:
        AttributeError: ``name`` is not one of stepguard's public names.
    """
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'stepguard' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The module's names, public ones included before they are loaded."""
    return sorted(set(globals()) | set(__all__))
