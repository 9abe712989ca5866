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
    """A value as it appears in prompts: ``-12``, ``3.5``, ``True``, a string as written.

    Booleans are written as the expressions write them (``0.05 if t2 else 0`` reads ``t2 = False``):
    with ``false`` beside Python's ``True``/``False`` the embedded model answered a conditional
    ``= false = 0.05`` (docs/production.md).
    """
    if isinstance(value, bool):
        return "True" if value else "False"
    return value if isinstance(value, str) else format_number(value)


def _inline(expr: str, values: Mapping[str, Number | str]) -> str:
    """``expr`` with each name in ``values`` written as its value: a negative number in parentheses,
    a text quoted (``tier == 'gold'``); a name inside a longer one (``t1`` in ``t10``) is left alone."""

    def sub(m: re.Match[str]) -> str:
        value = values[m.group(0)]
        if isinstance(value, str):  # a text value as the expressions write one
            return repr(value)
        text = format_value(value)
        return f"({text})" if text.startswith("-") else text

    if not values:
        return expr
    pattern = r"(?<![\w.])(" + "|".join(re.escape(n) for n in sorted(values, key=len, reverse=True)) + r")(?![\w(])"
    return re.sub(pattern, sub, expr)


@lru_cache(maxsize=32)
def _read(folder: Path, name: str) -> Template:
    path = folder / name
    if not path.exists():
        path = _BUILTIN / name
    return Template(path.read_text(encoding="utf-8"))


_ROUNDING_WORDS = {"ROUND_HALF_EVEN": "half to even", "ROUND_HALF_UP": "half up"}


def _arg_text(procedure: Procedure, index: int) -> str:
    """A tool step's arguments as the prompt shows them: ``sku=sku, note=<string: len(value) <= 80>``."""
    parts = []
    for name, arg in (procedure.steps[index].args or {}).items():
        if isinstance(arg, str):
            parts.append(f"{name}={arg}")
        else:
            rule = f": {arg.check}" if arg.check else ""
            parts.append(f"{name}=<{arg.type}{rule}>")
    return ", ".join(parts)


def _kind_notes(procedure: Procedure, index: int) -> list[str]:
    """What an extract or text step's line says about its value (source, label, length, format)."""
    step = procedure.steps[index]
    notes: list[str] = []
    if step.kind == "extract":
        notes.append(f"read it from {step.source}" + (f", after {step.label!r}" if step.label else "") + ", as written there")
    elif step.kind == "text":
        if step.source:
            notes.append(f"from {step.source}")
        notes.append({"text": "text on one line", "list": "a JSON list of strings on one line", "json": "JSON on one line"}[step.format])
        unit = "items" if step.format == "list" else "characters"
        if step.min_length is not None:
            notes.append(f"at least {step.min_length} {unit}")
        if step.max_length is not None:
            notes.append(f"at most {step.max_length} {unit}")
        if step.choices:
            notes.append(("each item " if step.format == "list" else "") + "one of: " + ", ".join(step.choices))
        if step.pattern:
            notes.append(f"matching {step.pattern}")
        if step.json_schema is not None:
            import json

            notes.append("matching the JSON Schema " + json.dumps(step.json_schema, separators=(",", ":"))[:1500])
    if step.check and step.kind in ("extract", "text"):
        notes.append(f"it must satisfy {step.check}")
    return notes


def _step_line(procedure: Procedure, index: int, values: Mapping[str, Number | str] | None = None) -> str:
    """``var = expr`` plus, after a gap in parentheses, the instruction and any rounding rule;
    the names in ``values`` written as their values."""
    step = procedure.steps[index]
    notes = [step.instruction.rstrip(". ")] if step.instruction else []
    notes += _kind_notes(procedure, index)
    if step.scale is not None:
        notes.append(f"round {_ROUNDING_WORDS[step.rounding]} to {step.scale} decimal places")
    if step.type == "one_of" and step.choices:
        notes.append("one of: " + ", ".join(step.choices))
    elif step.type in ("boolean", "string", "integer") and step.kind in ("compute", "extract"):
        notes.append(f"a {step.type}" if step.type != "integer" else "a whole number")
    note = f"    ({'; '.join(notes)})" if notes else ""
    if step.kind == "tool":
        return f"{step.var} = CALL {step.tool}({_arg_text(procedure, index)}){note}"
    if step.expr is not None:
        return f"{step.var} = {_inline(step.expr, values or {})}{note}"
    return f"{step.var} = ?{note or '    (as the procedure says)'}"


def _example(procedure: Procedure, index: int, values: Mapping[str, Number | str] | None = None) -> str:
    """The answer line's shape for the chunk's first step.

    A step over numbers alone (``t1 = 219 - 19``, as the derived rungs write them) shows its
    expression before the result: with ``t1 = <result>`` the embedded Qwen2.5-Coder-1.5B copied
    the expression and stopped, on the first try of 25 of 27 derived sub-procedures
    (``benchmarks/study_rungs.py``, docs/fidelity.md).
    """
    step = procedure.steps[index]
    if step.kind == "tool":
        args = ", ".join(f"{n}=<value>" for n in (step.args or {}))
        return f"CALL {step.tool}({args})"
    if step.kind == "extract":
        return f"{step.var} = <the value as written in {step.source}>"
    if step.kind == "text":
        return f"{step.var} = " + {"text": "<text on one line>", "list": '["<item>", "<item>"]', "json": "<JSON on one line>"}[step.format]
    expr = None if step.expr is None else _inline(step.expr, values or {})
    if expr is not None and any(name not in (values or {}) for name in procedure.reads(index)):
        return f"{step.var} = {expr} = <the numbers substituted> = <result>"
    if expr is not None and not _NUMBER.fullmatch(expr.strip()):
        return f"{step.var} = {expr} = <result>"
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
    step = procedure.steps[indices[0]]
    if step.kind == "tool":
        return (f"Call the tool {step.tool} once, for step {first}. Write each argument's value itself "
                "(a string in double quotes, or a number), never a name or a formula, as")
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
        sources = {procedure.steps[i].source for i in indices}
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
                    if procedure.steps[i].expr is None:
                        listed.add(name)
        values = read if inline else {}
        if inline:  # written into the expressions instead; a name a tool call reads stays listed
            known = {n: line for n, line in known.items() if n in listed}
        shown = "\n".join(known.values()) if known else "(none)"
        fields = {
            "known": shown + "".join(f"\n\n{t}" for t in texts),
            "steps": "\n".join(_step_line(procedure, i, values) for i in indices),
            "example": _example(procedure, indices[0], values),
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
