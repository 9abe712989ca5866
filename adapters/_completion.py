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
  ``status``, ``answer``, ``first_unverified``), likewise.

A value keeps its places: a decimal step is a JSON string (``"5.01"``) unless the schema asks
for a number, then a number literal with its places (``5.01``, never a float's ``5.0099999``); a
step not committed (a failed run) is ``null``. Each progress chunk carries what it reports as
``chunk.stepguard`` (a :class:`StepOutcome` or :class:`DeviationEvent`); the final chunk, with
``finish_reason`` and ``usage``, carries the :class:`GuardResult`, as does ``completion.stepguard``.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any, Literal

import openai
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from stepguard.guard import DeviationEvent, GuardResult, StepOutcome
from stepguard.guard._result import value_text
from stepguard.procedure import Procedure

from ._client_errors import InvalidGuardedCall

__all__ = [
    "AsyncGuardedStream",
    "Chunker",
    "ContentWriter",
    "GuardedStream",
    "ResponseShape",
    "achunks",
    "chunk",
    "chunk_body",
    "chunks",
    "completion",
    "completion_body",
    "new_id",
    "response_shape",
    "usage_body",
]

_RESULT_KEYS = ("answer", "status", "first_unverified")
_NUMBER = re.compile(r"-?\d+(\.\d+)?")
_JSON_TYPES = ("string", "number", "integer", "boolean")


@dataclass(frozen=True)
class ResponseShape:
    """What the message content is.

    Attributes:
        kind: ``text`` (the answer), ``json_object`` or ``json_schema``.
        steps: ``((step var, JSON type or None), ...)`` in procedure order: the steps the JSON holds.
        extras: the result keys the JSON holds after the steps (``answer``, ``status``, ``first_unverified``).
    """

    kind: Literal["text", "json_object", "json_schema"] = "text"
    steps: tuple[tuple[str, str | None], ...] = ()
    extras: tuple[str, ...] = ()


def _schema_type(prop: Any) -> str | None:
    """The one JSON type a property asks for (``["number", "null"]`` counts as ``number``), or None for any."""
    t = prop.get("type") if isinstance(prop, dict) else None
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None) if len([x for x in t if x != "null"]) == 1 else None
    return t if isinstance(t, str) else None


def _fits(step_type: str, scale: int | None, want: str | None) -> bool:
    """Whether a step's value can be written as the JSON type a schema asks for."""
    if want is None or want == "string":
        return True
    if want == "boolean":
        return step_type == "boolean"
    if want == "number":
        return step_type in ("integer", "decimal", "number")
    if want == "integer":
        return step_type == "integer" or (step_type == "decimal" and scale == 0)
    return False


def response_shape(response_format: Any, procedure: Procedure) -> ResponseShape:
    """Read a ``response_format`` for a guarded call of ``procedure``.

    Raises:
        InvalidGuardedCall: a format the guard cannot honour (``location`` names the part): another
            type, a schema that is not an object of step names and result keys, or a property whose
            JSON type does not fit its step's type.
    """
    if response_format is None:
        return ResponseShape()
    if not isinstance(response_format, dict) or not isinstance(response_format.get("type"), str):
        raise InvalidGuardedCall(
            'must be {"type": "text"}, {"type": "json_object"} or {"type": "json_schema", "json_schema": {...}}'
            f" in a guarded call, not {type(response_format).__name__} {str(response_format)[:80]!r}", "response_format")
    kind = response_format["type"]
    every = tuple((s.var, None) for s in procedure.steps)
    if kind == "text":
        return ResponseShape()
    if kind == "json_object":
        return ResponseShape("json_object", every, ("answer", "status", "first_unverified"))
    if kind != "json_schema":
        raise InvalidGuardedCall(f"type {kind!r} is not supported in a guarded call (text, json_object, json_schema)",
                                 "response_format.type")
    spec = response_format.get("json_schema")
    schema = spec.get("schema") if isinstance(spec, dict) else None
    where = "response_format.json_schema.schema"
    if not isinstance(schema, dict) or schema.get("type", "object") != "object" or not isinstance(schema.get("properties"), dict):
        raise InvalidGuardedCall("must be an object schema whose properties name the procedure's steps "
                                 f"({', '.join(procedure.variables)}) and any of {', '.join(_RESULT_KEYS)}", where)
    props: dict[str, Any] = schema["properties"]
    by_var = {s.var: s for s in procedure.steps}
    for name, prop in props.items():
        if name not in by_var and name not in _RESULT_KEYS:
            raise InvalidGuardedCall(f"{name!r} is neither a step of {procedure.name!r} ({', '.join(procedure.variables)}) "
                                     f"nor one of {', '.join(_RESULT_KEYS)}", f"{where}.properties.{name}")
        want = _schema_type(prop)
        if want is not None and want not in _JSON_TYPES:
            raise InvalidGuardedCall(f"type {prop.get('type')!r} cannot hold a step value ({', '.join(_JSON_TYPES)})",
                                     f"{where}.properties.{name}")
        step = by_var.get(name)
        if step is not None and not _fits(step.type, step.scale, want):
            raise InvalidGuardedCall(f"step {name!r} is a {step.type} value"
                                     f"{f' with {step.scale} places' if step.scale else ''}; JSON type {want!r} cannot hold it",
                                     f"{where}.properties.{name}")
    steps = tuple((s.var, _schema_type(props[s.var])) for s in procedure.steps if s.var in props)
    return ResponseShape("json_schema", steps, tuple(k for k in _RESULT_KEYS if k in props))


def _json_value(value: Any, want: str | None) -> str:
    """A value as JSON text, its places kept (see the module docstring)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = value_text(value) or ""
    if want in ("number", "integer") and _NUMBER.fullmatch(text):
        return text
    if want is None and isinstance(value, int):
        return text
    return json.dumps(text, ensure_ascii=False)


class ContentWriter:
    """Writes a guarded call's message content piece by piece; the pieces joined are the whole content.

    Call :meth:`step` for each committed step, in order, then :meth:`finish` once.
    """

    def __init__(self, shape: ResponseShape) -> None:
        self.shape = shape
        self._wanted = dict(shape.steps)
        self._written: list[str] = []
        self._open = False

    def _start(self) -> str:
        if self._open:
            return ", "
        self._open = True
        return '{"values": {' if self.shape.kind == "json_object" else "{"

    def step(self, outcome: StepOutcome) -> str:
        """The delta for a committed step (``""`` where the content does not hold it)."""
        if self.shape.kind == "text" or outcome.var not in self._wanted:
            return ""
        self._written.append(outcome.var)
        return f"{self._start()}{json.dumps(outcome.var)}: {_json_value(outcome.value, self._wanted[outcome.var])}"

    def finish(self, result: GuardResult) -> str:
        """The rest of the content once the run has ended."""
        if self.shape.kind == "text":
            return result.answer_text or ""
        out = [self.step(s.model_copy(update={"value": None})) for s in result.steps
               if s.var in self._wanted and s.var not in self._written]
        answer_type = self._wanted.get(result.answer_var) if self.shape.kind == "json_schema" else None
        fields = {"answer": _json_value(result.answer, answer_type), "status": json.dumps(result.status),
                  "first_unverified": json.dumps(result.first_unverified)}
        if self.shape.kind == "json_object":  # the values object closes, the result keys follow
            out.append("}" if self._open else '{"values": {}')
            out += [f", {json.dumps(k)}: {fields[k]}" for k in self.shape.extras]
        else:
            out += [f"{self._start()}{json.dumps(k)}: {fields[k]}" for k in self.shape.extras]
            if not self._open:
                out.append(self._start())
        return "".join(out) + "}"

    def whole(self, result: GuardResult) -> str:
        """The whole content of a finished run (what a stream of it adds up to)."""
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
    u = result.usage
    return usage_body(u.input_tokens, u.output_tokens, u.cached_tokens)


def completion_body(
    model: str, content: str, usage: dict[str, Any], *, id: str | None = None, finish: str = "stop"
) -> dict[str, Any]:
    """The JSON of a ``chat.completion`` with one assistant message (what the proxy sends, what
    :func:`completion` validates): ``{"id", "object", "created", "model", "choices", "usage"}``."""
    return {
        "id": id or new_id(), "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "finish_reason": finish, "logprobs": None,
                     "message": {"role": "assistant", "content": content}}],
        "usage": usage,
    }


def completion(result: GuardResult, model: str, content: str, *, id: str | None = None) -> ChatCompletion:
    """A ``ChatCompletion`` whose message content is ``content``; ``.stepguard`` is the result.

    ``usage`` sums every model call the run made (re-prompts and derived sub-steps included).
    """
    resp = ChatCompletion.model_validate(completion_body(model, content, _usage(result), id=id))
    resp.stepguard = result  # type: ignore[attr-defined]  # openai models keep extra attributes
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
    out.stepguard = report  # type: ignore[attr-defined]
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
        if isinstance(item, GuardResult):
            return chunk_body(self.id, self.model, self.created, {"content": self.writer.finish(item)},
                              finish="stop", result=item)
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
        self.response = None  # type: ignore[assignment]
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
        self.response = None  # type: ignore[assignment]
        self._source = source
        self._iterator = source

    async def close(self) -> None:
        """Stop the run (committed chunks stay checkpointed)."""
        aclose = getattr(self._source, "aclose", None)
        if aclose is not None:
            await aclose()
