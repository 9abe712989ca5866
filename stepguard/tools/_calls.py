"""Tool calls as the model writes them: the plain-text ``CALL name(arg=value)`` format, parsed
strictly (never evaluated), and native tool calls (OpenAI ``tool_calls``) read the same way.

Plain text::

    CALL catalog_lookup(sku="A-12")
    order_id = CALL catalog_lookup(sku="A-12")        # the step's name in front is allowed

Every argument is named (``sku=...``) and is a literal: a quoted string, a number (read exactly:
``0.23`` is 23/100), ``true``/``false`` (or ``True``/``False``). A name or a formula
(``base=age ^ 0.23``) is refused with a message saying which argument, so that the guard re-asks
rather than guessing what the model meant.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from stepguard.errors import EvaluationError
from stepguard.evaluator import Number, parse_number

__all__ = ["ToolCall", "calls_from_native", "parse_calls"]

_MAX_LINE = 4000
_CALL = re.compile(r"^[ \t>*`-]*(?:[A-Za-z][A-Za-z0-9_]{0,63}[ \t]*=[ \t]*)?CALL[ \t]+([A-Za-z_][A-Za-z0-9_.-]{0,63})[ \t]*\((.*)\)[ \t`.]*$")
_MENTION = re.compile(r"\bCALL\b")
_BOOLS = {"true": True, "false": False, "True": True, "False": False}


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for.

    Attributes:
        name: the tool's name.
        args: argument name -> value (exact: ``int``, ``Fraction``, ``str``, ``bool``), in the order written.
        text: the call as the model wrote it (a line, or the native call's JSON), for reports.
        error: why the call could not be read (``"argument base is not a literal value: age ^ 0.23"``),
            or ``None``; a call with an error is never executed.
    """

    name: str
    args: dict[str, Number | str | bool] = field(default_factory=dict)
    text: str = ""
    error: str | None = None


def _literal(node: ast.expr, source: str) -> Number | str | bool:
    """The value of one argument's literal node; raises ValueError for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in _BOOLS:
        return _BOOLS[node.id]
    inner = node.operand if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) else node
    if isinstance(inner, ast.Constant) and type(inner.value) in (int, float):
        text = ast.get_source_segment(source, node) or ""
        try:
            return parse_number(text.replace(" ", ""))
        except EvaluationError:
            pass
    raise ValueError(ast.get_source_segment(source, node) or "?")


def _parse_line(line: str) -> ToolCall | None:
    m = _CALL.match(line)
    if m is None:
        return None
    name, inner = m.group(1), m.group(2)
    source = f"f({inner})"
    try:
        tree = ast.parse(source, mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return ToolCall(name, {}, line.strip(), "the arguments could not be read; write name=value pairs, values quoted or numbers")
    call = tree.body
    if not isinstance(call, ast.Call) or call.args or any(k.arg is None for k in call.keywords):
        return ToolCall(name, {}, line.strip(), "every argument must be named (name=value), none positional")
    args: dict[str, Number | str | bool] = {}
    for kw in call.keywords:
        try:
            args[str(kw.arg)] = _literal(kw.value, source)
        except ValueError as exc:
            return ToolCall(name, args, line.strip(), f"argument {kw.arg} is not a literal value: {str(exc)[:80]} (write the value itself)")
    return ToolCall(name, args, line.strip())


def parse_calls(text: str) -> list[ToolCall]:
    """Every ``CALL name(...)`` line of a reply, in order (read, never evaluated).

    A line that mentions ``CALL`` but is not one well-formed call comes back as a :class:`ToolCall`
    with ``error`` set (so a malformed call is reported, not passed over). Lines longer than 4,000
    characters are not read.
    """
    out: list[ToolCall] = []
    for line in text.splitlines():
        if len(line) > _MAX_LINE or not _MENTION.search(line):
            continue
        call = _parse_line(line)
        if call is None:
            out.append(ToolCall("?", {}, line.strip()[:200], "not a call of the form CALL name(arg=value, ...)"))
        else:
            out.append(call)
    return out


def _json_value(value: Any) -> Number | str | bool:
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value
    if isinstance(value, Decimal):
        return parse_number(format(value, "f"))
    raise ValueError(type(value).__name__)


def calls_from_native(tool_calls: Sequence[Mapping[str, Any]]) -> list[ToolCall]:
    """Native tool calls (``[{"name": ..., "arguments": "<JSON object>"}]``) as :class:`ToolCall` s.

    Numbers in the JSON are read exactly (``0.23`` is 23/100). Arguments that are not one JSON
    object of strings, numbers and booleans give a call with ``error`` set.
    """
    out: list[ToolCall] = []
    for tc in tool_calls:
        name, raw = str(tc.get("name") or "?"), tc.get("arguments") or "{}"
        text = f"{name}({raw})"[:_MAX_LINE]
        try:
            data = raw if isinstance(raw, Mapping) else json.loads(str(raw)[:_MAX_LINE * 4], parse_float=Decimal)
            if not isinstance(data, Mapping):
                raise ValueError("not an object")
            args: dict[str, Number | str | bool] = {}
            for k, v in data.items():
                try:
                    args[str(k)] = _json_value(v)
                except ValueError:
                    out.append(ToolCall(name, args, text, f"argument {k} is not a string, number or boolean"))
                    break
            else:
                out.append(ToolCall(name, args, text))
        except (ValueError, TypeError, RecursionError):
            out.append(ToolCall(name, {}, text, "the arguments are not one JSON object"))
    return out
