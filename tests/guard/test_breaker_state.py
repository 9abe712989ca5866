"""Hostile and upgrading checkpoints against the typed controller state (issue 42, breaker round).

A checkpoint channel this version did not write (a key of its own, a count given as text, ``True``
or ``2.0``, a negative or non-finite number, a count no checkpointer stores, a budget no version
named, a shape's channel under another shape) is refused with a :class:`CheckpointError` naming the
field; one that reads but does not fit the procedure (a committed value its kind does not read, a
variable the procedure does not have in any field keyed by variable, a chunk outside the steps, a
call pending at a step that carries out none) is refused before the run goes on, never a crash of
the run (``EvaluationError``, ``AssertionError``) or a silent default. Every checkpoint this version
writes, at every node, still reads, fits and resumes to the same values with each tool run once.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from stepguard import Guard, GuardConfig
from stepguard.errors import CheckpointError
from stepguard.guard._state import MAX_COUNT, GuardState, check_against
from stepguard.procedure import parse_procedure
from stepguard.tools import Tool
from tests._fakes import REFUND, FixedReplies, ReplyModel
from tests.guard.test_state_shape import PROC, SHAPE_2, _checkpoint

THREE = GuardState.of(SHAPE_2).channels()
"""SHAPE_2 as this version writes it (shape 3: progress, attempt)."""


def _with(part: str, **change: Any) -> dict[str, Any]:
    return {**THREE, part: {**THREE[part], **change}}


@pytest.mark.parametrize(
    ("channels", "named"),
    [
        (_with("progress", bogus=1), "bogus"),
        (_with("attempt", bogus=1), "bogus"),
        (_with("progress", stop={"reason": "raise", "x": 1}), "stop.x"),
        (_with("progress", usage={"model_calls": "3"}), "usage.model_calls"),
        (_with("progress", usage={"model_calls": True}), "usage.model_calls"),
        (_with("progress", usage={"model_calls": 2.0}), "usage.model_calls"),
        (_with("progress", usage={"input_tokens": -5}), "usage.input_tokens"),
        (_with("progress", usage={"input_tokens": 10**400}), "usage.input_tokens"),
        (_with("progress", usage={"model_s": float("nan")}), "usage.model_s"),
        (_with("progress", usage={"model_s": float("inf")}), "usage.model_s"),
        (_with("progress", usage={"model_s": -0.5}), "usage.model_s"),
        (_with("progress", usage={"model_calls": 1, "bogus": 3}), "usage.bogus"),
        (_with("progress", finished_at=float("nan")), "finished_at"),
        (_with("progress", finished_at=float("-inf")), "finished_at"),
        (_with("progress", cursor=10**30), "cursor"),
        (_with("progress", chunk_size=MAX_COUNT + 1), "chunk_size"),
        (_with("progress", step_reprompts={"b": 10**30}), "step_reprompts"),
        (_with("progress", stop={"reason": "budget", "budget": "bananas"}), "stop.budget"),
        (_with("progress", spent="bananas"), "spent"),
        ({**SHAPE_2, "stop": "budget:bananas"}, "stop.budget"),
        (_with("progress", stop="budget:tokens"), "stop"),  # shape 1's text is read in its migration, not in shape 3
        (_with("progress", shape=1), "progress has shape 1"),
        (_with("progress", shape=2), "progress has shape 2"),
        ({**SHAPE_2, "shape": 3}, "shape 3 with no progress channel"),
        ({**THREE, "events": [{**SHAPE_2["events"][0], "attempt": -1}]}, "0.attempt"),
        ({**THREE, "events": [{**SHAPE_2["events"][0], "attempt": "1"}]}, "0.attempt"),
        ({**THREE, "events": [{**SHAPE_2["events"][0], "chunk": True}]}, "0.chunk"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_a_channel_no_version_wrote_is_refused_naming_the_field(channels: dict[str, Any], named: str) -> None:
    with pytest.raises(CheckpointError, match=named.replace(".", r"\.")):
        GuardState.of(channels)


def test_the_largest_count_still_reads() -> None:
    assert GuardState.of(_with("progress", chunk_no=MAX_COUNT)).progress.chunk_no == MAX_COUNT
    assert GuardState.of(_with("progress", finished_at=1764650000)).progress.finished_at == 1764650000


def _resume(progress: dict[str, Any] | None = None, attempt: dict[str, Any] | None = None) -> Any:
    """Resume PROC from SHAPE_2's state (a committed, b asked) with ``progress`` and ``attempt``
    changed; a refused resume leaves the thread's checkpoint as it was."""
    proc = parse_procedure(PROC)
    saver = InMemorySaver()
    guard = Guard(FixedReplies(["b = 6"]), checkpointer=saver)
    old = {**SHAPE_2, "identity": guard.run_identity(proc, {"x": 2}), "attempt": 0, "rung": None, "note": None}
    channels = GuardState.of(old).channels()
    channels["progress"].update(progress or {})
    channels["attempt"].update(attempt or {})
    _checkpoint(saver, "t", channels)
    try:
        return guard.run(proc, {"x": 2}, thread_id="t")
    except CheckpointError:
        assert saver.get_tuple({"configurable": {"thread_id": "t"}}).checkpoint["channel_values"] == channels
        raise


@pytest.mark.parametrize(
    ("progress", "attempt", "named"),
    [
        ({"values": {"a": "banana"}}, None, "committed value of a reads 'banana'"),
        ({"values": {"a": "nan"}}, None, "committed value of a reads 'nan'"),
        ({"values": {"a": "1e999999"}}, None, "committed value of a reads '1e999999'"),
        ({"kept_value": ["zz", "1"]}, None, "kept_value names zz"),
        ({"provenance": {"a": "model_verified", "zz": "flagged"}}, None, "provenance names zz"),
        ({"step_reprompts": {"zz": 1}}, None, "step_reprompts names zz"),
        ({"step_chunk": {"zz": 1}}, None, "step_chunk names zz"),
        ({"actions": {"zz": {"intent": {}}}}, None, "actions names zz"),
        (None, {"verified": [["zz", "1"]]}, "verified names zz"),
        (None, {"restated": ["zz", "zz = 1"]}, "restated names zz"),
        (None, {"deviation": {"kind": "arithmetic_error", "step": "zz", "detail": "", "got": None}}, "deviation names zz"),
        (None, {"chunk_start": 1, "chunk_end": 99}, r"chunk \[1, 99\) is not within"),
        (None, {"chunk_start": 2, "chunk_end": 1}, r"chunk \[2, 1\) is not within"),
        (None, {"pending_call": True}, "a call is pending at step 1, whose kind carries out no call"),
    ],
)
def test_a_checkpoint_that_reads_but_does_not_fit_is_refused_before_the_run_goes_on(
        progress: dict[str, Any] | None, attempt: dict[str, Any] | None, named: str) -> None:
    """Each of these crashed the resumed run (EvaluationError, AssertionError) or was carried silently."""
    with pytest.raises(CheckpointError, match=named):
        _resume(progress, attempt)


def test_the_unchanged_checkpoint_resumes() -> None:
    result = _resume()
    assert result.status == "verified" and result.values == {"a": 3, "b": 6}


def _history(saver: InMemorySaver, thread: str) -> list[dict[str, Any]]:
    return [t.checkpoint["channel_values"] for t in saver.list({"configurable": {"thread_id": thread}})]


def _tools(ran: list[str]) -> list[Tool]:
    def lookup(sku: str) -> str:
        ran.append("lookup")
        return "ORD-7"

    def refund(order_id: str, amount: Decimal) -> str:
        ran.append("refund")
        return "RF-1"

    return [Tool("catalog_lookup", lookup), Tool("issue_refund", refund)]


LOOKUP = 'CALL catalog_lookup(sku="A-12")'
REFUND_CALL = 'CALL issue_refund(order_id="ORD-7", amount=19.99)'


def test_every_checkpoint_of_a_tool_run_reads_fits_and_resumes_with_each_tool_run_once() -> None:
    """Resume a copy of the thread as it stood at each checkpoint: the same values, each tool run
    once over the first run and the resume together (or the resume refused for an intent recorded
    without its result), and the usage the copy held counted once."""
    saver, ran = InMemorySaver(), []
    replies = [LOOKUP, 'CALL issue_refund(order_id="ORD-8", amount=19.99)', REFUND_CALL]  # one re-ask on the refund
    first = Guard(ReplyModel(replies), checkpointer=saver, tools=_tools(ran)).run(REFUND, {"sku": "A-12", "amount": "19.99"}, thread_id="t")
    assert first.status == "verified" and ran == ["lookup", "refund"]
    history = [c for c in _history(saver, "t") if "progress" in c]
    assert len(history) > 4
    for i, channels in enumerate(history):
        state = GuardState.of(channels)
        check_against(state, REFUND)
        copy, done = InMemorySaver(), set(state.progress.values)
        _checkpoint(copy, "t", channels)  # the same thread: an action's idempotency key names it
        resumed_ran: list[str] = []
        guard = Guard(ReplyModel([LOOKUP, REFUND_CALL][len(done):]), checkpointer=copy, tools=_tools(resumed_ran))
        try:
            again = guard.run(REFUND, {"sku": "A-12", "amount": "19.99"}, thread_id="t")
        except CheckpointError as exc:  # an intent recorded and no result: refused, never run twice
            assert "refund_ref" in str(exc) or "order_id" in str(exc), exc
            continue
        assert again.values == first.values, i
        recorded = {var for var, action in state.progress.actions.items() if "result" in action}
        assert resumed_ran == [t for t, var in (("lookup", "order_id"), ("refund", "refund_ref")) if var not in recorded], i
        assert again.usage.model_calls == state.progress.usage.model_calls + again.spent.model_calls, i


def test_every_checkpoint_of_a_reprompted_run_reads_and_fits() -> None:
    saver = InMemorySaver()
    proc = parse_procedure(PROC)
    model = FixedReplies(["a = 3\nb = 7", "b = 7", "b = 6"])
    result = Guard(model, GuardConfig(chunk_size=2, max_reprompts_per_step=3), checkpointer=saver).run(proc, {"x": 2}, thread_id="t")
    assert result.values == {"a": 3, "b": 6}
    for channels in _history(saver, "t"):
        if "progress" in channels:
            check_against(GuardState.of(channels), proc)
