"""A user's own prompt as raw mode's baseline: ``NAME.prompt.yaml`` beside ``NAME.yaml``.

Raw mode measures what a caller runs without the guard. For generated instances and for a
procedure file alone that is stepguard's calculator prompt (:func:`stepguard.guard.render_raw_prompt`).
A user who already calls a model with their own messages puts them in a **prompt file** beside the
procedure, and raw mode sends exactly those, reading the answer the way their code reads it::

    # shipping.prompt.yaml
    messages:
      - role: system
        content: |
          You are a shipping-cost calculator. ... Reply with the final price.
      - role: user
        content: "{inputs_json}"
    answer: {format: last_number}        # or {format: json_field, field: price}
                                         # or {format: regex, pattern: 'Total: (\\S+)'}
    max_tokens: 400                      # optional: raw mode's cap (default: per step, as for stepguard's prompt)

Placeholders in a message's content: ``{name}`` is the input ``name``'s value as the input set
writes it (``{weight_kg}`` -> ``25.5``), ``{inputs_json}`` every input as one JSON object in the
procedure's order (``{"weight_kg": 25.5, "zone": 2}``: each value as its declared type, numbers as
JSON numbers, text inputs as JSON strings even where they look like numbers, ``"02139"``).
``{{name}}`` writes a literal ``{name}``. Nothing else is special, so JSON examples and ``$`` in a
prompt stay as written; a ``{name}`` that is no input is refused when the file loads
(with the closest input's name), so a typo never reaches the model unreplaced.

The answer is read exactly or refused, never guessed (the notation of
:func:`stepguard.evaluator.read_number`, as the trace parser reads step values):

* ``last_number`` (an answer that is a number; a boolean or text answer is read by one of the
  other two): the last number in the reply (``... so the price is $40.17.`` -> 40.17), read by
  :func:`stepguard.trace.numbers_in`, the rules every reader of model text shares (docs/reading.md).
  A last number that cannot be read whole (``12,5``, ``1e3``, ``7.5%``, ``0x1F``, ``1 176.50``,
  ``12'000``), whose sign is unclear (``–42``, ``(42.00)``) or is the last part of a date, a time, a
  range or a fraction (``2024-05-01``, ``12:30``, ``3-5``, ``1/2``) is refused, not cut to a part.
* ``json_field``: ``field`` (dots for nesting, ``result.price``; a number picks an array's item,
  ``items.0.price``, ``steps.-1.value`` the last) of the JSON object the reply is,
  or of the first JSON object in it (a fenced block or inline); a number or a string holding one.
* ``regex``: the one group of the first match of ``pattern`` (Python syntax, searched in the whole
  reply for at most :data:`REGEX_TIMEOUT_S`, with the ``regex`` package), read as a number (or as
  text, for a text or boolean answer step).

A file that does not fit is a :class:`~stepguard.errors.ProcedureError` naming the file and the key.
The run store records each prompt file's sha256 (``raw_prompt`` in run.json), so a raw run is
never resumed with other messages.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal, NamedTuple

from stepguard.bench._extra import import_extra
from stepguard.errors import EvaluationError, ProcedureError
from stepguard.evaluator import Number, format_number, read_number
from stepguard.model import ChatMessage
from stepguard.procedure import LoadLimits, Procedure, load_inputs_file
from stepguard.trace import numbers_in

__all__ = ["PROMPT_SUFFIXES", "AnswerRead", "UserPrompt", "answer_kind", "load_user_prompt", "number_texts"]

PROMPT_SUFFIXES: tuple[str, ...] = (".prompt.yaml", ".prompt.yml", ".prompt.json")
"""File endings of prompt files beside ``NAME.yaml``; a procedure may have only one."""

AnswerFormat = Literal["last_number", "json_field", "regex"]
"""How the answer is read from the reply:

- ``last_number``: the last number written.
- ``json_field``: a field of the JSON object the reply holds.
- ``regex``: the one group of the pattern's first match.
"""

_ROLES = frozenset({"system", "user", "assistant"})
_KEYS = frozenset({"messages", "answer", "max_tokens"})
REGEX_TIMEOUT_S = 1.0
"""Seconds a ``regex`` answer format's pattern may search one reply (the ``regex`` package's timeout;
the standard ``re`` has none): past it the reply has no answer, as where the pattern does not match."""

_PLACEHOLDER = re.compile(r"\{\{([A-Za-z_]\w*)\}\}|\{([A-Za-z_]\w*)\}")
INPUTS_JSON = "inputs_json"
"""The placeholder for every input as one JSON object."""

_FENCE = re.compile(r"```(?:json)?[ \t]*\n(.*?)```", re.S | re.I)


class AnswerRead(NamedTuple):
    """What the declared answer format read from a reply."""

    text: str | None
    """The answer as written (``"40.17"``), or ``None``: nothing read, or refused."""
    value: Number | str | bool | None
    """The value: an exact number, text or a boolean (by the answer step's type); ``None`` with ``text``."""
    refused: str | None = None
    """Why nothing was read (``"no number in the reply"``, ``"'12,5' is not one number"``), else ``None``."""


@dataclass(frozen=True)
class UserPrompt:
    """A prompt file: the messages a user sends for one procedure, and how their code reads the answer.

    Build it with :func:`load_user_prompt`; :meth:`render` gives an input set's messages and
    :meth:`read_answer` reads a reply.
    """

    path: Path
    """The prompt file."""
    sha256: str
    """sha256 (hex) of the file's bytes: what run.json records."""
    messages: tuple[tuple[str, str], ...]
    """``(role, content template)`` per message, in order."""
    answer_format: AnswerFormat
    """How the answer is read (:data:`AnswerFormat`)."""
    field: str | None = None
    """``json_field``: the field's dotted path."""
    pattern: str | None = None
    """``regex``: the pattern, one group."""
    max_tokens: int | None = None
    """Raw mode's cap on generated tokens for this prompt; ``None``: the per-step default."""
    input_types: tuple[tuple[str, str], ...] = ()
    """``(input name, declared type)`` of the procedure's inputs, in its order: what ``{inputs_json}``
    writes each value as (text inputs as JSON strings, numbers as JSON numbers, booleans as ``true``/``false``)."""

    def render(self, inputs: Mapping[str, Any], order: list[str] | None = None) -> list[ChatMessage]:
        """The messages for one input set, placeholders filled in.

        Args:
            inputs: input name -> value as the input set writes it (``"25.5"``, ``Decimal('25.50')``,
                ``2``) or as bound (``Fraction(51, 2)``); numbers are written as decimals.
            order: the inputs' order in ``{inputs_json}`` (default: the procedure's, then ``inputs``' own).
        """
        types = dict(self.input_types)
        keys = order or [*(k for k in types if k in inputs), *(k for k in inputs if k not in types)]
        as_json = "{" + ", ".join(f"{json.dumps(k)}: {_json_value(inputs[k], types.get(k))}" for k in keys if k in inputs) + "}"

        def fill(m: re.Match[str]) -> str:
            if m.group(1) is not None:
                return "{" + m.group(1) + "}"
            name = m.group(2)
            return as_json if name == INPUTS_JSON else _text(inputs[name])

        return [{"role": role, "content": _PLACEHOLDER.sub(fill, content)} for role, content in self.messages]  # type: ignore[typeddict-item]  # roles were checked at load

    def read_answer(self, text: str, kind: str = "number") -> AnswerRead:
        """Read the answer from a reply as declared, exactly or not at all.

        Args:
            text: the model's reply.
            kind: the answer step's value kind: ``number``, ``boolean`` or ``string`` (``one_of`` reads as text).
        """
        if self.answer_format == "json_field":
            return _read_json(text, str(self.field), kind)
        if self.answer_format == "regex":
            regex = import_extra("regex", what="prompt files with a regex answer format")
            try:  # the user's pattern, bounded: a backtracking pattern on a long reply never returns under re
                m = regex.search(str(self.pattern), text, timeout=REGEX_TIMEOUT_S)
            except TimeoutError:
                return AnswerRead(None, None, f"the pattern did not finish on the reply within {REGEX_TIMEOUT_S:g} s "
                                              "(it backtracks without bound on such text): no answer read")
            if m is None:
                return AnswerRead(None, None, "the pattern does not match the reply")
            return _read_value(m.group(1) or "", kind)
        if kind != "number":  # load_user_prompt refuses this format for such an answer
            return AnswerRead(None, None, f"last_number reads a number, and the answer is {kind}")
        found = numbers_in(text)
        if not found:
            return AnswerRead(None, None, "no number in the reply")
        last = found[-1]
        if last.value is None:
            return AnswerRead(None, None, last.why)
        return AnswerRead(last.text, last.value)


def answer_kind(procedure: Procedure) -> str:
    """How an answer of ``procedure`` is read: ``boolean``, ``string`` or ``one_of`` (text), else ``number``."""
    step = next((s for s in procedure.steps if s.var == procedure.answer_var), None)
    return step.type if step is not None and step.type in ("boolean", "string", "one_of") else "number"


def number_texts(text: str) -> list[Number]:
    """Every number of ``text`` that reads whole (:func:`stepguard.trace.numbers_in`), in order: what
    "the reply shows the value" means when the report looks for where a reply without step lines went wrong."""
    return [n.value for n in numbers_in(text) if n.value is not None]


def _text(value: Any) -> str:
    """An input value as written into a message: text as is, a number as a decimal, a boolean as ``true``/``false``."""
    if isinstance(value, str):
        return value
    if isinstance(value, Decimal):
        return str(value)
    return format_number(value)


_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
"""A number as JSON writes one (RFC 8259, section 6): ASCII digits, no sign but a minus, no leading zero."""


def _json_value(value: Any, type_: str | None) -> str:
    """An input value as a JSON value of its declared type: a text input (``string``, ``one_of``) a JSON
    string whatever it looks like (``"02139"``, ``"2"``), a boolean ``true``/``false``, a number a JSON
    number as the input set writes it where that is one (``25.50``), else its exact decimal (``+1.5`` ->
    ``1.5``, ``1,000`` -> ``1000``). Without a declared type (a name the procedure does not declare): a
    JSON string unless the value is a number or a boolean."""
    if type_ in ("string", "one_of"):
        return json.dumps(value if isinstance(value, str) else _text(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if type_ == "boolean" and isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower()
    if isinstance(value, str) and type_ is None:
        return json.dumps(value)
    written = value.strip() if isinstance(value, str) else _text(value)
    if _JSON_NUMBER.fullmatch(written):
        return written
    try:
        exact = format_number(read_number(written))
    except (EvaluationError, ValueError):
        return json.dumps(written)
    return exact if _JSON_NUMBER.fullmatch(exact) else json.dumps(written)


def _read_value(written: str, kind: str) -> AnswerRead:
    written = written.strip()
    if not written:
        return AnswerRead(None, None, "nothing to read")
    if kind == "boolean":
        low = written.lower()
        if low in ("true", "false"):
            return AnswerRead(written, low == "true")
        return AnswerRead(None, None, f"{written!r} is not true or false")
    if kind in ("string", "one_of"):
        return AnswerRead(written, written)
    try:
        return AnswerRead(written, read_number(written))
    except (EvaluationError, ValueError) as exc:
        return AnswerRead(None, None, f"{written!r} is not one number ({exc})")


def _json_objects(text: str) -> list[Any]:
    """The JSON the reply is, else the fenced blocks' JSON, else every inline object, in order."""
    def loads(s: str) -> Any:
        return json.loads(s, parse_float=str, parse_int=str, parse_constant=lambda c: None)

    try:
        return [loads(text.strip())]
    except ValueError:
        pass
    out = []
    for block in _FENCE.findall(text):
        try:
            out.append(loads(block))
        except ValueError:
            continue
    if out:
        return out
    decoder = json.JSONDecoder(parse_float=str, parse_int=str)
    at = text.find("{")
    while at >= 0:
        try:
            obj, end = decoder.raw_decode(text, at)
        except ValueError:
            at = text.find("{", at + 1)
            continue
        out.append(obj)
        at = text.find("{", end)
    return out


def _read_json(text: str, path: str, kind: str) -> AnswerRead:
    objects = _json_objects(text)
    if not objects:
        return AnswerRead(None, None, "no JSON object in the reply")
    for obj in objects:
        cur = _field(obj, path)
        if cur is _MISSING:
            continue
        if isinstance(cur, bool):
            return _read_value("true" if cur else "false", kind)
        if not isinstance(cur, str):
            return AnswerRead(None, None, f"field {path!r} is {type(cur).__name__}, not a value")
        if kind == "number" and re.fullmatch(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", cur):  # a JSON number, or text of one
            from stepguard.evaluator import parse_number

            try:
                return AnswerRead(cur, parse_number(cur))
            except EvaluationError as exc:
                return AnswerRead(None, None, f"{cur!r} is not one number ({exc})")
        return _read_value(cur, kind)
    return AnswerRead(None, None, f"no field {path!r} in the reply's JSON")


_MISSING = object()
_INDEX = re.compile(r"-?(?:0|[1-9][0-9]*)")


def _field(obj: Any, path: str) -> Any:
    """The value at a dotted ``path`` of parsed JSON, else :data:`_MISSING`: a part names an object's
    key, or, on an array, an item by its position (``items.0.price``; ``-1`` the last, as Python counts)."""
    cur = obj
    for part in path.split("."):
        if isinstance(cur, dict) and part in cur:
            cur = cur[part]
        elif isinstance(cur, list) and _INDEX.fullmatch(part) and -len(cur) <= int(part) < len(cur):
            cur = cur[int(part)]
        else:
            return _MISSING
    return cur


def _refuse(message: str, where: str) -> ProcedureError:
    return ProcedureError(message, where)


def _read_messages(raw: list[Any], procedure: Procedure, where: str) -> tuple[tuple[str, str], ...]:
    """The file's ``messages`` as ``(role, content)`` pairs, each checked in order (its shape, its
    role, its content, its placeholders), then that one of them is the user's.

    Raises:
        ProcedureError: the first message that fails, named by its index; or no user message.
    """
    messages = []
    for k, m in enumerate(raw):
        at = f"{where}: messages[{k}]"
        if not isinstance(m, dict) or set(m) != {"role", "content"}:
            raise _refuse("a message is a mapping with exactly 'role' and 'content'", at)
        role, content = m["role"], m["content"]
        if role not in _ROLES:
            raise _refuse(f"role must be one of {sorted(_ROLES)}, not {role!r}", at)
        if not isinstance(content, str) or not content.strip():
            raise _refuse("content must be non-empty text", at)
        _check_placeholders(content, procedure, at)
        messages.append((role, content))
    if not any(role == "user" for role, _ in messages):
        raise _refuse("messages: at least one user message", where)
    return tuple(messages)


def _check_placeholders(content: str, procedure: Procedure, at: str) -> None:
    """Refuse the first placeholder of ``content`` that names no input of ``procedure`` (nor
    :data:`INPUTS_JSON`), with the closest name as a hint."""
    names = [i.name for i in procedure.inputs]
    for ph in _PLACEHOLDER.finditer(content):
        name = ph.group(2)
        if name is not None and name != INPUTS_JSON and name not in names:
            close = difflib.get_close_matches(name, [*names, INPUTS_JSON], n=1)
            hint = f"; did you mean {{{close[0]}}}?" if close else ""
            raise _refuse(f"placeholder {{{name}}} is no input of procedure {procedure.name!r} (inputs: {', '.join(names)}, "
                          f"or {{{INPUTS_JSON}}} for all of them; {{{{{name}}}}} writes a literal {{{name}}}){hint}", at)


_ANSWER_KEYS: dict[AnswerFormat, set[str]] = {"last_number": {"format"}, "json_field": {"format", "field"}, "regex": {"format", "pattern"}}
"""The keys each answer format takes."""


def _read_answer(answer: Any, procedure: Procedure, at: str) -> tuple[AnswerFormat, str | None, str | None]:
    """The file's ``answer`` as ``(format, field, pattern)``: its format, that the format can read the
    answer's kind, its keys, then the format's own field or pattern.

    Raises:
        ProcedureError: the first of these that fails, at ``at``.
    """
    if not isinstance(answer, dict) or "format" not in answer:
        raise _refuse("answer: how your code reads the reply: {format: last_number}, {format: json_field, field: NAME} "
                      "or {format: regex, pattern: '...(one group)...'}", at)
    fmt = answer["format"]
    if fmt not in _ANSWER_KEYS:
        raise _refuse(f"format must be last_number, json_field or regex, not {fmt!r}", at)
    kind = answer_kind(procedure)
    if fmt == "last_number" and kind != "number":
        raise _refuse(f"format last_number reads a number, and the answer {procedure.answer_var!r} is {kind}: read it with "
                      "{format: regex, pattern: '...(one group)...'} or {format: json_field, field: NAME}", at)
    if set(answer) != _ANSWER_KEYS[fmt]:
        raise _refuse(f"format {fmt} takes exactly {sorted(_ANSWER_KEYS[fmt])}, got {sorted(answer)}", at)
    field_path = _read_field(answer["field"], at) if fmt == "json_field" else None
    pattern = _read_pattern(answer["pattern"], at) if fmt == "regex" else None
    return fmt, field_path, pattern


def _read_field(field_path: Any, at: str) -> str:
    """A ``json_field`` answer's field: a name or a dotted path."""
    if not isinstance(field_path, str) or not re.fullmatch(r"[^.\s]+(?:\.[^.\s]+)*", field_path):
        raise _refuse(f"field must be a name or a dotted path (result.price, items.0.price), not {field_path!r}", at)
    return field_path


def _read_pattern(pattern: Any, at: str) -> str:
    """A ``regex`` answer's pattern: a valid regular expression with exactly one group."""
    if not isinstance(pattern, str):
        raise _refuse("pattern must be text", at)
    try:
        groups = re.compile(pattern).groups
    except re.error as exc:
        raise _refuse(f"pattern is not a valid regular expression: {exc}", at) from None
    if groups != 1:
        raise _refuse(f"pattern must have exactly one group (the answer), it has {groups}", at)
    return pattern


def _read_max_tokens(max_tokens: Any, where: str) -> int | None:
    """The file's optional ``max_tokens``: a whole number of at least 1, or None when absent."""
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise _refuse(f"max_tokens must be a whole number of at least 1, not {max_tokens!r}", f"{where}: max_tokens")
    return max_tokens


def load_user_prompt(path: str | Path, procedure: Procedure, limits: LoadLimits | None = None) -> UserPrompt:
    """Read a prompt file for ``procedure`` (module docstring), checking every placeholder against its inputs.

    Args:
        path: the prompt file (``shipping.prompt.yaml``; ``.json`` is read as JSON).
        procedure: the procedure beside it (its inputs are the placeholders allowed).
        limits: size and nesting caps, as for input-sets files.

    Raises:
        ProcedureError: unreadable, an unknown key, no messages, a message without ``role`` /
            ``content`` or with another role, a placeholder that is no input (with the closest
            name), no ``answer`` or one that does not fit its format (a regex without exactly one
            group); the message names the file and the key.
    """
    p = Path(path)
    data = load_inputs_file(p, limits or LoadLimits())
    where = str(p)
    if not isinstance(data, dict):
        raise _refuse("a prompt file is a mapping with 'messages' and 'answer' (and an optional 'max_tokens')", where)
    extra = sorted(set(data) - _KEYS)
    if extra:
        raise _refuse(f"unknown keys {extra} (allowed: answer, max_tokens, messages)", where)
    raw = data.get("messages")
    if not isinstance(raw, list) or not raw:
        raise _refuse("messages: a non-empty list of {role, content}, the messages your code sends", where)
    if INPUTS_JSON in (i.name for i in procedure.inputs):
        raise _refuse(f"the procedure has an input named {INPUTS_JSON!r}, this file's placeholder for all inputs; rename it", where)
    messages = _read_messages(raw, procedure, where)
    fmt, field_path, pattern = _read_answer(data.get("answer"), procedure, f"{where}: answer")
    max_tokens = _read_max_tokens(data.get("max_tokens"), where)
    return UserPrompt(p, hashlib.sha256(p.read_bytes()).hexdigest(), messages, fmt, field_path, pattern, max_tokens,
                      tuple((i.name, str(i.type)) for i in procedure.inputs))
