"""The controller's state is typed from detection to checkpoint (issue 28, item 2).

A checkpoint holds it as JSON; reading it gives typed objects (the deviation, the stop reason,
usage, events). A checkpoint of the first shape (stop as ``"budget:<name>"``, ``finished_at``
inside ``usage``) is read in the new one; one of an unknown shape or with a value this version
did not write is refused with the reason, never misread.
"""

from __future__ import annotations

import pytest

from stepguard import Guard, GuardConfig
from stepguard.errors import BudgetExhausted, CheckpointError
from stepguard.guard._state import STATE_SHAPE, GuardState, RunUsage, Stop
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
    assert state.shape == STATE_SHAPE
    assert state.stop == Stop("budget", "reprompts_per_step")
    assert state.finished_at == 1764650000.0
    assert state.usage == RunUsage(model_calls=3, input_tokens=40, output_tokens=9, model_s=0.5)
    assert isinstance(state.deviation, Deviation) and state.deviation.got == "b = 7"
    assert state.events[0].rung == "restate"
    channels = state.channels()
    assert channels["stop"] == {"reason": "budget", "budget": "reprompts_per_step"}
    assert channels["deviation"]["kind"] == "arithmetic_error" and "events" not in channels
    assert GuardState.of(channels) == GuardState(**{**vars(state), "events": []})  # the new shape reads back the same


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"shape": STATE_SHAPE + 1}, "shape 3; this version of stepguard reads shapes 1 to 2"),
        ({"shape": "2"}, "shape '2'"),
        ({"stop": "paused"}, "stop reason reads 'paused'"),
        ({"stop": {"reason": "budget", "budget": 3}}, "stop reason reads"),
        ({"usage": {"model_calls": "many"}}, "usage reads"),
        ({"deviation": {"kind": "felt_wrong", "step": "b"}}, "deviation or events do not read"),
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
