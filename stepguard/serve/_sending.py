"""The model a guarded proxy request talks to: the upstream's, with the request's cap and sent fields.

The drop-in client sends a call's ``top_p`` (and the rest of
:data:`~stepguard.wire._request_fields.SENT_AS_GIVEN`) with every model call and caps each call's
``max_tokens`` at the caller's; the proxy does the same for a request's fields, by one rule
(:mod:`stepguard.wire._request_fields`). An upstream with no endpoint to send fields to (``sim``,
``replay``, ``local``) refuses them, naming the field, rather than drop them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from stepguard.model import (
    AsyncReplyStream,
    ChatMessage,
    ChatModel,
    ChatResponse,
    GenerationSettings,
    ReplyStream,
    aopen_stream,
    open_stream,
)
from stepguard.wire import RequestError

__all__ = ["CappedModel", "sending_model"]


class CappedModel:
    """``inner`` with every call's ``max_tokens`` at most ``cap``, streamed calls too (other attributes are ``inner``'s)."""

    def __init__(self, inner: ChatModel, cap: int) -> None:
        self.inner, self.cap = inner, cap
        self.identity_options = {**(getattr(inner, "identity_options", None) or {}), "max_tokens_cap": cap}

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def _capped(self, settings: GenerationSettings | None) -> GenerationSettings:
        s = settings or GenerationSettings()
        return dataclasses.replace(s, max_tokens=self.cap if s.max_tokens is None else min(s.max_tokens, self.cap))

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        """``inner.complete`` with the cap applied."""
        return self.inner.complete(messages, self._capped(settings))

    async def acomplete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        """``inner.acomplete`` with the cap applied."""
        return await self.inner.acomplete(messages, self._capped(settings))

    def stream(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ReplyStream:
        """``inner``'s streamed reply (:func:`~stepguard.model.open_stream`) with the cap applied."""
        return open_stream(self.inner, messages, self._capped(settings))

    async def astream(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> AsyncReplyStream:
        """Async twin of :meth:`stream`."""
        return await aopen_stream(self.inner, messages, self._capped(settings))


def sending_model(model: ChatModel, sent: Mapping[str, Any], cap: int | None, spec: str) -> ChatModel:
    """``model`` sending ``sent`` with every call and capping ``max_tokens`` at ``cap``.

    Raises:
        RequestError: 400 ``invalid_value``: ``sent`` is not empty and ``model`` cannot send fields
            (``param`` names the first one).
    """
    if sent:
        view = getattr(model, "sending", None)
        if not callable(view):
            first = next(iter(sent))
            raise RequestError(400, f"{first} cannot be honoured: the upstream {spec} has no endpoint to send it to",
                               first, "invalid_value")
        model = view(dict(sent))
    return model if cap is None else CappedModel(model, cap)
