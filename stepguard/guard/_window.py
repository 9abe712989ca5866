"""The streamed mode: one streamed call asks a window of steps, each checked as soon as its line is done.

The guard reads the reply while the model writes it. Each time a line completes, the steps written
so far are checked against the evaluator (:func:`stepguard.verify.verify_chunk` on the prefix);
at the first deviation the stream is closed (a *stream cut*: the server stops generating) and the
reply is what was written up to there. The ``verify`` node then checks that reply as it checks a
chunk's, so the committed prefix and the deviation are the same as chunked mode would find in the
same text; what is saved is the rest of the generation and the calls a chunked run would make
for steps the model gets right.

A step is judged only once the line of a later step has started (or the stream has ended): a model
that writes a step over several lines (``S11 = S10 - S4`` then ``= -159 - (-12) = -147``) is never
cut after its first line.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from stepguard.model import ChatMessage, ChatResponse, GenerationSettings, aopen_stream, open_stream
from stepguard.procedure import Procedure
from stepguard.trace import parse_trace
from stepguard.verify import verify_chunk

__all__ = ["StreamWatch", "read_window", "aread_window"]


class StreamWatch:
    """Checks a window's reply line by line as it arrives.

    Args:
        procedure: the procedure.
        start: the window's first step (0-based).
        end: one past its last step.
        env: committed values (inputs and verified variables).
    """

    def __init__(self, procedure: Procedure, start: int, end: int, env: Mapping[str, Any]) -> None:
        self.procedure, self.start, self.end, self.env = procedure, start, end, env
        self.text = ""
        self._checked = 0  # characters of text already judged line by line
        self.cut_at: str | None = None
        """The step whose line deviated, once the watch has asked for the stream to be cut."""

    @property
    def judged(self) -> str:
        """The text up to the end of the last complete line: what a cut reply is (a line still being
        written when the stream was cut is never read as a step's value)."""
        return self.text[: self._checked]

    def feed(self, delta: str) -> bool:
        """Add ``delta``; True when the stream should be cut (a completed step deviates)."""
        self.text += delta
        done = self.text.rfind("\n") + 1
        if done <= self._checked:
            return False
        self._checked = done
        return self._deviates(self.text[:done])

    def _deviates(self, text: str) -> bool:
        index = self.procedure.index_of
        trace = parse_trace(text, var_names=self.procedure.variables)
        # only the window's own steps decide how far to judge: a line of a step beyond the window is
        # left to the chunk check of the whole reply, as chunked mode leaves it
        seen = [index[r.var] for r in trace.records if r.var in index and self.start <= index[r.var] < self.end]
        if not seen:
            return False
        upto = max(seen)  # the furthest step may still be being written: judge the ones before it
        if upto <= self.start:
            return False
        verdict = verify_chunk(self.procedure, self.start, upto, self.env, trace)
        if verdict.deviation is None:
            return False
        self.cut_at = verdict.deviation.step
        return True


def read_window(model: Any, messages: list[ChatMessage], settings: GenerationSettings, watch: StreamWatch) -> ChatResponse:
    """Stream the reply to ``messages``, cutting it at the first deviation ``watch`` finds.

    Returns:
        The reply: the whole of it, or (``finish_reason == "cut"``) what was written up to the cut.

    Raises:
        ModelError: as the model's call.
    """
    stream = open_stream(model, messages, settings)
    try:
        for delta in stream:
            if watch.feed(delta):
                break
    finally:
        if stream.response is None:
            stream.close()
    return _as_cut(stream.response, watch)


def _as_cut(response: ChatResponse | None, watch: StreamWatch) -> ChatResponse:
    """The reply as the guard reads it: a cut one ends at the last complete line the watch judged."""
    assert response is not None
    if response.finish_reason != "cut":
        return response
    return dataclasses.replace(response, text=watch.judged)


async def aread_window(model: Any, messages: list[ChatMessage], settings: GenerationSettings, watch: StreamWatch) -> ChatResponse:
    """Async twin of :func:`read_window`."""
    stream = await aopen_stream(model, messages, settings)
    try:
        async for delta in stream:
            if watch.feed(delta):
                break
    finally:
        if stream.response is None:
            await stream.aclose()
    return _as_cut(stream.response, watch)
