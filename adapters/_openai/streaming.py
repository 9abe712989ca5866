"""A streamed chat completion (server-sent events) as a :class:`stepguard.model.ReplyStream`.

Each event's ``choices[0].delta.content`` is a text delta; ``usage`` (asked for with
``stream_options.include_usage``) arrives in the last event where the server sends it. Closing the
stream closes the HTTP response, so the server sees the client go and stops generating
(llama.cpp's server does; so do vLLM's and OpenAI's). An event that is not a chunk is skipped, never
read as text; a stream that ends without a finish reason ends ``"cut"``. The events are mappings
(``client.post(..., stream=True)``) or the ``ChatCompletionChunk`` objects ``chat.completions.create(
..., stream=True)`` gives (read through ``model_dump``).

Every event yields, ``""`` for one with no text (a reasoning model's ``reasoning_content``, a
tool-call or empty delta), so the reader sees a stop on every event, not only at the next text.
:meth:`ChunkStream.abort` closes the stream from another thread (the stopping side): it shuts the
connection down, so the server sees its client go at once, even in a stall between events, and a
reader blocked on the next event wakes and ends the stream ``"cut"``.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any

from stepguard.errors import ModelError, ModelTimeout
from stepguard.model import ChatResponse, Usage

__all__ = ["AsyncChunkStream", "ChunkStream", "input_estimate"]


def input_estimate(messages: Sequence[Mapping[str, Any]]) -> int:
    """The prompt tokens a cut stream reports (the server counts them only in the last event): the
    messages' text at 4 characters a token."""
    return sum(len(str(m.get("content") or "")) for m in messages) // 4


class _Reading:
    """What the events so far say: the text, the finish reason, usage, the reply's id and model."""

    def __init__(self, started: float, model: str, input_estimate: int) -> None:
        self.started, self.model, self.input_estimate = started, model, input_estimate
        self.parts: list[str] = []
        self.finish: str | None = None
        self.usage: Usage | None = None
        self.id = ""

    def take(self, event: Any) -> str:
        """The text delta of one event (``""`` for none), recording what else it says."""
        dump = getattr(event, "model_dump", None)
        if not isinstance(event, Mapping) and callable(dump):  # the client's ChatCompletionChunk
            event = dump()
        if not isinstance(event, Mapping):
            return ""
        self.id = self.id or str(event.get("id") or "")
        self.model = str(event.get("model") or self.model)
        usage = event.get("usage")
        if isinstance(usage, Mapping):
            details = usage.get("prompt_tokens_details")
            cached = details.get("cached_tokens") if isinstance(details, Mapping) else 0
            self.usage = Usage(_count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens")), _count(cached))
        choices = event.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            return ""
        choice = choices[0]
        if isinstance(choice.get("finish_reason"), str):
            self.finish = choice["finish_reason"]
        delta = choice.get("delta")
        content = delta.get("content") if isinstance(delta, Mapping) else None
        if isinstance(content, str) and content:
            self.parts.append(content)
            return content
        return ""

    def response(self, cut: bool) -> ChatResponse:
        text = "".join(self.parts)
        # a cut stream sends no usage: the prompt as estimated before the call, the text at 4 characters a token
        usage = self.usage or Usage(self.input_estimate, max(0, len(text) // 4))
        finish = "cut" if cut or self.finish is None else self.finish
        return ChatResponse(text, usage, finish, time.perf_counter() - self.started, self.model, response_id=self.id)


def _broken(exc: BaseException, spec: str, reading: _Reading) -> ModelError:
    """The typed error for a stream that stalled (no event within the read timeout) or broke mid-reply."""
    written = sum(len(p) for p in reading.parts)
    name = type(exc).__name__
    if "Timeout" in name:
        return ModelTimeout(f"the stream stalled after {written} characters: no event within the read timeout ({name})", spec)
    return ModelError(f"the stream broke off after {written} characters: {name}: {str(exc)[:200]}", spec)


def _shut_down(events: Any) -> None:
    """Shut down the connection under ``events`` (an ``openai.Stream``'s httpx response), from any
    thread: the server reads the end of its client, and a read blocked on it returns."""
    response = getattr(events, "response", None)
    extensions = getattr(response, "extensions", None)
    network = extensions.get("network_stream") if isinstance(extensions, Mapping) else None
    info = getattr(network, "get_extra_info", None)
    sock = info("socket") if callable(info) else None
    if isinstance(sock, socket.socket):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class ChunkStream:
    """A sync streamed reply over an ``openai.Stream`` of event mappings.

    Args:
        events: the open stream (``client.post(..., stream=True)``).
        started: ``time.perf_counter()`` when the request was sent.
        model: the model name to report until the server names one.
        input_estimate: prompt tokens to report if the stream is cut before the server counts them.
        per_event: a context each event's read runs in: the model's bound on the wait for one event (a
            server that drips bytes without completing an event is cut off there); ``None``: the
            client's read timeout alone.
    """

    def __init__(self, events: Any, started: float, model: str, input_estimate: int, spec: str = "",
                 per_event: Callable[[], contextlib.AbstractContextManager[Any]] | None = None) -> None:
        self._events = events
        self._reading = _Reading(started, model, input_estimate)
        self._spec = spec
        self._per_event = per_event or contextlib.nullcontext
        self.response: ChatResponse | None = None

    def __iter__(self) -> Iterator[str]:
        """The text deltas.

        Raises:
            ModelTimeout: no event came within the client's read timeout (a stalled stream).
            ModelError: the stream broke off (a reset connection, a malformed event).
        """
        if self.response is not None:
            return
        events = iter(self._events)
        while True:
            try:
                with self._per_event():
                    event = next(events)
            except StopIteration:
                break
            except Exception as exc:  # httpx's and openai's errors mid-stream, typed here
                self._events.close()
                if self._closed():  # aborted from another thread: the connection was shut down under the read
                    return
                raise _broken(exc, self._spec, self._reading) from exc
            if self._closed():  # aborted while the read waited
                self._events.close()
                return
            yield self._reading.take(event)  # "" for an event with no text: the reader checks its stop on each
            if self._closed():  # closed while the caller held this delta
                return
        if self.response is None:
            self.response = self._reading.response(cut=False)

    def _closed(self) -> bool:
        """True once the stream has its response: read to the end, or closed (by another call)."""
        return self.response is not None

    def close(self) -> None:
        """Close the HTTP response (the server stops generating); idempotent."""
        if self.response is None:
            self.response = self._reading.response(cut=True)
        self._events.close()

    def abort(self) -> None:
        """Close the stream from another thread than its reader's: the reply ends ``"cut"``, the
        connection is shut down (the server sees its client go), and the reader wakes and closes it."""
        if self.response is None:
            self.response = self._reading.response(cut=True)
        _shut_down(self._events)


class AsyncChunkStream:
    """Async twin of :class:`ChunkStream` over an ``openai.AsyncStream``."""

    def __init__(self, events: Any, started: float, model: str, input_estimate: int, spec: str = "",
                 per_event: Callable[[], contextlib.AbstractContextManager[Any]] | None = None) -> None:
        self._events = events
        self._reading = _Reading(started, model, input_estimate)
        self._spec = spec
        self._per_event = per_event or contextlib.nullcontext
        self.response: ChatResponse | None = None

    def __aiter__(self) -> AsyncIterator[str]:
        return self._deltas()

    async def _deltas(self) -> AsyncIterator[str]:
        if self.response is not None:
            return
        events = self._events.__aiter__()
        while True:
            try:
                with self._per_event():
                    event = await events.__anext__()
            except StopAsyncIteration:
                break
            except Exception as exc:  # as in ChunkStream
                await self._events.close()
                if self._closed():
                    return
                raise _broken(exc, self._spec, self._reading) from exc
            if self._closed():
                await self._events.close()
                return
            yield self._reading.take(event)  # as in ChunkStream
            if self._closed():
                return
        if self.response is None:
            self.response = self._reading.response(cut=False)

    def _closed(self) -> bool:
        """True once the stream has its response: read to the end, or closed (by another call)."""
        return self.response is not None

    async def aclose(self) -> None:
        """Close the HTTP response (the server stops generating); idempotent."""
        if self.response is None:
            self.response = self._reading.response(cut=True)
        await self._events.close()

    def abort(self) -> None:
        """As :meth:`ChunkStream.abort`: callable from any thread, the event loop's reader wakes and closes it."""
        if self.response is None:
            self.response = self._reading.response(cut=True)
        _shut_down(self._events)
