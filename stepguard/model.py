"""The one thing the core knows about models: the :class:`ChatModel` protocol.

Adapters (``stepguard.adapters``) implement it for OpenAI-compatible endpoints, the embedded
llama.cpp server, the seeded simulated executor and record/replay. The core imports no adapter.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypedDict, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "PLAN_ROLES", "AsyncReplyStream", "ChatMessage", "ChatModel", "ChatResponse", "ClosableModel", "GenerationSettings",
    "PlannedStep", "PromptPlan", "ReplyStream", "StreamCut", "StreamingModel", "Usage", "WrittenReply", "aopen_stream", "open_stream",
]


class ChatMessage(TypedDict):
    """One chat message, as the OpenAI chat API shapes it."""

    role: Literal["system", "user", "assistant"]
    content: str


class Usage(BaseModel):
    """What model calls spent: the one usage type, from a reply's token counts (what an adapter
    reports) to a run's totals (the guard's checkpoints, :attr:`stepguard.guard.GuardResult.usage`
    and ``spent``; ``RunUsage`` and ``UsageTotals`` are this class).

    Tokens as the server counts them; ``cached_tokens`` is the part of ``input_tokens`` the server
    served from its prompt cache, where the server reports it (OpenAI ``prompt_tokens_details.cached_tokens``);
    else 0. ``Usage(input_tokens, output_tokens, cached_tokens)`` takes the token counts by position.
    """

    model_config = ConfigDict(frozen=True)

    model_calls: int = 0
    """Model calls these totals count (0 in one reply's usage: the guard counts its calls)."""
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    wall_s: float = 0.0
    """Seconds of wall time of the run these totals are of (0 in a reply's usage and a checkpoint's)."""
    model_s: float = Field(0.0, description="Seconds spent waiting on the model.")

    def __init__(self, input_tokens: int = 0, output_tokens: int = 0, cached_tokens: int = 0, *, model_calls: int = 0,
                 wall_s: float = 0.0, model_s: float = 0.0, **other: Any) -> None:
        """The counts by name, the token counts also by position; ``other`` keys (a checkpoint's or a
        stored row's that this class does not hold, such as shape 1's ``finished_at``) are ignored.

        Raises:
            pydantic.ValidationError: a count that is not a number.
        """
        super().__init__(model_calls=model_calls, input_tokens=input_tokens, output_tokens=output_tokens, cached_tokens=cached_tokens,
                         wall_s=wall_s, model_s=model_s, **other)

    def __add__(self, other: Usage) -> Usage:
        """Both added, count by count (wall time too)."""
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens,
                     self.cached_tokens + other.cached_tokens, model_calls=self.model_calls + other.model_calls,
                     wall_s=self.wall_s + other.wall_s, model_s=self.model_s + other.model_s)


PLAN_ROLES: tuple[str, ...] = ("chunk", "reask", "window", "nested", "raw")
"""What a call is, as :attr:`PromptPlan.role` says it:

- ``chunk``: the guard's first ask of a chunk of steps (one step for a kind asked alone);
- ``reask``: the guard asks again after a deviation (the prompt opens with a correction note);
- ``window``: a chunk's first ask read as a stream, checked line by line;
- ``nested``: a first ask inside a derived rung's nested run (its sub-steps);
- ``raw``: the whole procedure and its inputs in one prompt, a final answer asked."""


@dataclass(frozen=True)
class PlannedStep:
    """One step a call asks, as the prompt shows it (an entry of :attr:`PromptPlan.steps`).

    Attributes:
        var: the step's variable.
        kind: the step kind's registered name (``compute``, ``tool``, ``extract``, ``text``...).
        expression: the right-hand side of the step's line as the prompt shows it, its notes left
            out: ``S3 * 4``, with committed values written in where the prompt inlines them
            (``(-4) * 4``), ``?`` for a step without an expression, ``CALL lookup(sku=sku)``.
        notes: the notes the line shows after it in parentheses, joined with ``; `` (``""`` for none).
        type: the value's declared type (``number``, ``integer``, ``boolean``, ``string``, ``one_of``...).
        scale: decimal places the value is rounded to, or ``None``.
        rounding: the rounding rule at ``scale`` (``ROUND_HALF_EVEN`` or ``ROUND_HALF_UP``).
        answer: whether this is the procedure's answer step.
    """

    var: str
    kind: str = "compute"
    expression: str = "?"
    notes: str = ""
    type: str = "number"
    scale: int | None = None
    rounding: str = "ROUND_HALF_EVEN"
    answer: bool = False


@dataclass(frozen=True)
class PromptPlan:
    """What one call asks, in data rather than wording: set by the guard on
    :attr:`GenerationSettings.plan` where it builds a call's messages, read by a model that executes
    the procedure itself (the simulated executor) instead of reading the prompt's text. An adapter
    that sends requests never sends it. JSON-like: :meth:`as_json` and :meth:`from_json` round-trip.

    Attributes:
        role: what the call is, one of :data:`PLAN_ROLES`.
        steps: the steps asked, in the prompt's order.
        known: the values the prompt lists as known, name -> the exact text it shows (``"-12"``,
            ``"3.5"``, ``"true"``, ``"large"``), in the prompt's order.
        texts: the text inputs the prompt shows as blocks (``Text NAME:``), name -> text.
        final_answer: whether the prompt asks for a final answer after the steps.

    Raises:
        ValueError: ``role`` is not one of :data:`PLAN_ROLES`, or a step is not a :class:`PlannedStep`.
    """

    role: str
    steps: tuple[PlannedStep, ...]
    known: dict[str, str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    final_answer: bool = False

    def __post_init__(self) -> None:
        if self.role not in PLAN_ROLES:
            raise ValueError(f"PromptPlan.role must be one of {', '.join(PLAN_ROLES)}, not {self.role!r}")
        for i, step in enumerate(self.steps):
            if not isinstance(step, PlannedStep):
                raise ValueError(f"PromptPlan.steps[{i}] must be a PlannedStep, not {type(step).__name__}")

    def as_json(self) -> dict[str, Any]:
        """The plan as plain JSON values (lists, dicts, strings, numbers, booleans, ``None``)."""
        out = dataclasses.asdict(self)
        out["steps"] = list(out["steps"])
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PromptPlan:
        """The plan :meth:`as_json` wrote.

        Raises:
            ValueError: a field missing or of the wrong shape (the message names it).
        """
        try:
            steps = tuple(PlannedStep(**s) for s in data["steps"])
            return cls(str(data["role"]), steps, dict(data.get("known") or {}), dict(data.get("texts") or {}),
                       bool(data.get("final_answer", False)))
        except (KeyError, TypeError) as exc:
            raise ValueError(f"not a prompt plan: {type(exc).__name__}: {exc}") from None


@dataclass(frozen=True)
class GenerationSettings:
    """Per-call sampling settings. ``None`` means the model adapter's own default.

    Attributes:
        temperature: sampling temperature (0 = greedy). The benchmark default is 0.
        seed: sampling seed passed to the server where it honours one.
        max_tokens: cap on generated tokens; a reply cut there has ``finish_reason == "length"``.
        tools: OpenAI ``tools`` entries offered for native tool calling (a tool step's tool), or
            ``()``; an adapter without native tool calling ignores them (the prompt also asks for
            the plain-text ``CALL name(arg=value)`` form).
        plan: what the call asks, as data (:class:`PromptPlan`), where the guard built the prompt;
            ``None`` otherwise. Never sent to a server nor part of a recorded request's key: a model
            that executes the procedure itself (the simulator) reads it.
    """

    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    tools: tuple[dict[str, Any], ...] = ()
    plan: PromptPlan | None = None

    def sent(self) -> dict[str, Any]:
        """The settings a request carries, as JSON values: every field but :attr:`plan`."""
        out = dataclasses.asdict(dataclasses.replace(self, plan=None))
        del out["plan"]
        return out


@dataclass(frozen=True)
class StreamCut:
    """Where and why the guard closed a reply's stream before the model had finished it.

    Attributes:
        step: the step whose line deviated (the variable).
        kind: the deviation's kind (``arithmetic_error``, ``extra_steps``...), ``budget_exhausted``
            when the run's wall-time budget ran out while the model was writing, or ``closed`` when
            the run's reader went (the caller closed the run's stream).
        verified: steps of the window verified in the stream before the cut.
        chars: characters of the reply kept (up to the last complete line judged).
    """

    step: str
    kind: str
    verified: int
    chars: int


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
        tool_calls: native tool calls, ``({"name": ..., "arguments": "<JSON object text>"}, ...)``;
            empty when the model answered in text.
        streamed: True when the reply was read as the model's stream (a streamed guard's window
            from a model that streams), not whole.
        first_chunk_s: seconds from the request to the first text delta of a streamed reply, or ``None``.
        cut: where and why the guard closed the stream (``finish_reason == "cut"``), or ``None``.
    """

    text: str
    usage: Usage = field(default_factory=Usage)
    finish_reason: str = "stop"
    latency_s: float = 0.0
    model: str = ""
    simulated: bool = False
    response_id: str = ""
    tool_calls: tuple[dict[str, Any], ...] = ()
    streamed: bool = False
    first_chunk_s: float | None = None
    cut: StreamCut | None = None


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


class ReplyStream(Protocol):
    """A reply while the model writes it: iterate for text deltas; :meth:`close` stops the
    generation (the server's, where it streams); :attr:`response` is the reply once the stream is
    exhausted or closed, its text what was written before the close, its ``finish_reason``
    ``"cut"`` when closed early.

    A stream over a server's events may yield ``""`` for an event that carries no text (reasoning,
    a tool-call delta, an empty delta), so its reader checks whether to stop on every event. One
    that can be closed from another thread while a reader waits on it has ``abort()``."""

    response: ChatResponse | None

    def __iter__(self) -> Iterator[str]:
        """The text deltas, in order (``""`` for an event without text)."""
        ...

    def close(self) -> None:
        """Stop the generation now; idempotent."""
        ...


class AsyncReplyStream(Protocol):
    """Async twin of :class:`ReplyStream`."""

    response: ChatResponse | None

    def __aiter__(self) -> AsyncIterator[str]:
        """The text deltas, in order."""
        ...

    async def aclose(self) -> None:
        """Stop the generation now; idempotent."""
        ...


@runtime_checkable
class StreamingModel(ChatModel, Protocol):
    """A :class:`ChatModel` that streams text deltas and can stop mid-reply."""

    def stream(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ReplyStream:
        """Start a reply to ``messages`` and return it as a stream."""
        ...

    async def astream(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> AsyncReplyStream:
        """Async twin of :meth:`stream` (returns once the reply has started)."""
        ...


class WrittenReply:
    """A finished reply served as a stream, one line a delta: what a model that cannot stream gives
    the streamed guard (it closes the stream at the first wrong line; nothing is saved), and what
    the simulator and record/replay stream. Closed early, :attr:`response` holds the lines served
    and output tokens in proportion to them."""

    def __init__(self, reply: ChatResponse) -> None:
        self._reply = reply
        self._served = 0
        self._closed = False
        self.response: ChatResponse | None = None

    def __iter__(self) -> Iterator[str]:
        for line in self._reply.text.splitlines(keepends=True):
            if self._closed:
                return
            self._served += len(line)
            yield line
        if not self._closed:
            self.response = self._reply

    def __aiter__(self) -> AsyncIterator[str]:
        return self._aiter()

    async def _aiter(self) -> AsyncIterator[str]:
        for line in self:
            yield line

    def close(self) -> None:
        """Stop serving lines; the response holds the ones served."""
        if self._closed or self.response is not None:
            return
        self._closed = True
        full = self._reply
        share = self._served / len(full.text) if full.text else 1.0
        usage = Usage(full.usage.input_tokens, round(full.usage.output_tokens * share), full.usage.cached_tokens)
        self.response = dataclasses.replace(full, text=full.text[: self._served], usage=usage, finish_reason="cut")

    async def aclose(self) -> None:
        """Async twin of :meth:`close`."""
        self.close()


def open_stream(model: ChatModel, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ReplyStream:
    """``model``'s reply to ``messages`` as a stream: its own (:class:`StreamingModel`), else its
    whole reply served a line at a time (:class:`WrittenReply`)."""
    stream = getattr(model, "stream", None)
    if callable(stream):
        out: ReplyStream = stream(messages, settings)
        return out
    started = time.perf_counter()
    reply = model.complete(messages, settings)
    return WrittenReply(dataclasses.replace(reply, latency_s=reply.latency_s or time.perf_counter() - started))


async def aopen_stream(model: ChatModel, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> AsyncReplyStream:
    """Async twin of :func:`open_stream`."""
    astream = getattr(model, "astream", None)
    if callable(astream):
        out = astream(messages, settings)
        if inspect.isawaitable(out):
            out = await out
        stream: AsyncReplyStream = out
        return stream
    return WrittenReply(await model.acomplete(messages, settings))
