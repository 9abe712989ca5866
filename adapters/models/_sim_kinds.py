"""The simulated executor's answers for tool, extract and text steps (one step asked alone).

It reads the step's line (``var = CALL tool(sku=sku)``, or ``var = ?    (read it from receipt_text,
after 'Total', ...)``), the ``Known values`` and the ``Text NAME:`` blocks of the prompt, and writes
what the step's kind says a model that follows the step writes
(:meth:`stepguard.kinds.Kind.perfect_reply`). With the procedure it takes the step from there,
else from the line, as a registered kind reads it back (:meth:`stepguard.kinds.Kind.parse_line`). No faults are injected into
these kinds (every preset answers them as ``perfect`` does): their checks are shown by the
scripted-model tests, not by the simulator.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from stepguard.errors import EvaluationError
from stepguard.evaluator import parse_number
from stepguard.kinds import kind_of, step_kinds

if TYPE_CHECKING:
    from stepguard.procedure import Procedure, Step

__all__ = ["answer_kind"]

_STEPS = re.compile(r"^Steps:[ \t]*\n(.*?)(?:\n\n|\Z)", re.M | re.S)
_KNOWN = re.compile(r"^Known values:[ \t]*\n(.*?)(?:\n\n|\Z)", re.M | re.S)
_TEXT = re.compile(r'^Text ([A-Za-z]\w*):\n"""\n(.*?)\n"""', re.M | re.S)
_LINE = re.compile(r"^([A-Za-z]\w*) = (.*?)(?:[ \t]{2,}\((.*)\))?[ \t]*$")


def _known(prompt: str) -> dict[str, Any]:
    m = _KNOWN.search(prompt)
    env: dict[str, Any] = {}
    for line in (m.group(1).splitlines() if m else ()):
        if " = " in line:
            k, v = line.split(" = ", 1)
            v = v.strip()
            try:
                env[k.strip()] = parse_number(v)
            except EvaluationError:
                env[k.strip()] = {"true": True, "false": False}.get(v.lower(), v)
    for name, body in _TEXT.findall(prompt):
        env[name] = body
    return env


def _step_of(var: str, rhs: str, notes: str, procedure: Procedure | None) -> Step | None:
    """The step the line asks: the procedure's, else the one a registered kind reads from the line."""
    if procedure is not None and var in procedure.index_of:
        return procedure.steps[procedure.index_of[var]]
    for kind in step_kinds():
        step = kind.parse_line(var, rhs, notes)
        if step is not None:
            return step
    return None


def answer_kind(prompt: str, procedure: Procedure | None) -> str | None:
    """The reply to a prompt that asks one tool, extract or text step; ``None`` for any other prompt."""
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
    step = _step_of(var, rhs, notes, procedure)
    if step is None or not kind_of(step).asked_alone:
        return None
    return kind_of(step).perfect_reply(step, _known(prompt), procedure)
