"""A :class:`~stepguard.model.ChatModel` over Inspect AI's model API: every provider Inspect supports.

The guard (and raw mode) call :meth:`InspectModel.acomplete`; it sends the messages through
``inspect_ai.model.Model.generate``, so Inspect's provider, retries, concurrency limits, cache and
transcript (each call a model event that ``inspect view`` shows) apply to every call the guard makes.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from stepguard.errors import ModelUnavailable
from stepguard.model import ChatMessage, ChatResponse, GenerationSettings, Usage

if TYPE_CHECKING:
    from inspect_ai.model import Model, ModelOutput

__all__ = ["InspectModel"]

_FINISH = {"stop": "stop", "max_tokens": "length", "model_length": "length", "tool_calls": "tool_calls",
           "content_filter": "content_filter", "unknown": "unknown"}
"""Inspect's stop reasons as the OpenAI finish reasons stepguard reads (a reply cut at max tokens: ``length``)."""


class InspectModel:
    """stepguard's model protocol over one Inspect ``Model`` (``inspect_ai.model.get_model()``).

    Attributes:
        spec: ``"inspect:<provider>/<model>"``.
        provider: the Inspect provider's name (``openai-api``, ``anthropic``, ...).
        model_name: the model's name as Inspect gives it.
        simulated: always False: a model Inspect serves is a model.
        last_output: the ``ModelOutput`` of the latest call (raw mode's output for the sample), or ``None``.
    """

    simulated = False

    def __init__(self, model: Model) -> None:
        self._model = model
        full = str(model)
        self.provider, _, self.model_name = full.partition("/") if "/" in full else ("inspect", "", full)
        self.spec = f"inspect:{full}"
        self.last_output: ModelOutput | None = None

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        """Not served: Inspect's model API is async, and a solver runs in its event loop.

        Raises:
            TypeError: always; use :meth:`acomplete`.
        """
        raise TypeError("InspectModel is async only (Inspect's model API): call acomplete")

    async def acomplete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        """Send ``messages`` through Inspect's model with ``settings`` as its ``GenerateConfig``.

        Returns:
            The reply: text, usage (input tokens counted as the server counts them, cached ones
            included, as the ``openai`` adapters count them), finish reason, latency, model name.

        Raises:
            ModelUnavailable: Inspect's generate raised (after its own retries); the message names
                the provider's error.
        """
        from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageUser, GenerateConfig

        kinds: dict[str, Any] = {"system": ChatMessageSystem, "user": ChatMessageUser, "assistant": ChatMessageAssistant}
        sent = [kinds[m["role"]](content=m["content"]) for m in messages]
        s = settings or GenerationSettings()
        config = GenerateConfig(temperature=s.temperature, seed=s.seed, max_tokens=s.max_tokens)
        t0 = time.perf_counter()
        try:
            out = await self._model.generate(sent, config=config)
        except Exception as exc:
            raise ModelUnavailable(f"{type(exc).__name__}: {exc}", model=str(self._model)) from exc
        self.last_output = out
        u = out.usage
        usage = Usage() if u is None else Usage(
            u.input_tokens + (u.input_tokens_cache_read or 0) + (u.input_tokens_cache_write or 0), u.output_tokens,
            u.input_tokens_cache_read or 0)
        return ChatResponse(out.completion, usage, _FINISH.get(out.stop_reason, str(out.stop_reason)), time.perf_counter() - t0,
                            out.model or self.model_name)
