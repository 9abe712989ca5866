"""A guarded run as the ``openai`` client's own types: a ``ChatCompletion``, or a stream of ``ChatCompletionChunk``.

Kept apart from the client wrapper so the OpenAI-compatible proxy (:mod:`stepguard.serve`)
answers with the same shapes: it sends :func:`completion_body` and :meth:`Chunker.body` as JSON,
with the result under a ``stepguard`` key.

One rule ties the two together: the content a stream's deltas add up to is the content the
``ChatCompletion`` holds, byte for byte (both are written by one :class:`ContentWriter`):

- text (no ``response_format``): the answer's text, ``"104.60"``, in the final chunk;
- ``{"type": "json_object"}``: ``{"values": {step: value, ...}, "answer": ..., "status": ...,
  "first_unverified": ...}``, each step's ``"name": value`` as a delta when the step is committed;
- ``{"type": "json_schema"}``: an object with the schema's properties (step names, and any of
  ``status``, ``answer``, ``first_unverified``), likewise; every content written validates against
  the schema, and a schema for which that could not hold is refused up front
  (:func:`response_shape`).

A value keeps its places: a decimal step is a JSON string (``"5.01"``) unless the schema asks
for a number, then a number literal with its places (``5.01``, never a float's ``5.0099999``); a
list step's value is a JSON array and a JSON step's its JSON value, numbers as the model wrote them; a
step not committed (a failed run), or a value its property cannot take, is ``null`` (left out where
the schema does not require the key). Each progress chunk carries what it reports as
``chunk.stepguard`` (a :class:`StepOutcome` or :class:`DeviationEvent`); the final chunk, with
``finish_reason`` and ``usage``, carries the :class:`GuardResult`, as does ``completion.stepguard``.

A value the guard could not check is never delivered as a bare value: where the run's ``status`` is
``flagged`` or ``failed`` (:func:`withheld`), ``finish_reason`` is ``"content_filter"`` (the guard
withheld what it could not verify) instead of ``"stop"``, a text content is ``null``, and a JSON
content writes ``null`` for each flagged (or unverifiable) step and for ``answer`` (its ``status``
and ``first_unverified`` as they are). The values stay in the result (``.stepguard``), each with its
provenance. A caller who wants the model's unchecked values as the content asks for them with
``deliver_flagged: true`` in the ``stepguard`` object (:attr:`ResponseShape.deliver_flagged`):
the content is then written as for a verified run, with ``finish_reason`` ``"stop"``.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from stepguard.guard import DeviationEvent, GuardResult, StepOutcome, bounded_steps, value_text
from stepguard.kinds import kind_of
from stepguard.procedure import Procedure, Step, ValueShape, json_text

from ._client_errors import InvalidGuardedCall

__all__ = [
    "AsyncGuardedStream",
    "Chunker",
    "ContentWriter",
    "GuardedStream",
    "ResponseShape",
    "Slot",
    "achunks",
    "chunk",
    "chunk_body",
    "chunks",
    "completion",
    "completion_body",
    "finish_reason",
    "new_id",
    "response_shape",
    "usage_body",
    "withheld",
]

REPORT_ATTRIBUTE = "stepguard"
"""The attribute a guarded ``ChatCompletion`` or chunk carries its report under (``resp.stepguard``);
openai's models keep extra attributes, which their types do not declare."""

_RESULT_KEYS = ("answer", "status", "first_unverified")
_STATUSES = ("verified", "bounded", "repaired", "flagged", "failed")
_UNCHECKED = ("flagged", "unverifiable")
"""Provenances of a value the guard did not check (withheld from the content unless asked for)."""
WITHHELD = "content_filter"
"""The ``finish_reason`` of a content that withholds what the guard could not verify (OpenAI's word
for content left out because it was flagged)."""
_INTEGER = re.compile(r"-?\d+")
_NUMBER = re.compile(r"-?\d+(\.\d+)?")
_JSON_TYPES = ("string", "number", "integer", "boolean", "null", "array", "object")
_NOTES = frozenset({"title", "description", "$comment", "examples", "default", "deprecated", "readOnly", "writeOnly"})
"""Keywords that describe a property and constrain nothing. A property may hold these, ``type``,
``anyOf`` of such types, and (where its values are a known few: a boolean or one_of step, ``status``,
``first_unverified``) ``enum``; any other keyword is a rule the guard cannot promise its value keeps."""
_OBJECT_KEYS = frozenset({"type", "properties", "required", "additionalProperties", "$schema", "$id", "$defs",
                          "definitions"}) | _NOTES


@dataclass(frozen=True)
class Slot:
    """What one property of a ``json_schema`` content takes (read from its schema by :func:`response_shape`).

    Attributes:
        types: the JSON types it takes (``{"number", "null"}``), or None for any.
        enum: the JSON values it is limited to (as ``json.loads`` reads them), or None.
        required: whether the schema requires the key (a value it cannot take is then ``null``; otherwise
            the key is left out).
    """

    types: frozenset[str] | None = None
    enum: tuple[Any, ...] | None = None
    required: bool = False

    def takes(self, text: str) -> bool:
        """Whether the one JSON value ``text`` (as :func:`_json_value` writes it) is one this property takes."""
        if self.enum is not None and not any(_same_json(json.loads(text), e) for e in self.enum):
            return False
        if self.types is None:
            return True
        kind = _json_kind(text)
        return kind in self.types or (kind == "integer" and "number" in self.types)


_ANY = Slot()


def _same_json(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1``; ``1`` is ``1.0``."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _json_kind(text: str) -> str:
    if text == "null":
        return "null"
    if text in ("true", "false"):
        return "boolean"
    if text.startswith('"'):
        return "string"
    if text[:1] in "[{":
        return "array" if text.startswith("[") else "object"
    return "integer" if _INTEGER.fullmatch(text) else "number"


@dataclass(frozen=True)
class ResponseShape:
    """What the message content is.

    Attributes:
        kind: ``text`` (the answer), ``json_object`` or ``json_schema``.
        steps: ``((step var, JSON type or None), ...)`` in procedure order: the steps the JSON holds
            (the type: the one JSON type its property asks for, other than null, or None).
        extras: the result keys the JSON holds after the steps (``answer``, ``status``, ``first_unverified``).
        slots: ``json_schema`` only: ``{key: Slot}`` for every key of the content, what each takes.
        deliver_flagged: write a flagged or failed run's unchecked values into the content as a
            verified run's, with ``finish_reason`` ``"stop"`` (the caller's ``deliver_flagged: true``);
            ``False`` (the default): withhold them (:func:`withheld`).
    """

    kind: Literal["text", "json_object", "json_schema"] = "text"
    steps: tuple[tuple[str, str | None], ...] = ()
    extras: tuple[str, ...] = ()
    slots: Mapping[str, Slot] = field(default_factory=dict)
    deliver_flagged: bool = False


WITHHELD_STATUSES = ("flagged", "failed", "bounded")
"""Statuses whose answer the content withholds by default: no check proved it (``bounded``: a value
passed a predicate only, and the procedure does not accept that step by ``accept_bounded``)."""


def withheld(result: GuardResult, shape: ResponseShape) -> bool:
    """Whether the content withholds the run's answer: its ``status`` is one of :data:`WITHHELD_STATUSES`
    and the caller did not ask for ``deliver_flagged`` (then ``finish_reason`` is ``"content_filter"``)."""
    return not shape.deliver_flagged and result.status in WITHHELD_STATUSES


def finish_reason(result: GuardResult, shape: ResponseShape) -> str:
    """``"stop"``, or ``"content_filter"`` where the content withholds the answer (:func:`withheld`)."""
    return WITHHELD if withheld(result, shape) else "stop"


def _types(prop: Mapping[str, Any], where: str) -> frozenset[str] | None:
    """The JSON types ``prop`` (a property's schema, or one ``anyOf`` branch) takes, or None for any."""
    t = prop.get("type")
    if t is None:
        return None
    names = [t] if isinstance(t, str) else t if isinstance(t, list) and t else None
    if names is None or not all(isinstance(x, str) for x in names):
        raise InvalidGuardedCall(f"type must be a JSON type or a non-empty list of them, not {str(t)[:60]!r}", where)
    bad = [x for x in names if x not in _JSON_TYPES]
    if bad:
        raise InvalidGuardedCall(f"type {bad[0]!r} cannot hold a step value or a result key ({', '.join(_JSON_TYPES)})", where)
    return frozenset(names)


def _slot(prop: Any, required: bool, where: str) -> Slot:
    """A property's schema as a :class:`Slot`, or refused naming the keyword the guard cannot promise."""
    if prop is True:
        return Slot(required=required)
    if not isinstance(prop, dict):
        raise InvalidGuardedCall("must be a schema object (a property that accepts no value cannot be written)"
                                 if prop is False else f"must be a schema object, not {type(prop).__name__}", where)
    for key in prop:
        if key not in _NOTES and key not in ("type", "enum", "anyOf"):
            raise InvalidGuardedCall(f"{key!r} is a rule the guard cannot promise its values keep; a property may give "
                                     "type (or anyOf of types), enum where the values are a known few, and notes "
                                     "such as description", f"{where}.{key}")
    types = _types(prop, f"{where}.type")
    if "anyOf" in prop:
        branches = prop["anyOf"]
        if "type" in prop or not isinstance(branches, list) or not branches:
            raise InvalidGuardedCall("anyOf must be a non-empty list of types, given without type beside it", f"{where}.anyOf")
        union: set[str] = set()
        for i, branch in enumerate(branches):
            if not isinstance(branch, dict) or any(k not in _NOTES and k != "type" for k in branch):
                raise InvalidGuardedCall("each anyOf branch may give only a type (and notes such as description)",
                                         f"{where}.anyOf[{i}]")
            got = _types(branch, f"{where}.anyOf[{i}].type")
            if got is None:
                union = set(_JSON_TYPES)
                break
            union |= got
        types = frozenset(union)
    enum = prop.get("enum")
    if enum is not None and not isinstance(enum, list):
        raise InvalidGuardedCall(f"enum must be a list, not {type(enum).__name__}", f"{where}.enum")
    return Slot(types, tuple(enum) if enum is not None else None, required)


def _samples(step: Step) -> tuple[list[Any], bool]:
    """Values of ``step``'s type that every run may give it (all of them where they are few: ``True``), for
    checking a property can hold them: one per form its verified value can take."""
    shape = kind_of(step).result_shape(step)
    if shape == "list":
        return [["text"]], False
    if shape == "json":
        return [{"key": "text"}, ["text"], "text", -7, Decimal("-1.5"), True], False
    if step.type == "boolean":
        return [True, False], True
    if step.type == "one_of":
        return list(step.choices or ()), True
    if step.type == "integer":
        return [-7], False
    if step.type == "decimal":
        return [Decimal(-15).scaleb(-(step.scale or 0)) if step.scale is not None else Decimal("-1.5")], False
    if step.type == "number":
        return [-7, Decimal("-1.5")], False
    return ["text"], False


def _type_words(slot: Slot) -> str:
    return "any JSON type" if slot.types is None else "JSON type " + "/".join(sorted(slot.types))


def _check_slot(slot: Slot, values: list[Any], few: bool, absent: str | None, what: str, where: str) -> None:
    """Refuse ``slot`` where a value it must hold (``values``) cannot be written in it, where it limits
    values that are not a known few by ``enum``, or where it can hold no ``null`` for a value that may
    be absent (``absent`` says when) and is required."""
    if slot.enum is not None and not few:
        raise InvalidGuardedCall(f"{what}: enum cannot be promised for such values (only for booleans, one_of "
                                 "choices, status and first_unverified)", f"{where}.enum")
    for value in values:
        if _json_value(value, slot) is None:
            text = value_text(value) if not isinstance(value, str) else value
            raise InvalidGuardedCall(f"{what}; {_type_words(slot)}{' with this enum' if slot.enum is not None else ''} "
                                     f"cannot hold {text!r}", where)
    if absent is not None and slot.required and not slot.takes("null"):
        raise InvalidGuardedCall(f"{what}, and has no value {absent}: allow null "
                                 '(such as "type": [..., "null"]) or leave it out of required', where)


def response_shape(response_format: Any, procedure: Procedure) -> ResponseShape:
    """Read a ``response_format`` for a guarded call of ``procedure``.

    For ``json_schema`` the promise is that every content written validates against the schema,
    whatever the run's outcome; a schema for which it could not hold is refused here. A property
    that names a step is that step's (even where a step is named ``status``), the others must be
    result keys; each may give ``type`` (``anyOf`` of types), notes, and ``enum`` for values that
    are a known few; a required property of a value that may be absent (a step a failed run did
    not reach, ``first_unverified`` of a verified run) must take ``null``.

    Raises:
        InvalidGuardedCall: a format the guard cannot honour (``location`` names the part): another
            type, a schema that is not an object of step names and result keys, a keyword the guard
            cannot promise, or a property whose JSON types cannot hold its value.
    """
    if response_format is None:
        return ResponseShape()
    kind = _format_type(response_format)
    if kind == "text":
        return ResponseShape()
    if kind == "json_object":
        return ResponseShape("json_object", tuple((s.var, None) for s in procedure.steps), ("answer", "status", "first_unverified"))
    if kind != "json_schema":
        raise InvalidGuardedCall(f"type {kind!r} is not supported in a guarded call (text, json_object, json_schema)",
                                 "response_format.type")
    where = "response_format.json_schema.schema"
    schema = _object_schema(response_format, procedure, where)
    props: dict[str, Any] = schema["properties"]
    required = _required(schema, props, where)
    by_var = {s.var: s for s in procedure.steps}
    slots = {name: _property(procedure, by_var, name, prop, name in required, f"{where}.properties.{name}")
             for name, prop in props.items()}
    steps = tuple((s.var, _one_type(slots[s.var])) for s in procedure.steps if s.var in props)
    extras = tuple(k for k in _RESULT_KEYS if k in props and k not in by_var)
    return ResponseShape("json_schema", steps, extras, slots)


def _format_type(response_format: Any) -> str:
    """The ``type`` of a ``response_format``, refused where it is not a dict with a string ``type``."""
    if not isinstance(response_format, dict) or not isinstance(response_format.get("type"), str):
        raise InvalidGuardedCall(
            'must be {"type": "text"}, {"type": "json_object"} or {"type": "json_schema", "json_schema": {...}}'
            f" in a guarded call, not {type(response_format).__name__} {str(response_format)[:80]!r}", "response_format")
    kind: str = response_format["type"]
    return kind


def _object_schema(response_format: dict[str, Any], procedure: Procedure, where: str) -> dict[str, Any]:
    """The ``json_schema`` format's schema: an object schema with properties, giving no key beyond
    :data:`_OBJECT_KEYS` (refused at ``where`` otherwise)."""
    spec = response_format.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    if not isinstance(schema, dict) or schema.get("type", "object") != "object" or not isinstance(schema.get("properties"), dict):
        raise InvalidGuardedCall("must be an object schema whose properties name the procedure's steps "
                                 f"({', '.join(procedure.variables)}) and any of {', '.join(_RESULT_KEYS)}", where)
    for key in schema:
        if key not in _OBJECT_KEYS:
            raise InvalidGuardedCall(f"{key!r} is a rule the guard cannot promise its content keeps (the object may give "
                                     "properties, required, additionalProperties and notes)", f"{where}.{key}")
    return schema


def _required(schema: dict[str, Any], props: dict[str, Any], where: str) -> list[str]:
    """The schema's ``required``: a list of names of its properties (refused otherwise)."""
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        raise InvalidGuardedCall("must be a list of property names", f"{where}.required")
    for i, name in enumerate(required):
        if name not in props:
            raise InvalidGuardedCall(f"{name!r} is required but is not a property: the content holds only the "
                                     "properties", f"{where}.required[{i}]")
    return required


def _property(procedure: Procedure, by_var: dict[str, Step], name: str, prop: Any, required: bool, at: str) -> Slot:
    """The slot of property ``name`` (at ``at``): a step's (or ``answer``, the answer step's) must hold
    every form of its value, ``status`` every status, ``first_unverified`` every step name; another
    name is refused."""
    if name not in by_var and name not in _RESULT_KEYS:
        raise InvalidGuardedCall(f"{name!r} is neither a step of {procedure.name!r} ({', '.join(procedure.variables)}) "
                                 f"nor one of {', '.join(_RESULT_KEYS)}", at)
    slot = _slot(prop, required, at)
    step = by_var.get(name) or (by_var.get(procedure.answer_var) if name == "answer" else None)
    if step is not None:
        values, few = _samples(step)
        what = (f"{'the answer, ' if name not in by_var else ''}step {step.var!r} is a {step.type} value"
                f"{f' with {step.scale} places' if step.scale else ''}")
        _check_slot(slot, values, few, "when a run stops before it (status failed)", what, at)
    elif name == "status":  # bounded only where a step's value may be graded so (issue 41.3)
        statuses = [st for st in _STATUSES if st != "bounded" or bounded_steps(procedure)]
        _check_slot(slot, statuses, True, None, f"status is one of {', '.join(statuses)}", at)
    else:
        _check_slot(slot, list(procedure.variables), True, "when the run is verified",
                    "first_unverified names a step", at)
    return slot


def _one_type(slot: Slot) -> str | None:
    named = [t for t in slot.types or () if t != "null"]
    return named[0] if len(named) == 1 else None


def _forms(value: Any, slot: Slot, shape: ValueShape = "scalar") -> list[str]:
    """The JSON texts ``value`` (of a step held as ``shape``) may be written as, in the order tried."""
    if value is None:
        return ["null"]
    if shape != "scalar" or isinstance(value, (list, dict)):  # a list or JSON value is itself, numbers exact
        return [json_text(value)]
    if isinstance(value, bool):
        return ["true" if value else "false", json.dumps(value_text(value))]
    text = value_text(value) or ""
    quoted = json.dumps(text, ensure_ascii=False)
    if isinstance(value, int):
        return [text, quoted]
    if isinstance(value, Decimal) and _NUMBER.fullmatch(text):  # a string keeps places unless only a number is asked for
        numeric = slot.types is not None and "string" not in slot.types
        return [text, quoted] if numeric else [quoted, text]
    return [quoted]


def _json_value(value: Any, slot: Slot = _ANY, shape: ValueShape = "scalar") -> str | None:
    """A value as one JSON value ``slot`` takes, its places kept (see the module docstring), or None
    where it takes no form of it (a flagged ``3.5`` for an ``integer`` property, ``1/3`` for a ``number``)."""
    return next((f for f in _forms(value, slot, shape) if slot.takes(f)), None)


class ContentWriter:
    """Writes a guarded call's message content piece by piece; the pieces joined are the whole content.

    Call :meth:`step` for each committed step, in order, then :meth:`finish` once. For
    ``json_schema``, a value its property cannot take (a flagged value off its type, or no value)
    is written ``null`` where the property is required and left out where not
    (:func:`response_shape` refused a required property that takes no ``null``).
    """

    def __init__(self, shape: ResponseShape) -> None:
        self.shape = shape
        self._wanted = dict(shape.steps)
        self._written: set[str] = set()
        self._open = False

    def _start(self) -> str:
        if self._open:
            return ", "
        self._open = True
        return '{"values": {' if self.shape.kind == "json_object" else "{"

    def _pair(self, key: str, value: Any, shape: ValueShape = "scalar") -> str:
        slot = self.shape.slots.get(key, _ANY)
        text = _json_value(value, slot, shape)
        if text is None:
            if not slot.required:
                return ""
            text = "null"
        return f"{self._start()}{json.dumps(key)}: {text}"

    def step(self, outcome: StepOutcome) -> str:
        """The delta for a committed step (``""`` where the content does not hold it)."""
        if self.shape.kind == "text" or outcome.var not in self._wanted or outcome.var in self._written:
            return ""
        self._written.add(outcome.var)
        unchecked = outcome.provenance in _UNCHECKED and not self.shape.deliver_flagged
        return self._pair(outcome.var, None if unchecked else outcome.value, outcome.shape)

    def finish(self, result: GuardResult) -> str:
        """The rest of the content once the run has ended."""
        hold = withheld(result, self.shape)
        if self.shape.kind == "text":
            return "" if hold else result.answer_text or ""
        out = [self.step(s.model_copy(update={"value": None})) for s in result.steps
               if s.var in self._wanted and s.var not in self._written]
        fields = {"answer": None if hold else result.answer, "status": result.status,
                  "first_unverified": result.first_unverified}
        answer: ValueShape = next((s.shape for s in result.steps if s.var == result.answer_var), "scalar")
        if self.shape.kind == "json_object":  # the values object closes, the result keys follow
            out.append("}" if self._open else '{"values": {}')
            out += [f", {json.dumps(k)}: {_json_value(fields[k], _ANY, answer if k == 'answer' else 'scalar')}"
                    for k in self.shape.extras]
        else:
            out += [self._pair(k, fields[k], answer if k == "answer" else "scalar") for k in self.shape.extras]
            if not self._open:
                out.append(self._start())
        return "".join(out) + "}"

    def whole(self, result: GuardResult) -> str | None:
        """The whole content of a finished run (what a stream of it adds up to), or ``None`` for a text
        answer to a run that has none or whose answer is withheld (:func:`withheld`): the message's
        ``content`` is then ``null``, never a ``""`` a caller could store or parse as the answer."""
        if self.shape.kind == "text" and (result.answer_text is None or withheld(result, self.shape)):
            return None
        return "".join(self.step(s) for s in result.steps if s.provenance != "missing") + self.finish(result)


def new_id() -> str:
    """A completion id, ``stepguard-<12 hex>``."""
    return f"stepguard-{uuid.uuid4().hex[:12]}"


def usage_body(input_tokens: int, output_tokens: int, cached_tokens: int = 0) -> dict[str, Any]:
    """The ``usage`` object: prompt, completion and total tokens, and the cached prompt tokens."""
    return {"prompt_tokens": input_tokens, "completion_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
            "prompt_tokens_details": {"cached_tokens": cached_tokens}}


def _usage(result: GuardResult) -> dict[str, Any]:
    """The call's ``usage``: what this call spent (:attr:`GuardResult.spent`; a finished thread given
    back from its checkpoint spent nothing), the thread's totals staying in the result's ``usage``."""
    u = result.spent
    return usage_body(u.input_tokens, u.output_tokens, u.cached_tokens)


def completion_body(
    model: str, content: str | None, usage: dict[str, Any], *, id: str | None = None, finish: str = "stop"
) -> dict[str, Any]:
    """The JSON of a ``chat.completion`` with one assistant message (what the proxy sends, what
    :func:`completion` validates): ``{"id", "object", "created", "model", "choices", "usage"}``."""
    return {
        "id": id or new_id(), "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "finish_reason": finish, "logprobs": None,
                     "message": {"role": "assistant", "content": content}}],
        "usage": usage,
    }


def completion(result: GuardResult, model: str, content: str | None, *, id: str | None = None,
               finish: str = "stop") -> ChatCompletion:
    """A ``ChatCompletion`` whose message content is ``content`` (``None``: ``null``, a run with no answer
    or one withheld) and whose ``finish_reason`` is ``finish`` (:func:`finish_reason`); ``.stepguard`` is the result.

    ``usage`` sums every model call this call made (re-prompts and derived sub-steps included; none for a
    finished thread given back from its checkpoint).
    """
    resp = ChatCompletion.model_validate(completion_body(model, content, _usage(result), id=id, finish=finish))
    setattr(resp, REPORT_ATTRIBUTE, result)
    return resp


def chunk_body(
    id: str, model: str, created: int, delta: dict[str, Any], *, finish: str | None = None,
    result: GuardResult | None = None,
) -> dict[str, Any]:
    """The JSON of one ``chat.completion.chunk``; with ``result`` (the last chunk) also its ``usage``."""
    out: dict[str, Any] = {
        "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
    }
    if result is not None:
        out["usage"] = _usage(result)
    return out


def chunk(
    id: str,
    model: str,
    created: int,
    delta: dict[str, Any],
    *,
    finish: str | None = None,
    result: GuardResult | None = None,
    report: StepOutcome | DeviationEvent | GuardResult | None = None,
) -> ChatCompletionChunk:
    """One ``ChatCompletionChunk``; ``.stepguard`` is ``report`` (or ``result``); with ``result`` also ``usage``."""
    return _typed_chunk(chunk_body(id, model, created, delta, finish=finish, result=result),
                        report if report is not None else result)


def _typed_chunk(body: dict[str, Any], report: StepOutcome | DeviationEvent | GuardResult | None) -> ChatCompletionChunk:
    out = ChatCompletionChunk.model_validate(body)
    setattr(out, REPORT_ATTRIBUTE, report)
    return out


class Chunker:
    """Turns what :meth:`Guard.stream` yields into chunks: a first chunk with the role, one per
    committed step and per deviation (its content delta, ``""`` where the content does not hold
    it), and a final one with the rest of the content, ``finish_reason``, ``usage`` and the result.

    :meth:`first` and :meth:`of` give the ``openai`` client's types; :meth:`first_body` and
    :meth:`body` the same chunks as JSON (what the proxy sends as server-sent events).
    """

    def __init__(self, model: str, shape: ResponseShape) -> None:
        self.id, self.model, self.created = new_id(), model, int(time.time())
        self.writer = ContentWriter(shape)

    def first_body(self) -> dict[str, Any]:
        """The opening chunk's JSON: ``delta == {"role": "assistant", "content": ""}``."""
        return chunk_body(self.id, self.model, self.created, {"role": "assistant", "content": ""})

    def body(self, item: Any) -> dict[str, Any] | None:
        """The chunk's JSON for one item of the guard's stream (``None`` for a controller node's update)."""
        if isinstance(item, StepOutcome):
            return chunk_body(self.id, self.model, self.created, {"content": self.writer.step(item)})
        if isinstance(item, DeviationEvent):
            return chunk_body(self.id, self.model, self.created, {"content": ""})
        if isinstance(item, GuardResult):  # no answer to a text call (or one withheld): the last delta has content null
            shape = self.writer.shape
            last = (None if shape.kind == "text" and (item.answer_text is None or withheld(item, shape))
                    else self.writer.finish(item))
            return chunk_body(self.id, self.model, self.created, {"content": last}, finish=finish_reason(item, shape),
                              result=item)
        return None

    def first(self) -> ChatCompletionChunk:
        """The opening chunk: ``delta.role == "assistant"``."""
        return _typed_chunk(self.first_body(), None)

    def of(self, item: Any) -> ChatCompletionChunk | None:
        """The chunk for one item of the guard's stream (``None`` for a controller node's update)."""
        body = self.body(item)
        return None if body is None else _typed_chunk(body, item)


def chunks(items: Iterator[Any], chunker: Chunker) -> Iterator[ChatCompletionChunk]:
    """The chunks of a guard stream, the opening one first."""
    yield chunker.first()
    for item in items:
        out = chunker.of(item)
        if out is not None:
            yield out


async def achunks(items: AsyncIterator[Any], chunker: Chunker) -> AsyncIterator[ChatCompletionChunk]:
    """Async twin of :func:`chunks`."""
    yield chunker.first()
    async for item in items:
        out = chunker.of(item)
        if out is not None:
            yield out


class GuardedStream(openai.Stream[ChatCompletionChunk]):
    """A guarded run's chunks as an ``openai.Stream``: iterate it, use it in ``with``, ``close()`` it.

    It is the client's own stream type, so code that checks ``isinstance(s, openai.Stream)`` or
    closes streams keeps working. There is no single HTTP response behind it (a guarded run makes
    many calls): ``response`` is ``None``, and closing it stops the run after the call in flight.
    """

    def __init__(self, source: Iterator[ChatCompletionChunk]) -> None:  # no super().__init__(): no one HTTP response
        self.response = None  # type: ignore[assignment]  # openai types it an httpx.Response; a guarded run has no one response
        self._source = source
        self._iterator = source

    def close(self) -> None:
        """Stop the run (committed chunks stay checkpointed)."""
        close = getattr(self._source, "close", None)
        if close is not None:
            close()


class AsyncGuardedStream(openai.AsyncStream[ChatCompletionChunk]):
    """Async twin of :class:`GuardedStream`: an ``openai.AsyncStream``."""

    def __init__(self, source: AsyncIterator[ChatCompletionChunk]) -> None:  # no super().__init__(), as above
        self.response = None  # type: ignore[assignment]  # openai types it an httpx.Response; a guarded run has no one response
        self._source = source
        self._iterator = source

    async def close(self) -> None:
        """Stop the run (committed chunks stay checkpointed)."""
        aclose = getattr(self._source, "aclose", None)
        if aclose is not None:
            await aclose()
