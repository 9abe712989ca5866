"""The rule for resuming a checkpoint across a change of the prompt forms.

A checkpoint keys its prompts by a fingerprint of the templates and the forms version
(:meth:`PromptSet.fingerprint`), so a forms bump used to strand every checkpoint. Yet a value
that the evaluator verified exactly would have been committed under any wording: only how the
model was asked changed, not what was accepted. The rule:

* a checkpoint written under forms N resumes under forms M when its templates are today's, it
  stopped at a step boundary (no step in the middle of its re-prompts), and every committed value
  is independent of the wording;
* a committed value is independent of the wording when the evaluator decided it exactly: a
  computed step (``expr``, or a ``check`` that is a hidden expected value) the model wrote and the
  evaluator verified, a value the guard repaired with the evaluator's, or a tool step's result
  (its arguments passed every check);
* it depends on the wording when it is the model's own unverified value (flagged, unverifiable),
  was matched or checked by a predicate rather than computed (an extract step, a text step, a
  ``check`` predicate over ``value``), or was read by position from a digit rung's sub-steps (what a rung
  derives is part of the forms);
* otherwise it is refused, the reason naming both forms versions and the step.

Both are read from what every checkpoint holds already (the identity's ``prompts``, the state's
``provenance``, its ``read`` events, its cursor and attempt), so a checkpoint written before the
rule existed is judged by it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stepguard.errors import EvaluationError
from stepguard.evaluator import compile_expression
from stepguard.guard import _prompts
from stepguard.guard._prompts import PromptSet
from stepguard.guard._state import GuardState
from stepguard.procedure import Procedure, Step

__all__ = ["TEMPLATES_CHANGED", "forms_change", "forms_refusal"]

TEMPLATES_CHANGED = "the prompt templates' text"
"""The phrase :func:`stepguard.guard._identity.identity_diff` gives for a ``prompts`` difference."""

_SEARCH = 64
"""Forms versions past today's that a stored fingerprint is tried against (a checkpoint of a newer stepguard)."""

_INDEPENDENT = frozenset({"repaired", "tool"})
"""Provenances whose value the evaluator or a checked tool call decided, whatever the model was asked."""


def forms_change(stored: Mapping[str, Any] | None, now: Mapping[str, Any], prompts: PromptSet) -> tuple[int, int] | None:
    """``(stored version, today's version)`` where two identities' prompts differ only by the forms
    version (the templates' text is today's), else ``None``.

    Args:
        stored: the identity saved with the checkpoint.
        now: the identity of the run asked for.
        prompts: the templates in use (their fingerprint under each forms version is tried).
    """
    if not stored or stored.get("prompts") == now.get("prompts") or now.get("prompts") != prompts.fingerprint():
        return None
    for version in range(1, _prompts.PROMPT_FORMS + _SEARCH):
        if version != _prompts.PROMPT_FORMS and prompts.fingerprint(version=version) == stored.get("prompts"):
            return version, _prompts.PROMPT_FORMS
    return None


def forms_refusal(state: GuardState, procedure: Procedure, stored: int, now: int) -> str | None:
    """Why a checkpoint of ``procedure`` with ``state``, written under forms ``stored``, cannot resume
    under forms ``now`` (the rule in this module's docstring), or ``None`` where it can.

    Returns:
        ``"written under prompt forms 6 and resumed under prompt forms 7: step S3 ..."``, naming
        the first step (in the procedure's order) whose state depends on the wording.
    """
    head = f"written under prompt forms {stored} and resumed under prompt forms {now}"
    if (state.attempt or state.rung is not None) and state.cursor < len(procedure.steps):
        var = procedure.steps[state.cursor].var
        rung = f", rung {state.rung}" if state.rung else ""
        return (f"{head}: step {var} stopped in the middle of its re-prompts (re-prompt {state.attempt}{rung}), "
                "and what a re-prompt asks depends on the forms")
    read = {e.step: e.rung for e in state.events if e.action == "read" and e.step}
    for step in procedure.steps:
        if step.var not in state.values:
            continue
        why = _depends(step, state.provenance.get(step.var, "missing"), read)
        if why:
            return f"{head}: step {step.var}'s committed value {why}, so it depends on the forms' wording"
    return None


def _hidden_expected(check: str | None) -> bool:
    """Whether ``check`` is a hidden expected-value expression (it does not read ``value``): the model's value must equal it exactly."""
    if check is None:
        return False
    try:
        return "value" not in compile_expression(check).names
    except EvaluationError:
        return False


def _depends(step: Step, provenance: str, read: Mapping[str, str | None]) -> str | None:
    """How the committed value of ``step`` depends on the wording, in words; ``None`` where it does not."""
    if step.var in read:
        return f"was read by position from the sub-steps of the {read[step.var] or 'digit'} rung"
    if provenance in _INDEPENDENT:
        return None
    if provenance != "model_verified":
        return f"is the model's own ({provenance}), not one the evaluator verified"
    if step.kind == "compute" and (step.expression is not None or _hidden_expected(step.check)):
        return None
    how = {"extract": "was matched against its source", "text": "is text checked by its rules"}.get(step.kind, "was checked by a predicate")
    return f"{how}, not computed exactly"
