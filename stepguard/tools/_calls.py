"""Tool calls as the model writes them: the plain-text ``CALL name(arg=value)`` format, parsed
strictly (never evaluated), and native tool calls (OpenAI ``tool_calls``) read the same way.

Plain text::

    CALL catalog_lookup(sku="A-12")
    order_id = CALL catalog_lookup(sku="A-12")        # the step's name in front is allowed

Every argument is named (``sku=...``) and is a literal: a quoted string, a number (read exactly:
``0.23`` is 23/100; ``(19.99)`` with no sign inside is refused, as the step reader refuses
accounting parentheses), ``true``/``false`` (or ``True``/``False``). A name or a formula
(``base=age ^ 0.23``) is refused with a message saying which argument, so that the guard re-asks
rather than guessing what the model meant.

An argument given twice (``note="approved", note="DENIED"``, or a JSON key twice at any depth of a
native call's arguments) is refused the same way, naming it and both values: Python would keep
the last keyword and ``json.loads`` the last key, so the tool would run with one of two answers.
Names are compared as written (case-sensitive, after JSON's escapes are decoded): ``Note`` is
another argument than ``note``.

Numbers are bounded as the evaluator bounds its own (:data:`stepguard.evaluator.DEFAULT_MAX_BITS`
bits, and a decimal of at most 1,000 digits written out): ``1e400`` or a
5,000-digit integer is a call with ``error`` set (a ``bad_argument`` re-ask), never the caller's
input error, and ``1e99999999999`` is refused by its exponent before anything is expanded. The
places each number was written with are kept (:attr:`ToolCall.places`).
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
from stepguard.evaluator import DEFAULT_MAX_BITS, Number, check_size, normalize, read_number
from stepguard.tools._decimals import written_places

__all__ = ["ToolCall", "calls_from_native", "parse_calls"]

_MAX_LINE = 4000
_CALL = re.compile(r"^[ \t>*`-]*(?:[A-Za-z][A-Za-z0-9_]{0,63}[ \t]*=[ \t]*)?"
                   r"CALL[ \t]+([A-Za-z_][A-Za-z0-9_.-]{0,63})[ \t]*\((.*)\)[ \t`.]*$")
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
        places: argument name -> the decimal places a number was written (or, in a checked call,
            declared) with (``amount=25.00``: 2); a number not named here reaches the tool in its
            shortest exact form (:mod:`stepguard.tools._decimals`).
    """

    name: str
    args: dict[str, Number | str | bool] = field(default_factory=dict)
    text: str = ""
    error: str | None = None
    places: dict[str, int] = field(default_factory=dict)


class _Unreadable(ValueError):
    """An argument's value that is not a literal (``str(exc)``: what was written)."""


class _Accounting(ValueError):
    """A number in parentheses with no sign (``amount=(19.99)``): an accountant's negative or a
    bracket, which is not written (``str(exc)``: the number)."""


class _OutOfBounds(ValueError):
    """A number argument past the evaluator's bounds (``str(exc)``: why)."""


def _bounded(value: Number) -> Number:
    """``value`` if within the evaluator's bit bound; raises :class:`_OutOfBounds`."""
    try:
        check_size(value)
    except EvaluationError:
        raise _OutOfBounds(f"more than {DEFAULT_MAX_BITS} bits (about {DEFAULT_MAX_BITS * 3 // 10} digits), "
                           "past the evaluator's bound") from None
    return value


def _literal(node: ast.expr, source: str) -> Number | str | bool:
    """The value of one argument's literal node; raises :class:`_Unreadable` for anything else and
    :class:`_OutOfBounds` for a number past the evaluator's bounds."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name) and node.id in _BOOLS:
        return _BOOLS[node.id]
    inner = node.operand if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) else node
    if isinstance(inner, ast.Constant) and type(inner.value) in (int, float):
        text = ast.get_source_segment(source, node) or ""
        if inner is node and source.encode()[: node.col_offset].decode(errors="replace").rstrip().endswith("("):
            # amount=(19.99): an accountant's negative or a bracket; which is not written ((-19.99) is -19.99)
            raise _Accounting(text)
        try:
            number = read_number(text.replace(" ", ""))  # the one notation of model text: no 1e3, no 1_000
        except EvaluationError as exc:
            if "digits" in str(exc):
                raise _OutOfBounds(str(exc)) from None
        else:
            return _bounded(number)
    raise _Unreadable(ast.get_source_segment(source, node) or "?")


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
    seen: dict[str, ast.expr] = {}
    for kw in call.keywords:
        first = seen.setdefault(str(kw.arg), kw.value)
        if first is not kw.value:
            both = " and ".join(_shown(ast.get_source_segment(source, v) or "?") for v in (first, kw.value))
            return ToolCall(name, {}, line.strip(), f"argument {kw.arg} is given twice ({both}); give each argument once")
    args: dict[str, Number | str | bool] = {}
    places: dict[str, int] = {}
    for kw in call.keywords:
        try:
            value = args[str(kw.arg)] = _literal(kw.value, source)
        except _OutOfBounds as exc:
            return ToolCall(name, args, line.strip(), f"argument {kw.arg} is out of bounds: {exc}")
        except _Accounting as exc:
            return ToolCall(name, args, line.strip(), f"argument {kw.arg} is in parentheses with no sign: ({exc}) is an "
                                                      f"accountant's negative or a bracket (accounting parentheses); write -{exc} or {exc}")
        except ValueError as exc:
            return ToolCall(name, args, line.strip(), f"argument {kw.arg} is not a literal value: {str(exc)[:80]} (write the value itself)")
        if not isinstance(value, (str, bool)):
            written = written_places((ast.get_source_segment(source, kw.value) or "").replace(" ", ""))
            if written is not None:
                places[str(kw.arg)] = written
    return ToolCall(name, args, line.strip(), places=places)


def _shown(written: str) -> str:
    """An argument's value as a message shows it: as written, cut to 40 characters."""
    return written if len(written) <= 40 else written[:37] + "..."


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
    """A JSON argument's value, exact and bounded; raises :class:`_Unreadable` or :class:`_OutOfBounds`."""
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, (int, Decimal)):
        try:
            number = normalize(value)  # a Decimal's digits and exponent are bounded before it is expanded
        except EvaluationError as exc:
            raise _OutOfBounds(str(exc)) from None
        return _bounded(number)
    raise _Unreadable(type(value).__name__)


def _json_shown(value: Any) -> str:
    """A JSON value as a message shows it: a number as written, else its JSON, cut to 40 characters."""
    return _shown(str(value) if isinstance(value, Decimal) else json.dumps(value, default=str))


class _Once:
    """``object_pairs_hook`` that keeps every object as a dict and notes the first key given twice."""

    def __init__(self) -> None:
        self.repeat: tuple[dict[str, Any], str, Any, Any] | None = None

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out and self.repeat is None:
                self.repeat = (out, key, out[key], value)
            out[key] = value
        return out

    def error(self, top: Any) -> str | None:
        """What the first repeat was, or ``None``; ``top``: the parsed arguments (its keys are the arguments)."""
        if self.repeat is None:
            return None
        where, key, first, last = self.repeat
        what = f"argument {key}" if where is top else f"key {key} (inside an argument)"
        return f"{what} is given twice ({_json_shown(first)} and {_json_shown(last)}); give each argument once"


def calls_from_native(tool_calls: Sequence[Mapping[str, Any]]) -> list[ToolCall]:
    """Native tool calls (``[{"name": ..., "arguments": "<JSON object>"}]``) as :class:`ToolCall` s.

    Numbers in the JSON are read exactly (``0.23`` is 23/100) and bounded (see the module's
    docstring). Arguments that are not one JSON object of strings, numbers and booleans, a key
    given twice in any object of them, or a number past the bounds, give a call with ``error``
    set. Arguments given as a mapping already parsed are taken as they are (a repeat is no longer
    there to see).
    """
    out: list[ToolCall] = []
    for tc in tool_calls:
        name, raw = str(tc.get("name") or "?"), tc.get("arguments") or "{}"
        text = f"{name}({raw})"[:_MAX_LINE]
        once = _Once()
        try:
            data = raw if isinstance(raw, Mapping) else json.loads(str(raw)[:_MAX_LINE * 4], parse_float=Decimal,
                                                                  object_pairs_hook=once)
            if not isinstance(data, Mapping):
                raise ValueError("not an object")
            repeated = once.error(data)
            if repeated is not None:
                out.append(ToolCall(name, {}, text, repeated))
                continue
            args: dict[str, Number | str | bool] = {}
            places: dict[str, int] = {}
            for k, v in data.items():
                try:
                    args[str(k)] = _json_value(v)
                except _OutOfBounds as exc:
                    out.append(ToolCall(name, args, text, f"argument {k} is out of bounds: {exc}"))
                    break
                except ValueError:
                    out.append(ToolCall(name, args, text, f"argument {k} is not a string, number or boolean"))
                    break
                written = written_places(v) if isinstance(v, (int, Decimal)) and not isinstance(v, bool) else None
                if written is not None:
                    places[str(k)] = written
            else:
                out.append(ToolCall(name, args, text, places=places))
        except (ValueError, TypeError, RecursionError):
            out.append(ToolCall(name, {}, text, "the arguments are not one JSON object (or a number in it has too many digits)"))
    return out
