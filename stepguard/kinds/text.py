"""The ``text`` kind: free text, a JSON list of strings or a JSON value the model writes, checked by rules.

One line of text (or a JSON list of strings, or JSON), within ``min_length``..``max_length``,
matching ``pattern``, each item among ``choices``, valid against ``schema``; then the predicate,
which reads a list as its items and JSON as its value (``len(names)`` counts names). JSON is read
exactly: numbers as written (``10.0000000000000001`` stays so), ``NaN``/``Infinity`` and repeated
keys refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from stepguard.errors import EvaluationError
from stepguard.evaluator import normalize
from stepguard.kinds._base import Kind, StepContext, Value, register_kind
from stepguard.kinds._reading import KindVerdict, check_predicate, step_line
from stepguard.procedure import Procedure, Step, TextFormat, TextStep, ValueShape, json_text, no_duplicate_keys
from stepguard.tools import ToolCall
from stepguard.verify import Deviation

__all__ = ["Text", "TextFormat", "TextStep", "dumps_exact", "evaluable", "loads_exact", "verify_text"]

def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def loads_exact(text: str) -> Any:
    """JSON text as exact values: numbers with a fraction or exponent as ``Decimal`` (as written),
    integers as ``int``.

    Raises:
        ValueError: not JSON, ``NaN``/``Infinity``, a key given twice in one object.
    """
    return json.loads(text, parse_float=Decimal, parse_constant=_refuse_constant, object_pairs_hook=no_duplicate_keys)


def evaluable(data: Any) -> Any:
    """JSON data (from :func:`loads_exact`) as the evaluator reads it: a number exact
    (``2.50`` as ``Fraction(5, 2)``), a list as a tuple, a mapping as a mapping; numbers inside a list
    or mapping stay ``Decimal`` as written (no expression reaches inside, and prompts show them so)."""
    if isinstance(data, Decimal):
        return normalize(data)
    return _frozen(data)


def _frozen(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _frozen(v) for k, v in data.items()}
    if isinstance(data, list):
        return tuple(_frozen(v) for v in data)
    return data


def dumps_exact(data: Any) -> str:
    """``data`` (from :func:`loads_exact`) as compact one-line JSON, a ``Decimal`` written as read
    (:func:`stepguard.procedure.json_text`)."""
    return json_text(data)


def _schema_errors(schema: Mapping[str, Any], data: Any) -> str | None:
    try:
        import jsonschema
    except ImportError:
        from stepguard.errors import MissingExtraError

        raise MissingExtraError("a text step's schema needs the jsonschema package: pip install 'stepguard[agent]'",
                                "agent", "jsonschema") from None
    errors = sorted(jsonschema.Draft202012Validator(dict(schema)).iter_errors(data), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    e = errors[0]
    where = "/".join(map(str, e.absolute_path)) or "the value"
    return f"{where}: {e.message[:200]}"


@dataclass
class _Read:
    """What a reply writes for a text step, read as the step's format says."""

    value: str
    """The value committed: the text, or a list or JSON as compact JSON text."""
    items: list[str]
    """What ``pattern`` and ``choices`` check: the text, the list's items, or the JSON text."""
    size: int
    """What ``min_length``/``max_length`` bound: characters, or a list's items."""
    data: Any = None
    """The JSON read (:func:`loads_exact`), for a list or JSON."""


_Fault = tuple[str, str]
"""A deviation's kind and detail (the detail without the step's name)."""


def _read_plain(raw: str) -> _Read | _Fault:
    """The ``text`` format: one line, quotes around it dropped, not empty."""
    text = raw.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
        text = text[1:-1].strip()
    if not text:
        return "type_error", "the text is empty"
    return _Read(text, [text], len(text))


def _read_json(step: TextStep, raw: str) -> _Read | _Fault:
    """The ``list`` and ``json`` formats: JSON on one line (a list of strings for ``list``), valid
    against the step's schema."""
    try:
        data = loads_exact(raw.strip().strip("`"))
    except (ValueError, RecursionError):
        return "type_error", "not valid JSON on one line" if step.format == "json" else "not a JSON list of strings on one line"
    if step.format == "list" and not (isinstance(data, list) and all(isinstance(x, str) for x in data)):
        return "type_error", "not a JSON list of strings"
    value = dumps_exact(data)
    if step.json_schema is not None:
        err = _schema_errors(step.json_schema, data)
        if err:
            return "check_failed", f"does not match the schema ({err})"
    if step.format == "list":
        return _Read(value, list(data), len(data), data)
    return _Read(value, [value], len(value), data)


def _length_fault(step: TextStep, read: _Read) -> _Fault | None:
    """``min_length`` and ``max_length``, in characters (in items for a list)."""
    unit = "items" if step.format == "list" else "characters"
    if step.min_length is not None and read.size < step.min_length:
        return "check_failed", f"{read.size} {unit}, fewer than {step.min_length}"
    if step.max_length is not None and read.size > step.max_length:
        return "check_failed", f"{read.size} {unit}, more than {step.max_length}"
    return None


def _item_fault(step: TextStep, read: _Read) -> _Fault | None:
    """``pattern`` then ``choices``, item by item (the text, or each item of a list; not JSON)."""
    for item in read.items if step.format != "json" else ():
        if step.pattern is not None and re.fullmatch(step.pattern, item) is None:
            return "check_failed", f"{item[:60]!r} does not match the pattern {step.pattern!r}"
        if step.choices is not None and item not in step.choices:
            return "check_failed", f"{item[:60]!r} is not one of {', '.join(step.choices)}"
    return None


def verify_text(procedure: Procedure, index: int, env: Mapping[str, Any], reply: str) -> KindVerdict:
    """Check the text (or list, or JSON) a reply writes for text step ``index``.

    Returns:
        A :class:`KindVerdict` with the value (the text; a list or JSON as compact JSON text, numbers
        exactly as written) or the first deviation: ``under_executed``, ``type_error`` (not a list /
        not JSON: NaN, Infinity and repeated keys are not JSON here), ``check_failed`` (length,
        pattern, choices, schema or predicate, the predicate reading a list as its items).
    """
    step = procedure.steps[index]
    assert isinstance(step, TextStep)
    var = step.var
    out, raw = step_line(reply, var)
    if raw is None:
        return out
    got = f"{var} = {raw}"[:200]
    read = _read_plain(raw) if step.format == "text" else _read_json(step, raw)
    if isinstance(read, tuple):
        return _fail(out, var, got, read)
    fault = _length_fault(step, read) or _item_fault(step, read)
    if fault is not None:
        return _fail(out, var, got, fault)
    return _check_read(procedure, index, env, read, out, got)


def _fail(out: KindVerdict, var: str, got: str, fault: _Fault) -> KindVerdict:
    """``out`` with the deviation ``fault`` of step ``var``."""
    kind, detail = fault
    out.deviation = Deviation(kind=kind, step=var, detail=f"{var}: {detail}", got=got)
    return out


def _check_read(procedure: Procedure, index: int, env: Mapping[str, Any], read: _Read, out: KindVerdict,
                got: str) -> KindVerdict:
    """The step's predicate on what the reply wrote: on the text, on a list's items, on JSON's value."""
    step = _text_step(procedure.steps[index])
    if step.format == "text":
        return check_predicate(procedure, index, env, read.value, out, got)
    try:  # the predicate reads what a later step reads (Text.value_of), JSON null included
        seen = tuple(read.items) if step.format == "list" else evaluable(read.data)
    except EvaluationError as exc:  # 1E+99999: more digits than the evaluator writes out
        return _fail(out, step.var, got, ("type_error", f"a number the evaluator cannot hold exactly ({str(exc)[:120]})"))
    if seen is None:  # check_predicate reads None as "the committed text": give it the JSON null itself
        return _check_null(procedure, index, env, read.value, out, got)
    return check_predicate(procedure, index, env, read.value, out, got, seen)


def _check_null(procedure: Procedure, index: int, env: Mapping[str, Any], value: str, out: KindVerdict, got: str) -> KindVerdict:
    """:func:`check_predicate` for a JSON ``null``: the predicate reads ``value`` as None, never as the text ``"null"``."""
    step = procedure.steps[index]
    check = procedure.compiled_checks[index]
    if check is not None:
        try:
            ok, why = check.evaluate({**env, "value": None}) is True, f"check {step.check!r} is false"
        except (EvaluationError, TypeError) as exc:
            ok, why = False, str(exc)[:200]
        if not ok:
            out.deviation = Deviation(kind="check_failed", step=step.var, detail=f"{step.var} = null: {why}", got=got)
            return out
    out.value = value
    return out


def _text_step(step: Step) -> TextStep:
    assert isinstance(step, TextStep)
    return step


_RESULT_SHAPES: dict[TextFormat, ValueShape] = {"text": "scalar", "list": "list", "json": "json"}
_SHAPES = {"text": "text on one line", "list": "a JSON list of strings on one line", "json": "JSON on one line"}
@register_kind
class Text(Kind):
    """Text, a list or JSON the model writes; asked alone."""

    name = "text"
    step_model = TextStep

    def notes(self, ctx: StepContext) -> list[str]:
        """Its source, shape, length, items, pattern, schema and predicate."""
        step = _text_step(ctx.step)
        notes: list[str] = []
        if step.source:
            notes.append(f"from {step.source}")
        notes.append(_SHAPES[step.format])
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
            notes.append("matching the JSON Schema " + json.dumps(step.json_schema, separators=(",", ":"))[:1500])
        if step.check:
            notes.append(f"it must satisfy {step.check}")
        return notes

    def example(self, ctx: StepContext, values: Mapping[str, Value]) -> str:
        """``var = <text on one line>`` (or a list's, or JSON's, shape)."""
        step = _text_step(ctx.step)
        return f"{step.var} = " + {"text": "<text on one line>", "list": '["<item>", "<item>"]', "json": "<JSON on one line>"}[step.format]

    def check(
        self, ctx: StepContext, env: Mapping[str, Value], reply: str, tool_calls: Sequence[ToolCall] = ()
    ) -> KindVerdict:
        """:func:`verify_text`."""
        return verify_text(ctx.procedure, ctx.index, env, reply)

    def value_of(self, step: Step, text: str) -> Value:
        """The committed text; a list as a tuple of its items, JSON as its value (``len(names)`` counts names).

        Raises:
            ValueError: committed list or JSON text that does not read as one (a checkpoint that does not fit).
        """
        assert isinstance(step, TextStep)
        if step.format == "text":
            return text
        data = loads_exact(text)
        if step.format == "list" and not isinstance(data, list):
            raise ValueError(f"a committed list reads {text[:80]!r}")
        return evaluable(data)

    def result_shape(self, step: Step) -> ValueShape:
        """``list`` for ``format: list`` (a list of strings), ``json`` for ``format: json`` (the JSON
        value), else ``scalar`` (the text)."""
        assert isinstance(step, TextStep)
        return _RESULT_SHAPES[step.format]

    def grade(self, ctx: StepContext) -> str:
        """``free_text``: the value passed its format rules and predicate, which prove no one value."""
        return "free_text"

    def describe(self, ctx: StepContext) -> list[str]:
        """Its shape, length, pattern, membership and schema rules."""
        step = _text_step(ctx.step)
        unit = "items" if step.format == "list" else "characters"
        out = [f"text: {dict(text='one line of text', list='a JSON list of strings', json='a JSON value')[step.format]}"
               + (f", from {step.source}" if step.source else "")]
        if step.min_length is not None or step.max_length is not None:
            low = step.min_length if step.min_length is not None else 0
            high = step.max_length if step.max_length is not None else "any"
            out.append(f"length: {low}..{high} {unit}")
        if step.pattern:
            out.append(f"pattern: {step.pattern} (each {'item' if step.format == 'list' else 'text'}, in full)")
        if step.choices:
            out.append(f"membership: {'each item ' if step.format == 'list' else ''}one of {', '.join(step.choices)}")
        if step.json_schema is not None:
            out.append("schema: a JSON Schema (draft 2020-12)")
        return out
