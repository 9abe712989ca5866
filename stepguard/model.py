"""The one thing the core knows about models: the :class:`ChatModel` protocol.

Adapters (``stepguard.adapters``) implement it for OpenAI-compatible endpoints, the embedded
llama.cpp server, the seeded simulated executor and record/replay. The core imports no adapter.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypedDict, runtime_checkable

__all__ = ["ChatMessage", "ChatModel", "ChatResponse", "ClosableModel", "GenerationSettings", "Usage"]


class ChatMessage(TypedDict):
    """One chat message, as the OpenAI chat API shapes it."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class Usage:
    """Token counts of one or more model calls (tokens, as the server counts them).

    ``cached_tokens`` is the part of ``input_tokens`` the server served from its prompt cache,
    where the server reports it (OpenAI ``prompt_tokens_details.cached_tokens``); else 0.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cached_tokens + other.cached_tokens,
        )


@dataclass(frozen=True)
class GenerationSettings:
    """Per-call sampling settings. ``None`` means the model adapter's own default.

    Attributes:
        temperature: sampling temperature (0 = greedy). The benchmark default is 0.
        seed: sampling seed passed to the server where it honours one.
        max_tokens: cap on generated tokens; a reply cut there has ``finish_reason == "length"``.
    """

    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None


@dataclass(frozen=True)
class ChatResponse:
    """What one model call returned.

    Attributes:
        text: the reply text (may be empty).
        usage: token counts of this call.
        finish_reason: ``"stop"``, ``"length"``, or what the server said.
        latency_s: wall time of the call, seconds, retries included.
        model: the model name the server reported (or the adapter's name).
        simulated: True when the reply came from the simulated executor: never a model's accuracy.
        response_id: the id the server gave the reply (a chat completion's ``id``), or ``""``
            (traced as ``gen_ai.response.id``).
    """

    text: str
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = "stop"
    latency_s: float = 0.0
    model: str = ""
    simulated: bool = False
    response_id: str = ""


@runtime_checkable
class ChatModel(Protocol):
    """A chat model: messages in; text, usage, finish reason and latency out; sync and async.

    Attributes:
        spec: the model specification string it was built from (``"sim:paper"``, ...).
        provider: the GenAI ``gen_ai.provider.name`` value (``"openai"``, ``"llama.cpp"``, ``"stepguard.sim"``).
        model_name: the ``gen_ai.request.model`` value.
        simulated: True for the simulated executor.

    Implementations raise :class:`stepguard.errors.ModelError` subclasses on failure and never
    raise on odd reply text; a reply cut at max tokens comes back with ``finish_reason == "length"``.
    """

    spec: str
    provider: str
    model_name: str
    simulated: bool

    def complete(
        self, messages: list[ChatMessage], settings: GenerationSettings | None = None
    ) -> ChatResponse:
        """Send ``messages`` and return the reply."""
        ...

    async def acomplete(
        self, messages: list[ChatMessage], settings: GenerationSettings | None = None
    ) -> ChatResponse:
        """Async twin of :meth:`complete`."""
        ...


class ClosableModel:
    """Mixin giving an adapter ``close()`` (a no-op unless overridden) and ``with model:`` support,
    so every model from ``stepguard.adapters.load_model`` is used the same way."""

    def close(self) -> None:
        """Release what the model holds (a server, a connection pool); nothing by default."""

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
