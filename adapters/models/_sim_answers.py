"""What the simulated executor writes for the built-in asked-alone kinds (tool, extract, text), and how
it reads each kind's prompt line back into a step when it was given no procedure.

Registered by kind name in :mod:`.sim_kinds`; a step kind of one's own registers its answer there
the same way. These live with the simulator, not with the kinds: only the simulator needs them.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

from stepguard.errors import EvaluationError
from stepguard.evaluator import compile_expression, format_number
from stepguard.kinds.extract import candidates, verify_extract
from stepguard.procedure import ExtractStep, Procedure, Step, TextStep, ToolArg, ToolStep

__all__ = ["extract_line", "extract_reply", "text_line", "text_reply", "tool_line", "tool_reply"]


# --- tool ---------------------------------------------------------------------------------------
_CALL = re.compile(r"^CALL ([\w.-]+)\((.*)\)$")


def tool_reply(step: Step, env: Mapping[str, Any], procedure: Procedure | None = None) -> str | None:
    """The call with each argument's value: an expression computed from ``env``, a free one the
    first candidate its predicate accepts; ``None`` when an expression cannot be computed."""
    assert isinstance(step, ToolStep)
    args = []
    for name, arg in (step.args or {}).items():
        if isinstance(arg, ToolArg):
            value = _free_candidate(arg, env)
        else:
            try:
                value = compile_expression(arg).evaluate(env)
            except EvaluationError:
                return None
        args.append(f"{name}={_literal(value)}")
    return f"CALL {step.tool}({', '.join(args)})"


def tool_line(var: str, rhs: str, notes: str) -> Step | None:
    """``var = CALL tool(sku=sku, n=<string: len(value) <= 3>)`` as a :class:`ToolStep`; ``None`` for another line."""
    m = _CALL.match(rhs.strip())
    if m is None:
        return None
    args: dict[str, Any] = {}
    for name, src in _split_args(m.group(2)):
        type_, _, check = src.strip("<>").partition(":")
        args[name] = {"type": type_.strip(), "check": check.strip() or None} if src.startswith("<") else src
    try:
        return ToolStep.model_validate({"var": var, "kind": "tool", "tool": m.group(1), "args": args})
    except ValueError:  # pydantic's ValidationError: a line this kind would not write
        return None


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return format_number(value)


def _split_args(text: str) -> list[tuple[str, str]]:
    """``sku=sku, n=<string: len(value) <= 3>`` -> ``[("sku", "sku"), ("n", "<string: ...>")]`` (top-level commas)."""
    out, depth, cur = [], 0, ""
    for ch in text + ",":
        if ch == "," and depth == 0:
            if "=" in cur:
                k, v = cur.split("=", 1)
                out.append((k.strip(), v.strip()))
            cur = ""
            continue
        depth += ch in "(<["
        depth -= ch in ")>]" and depth > 0
        cur += ch
    return out


def _free_candidate(arg: ToolArg, env: Mapping[str, Any]) -> Any:
    """A value for a free argument: the first candidate its predicate accepts (its constants, then defaults)."""
    numeric = arg.type in ("integer", "decimal", "number")
    consts: list[Any] = []
    if arg.check:
        try:
            consts = [n.value for n in ast.walk(compile_expression(arg.check).tree) if isinstance(n, ast.Constant)]
        except EvaluationError:
            pass
    tries = [c for c in consts if isinstance(c, (int, float)) != (not numeric) and not isinstance(c, bool)]
    tries += [0, 1, 10] if numeric else ["ok", "refund"]
    for value in tries:
        try:
            if not arg.check or compile_expression(arg.check).evaluate({**env, "value": value}) is True:
                return value
        except EvaluationError:
            continue
    return tries[0]


# --- extract ------------------------------------------------------------------------------------
_SOURCE = re.compile(r"read it from ([A-Za-z]\w*)(?:, after '([^']*)')?(?:, occurrence (first|last|[1-9][0-9]{0,8}))?")


def extract_reply(step: Step, env: Mapping[str, Any], procedure: Procedure | None = None) -> str | None:
    """The first value of the source (after the label) that the step's check accepts (with
    ``procedure``: that :func:`~stepguard.kinds.verify_extract` verifies, so the simulator reads as the guard does)."""
    assert isinstance(step, ExtractStep)
    text = env.get(step.source)
    if not isinstance(text, str):
        return None
    found = candidates(step, text)
    replies = [f"{step.var} = {v if isinstance(v, str) else format_number(v)}" for v in found]
    if procedure is not None and step.var in procedure.index_of:
        index = procedure.index_of[step.var]
        return next((r for r in replies if verify_extract(procedure, index, env, r).deviation is None), None)
    return _first_checked(step, env, replies, found)


def extract_line(var: str, rhs: str, notes: str) -> Step | None:
    """``var = ?    (read it from receipt, after 'Total', ...)`` as an :class:`ExtractStep`; ``None`` for another line."""
    m = _SOURCE.search(notes)
    if m is None:
        return None
    type_ = "string" if "a string" in notes else "number"
    try:
        occurrence = m.group(3)
        return ExtractStep.model_validate({"var": var, "kind": "extract", "source": m.group(1), "label": m.group(2) or None,
                                           "type": type_, "occurrence": int(occurrence) if occurrence and occurrence.isdigit()
                                           else occurrence})
    except ValueError:
        return None


def _first_checked(step: ExtractStep, env: Mapping[str, Any], replies: list[str], values: list[Any]) -> str | None:
    """The first of ``replies`` whose value (``values``, in step) the step's check accepts; a check
    that cannot be evaluated on a value passes over it."""
    check = compile_expression(step.check) if step.check is not None else None
    for reply, value in zip(replies, values, strict=True):
        try:
            if check is None or check.evaluate({**env, "value": value}) is True:
                return reply
        except EvaluationError:
            continue
    return None


# --- text ---------------------------------------------------------------------------------------
_FROM = re.compile(r"\bfrom ([A-Za-z]\w*)")
_MOST = re.compile(r"at most (\d+) (characters|items)")


def text_reply(step: Step, env: Mapping[str, Any], procedure: Procedure | None = None) -> str | None:
    """A first sentence of the source (within ``max_length``), a list of its first sentences, or ``{"summary": ...}``."""
    assert isinstance(step, TextStep)
    text = env.get(step.source) if step.source else None
    sentences = _sentences(text) if isinstance(text, str) else ["Done."]
    if step.format == "json":
        return f"{step.var} = {json.dumps({'summary': sentences[0]})}"
    if step.format == "list":
        return f"{step.var} = {json.dumps(sentences[: step.max_length or 3])}"
    first = sentences[0]
    if step.max_length is not None and len(first) > step.max_length:
        first = first[: step.max_length].rsplit(" ", 1)[0]
    return f"{step.var} = {first}"


def text_line(var: str, rhs: str, notes: str) -> Step | None:
    """``var = ?    (from notes_text; text on one line; at most 80 characters)`` as a :class:`TextStep`; ``None`` for another line."""
    if "on one line" not in notes:
        return None
    fmt = "list" if "JSON list" in notes else "json" if "JSON on one line" in notes else "text"
    m, most = _FROM.search(notes), _MOST.search(notes)
    data = {"var": var, "kind": "text", "format": fmt, "source": m.group(1) if m else None,
            "max_length": int(most.group(1)) if most else None}
    try:
        return TextStep.model_validate(data)
    except ValueError:
        return None


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s.strip()]
