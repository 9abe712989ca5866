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

Each step the watch judges verified is reported at once (``on_verified``: the ``ask`` node sends it to
the run's stream, so :meth:`stepguard.guard.Guard.stream` yields it while the model writes the rest)
and is what the window commits: the ``verify`` node reads the same lines and finds the same values. A
reported step that the model writes again later with another value is not taken back: the stream is
cut before that line, so the reply the window commits ends where the reported value stands (as a
committed step written again in a later reply is noted and stands): the run notes it (an
``extra_steps`` event, action ``note``), and the next window starts at the first step the reply
does not hold, as a first try (the model wrote that step after the cut; it did not skip it).
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from stepguard.guard._stop import closing_on_stop
from stepguard.model import ChatMessage, ChatResponse, GenerationSettings, StreamCut, WrittenReply, aopen_stream, open_stream
from stepguard.procedure import Procedure, format_value
from stepguard.trace import line_end, parse_trace
from stepguard.verify import verify_chunk

__all__ = ["FOLLOW_TARGET", "MIN_WINDOW", "OnVerified", "StreamWatch", "aread_window", "first_try_tally", "follow_window",
           "measured_accuracy", "next_window", "read_window"]

MIN_WINDOW = 4
"""The narrowest window the adaptive rule asks after a deviation (:func:`next_window`)."""


def next_window(width: int, most: int, verified: int, deviated: bool) -> int:
    """How many steps the next streamed window asks, with ``GuardConfig(streamed=True, adaptive=True)``.

    Args:
        width: the window just read (its steps asked).
        most: ``GuardConfig.window``, the widest window.
        verified: the steps of that window verified before its first deviation.
        deviated: whether the window ended at a deviation (a cut, or a wrong last step).

    Returns:
        Half of ``width`` after a deviation (at least :data:`MIN_WINDOW`), twice it after a clean
        window, never more than ``most``. Measured against a fixed window and against twice the
        run of right steps before the deviation: docs/policies.md, "The window after a deviation".
    """
    return max(1, min(most, max(MIN_WINDOW, width // 2) if deviated else 2 * width))


FOLLOW_TARGET = 0.9
"""The chance that a whole window verifies which :func:`follow_window` sizes windows for."""


def measured_accuracy(right: int, wrong: int) -> float:
    """The per-step accuracy measured so far: the mean of a Beta(1, 1) prior updated with ``right``
    steps verified at their first ask and ``wrong`` steps that deviated, ``(right + 1) / (right + wrong + 2)``
    (Laplace's rule of succession), so a few steps never read as certainty. A probability in (0, 1)."""
    if right < 0 or wrong < 0:
        raise ValueError(f"step counts must not be negative, not right={right}, wrong={wrong}")
    return (right + 1) / (right + wrong + 2)


def follow_window(right: int, wrong: int, most: int, target: float = FOLLOW_TARGET) -> int:
    """How many steps the next window asks with ``GuardConfig(follow=True)``.

    While no step has deviated (``wrong == 0``): ``most``, one window over every step. After one:
    the most steps ``w`` whose joint success ``p ** w`` is still at least ``target``, for the
    accuracy ``p`` measured so far (:func:`measured_accuracy`)::

        w = clamp(floor(ln(target) / ln(p)), 1, most)

    the horizon of independent steps each right with probability ``p`` (a geometric run length;
    issue 43 names it). It widens as the model holds (``p`` grows with every step verified at its
    first ask). The derivation and the figures: docs/policies.md, "Follow the model".

    Args:
        right: steps verified at their first ask in this run.
        wrong: steps that deviated in this run (each counted once, however many re-asks it took).
        most: ``GuardConfig.window``, the widest window.
        target: the chance a whole window verifies, in (0, 1).

    Raises:
        ValueError: a negative count, ``most`` below 1 or ``target`` outside (0, 1).
    """
    if most < 1 or not 0 < target < 1:
        raise ValueError(f"follow_window needs most >= 1 and 0 < target < 1, not most={most}, target={target}")
    p = measured_accuracy(right, wrong)
    if wrong == 0:
        return most
    return max(1, min(most, math.floor(math.log(target) / math.log(p))))


def first_try_tally(reprompts: Mapping[str, int], provenance: Mapping[str, str], values: Mapping[str, Any],
                    pending: bool) -> tuple[int, int]:
    """``(right, wrong)`` for :func:`follow_window`, read from a run's committed steps.

    A committed step is wrong when it took a re-prompt or its value is not the model's verified one
    (``repaired``, ``flagged``), else right, and a step the evaluator computed (``computed``) neither;
    ``pending`` counts the deviating step not yet committed.
    Read from the checkpointed state, so a resumed run measures what it measured before.
    """
    asked = [var for var in values if provenance.get(var) != "computed"]
    wrong = sum(1 for var in asked if reprompts.get(var, 0) > 0 or provenance.get(var) in ("repaired", "flagged"))
    return len(asked) - wrong, wrong + (1 if pending else 0)


OnVerified = Callable[[str, str, int], None]
"""Told each step the watch judges verified, in order: ``(variable, value as exact text, 0-based step index)``."""


class StreamWatch:
    """Checks a window's reply line by line as it arrives.

    Args:
        procedure: the procedure.
        start: the window's first step (0-based).
        end: one past its last step.
        env: committed values (inputs and verified variables).
        on_verified: told each step as it is judged verified (:data:`OnVerified`), once, in order.
        deadline: a :func:`time.monotonic` instant (the run's wall-time budget): a delta that comes
            after it cuts the stream (``cut_kind == "budget_exhausted"``) once its complete lines are
            judged. A stream that sends nothing at all is the model's read timeout's to end.
        closed: set when the run's reader has gone (the caller closed the run's stream): the next
            delta cuts the stream (``cut_kind == "closed"``), so the model's server stops generating.
    """

    def __init__(self, procedure: Procedure, start: int, end: int, env: Mapping[str, Any],
                 on_verified: OnVerified | None = None, deadline: float | None = None,
                 closed: threading.Event | None = None) -> None:
        self.procedure, self.start, self.end, self.env = procedure, start, end, env
        self.on_verified = on_verified
        self.deadline = deadline
        self.closed = closed
        self.text = ""
        self._checked = 0  # characters of text already judged line by line
        self.reported: list[str] = []
        """The steps judged verified so far, in order (each told to ``on_verified`` once)."""
        self.cut_at: str | None = None
        """The step whose line deviated (or that was being written when the budget ran out), once
        the watch has asked for the stream to be cut."""
        self.cut_kind: str | None = None
        """Why: the deviation's kind, ``budget_exhausted`` (the wall-time budget ran out) or ``closed``
        (the run's reader went)."""
        self.restated: tuple[str, str] | None = None
        """``(variable, line)``: a reported step the model wrote again with another value; the reply
        the window commits ends before that line, and the run notes it (the reported value stands)."""

    @property
    def judged(self) -> str:
        """The text up to the end of the last complete line: what a cut reply is (a line still being
        written when the stream was cut is never read as a step's value)."""
        return self.text[: self._checked]

    def feed(self, delta: str) -> bool:
        """Add ``delta``; True when the stream should be cut (a completed step deviates)."""
        self.text += delta
        done = line_end(self.text)
        if done > self._checked:
            self._checked = done
            if self._judge(self.text[:done], final=False):
                return True
        if self.closed is not None and self.closed.is_set():
            self.cut_at, self.cut_kind = self.procedure.steps[min(self.start + len(self.reported), self.end - 1)].var, "closed"
            return True
        if self.deadline is not None and time.monotonic() >= self.deadline:
            if self._judge(self.judged, final=True):  # every complete line judged, what verified reported
                return True
            nxt = self.start + len(self.reported)
            if nxt >= self.end:
                return False  # every step of the window is written: the stream is at its end
            self.cut_at, self.cut_kind = self.procedure.steps[nxt].var, "budget_exhausted"
            return True
        return False

    def ended(self) -> None:
        """The stream ended: by itself (:meth:`finish`), or closed from the stopping side while the
        reader waited (the run's reader went): then it is a cut (``closed``) after the complete lines,
        so a line the close broke off is never read as a value."""
        if self.closed is not None and self.closed.is_set() and self.cut_at is None:
            self.feed("")
        else:
            self.finish()

    def finish(self) -> None:
        """Judge the whole reply once the stream has ended by itself: every step of the window, the
        last line too, so each verified step is reported before the window commits."""
        if self.cut_at is None:
            self._checked = len(self.text)
            self._judge(self.text, final=True)

    @property
    def trimmed(self) -> bool:
        """True when the reply the window commits ends before the text written (a cut, or a
        reported step written again)."""
        return self._checked < len(self.text)

    def _judge(self, text: str, final: bool) -> bool:
        index = self.procedure.index_of
        trace = parse_trace(text, var_names=self.procedure.variables)
        if final:
            upto = self.end  # nothing more comes: every step of the window is judged
        else:
            # only the window's own steps decide how far to judge: a line of a step beyond the window is
            # left to the chunk check of the whole reply, as chunked mode leaves it
            seen = [index[r.var] for r in trace.records if r.var in index and self.start <= index[r.var] < self.end]
            if not seen:
                return False
            upto = max(seen)  # the furthest step may still be being written: judge the ones before it
            if upto <= self.start:
                return False
        verdict = verify_chunk(self.procedure, self.start, upto, self.env, trace)
        for var, value in verdict.verified[len(self.reported):]:
            self.reported.append(var)
            if self.on_verified is not None:
                self.on_verified(var, format_value(value), index[var])
        dev = verdict.deviation
        if dev is None:
            return False
        if dev.kind == "extra_steps" and dev.step in self.reported:  # a reported step written again: it stands
            again = [r for r in trace.records if r.var == dev.step][1:]
            self._checked = min(self._checked, again[0].offset) if again else self._checked
            self.restated = (dev.step, dev.got or (again[0].text if again else ""))
        elif final:
            return False  # a wrong or missing step at the end: the chunk check of the reply finds it
        self.cut_at, self.cut_kind = dev.step, dev.kind
        return True

    def cut(self) -> StreamCut | None:
        """Where and why the stream was cut, or ``None`` if it was not."""
        if self.cut_at is None or self.cut_kind is None:
            return None
        return StreamCut(self.cut_at, self.cut_kind, len(self.reported), self._checked)


def read_window(model: Any, messages: list[ChatMessage], settings: GenerationSettings, watch: StreamWatch) -> ChatResponse:
    """Stream the reply to ``messages``, cutting it at the first deviation ``watch`` finds.

    Returns:
        The reply: the whole of it, or (``finish_reason == "cut"``, with :attr:`ChatResponse.cut`)
        what was written up to the cut; ``streamed`` and ``first_chunk_s`` set for a model that streams.

    Raises:
        ModelError: as the model's call.
    """
    clock = _Clock()
    stream = open_stream(model, messages, _windowed(settings))
    try:
        with closing_on_stop(watch.closed, _abort(stream)):  # a stop closes the reply from the stopping side
            for delta in stream:  # "" for an event with no text: the stop is seen on every event
                clock.tick(delta)
                if watch.feed(delta):
                    break
            else:
                watch.ended()
    finally:
        if stream.response is None:
            stream.close()
    return _as_read(stream.response, watch, clock, not isinstance(stream, WrittenReply))


async def aread_window(model: Any, messages: list[ChatMessage], settings: GenerationSettings, watch: StreamWatch) -> ChatResponse:
    """Async twin of :func:`read_window`."""
    clock = _Clock()
    stream = await aopen_stream(model, messages, _windowed(settings))
    try:
        with closing_on_stop(watch.closed, _abort(stream)):  # as in read_window
            async for delta in stream:
                clock.tick(delta)
                if watch.feed(delta):
                    break
            else:
                watch.ended()
    finally:
        if stream.response is None:
            await stream.aclose()
    return _as_read(stream.response, watch, clock, not isinstance(stream, WrittenReply))


def _windowed(settings: GenerationSettings) -> GenerationSettings:
    """``settings`` with its plan's role ``window``: the call is read as a stream, line by line."""
    plan = settings.plan
    return settings if plan is None else dataclasses.replace(settings, plan=dataclasses.replace(plan, role="window"))


def _abort(stream: Any) -> Callable[[], None]:
    """What closes ``stream`` from another thread: its ``abort`` (a reply over HTTP: the connection
    is shut down, so the server sees the client go and the reader wakes), else nothing (a reply
    already written, or a model's own stream: the reader sees the stop at its next event)."""
    abort = getattr(stream, "abort", None)
    return abort if callable(abort) else (lambda: None)


class _Clock:
    """When a streamed request was sent, and when its first text delta came."""

    def __init__(self) -> None:
        self.sent = time.perf_counter()
        self.first: float | None = None

    def tick(self, delta: str) -> None:
        if self.first is None and delta:
            self.first = time.perf_counter() - self.sent


def _as_read(response: ChatResponse | None, watch: StreamWatch, clock: _Clock, streamed: bool) -> ChatResponse:
    """The reply as the guard reads it: a cut one ends at the last complete line the watch judged, and
    one whose reported step was written again ends before that line; with how it was streamed."""
    assert response is not None
    cut = watch.cut() if response.finish_reason == "cut" else None
    text = watch.judged if response.finish_reason == "cut" or watch.trimmed else response.text
    return dataclasses.replace(response, text=text, streamed=streamed, first_chunk_s=clock.first if streamed else None, cut=cut)
