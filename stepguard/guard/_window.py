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
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from stepguard.guard._stop import closing_on_stop
from stepguard.model import ChatMessage, ChatResponse, GenerationSettings, StreamCut, WrittenReply, aopen_stream, open_stream
from stepguard.procedure import Procedure, format_value
from stepguard.trace import line_end, parse_trace
from stepguard.verify import verify_chunk

__all__ = ["FOLLOW_PRIOR", "MIN_WINDOW", "NOT_THE_MODELS", "OnVerified", "StreamWatch", "aread_window", "calls_per_deviation",
           "follow_window", "next_window", "read_window", "tally_window", "window_costs"]

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


FOLLOW_PRIOR = 0.2
"""The standard deviation of :func:`follow_window`'s prior on how much a step's error chance grows per
position in its window, as a share of the error chance measured (the prior's mean: no growth); chosen
on the simulated cost curve, docs/policies.md, "Follow the model"."""

NOT_THE_MODELS = frozenset({"budget_exhausted", "truncated", "tool_error"})
"""Deviation kinds that say nothing of the model's accuracy at a position (a budget, ``max_tokens``, a
tool): a window they end counts its verified steps, not them."""


def tally_window(tally: Sequence[Sequence[int]], first: int, right: int, deviated: str | None) -> list[list[int]]:
    """``tally`` with one window's first asks added: its steps at positions ``first .. right - 1``
    (0-based, in the window) verified, and the step at position ``right`` deviated when ``deviated``
    names a deviation kind that measures the model (not one of :data:`NOT_THE_MODELS`).

    Args:
        tally: ``[[right, wrong], ...]`` by position in a window (:attr:`stepguard.guard._state.Progress.window_tally`).
        first: the first position asked for the first time (1 when position 0 was a re-ask, else 0).
        right: the window's steps verified before its first deviation.
        deviated: the kind of the deviation of the step at position ``right``, or ``None`` (the window
            verified whole, or ended at no step of its own).

    Returns:
        A new tally, as long as the furthest position it counts.

    Raises:
        ValueError: a negative position or count.
    """
    if first < 0 or right < 0:
        raise ValueError(f"window positions must not be negative, not first={first}, right={right}")
    out = [[int(r), int(k)] for r, k in tally]
    wrong = deviated is not None and deviated not in NOT_THE_MODELS and right >= first  # a re-ask is no first ask
    out += [[0, 0] for _ in range(len(out), right + 1 if wrong else right if right > first else 0)]
    for j in range(first, right):
        out[j][0] += 1
    if wrong:
        out[right][1] += 1
    return out


def calls_per_deviation(tally: Sequence[Sequence[int]], calls: int) -> float:
    """The model calls a deviation has cost this run besides its window, on average, with one pseudo-deviation
    of one call as prior: ``(calls - windows + 1) / (deviations + 1)``, so 1 before any deviation.

    Args:
        tally: the run's window tally (:func:`tally_window`): its windows are the first asks at position 0,
            its deviations the wrong counts.
        calls: the run's model calls so far, a derived rung's nested calls included (``Progress.usage``).
    """
    windows, deviations = (sum(tally[0]) if tally else 0), sum(k for _, k in tally)
    return max(0.0, calls - windows + 1) / (deviations + 1)


def window_costs(most: int, error_at: Callable[[int], float], reasks: float) -> list[float]:
    """The expected model calls per verified step of windows ``w`` steps wide, for ``w = 1 .. most``
    (item ``w - 1``), windows one after another (a renewal: calls per window over steps per window).

    ``error_at(j)`` is the chance ``q_j`` that the step at 0-based position ``j`` of a window deviates
    when the ones before it were right. With ``s_k = prod_{j < k} (1 - q_j)``, a window verifies
    ``S = sum_{k=1..w} s_k`` steps before its first deviation on average and deviates with chance
    ``D = 1 - s_w``; a deviating step costs ``c = reasks`` calls more and is then committed. A stream cut
    ends a window at its first deviation, so a window is one call however far it went:
    ``(1 + c * D) / (S + D)`` calls per verified step."""
    out: list[float] = []
    surv, steps = 1.0, 0.0
    for j in range(most):
        surv *= 1 - min(1.0, max(0.0, error_at(j)))
        steps += surv
        out.append((1 + reasks * (1 - surv)) / (steps + 1 - surv))
        if surv < 1e-15:  # every window this wide deviates: wider ones cost the same
            return out + [out[-1]] * (most - j - 1)
    return out


def follow_window(tally: Sequence[Sequence[int]], most: int, reasks: float = 1.0, prior: float = FOLLOW_PRIOR) -> int:
    """How many steps the next window asks with ``GuardConfig(follow=True)``: the width that minimises
    the expected model calls per verified step (:func:`window_costs`) under the error chances by
    position measured in this run, ``most`` unless the run shows that width costs accuracy.

    The measure: ``tally``, each position's first asks in its window, right and wrong. The model
    of it: a step at position ``j`` deviates with chance ``q(j) = q + b * (j - j_mean)``, ``q`` the
    pooled error chance (Laplace's rule, ``(wrong + 1) / (asked + 2)``), ``j_mean`` the mean position
    asked, ``b`` the slope: the least-squares slope of the deviations on position (a hazard
    regression: a position is asked only after the ones before it were right), with variance
    ``q (1 - q) / Sxx``, combined with a normal prior of mean 0 (no position effect) and standard
    deviation ``prior * q``. The width minimises the cost averaged over that posterior of ``b`` (a
    three-point Gauss-Hermite rule), ties to the wider. With ``b = 0`` the cost falls with the width
    (``(1 - p) * (1 / (1 - p ** w) + c)`` for ``p = 1 - q``), so independent errors keep the window at
    ``most``; only a slope the data hold up narrows it. docs/policies.md, "Follow the model".

    Args:
        tally: ``[[right, wrong], ...]`` by 0-based position in a window (:func:`tally_window`).
        most: ``GuardConfig.window``, the widest window.
        reasks: the calls a deviation costs besides its window (:func:`calls_per_deviation`).
        prior: the prior's standard deviation of ``b`` as a share of ``q`` (:data:`FOLLOW_PRIOR`).

    Raises:
        ValueError: ``most`` below 1, a negative count, ``reasks`` below 0 or ``prior`` not above 0.
    """
    if most < 1 or reasks < 0 or not prior > 0:
        raise ValueError(f"follow_window needs most >= 1, reasks >= 0 and prior > 0, not most={most}, reasks={reasks}, prior={prior}")
    if any(r < 0 or k < 0 for r, k in tally):
        raise ValueError(f"a window tally's counts must not be negative: {list(map(list, tally))}")
    asked = [r + k for r, k in tally]
    n, wrong = sum(asked), sum(k for _, k in tally)
    if wrong == 0:
        return most  # nothing measured against width
    q = (wrong + 1) / (n + 2)
    j_mean = sum(j * a for j, a in enumerate(asked)) / n
    sxx = sum(a * (j - j_mean) ** 2 for j, a in enumerate(asked))
    if sxx == 0:
        return most  # every step asked at one position: no slope to measure
    slope, var = sum((j - j_mean) * k for j, (_, k) in enumerate(tally)) / sxx, q * (1 - q) / sxx
    precision = 1 / (prior * q) ** 2 + 1 / var
    mean, sd = slope / var / precision, math.sqrt(1 / precision)
    rule = [(mean - math.sqrt(3) * sd, 1 / 6), (mean, 2 / 3), (mean + math.sqrt(3) * sd, 1 / 6)]
    if rule[-1][0] <= 0:
        return most  # no slope the posterior holds likely rises with position: wider is never dearer
    costs = [0.0] * most
    for b, weight in rule:
        for i, cost in enumerate(window_costs(most, _line(q, b, j_mean), reasks)):
            costs[i] += weight * cost
    best, width = costs[-1], most
    for w in range(most - 1, 0, -1):  # widest first: a narrower width must be cheaper to win
        if costs[w - 1] < best * (1 - 1e-9):
            best, width = costs[w - 1], w
    return width


def _line(q: float, b: float, j_mean: float) -> Callable[[int], float]:
    """``j -> q + b * (j - j_mean)``: the error chance by position of :func:`follow_window`'s estimate."""
    return lambda j: q + b * (j - j_mean)


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
