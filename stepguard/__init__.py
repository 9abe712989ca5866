"""stepguard: make language models execute multi-step procedures faithfully, and measure it.

The public API, importable from ``stepguard`` alone::

    from stepguard import Guard, GuardConfig, load_procedure
    from stepguard.adapters import load_model

    result = Guard(load_model("sim:paper"), GuardConfig(chunk_size=5)).run(procedure, {"x": 7, "y": 3})

Rooms (see ``docs/concepts.md``): ``procedure`` (the model of a procedure), ``evaluator`` (the
safe evaluator), ``trace`` (model text -> records), ``verify`` (deviations), ``guard`` (the
controller), ``telemetry`` (OpenTelemetry), ``bench`` (the benchmark), ``cli``; adapters to
outside systems live in ``stepguard.adapters``.

Public names load on first use (PEP 562), so ``import stepguard`` and the command line's start-up
stay light: ``stepguard.Guard`` imports LangGraph when it is first read, not before.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time ``__getattr__`` loads each name
    from stepguard.errors import (
        BudgetExhausted,
        CheckpointError,
        EvaluationError,
        LocalServerError,
        ModelError,
        ModelOutputTruncated,
        ModelSpecError,
        ModelTimeout,
        ModelUnavailable,
        ProcedureError,
        RunStoreError,
        StepDeviation,
        StepguardError,
        TraceError,
    )
    from stepguard.evaluator import CompiledExpression, compile_expression, evaluate
    from stepguard.guard import DeviationEvent, Guard, GuardConfig, GuardResult, StepOutcome, render_raw_prompt, sqlite_checkpointer
    from stepguard.model import ChatMessage, ChatModel, ChatResponse, GenerationSettings, Usage
    from stepguard.procedure import InputSpec, Procedure, Step, load_procedure, parse_procedure, save_procedure
    from stepguard.trace import Answer, Record, Trace, parse_trace
    from stepguard.verify import Deviation, DeviationKind

__version__ = "0.1.0"

_HOMES: dict[str, str] = {
    "Answer": "stepguard.trace",
    "BudgetExhausted": "stepguard.errors",
    "ChatMessage": "stepguard.model",
    "ChatModel": "stepguard.model",
    "ChatResponse": "stepguard.model",
    "CheckpointError": "stepguard.errors",
    "CompiledExpression": "stepguard.evaluator",
    "Deviation": "stepguard.verify",
    "DeviationEvent": "stepguard.guard",
    "DeviationKind": "stepguard.verify",
    "EvaluationError": "stepguard.errors",
    "GenerationSettings": "stepguard.model",
    "Guard": "stepguard.guard",
    "GuardConfig": "stepguard.guard",
    "GuardResult": "stepguard.guard",
    "InputSpec": "stepguard.procedure",
    "LocalServerError": "stepguard.errors",
    "ModelError": "stepguard.errors",
    "ModelOutputTruncated": "stepguard.errors",
    "ModelSpecError": "stepguard.errors",
    "ModelTimeout": "stepguard.errors",
    "ModelUnavailable": "stepguard.errors",
    "Procedure": "stepguard.procedure",
    "ProcedureError": "stepguard.errors",
    "Record": "stepguard.trace",
    "RunStoreError": "stepguard.errors",
    "Step": "stepguard.procedure",
    "StepDeviation": "stepguard.errors",
    "StepOutcome": "stepguard.guard",
    "StepguardError": "stepguard.errors",
    "Trace": "stepguard.trace",
    "TraceError": "stepguard.errors",
    "Usage": "stepguard.model",
    "compile_expression": "stepguard.evaluator",
    "evaluate": "stepguard.evaluator",
    "load_procedure": "stepguard.procedure",
    "parse_procedure": "stepguard.procedure",
    "parse_trace": "stepguard.trace",
    "render_raw_prompt": "stepguard.guard",
    "save_procedure": "stepguard.procedure",
    "sqlite_checkpointer": "stepguard.guard",
}
"""Each public name and the module that defines it."""


__all__ = [
    "Answer",
    "BudgetExhausted",
    "CheckpointError",
    "ChatMessage",
    "ChatModel",
    "ChatResponse",
    "CompiledExpression",
    "Deviation",
    "DeviationEvent",
    "DeviationKind",
    "EvaluationError",
    "GenerationSettings",
    "Guard",
    "GuardConfig",
    "GuardResult",
    "InputSpec",
    "LocalServerError",
    "ModelError",
    "ModelOutputTruncated",
    "ModelSpecError",
    "ModelTimeout",
    "ModelUnavailable",
    "Procedure",
    "ProcedureError",
    "Record",
    "RunStoreError",
    "Step",
    "StepDeviation",
    "StepOutcome",
    "StepguardError",
    "Trace",
    "TraceError",
    "Usage",
    "compile_expression",
    "evaluate",
    "load_procedure",
    "parse_procedure",
    "parse_trace",
    "render_raw_prompt",
    "save_procedure",
    "sqlite_checkpointer",
]


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
