"""stepguard: make language models execute multi-step procedures faithfully, and measure it.

The public API, importable from ``stepguard`` alone::

    from stepguard import Guard, GuardConfig, load_procedure
    from stepguard.adapters import load_model

    result = Guard(load_model("sim:paper"), GuardConfig(chunk_size=5)).run(procedure, {"x": 7, "y": 3})

Rooms (see ``docs/concepts.md``): ``procedure`` (the model of a procedure), ``evaluator`` (the
safe evaluator), ``trace`` (model text -> records), ``verify`` (deviations), ``guard`` (the
controller), ``telemetry`` (OpenTelemetry), ``bench`` (the benchmark), ``cli``; adapters to
outside systems live in ``stepguard.adapters``.
"""

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
from stepguard.guard import (
    DeviationEvent,
    Guard,
    GuardConfig,
    GuardResult,
    StepOutcome,
    render_raw_prompt,
    sqlite_checkpointer,
)
from stepguard.model import ChatMessage, ChatModel, ChatResponse, GenerationSettings, Usage
from stepguard.procedure import InputSpec, Procedure, Step, load_procedure, parse_procedure, save_procedure
from stepguard.trace import Answer, Record, Trace, parse_trace
from stepguard.verify import Deviation, DeviationKind

__version__ = "0.1.0"

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
