"""Prompt templates (files users can swap) and their rendering."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from string import Template

from stepguard.evaluator import Number, format_number
from stepguard.model import ChatMessage
from stepguard.procedure import Procedure

__all__ = ["PromptSet", "context_block", "format_value", "render_raw_prompt"]

_BUILTIN = Path(__file__).parent / "prompts"
_NUMBER = re.compile(r"-?\d+(\.\d+)?")


def format_value(value: Number | str) -> str:
    """A value as it appears in prompts: ``-12``, ``3.5``, a string as written."""
    return value if isinstance(value, str) else format_number(value)


@lru_cache(maxsize=32)
def _read(folder: Path, name: str) -> Template:
    path = folder / name
    if not path.exists():
        path = _BUILTIN / name
    return Template(path.read_text(encoding="utf-8"))


_ROUNDING_WORDS = {"ROUND_HALF_EVEN": "half to even", "ROUND_HALF_UP": "half up"}


def _step_line(procedure: Procedure, index: int) -> str:
    """``var = expr`` plus, after a gap in parentheses, the instruction and any rounding rule."""
    step = procedure.steps[index]
    notes = [step.instruction] if step.instruction else []
    if step.scale is not None:
        notes.append(f"round {_ROUNDING_WORDS[step.rounding]} to {step.scale} decimal places")
    if step.type == "one_of" and step.choices:
        notes.append("one of: " + ", ".join(step.choices))
    elif step.type in ("boolean", "string", "integer"):
        notes.append(f"a {step.type}" if step.type != "integer" else "a whole number")
    note = f"    ({'; '.join(notes)})" if notes else ""
    if step.expr is not None:
        return f"{step.var} = {step.expr}{note}"
    return f"{step.var} = ?{note or '    (as the procedure says)'}"


def _example(procedure: Procedure, index: int) -> str:
    """The answer line's shape for the chunk's first step.

    A step over numbers alone (``t1 = 219 - 19``, as the derived rungs write them) shows its
    expression before the result: with ``t1 = <result>`` the embedded Qwen2.5-Coder-1.5B copied
    the expression and stopped, on the first try of 25 of 27 derived sub-procedures
    (``benchmarks/study_rungs.py``, docs/fidelity.md).
    """
    step = procedure.steps[index]
    if step.expr is not None and procedure.reads(index):
        return f"{step.var} = {step.expr} = <the numbers substituted> = <result>"
    if step.expr is not None and not _NUMBER.fullmatch(step.expr.strip()):
        return f"{step.var} = {step.expr} = <result>"
    return f"{step.var} = <result>"


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

    Measured on the embedded Qwen2.5-Coder-1.5B (docs/fidelity.md): with "Compute the steps in
    order, one line each" it wrote 12 of 60 asked lines (it stopped after the first); with the
    count and the step names it wrote 60 of 60.
    """
    first, last = procedure.steps[indices[0]].var, procedure.steps[indices[-1]].var
    if len(indices) == 1:
        return f"Write one line, for step {first}, as"
    return f"Write {len(indices)} lines, one for each step from {first} to {last}, in order, each as"


class PromptSet:
    """The guard's templates, from ``folder`` where given, else the built-in files.

    Templates use ``string.Template`` placeholders (``$known``, ``$steps``, ``$count_line``, ``$example``, ``$note``).
    """

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = Path(folder) if folder else _BUILTIN

    def fingerprint(self) -> str:
        """The sha256 (hex) of every template's text in use, in a fixed order: a run identity's ``prompts``."""
        h = hashlib.sha256()
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
    ) -> list[ChatMessage]:
        """Messages asking for steps ``indices`` (0-based), restating exactly the committed values they read.

        Args:
            procedure: the procedure.
            indices: the steps of this chunk, consecutive.
            env: committed values (inputs and verified variables).
            note: a correction to put first (uses ``correction.txt``), or ``None`` (``chunk.txt``).
            context: the caller's messages, put first in the user message as a block
                (:func:`context_block`); the templates cannot leave them out.
        """
        inside = {procedure.steps[i].var for i in indices}
        known: list[str] = []
        for i in indices:
            for name in procedure.reads(i):
                if name not in inside and name in env:
                    line = f"{name} = {format_value(env[name])}"
                    if line not in known:
                        known.append(line)
        fields = {
            "known": "\n".join(known) if known else "(none)",
            "steps": "\n".join(_step_line(procedure, i) for i in indices),
            "example": _example(procedure, indices[0]),
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
