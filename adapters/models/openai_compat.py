"""A :class:`~stepguard.model.ChatModel` for any OpenAI-compatible ``/v1/chat/completions`` endpoint.

Built on the official ``openai`` client (sync ``OpenAI`` and async ``AsyncOpenAI``) with its own
retries off: each attempt here has a total deadline enforced at the socket
(:mod:`._deadline`: a server that drips one byte a second is cut off at ``timeout``), and the
retries, waits and typed errors are :mod:`.._openai.attempts`'. Bodies are read exactly by :mod:`.._openai.reply`:
every reply shape ends as text, an empty answer (the guard re-asks), or a typed error quoting
the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import os
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar
from urllib.parse import urlsplit

import openai

from stepguard.errors import ModelError, ModelOutputTruncated
from stepguard.model import ChatMessage, ChatResponse, GenerationSettings

from .._openai.attempts import Attempts, ServerSaidError
from .._openai.reply import ReplyError, quote, read_reply
from .._openai.streaming import AsyncChunkStream, ChunkStream, input_estimate
from ._deadline import attempt_deadline, enforce_deadlines

__all__ = ["OPENAI_BASE_URL", "OpenAICompatibleModel", "provider_for_url"]

OPENAI_BASE_URL = "https://api.openai.com/v1"

# GenAI semantic conventions, well-known gen_ai.provider.name values, by API host.
_KNOWN_HOSTS = {
    "api.openai.com": "openai",
    "api.deepseek.com": "deepseek",
    "api.groq.com": "groq",
    "api.mistral.ai": "mistral_ai",
    "api.x.ai": "x_ai",
    "api.perplexity.ai": "perplexity",
}
_NO_KEY = "sk-no-key-required"  # the openai client insists on a key; local servers ignore it
# The client's documented low-level ``post`` keeps its auth, timeouts, retries and error types
# but skips the typed-params transform and response models: about 1 ms less per call here.
_PATH = "/chat/completions"
_T = TypeVar("_T")


def _seconds(name: str, value: float) -> float:
    """``value`` as a positive, finite number of seconds, else ValueError naming ``name``."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number of seconds, not {value!r}") from None
    if not 0 < seconds < float("inf"):
        raise ValueError(f"{name} must be more than 0 seconds and finite, not {value!r}")
    return seconds


class _Secret:
    """Holds an API key; its repr never shows it."""

    __slots__ = ("value",)

    def __init__(self, value: str) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "'***'"


def provider_for_url(base_url: str) -> str:
    """Return the ``gen_ai.provider.name`` value for an endpoint.

    Args:
        base_url: the endpoint's base URL, e.g. ``"https://api.openai.com/v1"``.

    Returns:
        A well-known semconv value (``"openai"``, ``"groq"``, ...) for known hosts, else
        ``"openai_compatible"``.
    """
    host = (urlsplit(base_url).hostname or "").lower()
    return _KNOWN_HOSTS.get(host, "openai_compatible")


class OpenAICompatibleModel:
    """A chat model behind an OpenAI-compatible endpoint (OpenAI, vLLM, SGLang, Ollama, llama.cpp).

    The API key is read from the environment variable named by ``api_key_env`` (or passed as
    ``api_key``); it lives only inside the ``openai`` client and never appears in ``repr``,
    logs or error messages.

    Args:
        model: the model name sent as ``model`` (``gen_ai.request.model``).
        base_url: the endpoint's base URL, including ``/v1``.
        api_key_env: name of the environment variable holding the key; ``None`` for none.
        api_key: the key itself (takes precedence over ``api_key_env``).
        provider: the ``gen_ai.provider.name`` value; derived from ``base_url`` when ``None``.
        spec: the model specification string this was built from (for messages and spans).
        temperature: default sampling temperature (0 = greedy).
        seed: default sampling seed (``None`` sends none).
        max_tokens: default cap on generated tokens (``None`` = the server's default).
        timeout: seconds allowed for one HTTP attempt, the whole reply from connect to last
            byte (not per read).
        max_retries: retries after the first attempt (see :mod:`stepguard.adapters._openai.attempts`).
        call_timeout: seconds allowed for one call, all attempts and waits included; ``None``:
            at most ``(max_retries + 1) x timeout`` plus the waits between attempts.
        raise_on_truncation: raise :class:`ModelOutputTruncated` instead of returning a
            reply with ``finish_reason == "length"``.
        extra_body: extra JSON fields sent with every request (e.g. a llama.cpp ``grammar``).
        native_tools: offer a tool step's tool as the request's ``tools`` (the endpoint's native
            tool calling); ``False`` leaves the plain-text ``CALL name(arg=value)`` format the
            prompt asks for. The embedded server passes ``False``: llama-cpp-python's server, with
            the GGUF's own chat template, answered an offered tool with a JSON code block and no
            ``tool_calls`` (and the argument's quotes doubled), while without it the embedded
            Qwen2.5-Coder-1.5B wrote ``CALL catalog_lookup(sku="A-12")`` (docs/agent-workflows.md).

    Raises:
        ModelError: the endpoint is api.openai.com and no key is set.
        ValueError: ``timeout`` or ``call_timeout`` is not a positive number of seconds, or
            ``max_retries`` is negative.
    """

    simulated = False

    def __init__(
        self,
        model: str,
        *,
        base_url: str = OPENAI_BASE_URL,
        api_key_env: str | None = "OPENAI_API_KEY",
        api_key: str | None = None,
        provider: str | None = None,
        spec: str | None = None,
        temperature: float = 0.0,
        seed: int | None = 0,
        max_tokens: int | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        call_timeout: float | None = None,
        raise_on_truncation: bool = False,
        extra_body: dict[str, Any] | None = None,
        native_tools: bool = True,
    ) -> None:
        self.model_name = model
        self.native_tools = native_tools
        self.base_url = base_url.rstrip("/")
        self.provider = provider or provider_for_url(self.base_url)
        self.spec = spec or f"{self.base_url}#{model}"
        self.defaults = GenerationSettings(temperature, seed, max_tokens)
        self.timeout = _seconds("timeout", timeout)
        self.call_timeout = None if call_timeout is None else _seconds("call_timeout", call_timeout)
        self.max_retries = int(max_retries)
        if self.max_retries < 0:
            raise ValueError(f"max_retries must be 0 or more, not {max_retries!r}")
        self.raise_on_truncation = raise_on_truncation
        self.extra_body = dict(extra_body) if extra_body else None
        self.endpoint = f"{self.base_url}/chat/completions"
        # OpenAI proper takes max_completion_tokens; other servers know max_tokens.
        self._max_tokens_field = "max_completion_tokens" if self.provider == "openai" else "max_tokens"
        key = api_key or (os.environ.get(api_key_env) if api_key_env else None)
        if not key and self.provider == "openai":
            raise ModelError(f"no API key: set the environment variable {api_key_env or 'OPENAI_API_KEY'}", self.spec)
        self._key = _Secret(key or _NO_KEY)
        self._client_args: dict[str, Any] = {
            "base_url": self.base_url,
            "timeout": self.timeout,
            "max_retries": 0,  # retries are ours: each attempt gets its own deadline
        }
        # A loopback endpoint must not go through an HTTP(S)_PROXY from the environment.
        self._loopback = (urlsplit(self.base_url).hostname or "") in ("127.0.0.1", "localhost", "::1")
        self._lock = threading.Lock()
        self._sync: openai.OpenAI | None = None
        self._async: openai.AsyncOpenAI | None = None
        self._async_loop: asyncio.AbstractEventLoop | None = None
        # the model whose clients (connection pools) this one uses: itself, or the model a
        # sending() view was made from
        self._pools: OpenAICompatibleModel = self
        self.identity_options: dict[str, Any] | None = None
        """Request fields that change replies, for the run identity (set on a :meth:`sending` view)."""

    def __repr__(self) -> str:
        return (
            f"OpenAICompatibleModel(spec={self.spec!r}, base_url={self.base_url!r}, "
            f"model={self.model_name!r}, provider={self.provider!r})"
        )

    def sending(self, fields: Mapping[str, Any]) -> OpenAICompatibleModel:
        """A view of this model that adds ``fields`` to every request body (``top_p``...), sharing its
        clients and connection pools; ``identity_options`` holds them, for the run identity.

        Args:
            fields: JSON fields sent as given, over ``extra_body``'s.
        """
        view = copy.copy(self)
        view.extra_body = {**(self.extra_body or {}), **fields} or None
        view._pools = self._pools  # the parent's pools, not new ones
        view.identity_options = dict(fields)
        return view

    # -- clients ---------------------------------------------------------------------------
    def _sync_client(self) -> openai.OpenAI:
        if self._pools is not self:
            return self._pools._sync_client()
        if self._sync is None:
            with self._lock:
                if self._sync is None:
                    http = enforce_deadlines(openai.DefaultHttpxClient(trust_env=not self._loopback))
                    self._sync = openai.OpenAI(**self._client_args, api_key=self._key.value, http_client=http)
        return self._sync

    def _async_client(self) -> openai.AsyncOpenAI:
        # An async client's connection pool belongs to the event loop it first ran on, so each
        # loop (each asyncio.run) gets its own client.
        if self._pools is not self:
            return self._pools._async_client()
        loop = asyncio.get_running_loop()
        if self._async is None or self._async_loop is not loop:
            with self._lock:
                if self._async is None or self._async_loop is not loop:
                    http = enforce_deadlines(openai.DefaultAsyncHttpxClient(trust_env=not self._loopback))
                    self._async = openai.AsyncOpenAI(**self._client_args, api_key=self._key.value, http_client=http)
                    self._async_loop = loop
        return self._async

    # -- calls -----------------------------------------------------------------------------
    def _body(self, messages: list[ChatMessage], settings: GenerationSettings | None) -> dict[str, Any]:
        d = self.defaults
        s = settings or d
        temperature = s.temperature if s.temperature is not None else d.temperature
        seed = s.seed if s.seed is not None else d.seed
        max_tokens = s.max_tokens if s.max_tokens is not None else d.max_tokens
        body: dict[str, Any] = {"model": self.model_name, "messages": messages}
        if temperature is not None:
            body["temperature"] = temperature
        if seed is not None:
            body["seed"] = seed
        if max_tokens is not None:
            body[self._max_tokens_field] = max_tokens
        if settings is not None and settings.tools and self.native_tools:  # a tool step: the endpoint's native tool calling
            body["tools"] = [dict(t) for t in settings.tools]
        if self.extra_body:
            body.update(self.extra_body)
        return body

    def _response(self, raw: str, started: float) -> ChatResponse:
        try:
            reply = read_reply(raw)
        except ReplyError as exc:
            message = f"{self.endpoint} sent a reply that is not a chat completion: {exc}: {quote(raw)}"
            raise ModelError(message, self.spec, status=200, server_message=raw[:300]) from None
        if reply.error is not None:
            raise ServerSaidError(reply.error)
        if reply.finish_reason == "length" and self.raise_on_truncation:
            raise ModelOutputTruncated(
                f"reply cut at max tokens after {reply.usage.output_tokens} tokens", self.spec, reply.text
            )
        latency = time.perf_counter() - started
        return ChatResponse(reply.text, reply.usage, reply.finish_reason, latency, reply.model or self.model_name,
                            response_id=reply.id, tool_calls=reply.tool_calls)

    def _attempts(self) -> Attempts:
        return Attempts(self.timeout, self.max_retries, self.call_timeout, self.endpoint, self.spec)

    def _retried(self, attempt: Callable[[], _T]) -> _T:
        """``attempt()`` under each attempt's deadline, retried as :class:`Attempts` says (a 200 whose
        body is an error included); the last failure raised as stepguard's error."""
        plan = self._attempts()
        while True:
            try:
                with attempt_deadline(plan.next_deadline()):
                    return attempt()
            except (openai.OpenAIError, ServerSaidError) as exc:
                wait = plan.wait(exc)
                if wait is None:
                    raise plan.error(exc) from exc
            time.sleep(wait)

    async def _aretried(self, attempt: Callable[[], Awaitable[_T]]) -> _T:
        """Async twin of :meth:`_retried`. The socket-level deadline covers reads and writes; the
        asyncio timeout also bounds what happens between them (a pooled connection, name resolution)."""
        plan = self._attempts()
        while True:
            try:
                deadline = plan.next_deadline()
                with attempt_deadline(deadline):
                    async with asyncio.timeout(max(0.0, deadline - time.monotonic())):
                        return await attempt()
            except (openai.OpenAIError, ServerSaidError, TimeoutError) as exc:
                wait = plan.wait(exc)
                if wait is None:
                    raise plan.error(exc) from exc
            await asyncio.sleep(wait)

    def complete(
        self, messages: list[ChatMessage], settings: GenerationSettings | None = None
    ) -> ChatResponse:
        """Send ``messages`` and return the reply.

        Args:
            messages: the chat so far, OpenAI-shaped.
            settings: per-call overrides of the defaults (``None`` fields keep the defaults).

        Returns:
            The reply; ``latency_s`` is wall seconds including retries. A reply cut at max
            tokens has ``finish_reason == "length"``; ``choices: []`` gives ``text == ""`` and
            ``finish_reason == "empty"``.

        Raises:
            ModelTimeout: an attempt ran past ``timeout`` (or the call past ``call_timeout``) and
                no attempts were left; names the deadline and the endpoint.
            ModelUnavailable: unreachable, or HTTP errors (or a 200 with an error body) until the
                retries were spent; ``status`` and ``server_message`` say what the server said.
            ModelOutputTruncated: cut at max tokens and ``raise_on_truncation`` is set.
            ModelError: the body is not a chat completion (not retried; the body is quoted), or
                any other client failure.
        """
        body = self._body(messages, settings)
        started = time.perf_counter()
        return self._retried(lambda: self._response(self._sync_client().post(_PATH, cast_to=str, body=body), started))

    async def acomplete(
        self, messages: list[ChatMessage], settings: GenerationSettings | None = None
    ) -> ChatResponse:
        """Async twin of :meth:`complete` (same arguments, result and errors)."""
        body = self._body(messages, settings)
        started = time.perf_counter()

        async def attempt() -> ChatResponse:
            return self._response(await self._async_client().post(_PATH, cast_to=str, body=body), started)

        return await self._aretried(attempt)

    # -- streams ---------------------------------------------------------------------------
    def _stream_body(self, messages: list[ChatMessage], settings: GenerationSettings | None) -> tuple[dict[str, Any], int]:
        body = {**self._body(messages, settings), "stream": True, "stream_options": {"include_usage": True}}
        return body, input_estimate(messages)

    def stream(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChunkStream:
        """Start a streamed reply to ``messages`` (server-sent events) and return it once it has begun.

        Iterating gives the text deltas; closing the stream closes the connection, so the server
        stops generating. A failure before the reply begins is retried as :meth:`complete`'s.

        Raises:
            ModelTimeout, ModelUnavailable, ModelError: as :meth:`complete`, before the reply begins.
        """
        body, estimate = self._stream_body(messages, settings)
        started = time.perf_counter()
        events = self._retried(lambda: self._sync_client().post(
            _PATH, cast_to=object, body=body, stream=True, stream_cls=openai.Stream[object]))
        return ChunkStream(events, started, self.model_name, estimate, self.spec, per_event=self._event_deadline)

    async def astream(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> AsyncChunkStream:
        """Async twin of :meth:`stream`."""
        body, estimate = self._stream_body(messages, settings)
        started = time.perf_counter()

        async def attempt() -> Any:
            return await self._async_client().post(_PATH, cast_to=object, body=body, stream=True, stream_cls=openai.AsyncStream[object])

        events = await self._aretried(attempt)
        return AsyncChunkStream(events, started, self.model_name, estimate, self.spec, per_event=self._event_deadline)

    def _event_deadline(self) -> contextlib.AbstractContextManager[None]:
        """The deadline of one streamed event's read: ``timeout`` seconds from now, enforced at the socket as an
        attempt's is, so a server that sends bytes but no event is cut off (``ModelTimeout``, "the stream stalled")."""
        return attempt_deadline(time.monotonic() + self.timeout)

    # -- lifetime --------------------------------------------------------------------------
    def close(self) -> None:
        """Close the sync client's connections (the async client closes with its event loop)."""
        with self._lock:
            client, self._sync = self._sync, None
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        """Close both clients' connections."""
        with self._lock:
            client, self._async = self._async, None
        if client is not None:
            await client.close()
        self.close()

    def __enter__(self) -> OpenAICompatibleModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
