"""GuardResult -> OpenAI-shaped JSON bodies: a ChatCompletion, stream chunks, errors, SSE framing.

Kept in one small module so that the ``GuardedOpenAI`` wrapper and the proxy can share one
GuardResult -> response mapping later. Every body here is plain JSON-able dicts (no ``openai``
import), in the shapes the OpenAI API documents for ``/v1/chat/completions``.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stepguard.guard import GuardResult
    from stepguard.model import ChatResponse

__all__ = ["chunk", "completion", "error_body", "model_completion", "new_id", "sse", "usage"]

KEY = "stepguard"
"""The key under which a guarded response carries the guard's result."""


def new_id() -> str:
    """A completion id, ``stepguard-`` and 24 hex characters."""
    return f"stepguard-{uuid.uuid4().hex[:24]}"


def usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    """The ``usage`` object: prompt, completion and total tokens."""
    return {"prompt_tokens": input_tokens, "completion_tokens": output_tokens, "total_tokens": input_tokens + output_tokens}


def completion(result: GuardResult, model: str, *, id: str | None = None) -> dict[str, Any]:  # noqa: A002
    """A ``chat.completion`` whose content is the verified answer, with the result under ``stepguard``.

    Args:
        result: the guard's result; its ``answer_text`` (``"104.60"``, places kept) is the content.
        model: the ``model`` field to answer with (the one the request named).
        id: the completion id (default: a new one).

    Returns:
        ``{"id", "object": "chat.completion", "created", "model", "choices": [{"message": {"role":
        "assistant", "content": answer}, "finish_reason": "stop"}], "usage", "stepguard": result JSON}``;
        ``stepguard`` holds ``status`` (read it: only ``verified`` means every value was checked),
        ``steps`` with values and provenance, ``deviations``, ``reprompts`` and usage.
    """
    return {
        "id": id or new_id(), "object": "chat.completion", "created": int(time.time()), "model": model,
        "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": result.answer_text or ""}}],
        "usage": usage(result.usage.input_tokens, result.usage.output_tokens),
        KEY: result.model_dump(mode="json"),
    }


def model_completion(resp: ChatResponse, model: str) -> dict[str, Any]:
    """A ``chat.completion`` of one plain model reply (pass-through to a model with no HTTP endpoint: ``sim``)."""
    return {
        "id": new_id(), "object": "chat.completion", "created": int(time.time()), "model": resp.model or model,
        "choices": [{"index": 0, "finish_reason": resp.finish_reason or "stop", "logprobs": None,
                     "message": {"role": "assistant", "content": resp.text}}],
        "usage": usage(resp.usage.input_tokens, resp.usage.output_tokens),
    }


def chunk(id: str, model: str, created: int, delta: dict[str, Any] | None = None,  # noqa: A002
          finish_reason: str | None = None, stepguard: dict[str, Any] | None = None,
          use: dict[str, int] | None = None) -> dict[str, Any]:
    """One ``chat.completion.chunk``; ``stepguard`` (an event, or the final result) rides beside ``choices``."""
    out: dict[str, Any] = {
        "id": id, "object": "chat.completion.chunk", "created": created, "model": model,
        "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish_reason, "logprobs": None}],
    }
    if use is not None:
        out["usage"] = use
    if stepguard is not None:
        out[KEY] = stepguard
    return out


def error_body(message: str, type: str = "invalid_request_error", param: str | None = None,  # noqa: A002
               code: str | None = None, **extra: Any) -> dict[str, Any]:
    """The OpenAI error shape ``{"error": {"message", "type", "param", "code", ...extra}}``."""
    return {"error": {"message": message, "type": type, "param": param, "code": code, **extra}}


def sse(data: dict[str, Any] | str) -> bytes:
    """One server-sent event: ``data: <json>\\n\\n`` (or ``data: [DONE]\\n\\n`` for the string ``"[DONE]"``)."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"), default=str)
    return f"data: {text}\n\n".encode()
