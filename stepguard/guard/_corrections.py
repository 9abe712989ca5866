"""Corrective notes: what a re-prompt says about the first deviation (each kind writes its own).

A note names the step, its expression and the committed operand values, never the expected
result: operands are already verified, so restating them leaks no answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stepguard.evaluator import Number
from stepguard.kinds import StepContext, kind_of
from stepguard.procedure import Procedure
from stepguard.verify import Deviation

__all__ = ["correction_note"]


def correction_note(procedure: Procedure, index: int, deviation: Deviation | Mapping[str, Any], env: Mapping[str, Number | str]) -> str:
    """The note that opens a corrective prompt for step ``index`` (0-based): its kind's
    :meth:`~stepguard.kinds.Kind.correction_note`.

    Args:
        procedure: the procedure.
        index: the failing step.
        deviation: the :class:`stepguard.verify.Deviation` (or its dump).
        env: committed values.

    Returns:
        One or two sentences; bounded (the model's own line is cut to 120 characters), so
        corrective context never grows across re-prompts.
    """
    dev = deviation if isinstance(deviation, Deviation) else Deviation.model_validate(dict(deviation))
    return kind_of(procedure.steps[index]).correction_note(StepContext(procedure, index), dev, env)
