"""Prompt templates (files users can swap) and their rendering."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from string import Template
from typing import NamedTuple

from stepguard.evaluator import Number
from stepguard.guard._forms import PromptForms, current_forms
from stepguard.kinds import StepContext, kind_of
from stepguard.model import ChatMessage, PlannedStep, PromptPlan
from stepguard.procedure import Procedure, format_value

__all__ = ["FORMS", "PROMPT_FORMS", "PromptSet", "context_block", "format_value", "render_raw_prompt"]

_BUILTIN = Path(__file__).parent / "prompts"


@lru_cache(maxsize=32)
def _read(folder: Path, name: str) -> Template:
    path = folder / name
    if not path.exists():
        path = _BUILTIN / name
    return Template(path.read_text(encoding="utf-8"))


def _step_line(procedure: Procedure, index: int, values: Mapping[str, Number | str] | None = None) -> str:
    """The step's line (its kind's :meth:`~stepguard.kinds.Kind.line`) with, after a gap in
    parentheses, the instruction, the kind's notes, any rounding rule and the value's type; the
    names in ``values`` written as their values."""
    return _step_shown(procedure, index, values)[0]


def _planned(procedure: Procedure, index: int, values: Mapping[str, Number | str] | None = None) -> tuple[str, PlannedStep]:
    """The step's line and the :class:`PlannedStep` it shows: the line's right-hand side without its
    notes, the notes, and the step's type, scale, rounding and kind."""
    line, notes = _step_shown(procedure, index, values)
    step = procedure.steps[index]
    rhs = line.removeprefix(f"{step.var} = ")
    note = f"    ({'; '.join(notes)})" if notes else ""
    if note and rhs.endswith(note):
        rhs = rhs[: -len(note)]
    planned = PlannedStep(step.var, step.kind, rhs, "; ".join(notes), step.type, step.scale, step.rounding,
                          step.var == procedure.answer_var)
    return line, planned


def _step_shown(procedure: Procedure, index: int, values: Mapping[str, Number | str] | None = None) -> tuple[str, list[str]]:
    """The step's line (as :func:`_step_line`) and the notes it shows."""
    step = procedure.steps[index]
    kind = kind_of(step)
    notes = [step.instruction.rstrip(". ")] if step.instruction else []
    notes += kind.notes(StepContext(procedure, index))
    if step.scale is not None:
        notes.append(FORMS.text("rounding_note", rule=FORMS.rounding(step.rounding), scale=step.scale))
    if step.type == "one_of" and step.choices:
        notes.append(FORMS.text("choices_note", choices=", ".join(step.choices)))
    elif step.type in ("boolean", "string", "integer") and kind.names_type:
        notes.append(FORMS.text("type_note", type=step.type) if step.type != "integer" else FORMS.text("integer_note"))
    note = f"    ({'; '.join(notes)})" if notes else ""
    return kind.line(StepContext(procedure, index), values or {}, note), notes


def context_block(context: Sequence[ChatMessage]) -> str:
    """The caller's messages as one block of text for the top of every chunk prompt; ``""`` for none.

    Each message is one ``[role] content`` paragraph, in order. The block goes inside the guard's
    user message rather than as messages of its own: chat templates that want the system message
    first or roles alternating (Qwen, Mistral) reject a second system message or two user turns
    in a row, and a block keeps the guard's own prompts byte-identical when there is no context.
    """
    if not context:
        return ""
    lines = [FORMS.text("context_head")]
    lines += [f"[{m['role']}] {str(m['content']).strip()}" for m in context]
    return "\n".join(lines)


def _count_line(procedure: Procedure, indices: Sequence[int]) -> str:
    """How many lines to write, naming the first and last step.

    Measured on the embedded Qwen2.5-Coder-1.5B (docs/lab/fidelity-history.md): with "Compute the steps in
    order, one line each" it wrote 12 of 60 asked lines (it stopped after the first); with the
    count and the step names it wrote 60 of 60.
    """
    first, last = procedure.steps[indices[0]].var, procedure.steps[indices[-1]].var
    own = kind_of(procedure.steps[indices[0]]).count_line([StepContext(procedure, i) for i in indices])
    if own is not None:
        return own
    if len(indices) == 1:
        return FORMS.text("count_one", first=first)
    return FORMS.text("count_many", n=len(indices), first=first, last=last)


FORMS: PromptForms = current_forms()
"""The prompt forms the code writes: the wording of ``stepguard/guard/prompts/forms/<version>.json``
of the highest version (:mod:`stepguard.guard._forms`, which says what each version changed)."""

PROMPT_FORMS: int = FORMS.version
"""The version of the prompt text the code writes around the templates: the kinds' step lines,
answer shapes and correction notes, the rungs' sub-step prompts, and the texts of :data:`FORMS`. It
is part of :meth:`PromptSet.fingerprint`, so a run store made under one version is refused by
another, naming the prompts, and a checkpointed thread resumes under another only where none of
its committed values depends on the wording (:mod:`stepguard.guard._forms_resume`).
``tests/guard/test_prompt_forms.py`` pins every request of a fixed set of simulated runs to it: a change
to them fails there until a new forms file is written. What each version changed: the file's
``history``."""


class PromptSet:
    """The guard's templates, from ``folder`` where given, else the built-in files.

    Templates use ``string.Template`` placeholders (``$known``, ``$steps``, ``$count_line``, ``$example``, ``$note``).
    """

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = Path(folder) if folder else _BUILTIN

    @staticmethod
    def forms_version() -> int:
        """The version of the prompt forms in use (:data:`PROMPT_FORMS`)."""
        return PROMPT_FORMS

    def fingerprint(self, *, forms: bool = True, version: int | None = None) -> str:
        """The sha256 (hex) of every template's text in use, in a fixed order, and with ``forms``
        of :data:`PROMPT_FORMS` (from version 2 on): a run identity's ``prompts``. A run that sends
        no guarded request (raw mode) leaves ``forms`` out, so the guard's forms do not close it.
        ``version``: the fingerprint these templates had under that forms version (``None``: today's),
        which tells a checkpoint's forms from its identity (:mod:`stepguard.guard._forms_resume`)."""
        h = hashlib.sha256()
        number = PROMPT_FORMS if version is None else version
        if forms and number >= 2:
            h.update(f"forms {number}\0".encode())
        for name in ("system.txt", "chunk.txt", "correction.txt", "raw.txt"):
            h.update(name.encode() + b"\0" + _read(self.folder, name).template.encode("utf-8") + b"\0")
        return h.hexdigest()

    def system(self) -> str:
        """The system message text."""
        return _read(self.folder, "system.txt").template.strip()

    def chunk_messages(
        self,
        procedure: Procedure,
        indices: Sequence[int],
        env: Mapping[str, Number | str],
        note: str | None = None,
        context: Sequence[ChatMessage] = (),
        *,
        inline: bool = False,
    ) -> list[ChatMessage]:
        """Messages asking for steps ``indices`` (0-based), restating exactly the committed values they
        read: :meth:`chunk_request`'s messages."""
        return self.chunk_request(procedure, indices, env, note, context, inline=inline)[0]

    def chunk_request(
        self,
        procedure: Procedure,
        indices: Sequence[int],
        env: Mapping[str, Number | str],
        note: str | None = None,
        context: Sequence[ChatMessage] = (),
        *,
        inline: bool = False,
        role: str | None = None,
    ) -> tuple[list[ChatMessage], PromptPlan]:
        """Messages asking for steps ``indices`` (0-based), restating exactly the committed values they
        read, and the :class:`~stepguard.model.PromptPlan` of what they ask (the steps, the known
        values and text inputs they show), built from the same data, never read back from the text.

        Args:
            procedure: the procedure.
            indices: the steps of this chunk, consecutive.
            env: committed values (inputs and verified variables).
            note: a correction to put first (uses ``correction.txt``), or ``None`` (``chunk.txt``).
            context: the caller's messages, put first in the user message as a block
                (:func:`context_block`); the templates cannot leave them out.
            inline: write the committed values into the step lines (``t3 = 0.05 if False else 0``)
                instead of listing them as known values (:attr:`GuardConfig.inline_known`).
            role: the plan's role (:data:`~stepguard.model.PLAN_ROLES`); ``None``: ``reask`` with a
                ``note``, else ``chunk``.

        Raises:
            ValueError: ``role`` is not one of the plan roles.
        """
        shown_in = _shown_values(procedure, indices, env)
        known, read, texts, listed = shown_in.known, shown_in.read, shown_in.texts, shown_in.listed
        values = read if inline else {}
        if inline:  # written into the expressions instead; a name a tool call reads stays listed
            known = {n: line for n, line in known.items() if n in listed}
        shown = "\n".join(known.values()) if known else "(none)"
        lines, planned = zip(*(_planned(procedure, i, values) for i in indices), strict=True)
        plan = PromptPlan(role or ("reask" if note else "chunk"), tuple(planned), {n: shown_in.values[n] for n in known},
                          shown_in.text_values)
        fields = {
            "known": shown + "".join(f"\n\n{t}" for t in texts),
            "steps": "\n".join(lines),
            "example": kind_of(procedure.steps[indices[0]]).chunk_example([StepContext(procedure, i) for i in indices], values),
            "count_line": _count_line(procedure, indices),
            "note": note or "",
        }
        template = _read(self.folder, "correction.txt" if note else "chunk.txt")
        text = template.safe_substitute(fields).strip()
        block = context_block(context)
        messages: list[ChatMessage] = [
            {"role": "system", "content": self.system()},
            {"role": "user", "content": f"{block}\n\n{text}" if block else text},
        ]
        return messages, plan


class _Shown(NamedTuple):
    """What a chunk's prompt shows of the committed values its steps read."""

    known: dict[str, str]
    """name -> its ``name = value`` line, in the order first read."""
    read: dict[str, Number | str]
    """name -> the committed value, for the values written into the step lines."""
    texts: list[str]
    """The ``Text NAME:`` blocks of text inputs (and of values over more than one line)."""
    listed: set[str]
    """Names a step reads other than through an expression (a tool's arguments): listed even when inlined."""
    values: dict[str, str]
    """name -> the value as shown."""
    text_values: dict[str, str]
    """name -> a text block's text."""


def _shown_values(procedure: Procedure, indices: Sequence[int], env: Mapping[str, Number | str]) -> _Shown:
    """The committed values the steps ``indices`` read from before the chunk, as the prompt shows them."""
    inside = {procedure.steps[i].var for i in indices}
    out = _Shown({}, {}, [], set(), {}, {})
    sources = {name for i in indices for name in procedure.steps[i].text_inputs()}
    for i in indices:
        for name in procedure.reads(i):
            if name in inside or name not in env:
                continue
            value = format_value(env[name])
            if name in sources or "\n" in value:
                block = f'Text {name}:\n"""\n{value.strip()}\n"""'
                if block not in out.texts:
                    out.texts.append(block)
                    out.text_values.setdefault(name, value.strip())
                continue
            out.read[name] = env[name]
            out.known.setdefault(name, f"{name} = {value}")
            out.values.setdefault(name, value)
            if procedure.steps[i].expression is None:
                out.listed.add(name)
    return out


def render_raw_prompt(procedure: Procedure, inputs: Mapping[str, Number | str], folder: Path | None = None) -> list[ChatMessage]:
    """The raw-mode (paper setting) messages: the whole procedure and the inputs in one prompt."""
    ps = PromptSet(folder)
    fields = {
        "inputs": "\n".join(f"{k} = {format_value(v)}" for k, v in inputs.items()),
        "steps": "\n".join(_step_line(procedure, i) for i in range(len(procedure.steps))),
        "last": procedure.answer_var,
    }
    text = _read(ps.folder, "raw.txt").safe_substitute(fields).strip()
    return [{"role": "system", "content": ps.system()}, {"role": "user", "content": text}]
