"""The proxy's answers on the wire: JSON bodies with the result under ``stepguard``, errors, SSE framing.

The ChatCompletion and chunk bodies themselves are the drop-in client's
(:mod:`stepguard.wire._completion`: :func:`completion_body`, :class:`Chunker`), so a guarded
call gets the same content, usage and chunk sequence through ``GuardedOpenAI`` and through the
proxy. What is the proxy's own: the ``stepguard`` key that carries the result (or a stream's
event) in the JSON, the OpenAI error shape, and server-sent event framing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from stepguard.guard import DeviationEvent, GuardResult, StepOutcome
from stepguard.procedure import json_text
from stepguard.wire import ContentWriter, ResponseShape, completion_body, usage_body

if TYPE_CHECKING:
    from stepguard.model import ChatResponse

__all__ = ["KEY", "completion", "error_body", "event", "json_body", "model_completion", "sse"]

KEY = "stepguard"
"""The key under which a guarded response carries the guard's result."""


def completion(result: GuardResult, model: str, shape: ResponseShape) -> dict[str, Any]:
    """A ``chat.completion`` of a guarded run, with the result under ``stepguard``.

    Args:
        result: the guard's result.
        model: the ``model`` field to answer with (the one the request named).
        shape: what the content is (the request's ``response_format``): the answer's text
            (``"104.60"``, places kept), or the values as JSON (see :mod:`stepguard.wire._completion`).

    Returns:
        ``{"id", "object": "chat.completion", "created", "model", "choices": [{"message": {"role":
        "assistant", "content": ...}, "finish_reason": "stop"}], "usage", "stepguard": result JSON}``;
        ``stepguard`` holds ``status`` (read it: only ``verified`` means every value was checked, and
        ``bounded`` that some passed a predicate or format check only), ``steps`` with values, provenance
        and grade, ``deviations``, ``reprompts`` and usage.
    """
    spent = result.spent  # this call's: a finished thread given back from its checkpoint spent nothing
    body = completion_body(model, ContentWriter(shape).whole(result), usage_body(
        spent.input_tokens, spent.output_tokens, spent.cached_tokens))
    body[KEY] = result.model_dump(mode="json")
    return body


def model_completion(resp: ChatResponse, model: str) -> dict[str, Any]:
    """A ``chat.completion`` of one plain model reply (pass-through to a model with no HTTP endpoint: ``sim``)."""
    u = resp.usage
    return completion_body(resp.model or model, resp.text, usage_body(u.input_tokens, u.output_tokens, u.cached_tokens),
                           finish=resp.finish_reason or "stop")


def event(item: StepOutcome | DeviationEvent | GuardResult) -> dict[str, Any]:
    """What a streamed chunk carries under ``stepguard`` for one item of :meth:`stepguard.Guard.stream`.

    Returns:
        A committed step: ``{"event": "step", "var", "value", "provenance", "grade", "index"}``, the value as
        text with its places, or a list or JSON value as itself (its numbers exact, :func:`json_body`);
        ``index``: the step's 0-based position in the procedure;
        a deviation: ``{"event": "deviation", "step", "kind", "action", ...}`` (a
        :class:`~stepguard.guard.DeviationEvent`); the result (the last chunk): its JSON.
    """
    if isinstance(item, StepOutcome):
        value = item.text if item.shape == "scalar" else item.model_dump(mode="json")["value"]
        return {"event": "step", "var": item.var, "value": value, "provenance": item.provenance, "grade": item.grade,
                "index": item.index}
    if isinstance(item, DeviationEvent):
        return {"event": "deviation", **item.model_dump(mode="json")}
    return item.model_dump(mode="json")


def error_body(message: str, type: str = "invalid_request_error", param: str | None = None,
               code: str | None = None, **extra: Any) -> dict[str, Any]:
    """The OpenAI error shape ``{"error": {"message", "type", "param", "code", ...extra}}``."""
    return {"error": {"message": message, "type": type, "param": param, "code": code, **extra}}


def json_body(data: Any) -> str:
    """A body's JSON text on one line, compact (``,`` and ``:`` between items, as the proxy has always
    written its bodies and events), every number exact (:func:`stepguard.procedure.json_text`: a
    result's list or JSON value holds ``Decimal`` numbers, written with the model's digits)."""
    return json_text(data, separators=(",", ":"))


def sse(data: dict[str, Any] | str) -> bytes:
    """One server-sent event: ``data: <json>\\n\\n`` (or ``data: [DONE]\\n\\n`` for the string ``"[DONE]"``)."""
    text = data if isinstance(data, str) else json_body(data)
    return f"data: {text}\n\n".encode()
