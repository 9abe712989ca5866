"""The rule for resuming a checkpoint across a change of the prompt forms.

A checkpoint keys its prompts by a fingerprint of the templates and the forms version
(:meth:`PromptSet.fingerprint`), so a forms bump used to strand every checkpoint. Yet a value
that the evaluator verified exactly would have been committed under any wording: only how the
model was asked changed, not what was accepted. The rule:

* a checkpoint written under forms N resumes under forms M when its templates are today's, it
  stopped at a step boundary (no step in the middle of its re-prompts), and every committed value
  is independent of the wording;
* a committed value is independent of the wording when the evaluator decided it exactly, by its
  grade (:data:`stepguard.guard.Grade`): ``exact`` (a computed step the model wrote and the
  evaluator verified), ``computed``, ``repaired`` (the evaluator's value), ``tool`` (its tool's
  result for arguments that passed every check);
* it depends on the wording at any other grade (``bounded``, ``matched``, ``free_text``,
  ``unchecked``, ``flagged``: the model's choice among values a check let pass, or its own), and
  where it was read by position from a digit rung's sub-steps (what a rung derives is part of the
  forms);
* otherwise it is refused, the reason naming both forms versions and the step.

Both are read from what every checkpoint holds already (the identity's ``prompts``, the state's
``provenance``, which with the procedure gives the grade, its ``read`` events, its cursor and attempt), so a checkpoint written before the
rule existed is judged by it too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from stepguard.guard import _prompts
from stepguard.guard._prompts import PromptSet
from stepguard.guard._result import grade_of
from stepguard.guard._state import GuardState
from stepguard.procedure import Procedure

__all__ = ["TEMPLATES_CHANGED", "forms_change", "forms_refusal"]

TEMPLATES_CHANGED = "the prompt templates' text"
"""The phrase :func:`stepguard.guard._identity.identity_diff` gives for a ``prompts`` difference."""

_SEARCH = 64
"""Forms versions past today's that a stored fingerprint is tried against (a checkpoint of a newer stepguard)."""

_INDEPENDENT = frozenset({"exact", "computed", "repaired", "tool"})
"""Grades (:data:`stepguard.guard.Grade`) of values the evaluator or a checked tool call decided, whatever the model was asked."""

_WHY = {"bounded": "only a predicate over it held", "matched": "found in its source, which copy the model's choice",
        "free_text": "text checked by its rules", "unchecked": "the model's, with nothing to check it",
        "flagged": "the model's own, kept unverified"}
"""What each other grade says of the value, for the refusal."""


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
    if (state.progress.tries or state.progress.rung is not None) and state.progress.cursor < len(procedure.steps):
        var = procedure.steps[state.progress.cursor].var
        rung = f", rung {state.progress.rung}" if state.progress.rung else ""
        return (f"{head}: step {var} stopped in the middle of its re-prompts (re-prompt {state.progress.tries}{rung}), "
                "and what a re-prompt asks depends on the forms")
    read = {e.step: e.rung for e in state.events if e.action == "read" and e.step}
    for index, step in enumerate(procedure.steps):
        if step.var not in state.progress.values:
            continue
        why = _depends(procedure, index, state.progress.provenance.get(step.var, "missing"), read)
        if why:
            return f"{head}: step {step.var}'s committed value {why}, so it depends on the forms' wording"
    return None


def _depends(procedure: Procedure, index: int, provenance: str, read: Mapping[str, str | None]) -> str | None:
    """How the committed value of step ``index`` depends on the wording, in words; ``None`` where it does not."""
    var = procedure.steps[index].var
    if var in read:
        return f"was read by position from the sub-steps of the {read[var] or 'digit'} rung"
    grade = grade_of(procedure, index, provenance)
    if grade in _INDEPENDENT:
        return None
    return f"is graded {grade} ({_WHY.get(str(grade), 'no value')}), not decided exactly by the evaluator"
