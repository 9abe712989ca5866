"""``GuardedOpenAI``: an ``openai`` client whose chat calls can run a procedure under the guard.

Existing code keeps calling ``client.chat.completions.create(...)``. A call that names a procedure
in ``extra_body`` runs it under :class:`~stepguard.guard.Guard`, with the user's own client as the
model; every other call passes straight through to the wrapped client::

    client = GuardedOpenAI(openai.OpenAI(), procedures={"invoice": load_procedure("examples/invoice.yaml")})
    resp = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "Invoice for order 42"}],
        extra_body={"stepguard": {"procedure": "invoice", "inputs": {"subtotal": "100.10", "rate": "0.1"}}},
    )
    resp.choices[0].message.content   # "104.60": the verified answer
    resp.stepguard.status             # "verified": the GuardResult, attached

Why ``extra_body`` and not a new keyword: ``extra_body`` is a parameter the ``openai`` client
already takes, so the call type-checks unchanged and a stray ``stepguard_procedure=`` can never
reach an unwrapped client as a ``TypeError``. In a guarded call the caller's ``messages`` are
shown to the model as context at the top of every chunk prompt (and key the run identity);
``stream=True`` gives an ``openai.Stream`` of chunks as steps are verified; ``response_format``
JSON gives the values as JSON; the caller's sampling options are honoured as
:mod:`stepguard.wire._guarded_call` says. Errors are both stepguard's and ``openai.OpenAIError``
(:mod:`stepguard.wire._client_errors`). Always read ``resp.stepguard.status``: only
``verified`` means every value was checked (``repaired`` results are returned as they are; a
``flagged`` or ``failed`` run's answer is withheld: content ``None``, ``finish_reason``
``"content_filter"``, unless ``deliver_flagged`` asks for it; :func:`stepguard.wire.withheld`).
docs/drop-in-client.md is the guide.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import Any

import openai

from stepguard.errors import ModelError, ModelUnavailable, StepguardError
from stepguard.guard import Guard, GuardConfig, GuardResult
from stepguard.model import ChatMessage, ChatResponse, GenerationSettings, Usage
from stepguard.procedure import Procedure
from stepguard.tools import ToolSet, as_toolset, check_tools
from stepguard.wire import (
    NOT_IN_IDENTITY,
    AsyncGuardedStream,
    Chunker,
    ContentWriter,
    GuardedCall,
    GuardedStream,
    InvalidGuardedCall,
    achunks,
    chunks,
    client_error,
    completion,
    finish_reason,
    guarded_spec,
    read_call,
)

from .._openai.attempts import map_error
from .._openai.reply import ReplyError, content_text, quote
from .._openai.streaming import AsyncChunkStream, ChunkStream, input_estimate

__all__ = ["ClientChatModel", "GuardedOpenAI"]

_KEY = "stepguard"


# What a wrapped ``openai`` client raises: its own errors, and, for a body it cannot parse (an HTML
# page, a JSON list), a JSONDecodeError (a ValueError) or an AttributeError from its parsing.
_CLIENT_FAILURES = (openai.OpenAIError, ValueError, AttributeError)


class ClientChatModel:
    """A :class:`~stepguard.model.ChatModel` over an existing ``openai.OpenAI`` or ``AsyncOpenAI`` client.

    Args:
        client: the user's client (its auth, base URL, retries and timeouts are used as they are).
        model: the model name sent with every call.
        defaults: sampling settings used where the guard leaves one unset.
        max_tokens: a cap on every call's ``max_tokens`` (the guard asks for less where its own
            allowance is smaller), or None.
        max_tokens_name: the argument the cap goes out as: ``max_tokens`` or ``max_completion_tokens``.
        sent: other ``create`` arguments sent with every call as given (``top_p``, ``extra_headers``...).
    """

    provider = "openai_compatible"
    simulated = False

    def __init__(
        self,
        client: Any,
        model: str,
        defaults: GenerationSettings | None = None,
        *,
        max_tokens: int | None = None,
        max_tokens_name: str = "max_tokens",
        sent: Mapping[str, Any] | None = None,
    ) -> None:
        self.client = client
        self.model_name = model
        self.spec = f"client#{model}"
        self.defaults = defaults or GenerationSettings()
        self.max_tokens, self.max_tokens_name = max_tokens, max_tokens_name
        self.sent = dict(sent or {})
        # what changes replies, for the run identity (headers, timeouts and bookkeeping do not)
        self.identity_options = {k: v for k, v in self.sent.items() if k not in NOT_IN_IDENTITY}
        if max_tokens is not None:
            self.identity_options["max_tokens_cap"] = max_tokens

    def _kwargs(self, messages: list[ChatMessage], settings: GenerationSettings | None) -> dict[str, Any]:
        s, d = settings or GenerationSettings(), self.defaults
        out: dict[str, Any] = {**self.sent, "model": self.model_name, "messages": messages}
        for name in ("temperature", "seed", "max_tokens"):
            value = getattr(s, name) if getattr(s, name) is not None else getattr(d, name)
            if name == "max_tokens" and self.max_tokens is not None:
                value = self.max_tokens if value is None else min(value, self.max_tokens)
            if value is not None:
                out[self.max_tokens_name if name == "max_tokens" else name] = value
        return out

    def _where(self) -> str:
        return f"{str(getattr(self.client, 'base_url', '')).rstrip('/')}/chat/completions"

    def _error(self, exc: Exception) -> ModelError:
        """The stepguard error for a failure inside the wrapped client's ``create``."""
        if isinstance(exc, openai.OpenAIError):
            tries = f"{getattr(self.client, 'max_retries', 0) + 1} attempt(s)"
            return map_error(exc, self._where(), self.spec, tries, f"{getattr(self.client, 'timeout', '?')} s")
        return ModelError(f"{self._where()}: the client could not read the reply: {type(exc).__name__}: {exc}", self.spec)

    def _response(self, raw: Any, t0: float) -> ChatResponse:
        said = getattr(raw, "error", None)
        choices = getattr(raw, "choices", None)
        if said is not None and not choices:
            message = str(said.get("message", said) if isinstance(said, dict) else said)[:300]
            raise ModelUnavailable(f"{self._where()} answered HTTP 200 with an error body: {message!r}", self.spec,
                                   status=200, server_message=message)
        u = getattr(raw, "usage", None)
        cached = getattr(getattr(u, "prompt_tokens_details", None), "cached_tokens", 0) or 0
        usage = Usage(getattr(u, "prompt_tokens", 0) or 0, getattr(u, "completion_tokens", 0) or 0, cached) if u else Usage()
        try:
            if not isinstance(choices, list):
                raise ReplyError("the reply has no list of choices")
            if not choices:
                return ChatResponse("", usage, "empty", time.perf_counter() - t0, getattr(raw, "model", "") or "")
            text = content_text(getattr(getattr(choices[0], "message", None), "content", None), "choices[0].message.content")
        except ReplyError as exc:
            raise ModelError(f"{self._where()} sent a reply that is not a chat completion: {exc}: {quote(repr(raw))}",
                             self.spec, status=200) from None
        return ChatResponse(
            text=text, usage=usage, finish_reason=getattr(choices[0], "finish_reason", None) or "stop",
            latency_s=time.perf_counter() - t0, model=getattr(raw, "model", "") or "",
        )

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        """One chat call through the wrapped sync client.

        Raises:
            ModelTimeout, ModelUnavailable, ModelError: the client's errors, mapped as
                :class:`~stepguard.adapters.OpenAICompatibleModel` maps them; a reply that is not a
                chat completion (a content number, whose digits the client already rounded, is refused).
        """
        t0 = time.perf_counter()
        try:
            raw = self.client.chat.completions.create(**self._kwargs(messages, settings))
        except _CLIENT_FAILURES as exc:
            raise self._error(exc) from exc
        return self._response(raw, t0)

    async def acomplete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        """One chat call through the wrapped async client (errors as :meth:`complete`)."""
        t0 = time.perf_counter()
        try:
            raw = await self.client.chat.completions.create(**self._kwargs(messages, settings))
        except _CLIENT_FAILURES as exc:
            raise self._error(exc) from exc
        return self._response(raw, t0)

    def _stream_kwargs(self, messages: list[ChatMessage], settings: GenerationSettings | None) -> dict[str, Any]:
        return {**self._kwargs(messages, settings), "stream": True, "stream_options": {"include_usage": True}}

    def stream(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChunkStream:
        """A streamed reply through the wrapped sync client (``create(..., stream=True)``), for the
        streamed guard: iterating gives the text deltas; closing it closes the client's response,
        so the server stops generating.

        Raises:
            ModelTimeout, ModelUnavailable, ModelError: as :meth:`complete`, before the reply begins;
                a stream that stalls or breaks, from the iteration (:class:`ChunkStream`).
        """
        t0 = time.perf_counter()
        try:
            events = self.client.chat.completions.create(**self._stream_kwargs(messages, settings))
        except _CLIENT_FAILURES as exc:
            raise self._error(exc) from exc
        return ChunkStream(events, t0, self.model_name, input_estimate(messages), self.spec)

    async def astream(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> AsyncChunkStream:
        """Async twin of :meth:`stream`, through the wrapped async client."""
        t0 = time.perf_counter()
        try:
            events = await self.client.chat.completions.create(**self._stream_kwargs(messages, settings))
        except _CLIENT_FAILURES as exc:
            raise self._error(exc) from exc
        return AsyncChunkStream(events, t0, self.model_name, input_estimate(messages), self.spec)



class _Completions:
    """``client.chat.completions``: ``create`` guarded when ``extra_body["stepguard"]`` names a procedure."""

    def __init__(self, owner: GuardedOpenAI) -> None:
        self._owner = owner
        self._inner = owner.client.chat.completions

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name in ("with_raw_response", "with_streaming_response"):
            return _Unguarded(attr, f"chat.completions.{name}")
        return attr

    def parse(self, *args: Any, **kwargs: Any) -> Any:
        """The client's own ``parse``; a guarded call is refused (use ``create`` with ``response_format``)."""
        _refuse_guarded(kwargs, "chat.completions.parse")
        return self._inner.parse(*args, **kwargs)

    def create(self, **kwargs: Any) -> Any:
        """``chat.completions.create``: guarded when ``extra_body["stepguard"]`` names a procedure.

        Returns:
            A ``ChatCompletion`` with ``.stepguard`` (the GuardResult), or with ``stream=True`` a
            :class:`GuardedStream` of ``ChatCompletionChunk``; for an async client, a coroutine of these.
            A call without ``extra_body["stepguard"]`` returns whatever the client returns.

        Raises:
            GuardedCallError: see :mod:`stepguard.wire._client_errors` (also ``openai.OpenAIError``).
        """
        if guarded_spec(kwargs) is None:
            return self._inner.create(**kwargs)
        if self._owner.is_async:
            return self._acreate(kwargs)
        call, guard, args = self._prepare(kwargs)
        if call.stream:
            run = guard.stream(*args, context=call.context)
            return GuardedStream(_sync_errors(chunks(run, Chunker(call.model, call.shape))))
        try:
            result = guard.run(*args, context=call.context)
        except StepguardError as exc:
            raise client_error(exc) from exc
        return _answer(call, result)

    async def _acreate(self, kwargs: dict[str, Any]) -> Any:
        call, guard, args = self._prepare(kwargs)
        if call.stream:
            run = guard.astream(*args, context=call.context)
            return AsyncGuardedStream(_async_errors(achunks(run, Chunker(call.model, call.shape))))
        try:
            result = await guard.arun(*args, context=call.context)
        except StepguardError as exc:
            raise client_error(exc) from exc
        return _answer(call, result)

    def _prepare(self, kwargs: dict[str, Any]) -> tuple[GuardedCall, Guard, tuple[Procedure, Mapping[str, Any], str | None]]:
        """The guarded call read from ``kwargs``, its guard, and the run's arguments; inputs refused now."""
        call = self._owner._read(kwargs)
        guard = self._owner._guard(call)
        _check_inputs(call)
        return call, guard, (call.procedure, call.options.inputs or {}, call.options.thread_id)


def _answer(call: GuardedCall, result: GuardResult) -> Any:
    """The ``ChatCompletion`` of a finished run, its content as the call's response format asks."""
    return completion(result, call.model, ContentWriter(call.shape).whole(result), finish=finish_reason(result, call.shape))


def _check_inputs(call: GuardedCall) -> None:
    """Refuse inputs the procedure refuses now, at ``create``, as the client raises a refused request
    there, rather than from a stream's first iteration."""
    from stepguard.procedure import check_input_names

    try:  # the names first, with "did you mean", as every way in checks them
        check_input_names([i.name for i in call.procedure.inputs], call.options.inputs or {}, f"procedure {call.procedure.name!r}")
        call.procedure.expected_values(call.procedure.bind_inputs(call.options.inputs or {}))
    except StepguardError as exc:
        raise client_error(exc) from exc


def _sync_errors(items: Iterator[Any]) -> Iterator[Any]:
    """``items``, with stepguard's errors raised as the client's (:func:`client_error`)."""
    try:
        yield from items
    except StepguardError as exc:
        raise client_error(exc) from exc


async def _async_errors(items: AsyncIterator[Any]) -> AsyncIterator[Any]:
    """Async twin of :func:`_sync_errors`."""
    try:
        async for item in items:
            yield item
    except StepguardError as exc:
        raise client_error(exc) from exc


def _refuse_guarded(kwargs: Mapping[str, Any], where: str) -> None:
    if guarded_spec(kwargs) is not None:
        raise InvalidGuardedCall(f"{where} is not guarded; call chat.completions.create (response_format for JSON)",
                                 'extra_body["stepguard"]')


class _Unguarded:
    """A view of a client resource (``with_raw_response``...) whose calls pass through, and refuse a
    guarded call rather than send it unguarded."""

    def __init__(self, inner: Any, where: str) -> None:
        self._inner, self._where = inner, where

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def call(*args: Any, **kwargs: Any) -> Any:
            _refuse_guarded(kwargs, f"{self._where}.{name}")
            return attr(*args, **kwargs)

        return call


class _Chat:
    def __init__(self, owner: GuardedOpenAI) -> None:
        self._inner = owner.client.chat
        self.completions = _Completions(owner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class GuardedOpenAI:
    """Wrap an ``openai.OpenAI`` or ``openai.AsyncOpenAI`` client so chat calls can run procedures guarded.

    A transparent proxy, as ``wrapt.ObjectProxy`` and ``unittest.mock`` make them: every attribute
    but ``chat.completions.create`` is the wrapped client's own (its auth, base URL, retries,
    timeouts, ``models``, ``embeddings``...), and ``isinstance(guarded, openai.OpenAI)`` (or
    ``AsyncOpenAI``, ``AzureOpenAI``: whatever the wrapped client is) holds, through ``__class__``.
    ``type(guarded)`` stays ``GuardedOpenAI``: nothing pretends at that level. ``with_options()``
    and ``copy()`` give a guarded client too.

    Args:
        client: the user's client.
        procedures: ``{name: Procedure}`` callable by name from ``extra_body={"stepguard": {...}}``.
        config: the guard's configuration (default: each procedure's measured defaults,
            :meth:`GuardConfig.for_procedure`); a call's
            ``extra_body["stepguard"]`` options and its ``temperature``/``seed`` override it for that call.
        checkpointer: a LangGraph checkpointer shared by all guarded calls (optional).
        tools: the tools the procedures' tool steps call (as ``Guard(model, tools=...)``: callables,
            a ``{name: callable}`` mapping, :class:`~stepguard.tools.Tool` s or LangChain tools).

    Raises (from the constructor):
        ValueError: a procedure has a tool step whose tool is not among ``tools`` (named, with the procedure).

    A guarded call's ``extra_body["stepguard"]`` is ``{"procedure": NAME, "inputs": {...}}`` and
    optionally ``"thread_id"`` (resume; needs ``checkpointer``, else refused) and the guard's options
    (:class:`~stepguard.guard._options.GuardOptions`: the same names and checks as the CLI and the proxy).

    Raises (from ``create``):
        InvalidGuardedCall: a request the guard cannot honour (an unknown procedure or key,
            a non-object ``extra_body["stepguard"]``, an unsupported argument or response_format).
        GuardedProcedureError, GuardedStepDeviation, GuardedBudgetExhausted, GuardedModelError...:
            as :meth:`Guard.run`, each also ``openai.OpenAIError``, with the partial result.
    """

    def __init__(
        self,
        client: Any,
        procedures: Mapping[str, Procedure],
        config: GuardConfig | None = None,
        checkpointer: Any | None = None,
        tools: ToolSet | Mapping[str, Any] | Iterable[Any] | None = None,
    ) -> None:
        self.client = client
        self.procedures = dict(procedures)
        self.config = config  # None: each procedure's measured defaults (GuardConfig.for_procedure)
        self.checkpointer = checkpointer
        self.tools = as_toolset(tools)
        check_tools(self.procedures, self.tools)
        # The real AsyncOpenAI's ``create`` is a decorated plain function returning a coroutine.
        self.is_async = isinstance(client, openai.AsyncOpenAI) or inspect.iscoroutinefunction(client.chat.completions.create)
        self.chat = _Chat(self)

    @property  # type: ignore[misc]  # isinstance(client, openai.OpenAI) holds for the wrapper, as for the client it wraps
    def __class__(self) -> type:
        return type(self.client)

    def __getattr__(self, name: str) -> Any:
        if name == "client":  # not set yet (a failing __init__): no recursion
            raise AttributeError(name)
        return getattr(self.client, name)

    def __repr__(self) -> str:
        return f"GuardedOpenAI({self.client!r}, procedures={sorted(self.procedures)})"

    def _rewrap(self, client: Any) -> GuardedOpenAI:
        return GuardedOpenAI(client, self.procedures, self.config, self.checkpointer, self.tools)

    def with_options(self, **options: Any) -> GuardedOpenAI:
        """The client's ``with_options``, still guarded."""
        return self._rewrap(self.client.with_options(**options))

    def copy(self, **options: Any) -> GuardedOpenAI:
        """The client's ``copy``, still guarded."""
        return self._rewrap(self.client.copy(**options))

    def __enter__(self) -> GuardedOpenAI:
        self.client.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.client.__exit__(*exc)

    async def __aenter__(self) -> GuardedOpenAI:
        await self.client.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.client.__aexit__(*exc)

    def _read(self, kwargs: Mapping[str, Any]) -> GuardedCall:
        return read_call(kwargs, self.procedures, self.config, checkpoints=self.checkpointer is not None)

    def _guard(self, call: GuardedCall) -> Guard:
        model = ClientChatModel(self.client, call.model, max_tokens=call.max_tokens,
                                max_tokens_name=call.max_tokens_name, sent=call.sent)
        return Guard(model, call.config, self.checkpointer, tools=self.tools)

