"""Prompt templates (files users can swap) and their rendering."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from string import Template

from stepguard.evaluator import Number
from stepguard.kinds import kind_of
from stepguard.model import ChatMessage
from stepguard.procedure import Procedure, format_value

__all__ = ["PROMPT_FORMS", "PromptSet", "context_block", "format_value", "render_raw_prompt"]

_BUILTIN = Path(__file__).parent / "prompts"


@lru_cache(maxsize=32)
def _read(folder: Path, name: str) -> Template:
    path = folder / name
    if not path.exists():
        path = _BUILTIN / name
    return Template(path.read_text(encoding="utf-8"))


_ROUNDING_WORDS = {"ROUND_HALF_EVEN": "half to even", "ROUND_HALF_UP": "half up"}


def _step_line(procedure: Procedure, index: int, values: Mapping[str, Number | str] | None = None) -> str:
    """The step's line (its kind's :meth:`~stepguard.kinds.Kind.line`) with, after a gap in
    parentheses, the instruction, the kind's notes, any rounding rule and the value's type; the
    names in ``values`` written as their values."""
    step = procedure.steps[index]
    kind = kind_of(step)
    notes = [step.instruction.rstrip(". ")] if step.instruction else []
    notes += kind.notes(procedure, index)
    if step.scale is not None:
        notes.append(f"round {_ROUNDING_WORDS[step.rounding]} to {step.scale} decimal places")
    if step.type == "one_of" and step.choices:
        notes.append("one of: " + ", ".join(step.choices))
    elif step.type in ("boolean", "string", "integer") and kind.names_type:
        notes.append(f"a {step.type}" if step.type != "integer" else "a whole number")
    note = f"    ({'; '.join(notes)})" if notes else ""
    return kind.line(procedure, index, values or {}, note)


_CONTEXT_HEAD = "Context (the caller's messages; the steps below decide every value):"


def context_block(context: Sequence[ChatMessage]) -> str:
    """The caller's messages as one block of text for the top of every chunk prompt; ``""`` for none.

    Each message is one ``[role] content`` paragraph, in order. The block goes inside the guard's
    user message rather than as messages of its own: chat templates that want the system message
    first or roles alternating (Qwen, Mistral) reject a second system message or two user turns
    in a row, and a block keeps the guard's own prompts byte-identical when there is no context.
    """
    if not context:
        return ""
    lines = [_CONTEXT_HEAD]
    lines += [f"[{m['role']}] {str(m['content']).strip()}" for m in context]
    return "\n".join(lines)


def _count_line(procedure: Procedure, indices: Sequence[int]) -> str:
    """How many lines to write, naming the first and last step.

    Measured on the embedded Qwen2.5-Coder-1.5B (docs/lab/2026-11-29-fidelity.md): with "Compute the steps in
    order, one line each" it wrote 12 of 60 asked lines (it stopped after the first); with the
    count and the step names it wrote 60 of 60.
    """
    first, last = procedure.steps[indices[0]].var, procedure.steps[indices[-1]].var
    own = kind_of(procedure.steps[indices[0]]).count_line(procedure, indices)
    if own is not None:
        return own
    if len(indices) == 1:
        return f"Write one line, for step {first}, as"
    return f"Write {len(indices)} lines, one for each step from {first} to {last}, in order, each as"


PROMPT_FORMS = 6
"""The version of the prompt text the code writes around the templates: the kinds' step lines,
answer shapes and correction notes, the rungs' sub-step prompts. It is part of
:meth:`PromptSet.fingerprint`, so a run store or a checkpointed thread made under one version is
refused by another, naming the prompts, instead of resuming with prompts it did not run
(``tests/test_prompt_forms.py`` pins every request of a fixed set of simulated runs to it: a
change to them fails there until this is bumped). 2: a copy step's answer shape
(docs/lab/2026-11-29-fidelity.md, "A copy step's example"). 3: ``digits`` asks a step of several operations one
operation a sub-step, and ``chain`` a last quotient with no finite value to the step's places
(docs/lab/2026-11-30-production-suite.md, "The suite with the digit rungs"). 4: ``digits`` asks a rounding at an exact tie
and a ``min``/``max`` as ``tie`` and ``choice`` do, neither ``chain`` nor ``digits`` asks one
operation whose rounding folds into it (the step itself again), and ``divide`` carries a quotient by
a decimal divisor three places past the step's scale. 5: a carry is added to a column's units as a
sub-step of its own (``9 + 8``, then ``7 + 1``), a quotient digit is chosen by the larger of the
remainder and each multiple of the divisor (the multiples the model's sums), to the fewest places
past the scale that round right, and ``chain`` asks a conditional as its condition, then the branch
chosen (docs/lab/2026-11-30-production-suite.md, "The suite with the digit rungs"). 6: a digit sheet compares two whole
numbers of as many digits by the first place their digits differ, one single-digit choice
(``max(6, 1)``, not ``max(60, 12)``); a multiple equal to the remainder, and a mixed-sign sum's
magnitudes of different lengths, are read, not asked."""


class PromptSet:
    """The guard's templates, from ``folder`` where given, else the built-in files.

    Templates use ``string.Template`` placeholders (``$known``, ``$steps``, ``$count_line``, ``$example``, ``$note``).
    """

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = Path(folder) if folder else _BUILTIN

    def fingerprint(self, *, forms: bool = True) -> str:
        """The sha256 (hex) of every template's text in use, in a fixed order, and with ``forms``
        of :data:`PROMPT_FORMS` (from version 2 on): a run identity's ``prompts``. A run that sends
        no guarded request (raw mode) leaves ``forms`` out, so the guard's forms do not close it."""
        h = hashlib.sha256()
        if forms:
            h.update(f"forms {PROMPT_FORMS}\0".encode())
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
        """Messages asking for steps ``indices`` (0-based), restating exactly the committed values they read.

        Args:
            procedure: the procedure.
            indices: the steps of this chunk, consecutive.
            env: committed values (inputs and verified variables).
            note: a correction to put first (uses ``correction.txt``), or ``None`` (``chunk.txt``).
            context: the caller's messages, put first in the user message as a block
                (:func:`context_block`); the templates cannot leave them out.
            inline: write the committed values into the step lines (``t3 = 0.05 if False else 0``)
                instead of listing them as known values (:attr:`GuardConfig.inline_known`).
        """
        inside = {procedure.steps[i].var for i in indices}
        known: dict[str, str] = {}
        read: dict[str, Number | str] = {}
        texts: list[str] = []
        listed: set[str] = set()  # names a step reads other than through an expression (a tool's arguments)
        sources = {name for i in indices for name in procedure.steps[i].text_inputs()}
        for i in indices:
            for name in procedure.reads(i):
                if name not in inside and name in env:
                    value = format_value(env[name])
                    if name in sources or "\n" in value:
                        block = f'Text {name}:\n"""\n{value.strip()}\n"""'
                        if block not in texts:
                            texts.append(block)
                        continue
                    read[name] = env[name]
                    known.setdefault(name, f"{name} = {value}")
                    if procedure.steps[i].expression is None:
                        listed.add(name)
        values = read if inline else {}
        if inline:  # written into the expressions instead; a name a tool call reads stays listed
            known = {n: line for n, line in known.items() if n in listed}
        shown = "\n".join(known.values()) if known else "(none)"
        fields = {
            "known": shown + "".join(f"\n\n{t}" for t in texts),
            "steps": "\n".join(_step_line(procedure, i, values) for i in indices),
            "example": kind_of(procedure.steps[indices[0]]).chunk_example(procedure, indices, values),
            "count_line": _count_line(procedure, indices),
            "note": note or "",
        }
        template = _read(self.folder, "correction.txt" if note else "chunk.txt")
        text = template.safe_substitute(fields).strip()
        block = context_block(context)
        return [
            {"role": "system", "content": self.system()},
            {"role": "user", "content": f"{block}\n\n{text}" if block else text},
        ]


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
