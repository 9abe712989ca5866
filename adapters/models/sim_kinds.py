"""The simulated executor's answers for steps asked alone (tool, extract, text, and any kind registered here).

A step kind says how the guard prompts and checks its steps (:class:`stepguard.kinds.Kind`); what a
model that follows such a step writes is the simulator's business, so it is registered here, by the
kind's name, with :func:`register_sim_answer`::

    from stepguard.adapters.models.sim_kinds import register_sim_answer

    register_sim_answer("upper", lambda step, env, procedure: f"{step.var} = {str(env[step.source]).upper()}")

A kind with no answer registered is not answered by the simulator (its prompt gets the executor's
usual reply), which a guarded run shows as a deviation at that step.

The simulator reads the step's line (``var = CALL tool(sku=sku)``, or ``var = ?    (read it from
receipt_text, after 'Total', ...)``), the ``Known values`` and the ``Text NAME:`` blocks of the prompt,
or, for a call the guard planned (:func:`answer_planned`), the plan's step (its expression and notes
as shown), known values and text inputs.
With the procedure it takes the step from there; else from the line, through the ``read_line`` a kind
registered (the inverse of its prompt line). No faults are injected into these kinds (every preset
answers them as ``perfect`` does): their checks are shown by the scripted-model tests.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from stepguard.errors import EvaluationError
from stepguard.evaluator import parse_number
from stepguard.kinds import kind_of

from ._sim_answers import extract_line, extract_reply, text_line, text_reply, tool_line, tool_reply

if TYPE_CHECKING:
    from stepguard.model import PromptPlan
    from stepguard.procedure import Procedure, Step

__all__ = [
    "ReadLine", "SimAnswer", "SimReply", "answer_kind", "answer_planned", "register_sim_answer", "sim_answers", "unregister_sim_answer",
]

SimReply = Callable[["Step", Mapping[str, Any], "Procedure | None"], "str | None"]
"""``(step, env, procedure) -> reply``: what a model that follows ``step`` writes, given the values the
prompt shows (``env``: known values and text inputs by name) and the procedure when the executor has
it; ``None`` when it cannot say (the simulator then writes its usual non-answer)."""

ReadLine = Callable[[str, str, str], "Step | None"]
"""``(var, rhs, notes) -> step``: the step a prompt line ``var = rhs    (notes)`` of the kind describes,
for an executor given no procedure; ``None`` when the line is not of the kind."""


@dataclass(frozen=True)
class SimAnswer:
    """How the simulator answers one step kind."""

    reply: SimReply
    """What a model that follows the step writes."""
    read_line: ReadLine | None = None
    """The step a prompt line of the kind describes, for an executor given no procedure; ``None``: the
    kind's steps are answered only when the executor has the procedure."""


_ANSWERS: dict[str, SimAnswer] = {  # in the kinds' registration order: a line is read by the first that reads it
    "extract": SimAnswer(extract_reply, extract_line),
    "text": SimAnswer(text_reply, text_line),
    "tool": SimAnswer(tool_reply, tool_line),
}
_BUILT_IN = frozenset(_ANSWERS)


def register_sim_answer(kind: str, reply: SimReply, read_line: ReadLine | None = None) -> None:
    """Have the simulator answer steps of ``kind`` (a registered step kind's name) with ``reply``.

    Raises:
        ValueError: ``kind`` is a built-in kind's name (tool, extract, text), or not an identifier.
    """
    if not kind.isidentifier():
        raise ValueError(f"a simulator answer is registered for a step kind's name, not {kind!r}")
    if kind in _BUILT_IN:
        raise ValueError(f"step kind {kind!r} is built in: its simulator answer cannot be replaced")
    _ANSWERS[kind] = SimAnswer(reply, read_line)


def unregister_sim_answer(kind: str) -> None:
    """Forget the simulator's answer for ``kind`` (a test's, or a reloaded plugin's).

    Raises:
        KeyError: no answer of that name, or a built-in one.
    """
    if kind in _BUILT_IN or kind not in _ANSWERS:
        raise KeyError(f"{kind!r} is {'a built-in step kind' if kind in _BUILT_IN else 'not a kind with a simulator answer'}")
    del _ANSWERS[kind]


def sim_answers() -> dict[str, SimAnswer]:
    """Every registered answer, by kind name (a copy)."""
    return dict(_ANSWERS)


_STEPS = re.compile(r"^Steps:[ \t]*\n(.*?)(?:\n\n|\Z)", re.M | re.S)
_KNOWN = re.compile(r"^Known values:[ \t]*\n(.*?)(?:\n\n|\Z)", re.M | re.S)
_TEXT = re.compile(r'^Text ([A-Za-z]\w*):\n"""\n(.*?)\n"""', re.M | re.S)
_LINE = re.compile(r"^([A-Za-z]\w*) = (.*?)(?:[ \t]{2,}\((.*)\))?[ \t]*$")


def _value(text: str) -> Any:
    """A known value as the prompt shows it: a number, ``true``/``false``, else the text."""
    v = text.strip()
    try:
        return parse_number(v)
    except EvaluationError:
        return {"true": True, "false": False}.get(v.lower(), v)


def _known(prompt: str) -> dict[str, Any]:
    m = _KNOWN.search(prompt)
    env: dict[str, Any] = {}
    for line in (m.group(1).splitlines() if m else ()):
        if " = " in line:
            k, v = line.split(" = ", 1)
            env[k.strip()] = _value(v)
    for name, body in _TEXT.findall(prompt):
        env[name] = body
    return env


def _step_of(var: str, rhs: str, notes: str, procedure: Procedure | None) -> Step | None:
    """The step the line asks: the procedure's, else the one a registered ``read_line`` reads from the line."""
    if procedure is not None and var in procedure.index_of:
        return procedure.steps[procedure.index_of[var]]
    for answer in list(_ANSWERS.values()):
        step = answer.read_line(var, rhs, notes) if answer.read_line is not None else None
        if step is not None:
            return step
    return None


def answer_kind(prompt: str, procedure: Procedure | None) -> str | None:
    """The reply to a prompt that asks one step of a kind asked alone with an answer registered here;
    ``None`` for any other prompt."""
    m = _STEPS.search(prompt[prompt.rfind("\nSteps:") + 1:] if "\nSteps:" in prompt else prompt)
    if m is None:
        return None
    lines = [ln for ln in m.group(1).splitlines() if ln.strip()]
    if len(lines) != 1:
        return None
    line = _LINE.match(lines[0])
    if line is None:
        return None
    var, rhs, notes = line.group(1), line.group(2), line.group(3) or ""
    return _answer(_step_of(var, rhs, notes, procedure), lambda: _known(prompt), procedure)


def answer_planned(plan: PromptPlan, procedure: Procedure | None) -> str | None:
    """:func:`answer_kind` for a call the guard described (:class:`~stepguard.model.PromptPlan`): the
    reply when it asks one step of a kind asked alone with an answer registered here, from the
    plan's step, known values and text inputs; ``None`` for any other call."""
    if len(plan.steps) != 1:
        return None
    asked = plan.steps[0]
    if asked.kind == "compute":  # the commonest call: never asked alone, no line to read
        return None

    def env() -> dict[str, Any]:
        return {**{name: _value(text) for name, text in plan.known.items()}, **plan.texts}

    return _answer(_step_of(asked.var, asked.expression, asked.notes, procedure), env, procedure)


def _answer(step: Step | None, env: Callable[[], dict[str, Any]], procedure: Procedure | None) -> str | None:
    """The registered answer to ``step`` when its kind is asked alone, given the values ``env()`` shows."""
    if step is None or not kind_of(step).asked_alone:
        return None
    answer = _ANSWERS.get(step.kind)
    return answer.reply(step, env(), procedure) if answer is not None else None
