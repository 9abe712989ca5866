"""The controller's state is typed from detection to checkpoint (issue 28, item 2; issue 42.1).

A checkpoint holds it as JSON, the run's progress apart from the attempt in flight (shape 3);
reading it gives typed objects (the deviation, the stop reason, usage, events). Checkpoints of the
first shape (one channel per field, stop as ``"budget:<name>"``, ``finished_at`` inside ``usage``)
and of the second (one channel per field) are read in the current one, and a thread that holds
one resumes; one of an unknown shape or with a value this version did not write is refused with
the reason, never misread.
"""

from __future__ import annotations

import pytest

from stepguard import Guard, GuardConfig
from stepguard.errors import BudgetExhausted, CheckpointError
from stepguard.guard._state import STATE_SHAPE, Attempt, GuardState, Progress, RunUsage, Stop
from stepguard.procedure import parse_procedure
from stepguard.verify import Deviation
from tests._fakes import FixedReplies

OLD = {
    "cursor": 2, "values": {"a": "3"}, "usage": {"model_calls": 3, "input_tokens": 40, "output_tokens": 9, "model_s": 0.5, "finished_at": 1764650000.0},
    "stop": "budget:reprompts_per_step", "deviation": {"kind": "arithmetic_error", "step": "b", "detail": "b was computed as 7", "got": "b = 7"},
    "events": [{"kind": "arithmetic_error", "step": "b", "detail": "x", "attempt": 0, "chunk": 1, "action": "reprompt", "rung": "restate"}],
}


def test_a_first_shape_checkpoint_is_read_in_the_new_shape() -> None:
    state = GuardState.of(OLD)
    assert state.progress.shape == STATE_SHAPE == 3
    assert state.progress.stop == Stop("budget", "reprompts_per_step")
    assert state.progress.finished_at == 1764650000.0
    assert state.progress.usage == RunUsage(model_calls=3, input_tokens=40, output_tokens=9, model_s=0.5)
    assert isinstance(state.attempt.deviation, Deviation) and state.attempt.deviation.got == "b = 7"
    assert state.events[0].rung == "restate"
    channels = state.channels()
    assert set(channels) == {"progress", "attempt"}  # events accumulate in their own channel
    assert channels["progress"]["stop"] == {"reason": "budget", "budget": "reprompts_per_step"}
    assert channels["attempt"]["deviation"]["kind"] == "arithmetic_error"
    assert GuardState.of(channels) == GuardState(state.progress, state.attempt)  # the new shape reads back the same


SHAPE_2 = {
    "shape": 2, "cursor": 1, "values": {"a": "3"}, "provenance": {"a": "model_verified"}, "step_reprompts": {"a": 0},
    "step_chunk": {"a": 0}, "chunk_no": 2, "chunk_size": 1, "chunk_start": 1, "chunk_end": 2, "attempt": 1, "rung": "restate",
    "note": "b is a * 2", "reply": "b = 7", "tool_calls": [], "pending_call": False, "finish_reason": "stop", "derived_spent": None,
    "derived_note": None, "restated": None, "verified": [], "model_value": "7", "kept_value": ["b", "7"],
    "deviation": {"kind": "arithmetic_error", "step": "b", "detail": "b was computed as 7", "got": "b = 7"},
    "events": [{"kind": "arithmetic_error", "step": "b", "detail": "x", "attempt": 0, "chunk": 1, "action": "reprompt", "rung": "restate"}],
    "usage": {"model_calls": 2, "input_tokens": 30, "output_tokens": 8, "cached_tokens": 0, "model_s": 0.25}, "finished_at": None,
    "reprompts": 1, "stop": None, "spent": None, "identity": {"procedure": "p"}, "actions": {},
}
"""A shape-2 checkpoint's channels as stepguard 0.x wrote them: one channel per field."""


def test_a_second_shape_checkpoint_is_read_with_its_progress_apart_from_its_attempt() -> None:
    state = GuardState.of(SHAPE_2)
    assert state.progress == Progress(
        cursor=1, values={"a": "3"}, provenance={"a": "model_verified"}, step_reprompts={"a": 0}, step_chunk={"a": 0}, chunk_no=2,
        chunk_size=1, tries=1, rung="restate", note="b is a * 2", kept_value=["b", "7"],
        usage=RunUsage(model_calls=2, input_tokens=30, output_tokens=8, model_s=0.25), reprompts=1, identity={"procedure": "p"})
    assert state.attempt == Attempt(
        chunk_start=1, chunk_end=2, reply="b = 7", finish_reason="stop", model_value="7",
        deviation=Deviation(kind="arithmetic_error", step="b", detail="b was computed as 7", got="b = 7"))
    assert [e.action for e in state.events] == ["reprompt"]
    assert GuardState.of({**state.channels(), "events": SHAPE_2["events"]}) == state


def _checkpoint(saver: object, thread: str, channels: dict) -> None:
    """Write ``channels`` as the thread's last checkpoint, as a graph of their shape would have."""
    from langgraph.checkpoint.base import empty_checkpoint

    ck = empty_checkpoint()
    ck["channel_values"] = dict(channels)
    ck["channel_versions"] = {k: saver.get_next_version(None, None) for k in channels}  # type: ignore[attr-defined]
    cfg = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    saver.put(cfg, ck, {"source": "loop", "step": 7, "parents": {}}, ck["channel_versions"])  # type: ignore[attr-defined]


@pytest.mark.parametrize("saver_kind", ["sqlite", "memory"])
@pytest.mark.parametrize("shape", [1, 2])
def test_a_thread_checkpointed_in_an_older_shape_resumes(tmp_path, shape: int, saver_kind: str) -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    from stepguard.guard import sqlite_checkpointer

    proc = parse_procedure(PROC)
    saver = sqlite_checkpointer(tmp_path / "ck.sqlite") if saver_kind == "sqlite" else InMemorySaver()
    guard = Guard(FixedReplies(["b = 6"]), checkpointer=saver)
    old = {**SHAPE_2, "identity": guard.run_identity(proc, {"x": 2}), "attempt": 0, "rung": None, "note": None}
    if shape == 1:
        old = {k: v for k, v in old.items() if k not in ("shape", "finished_at", "actions")}
    _checkpoint(saver, "t", old)
    result = guard.run(proc, {"x": 2}, thread_id="t")  # a is committed: only b is asked
    assert result.status == "verified" and result.values == {"a": 3, "b": 6} and result.resumed == "unfinished"
    assert result.spent.model_calls == 1 and result.usage.model_calls == 3
    assert [e.action for e in result.deviations] == ["reprompt"]  # the old thread's events are kept
    stored = saver.get_tuple({"configurable": {"thread_id": "t"}}).checkpoint["channel_values"]
    assert stored["progress"]["shape"] == STATE_SHAPE and stored["progress"]["values"] == {"a": "3", "b": "6"}


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"shape": STATE_SHAPE + 1}, f"shape {STATE_SHAPE + 1}; this version of stepguard reads shapes 1 to {STATE_SHAPE}"),
        ({"progress": {"shape": STATE_SHAPE + 1}}, f"shape {STATE_SHAPE + 1}; this version"),
        ({"shape": "2"}, "shape '2'"),
        ({"stop": "paused"}, "stop reason reads 'paused'"),
        ({"stop": {"reason": "budget", "budget": 3}}, "stop reason reads"),
        ({"usage": {"model_calls": "many"}}, "usage reads"),
        ({"deviation": {"kind": "felt_wrong", "step": "b"}}, "deviation reads"),
        ({"progress": {"shape": STATE_SHAPE, "cursor": -1}}, "checkpoint's cursor reads '-1'"),
        ({"progress": {"shape": STATE_SHAPE}, "attempt": {"verified": [["a"]]}}, "checkpoint's verified reads"),
    ],
)
def test_a_checkpoint_this_version_did_not_write_is_refused_with_the_reason(change: dict, why: str) -> None:
    with pytest.raises(CheckpointError, match=why.replace("(", r"\(").replace(")", r"\)")):
        GuardState.of({**OLD, **change})


PROC = "inputs: [x]\nsteps:\n  - {var: a, expr: x + 1}\n  - {var: b, expr: a * 2}\n"


def test_a_budget_stop_is_typed_through_to_the_error() -> None:
    proc = parse_procedure(PROC)
    model = FixedReplies(["a = 3\nb = 7", "b = 7"])
    with pytest.raises(BudgetExhausted) as info:
        Guard(model, GuardConfig(max_reprompts_per_step=1, on_exhausted="raise", ladder=("restate",))).run(proc, {"x": 2})
    assert info.value.budget == "reprompts_per_step"
    assert info.value.result.status == "failed" and info.value.result.first_unverified == "b"


def test_a_finished_run_resumes_as_finished_from_its_checkpoint(tmp_path) -> None:
    from stepguard.guard import sqlite_checkpointer

    proc = parse_procedure(PROC)
    saver = sqlite_checkpointer(tmp_path / "ck.sqlite")
    first = Guard(FixedReplies(["a = 3", "b = 6"]), checkpointer=saver).run(proc, {"x": 2}, thread_id="t")
    again = Guard(FixedReplies([]), checkpointer=saver).run(proc, {"x": 2}, thread_id="t")  # no call: it is finished
    assert first.status == again.status == "verified"
    assert again.values == {"a": 3, "b": 6}


@pytest.mark.parametrize(
    ("field", "value"),
    [("cursor", "2"), ("cursor", None), ("cursor", -1), ("values", {"s1": 3}), ("values", None), ("actions", [1]),
     ("step_reprompts", "x"), ("chunk_size", -3), ("events", None), ("events", [5]), ("finished_at", "yesterday"),
     ("deviation", "bad"), ("kept_value", "ab"), ("pending_call", 1)],
)
def test_a_field_this_version_did_not_write_is_refused_by_name(field: str, value: object) -> None:
    with pytest.raises(CheckpointError, match=f"checkpoint's .*{field}"):
        GuardState.of({**OLD, "shape": 2, "usage": {"model_calls": 3}, field: value})


@pytest.mark.parametrize(
    ("change", "why"),
    [({"cursor": 99}, "cursor 99 is past"), ({"values": {"zz": "1"}, "cursor": 1}, "variables the procedure does not have: zz"),
     ({"provenance": {"a": "banana"}}, "provenance 'banana'"), ({"rung": "nope"}, "rung 'nope' is not registered"),
     ({"values": {"a": "3"}, "cursor": 0}, "1 committed values for a cursor at step 0")],
)
def test_a_checkpoint_that_does_not_fit_the_procedure_is_refused(change: dict, why: str) -> None:
    from stepguard.guard._state import check_against

    proc = parse_procedure(PROC)
    base = {"shape": 2, "cursor": 1, "values": {"a": "3"}, "provenance": {"a": "model_verified"}}
    with pytest.raises(CheckpointError, match=why):
        check_against(GuardState.of({**base, **change}), proc)
    check_against(GuardState.of(base), proc)  # the state as written fits
