"""One vocabulary of deviations, shared by raw-mode scoring and the guard.

The names follow the failure modes of Panda et al., "When LLMs Stop Following Steps"
(arXiv 2605.00817): missing answer, premature answer, under-executed trace, hallucinated extra
steps, self-correction after an initial error; plus arithmetic error. The exact rules are this
project's reconstruction (``docs/benchmark.md``), not the paper's.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict

__all__ = ["DEVIATION_KINDS", "Deviation", "DeviationKind"]

DeviationKind = Literal[
    "missing_answer",
    "premature_answer",
    "under_executed",
    "extra_steps",
    "out_of_order",
    "self_correction",
    "arithmetic_error",
    "lookback_confusion",
    "type_error",
    "check_failed",
    "code_instead_of_steps",
    "truncated",
    "budget_exhausted",
    "wrong_tool",
    "bad_argument",
    "repeated_call",
    "tool_error",
    "not_in_source",
]
"""Kinds of deviation.

Raw-mode labels (benchmark.md): ``missing_answer``, ``premature_answer``, ``under_executed``,
``extra_steps``, ``self_correction``, ``arithmetic_error``. The guard adds, per step:
``out_of_order`` (a step line before one it follows), ``lookback_confusion`` (an arithmetic error
whose substituted operand is another variable's value), ``type_error`` (value not of the step's
type), ``check_failed`` (a ``check`` predicate is false), ``code_instead_of_steps`` (code fences or
invented program output instead of step lines), ``truncated`` (the reply hit max tokens) and
``budget_exhausted`` (a token or wall-clock budget was spent before the step could be asked).
Agent-workflow steps (docs/agent-workflows.md) add ``wrong_tool`` (another tool was called, or
none of the step's), ``bad_argument`` (a tool argument is wrong, symbolic, missing or unknown:
the call is never executed), ``repeated_call`` (the tool was called more than once),
``tool_error`` (the tool raised, timed out or returned a value the step cannot hold: the run
stops there) and ``not_in_source`` (an extracted value does not occur in its source text).
"""

DEVIATION_KINDS: tuple[str, ...] = get_args(DeviationKind)


class Deviation(BaseModel):
    """One deviation found in a model's output.

    Attributes:
        kind: the :data:`DeviationKind`.
        step: the variable concerned (``"S7"``), or ``None`` for whole-trace kinds.
        detail: a short human-readable description (never contains an expected value the model
            has not yet produced correctly: it is safe to show in a corrective prompt).
        got: the text or value the model wrote for the step, if any.
    """

    model_config = ConfigDict(frozen=True)

    kind: DeviationKind
    step: str | None = None
    detail: str = ""
    got: str | None = None
