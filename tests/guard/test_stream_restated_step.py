"""Breaker's faults in the streamed window: a verified step the model writes again with another value."""

from __future__ import annotations

import asyncio

import pytest

from stepguard import Guard, GuardConfig
from stepguard.procedure import parse_procedure
from tests._fakes import ChunksAsked, FixedReplies, StreamingReplies

PROC = parse_procedure("inputs: [x]\nsteps:\n" + "".join(
    f"  - {{var: s{k}, expr: s{k - 1} + {k}}}\n" if k > 1 else "  - {var: s1, expr: x + 1}\n" for k in range(1, 9)))
RIGHT = {f"s{k}": 2 + sum(range(1, k + 1)) for k in range(1, 9)}  # x = 2
LINES = [f"s{k} = {RIGHT[f's{k}']}" for k in range(1, 9)]


@pytest.mark.parametrize("streams", [True, False])
@pytest.mark.parametrize("use_async", [False, True])
def test_a_verified_step_written_again_is_recorded_as_such_not_as_the_next_step_missing(streams: bool, use_async: bool) -> None:
    """The window was cut (or trimmed) before ``s2 = 99``, a restatement of the verified s2; the run
    then recorded ``step s4 is missing`` (an under_executed the model never made) and re-asked s4
    on the ladder. The deviation the model made is the restatement: noted, its verified value stands,
    and the stream goes on from s4 as a first try."""
    reply = "\n".join(LINES[:3] + ["s2 = 99"] + LINES[3:]) + "\n"
    model = (StreamingReplies if streams else FixedReplies)([reply, "\n".join(LINES[3:]) + "\n"])
    seen = ChunksAsked()
    guard = Guard(model, GuardConfig(streamed=True, ladder=("restate",)), observer=seen)
    result = asyncio.run(guard.arun(PROC, {"x": 2})) if use_async else guard.run(PROC, {"x": 2})
    assert result.status == "verified" and result.values == RIGHT
    assert [(e.kind, e.step, e.action) for e in result.deviations] == [("extra_steps", "s2", "note")], result.deviations
    assert "`s2 = 99`" in result.deviations[0].detail and result.deviations[0].got == "s2 = 99"
    assert seen.asked == [(0, 8, None), (3, 8, None)]  # the window, then the stream on from s4: nothing re-asked
    assert result.reprompts == 0 and not any(s.reprompts for s in result.steps)


def test_a_restatement_at_the_windows_last_line_is_noted_too() -> None:
    """The neighbour: the stream ends by itself right after the restatement (the watch trims the
    reply at its end, with no cut): every step verified, the restatement noted."""
    reply = "\n".join(LINES + ["s5 = 0"]) + "\n"
    model = StreamingReplies([reply])
    result = Guard(model, GuardConfig(streamed=True, ladder=("restate",))).run(PROC, {"x": 2})
    assert result.status == "verified" and result.values == RIGHT and result.usage.model_calls == 1
    assert [(e.kind, e.step, e.action) for e in result.deviations] == [("extra_steps", "s5", "note")]


def test_a_wrong_step_before_the_restatement_is_still_the_deviation() -> None:
    """The neighbour: s3 wrong, then s2 written again: s3's arithmetic error is what is re-asked."""
    reply = "\n".join(LINES[:2] + ["s3 = 1", "s2 = 99"] + LINES[3:]) + "\n"
    model = StreamingReplies([reply, LINES[2], "\n".join(LINES[3:]) + "\n"])
    result = Guard(model, GuardConfig(streamed=True, ladder=("restate",))).run(PROC, {"x": 2})
    assert result.status == "verified" and result.values == RIGHT
    assert [(e.kind, e.step, e.action) for e in result.deviations] == [("extra_steps", "s2", "note"),
                                                                      ("arithmetic_error", "s3", "reprompt")]


def test_a_verified_step_written_again_without_a_value_is_noted_as_such() -> None:
    """The neighbour: a copy step restated as its expression (``s2 = s1 + 2``) after its value."""
    reply = "\n".join(LINES[:2] + ["s2 = s1 + 2"] + LINES[2:]) + "\n"
    model = StreamingReplies([reply, "\n".join(LINES[2:]) + "\n"])
    result = Guard(model, GuardConfig(streamed=True, ladder=("restate",))).run(PROC, {"x": 2})
    assert result.status == "verified" and result.values == RIGHT and result.reprompts == 0
    assert [(e.kind, e.step, e.action, e.got) for e in result.deviations] == [("extra_steps", "s2", "note", "s2 = s1 + 2")]
    assert "with a different value" not in result.deviations[0].detail
