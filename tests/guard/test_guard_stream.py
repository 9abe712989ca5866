"""Guard.stream / astream (progress as the run goes) and the caller's context messages (issue 17.1).

The context is shown to the model in every chunk prompt and keys the run identity, so a checkpoint
thread never resumes a run made for another conversation.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from stepguard import CheckpointError, Guard, GuardConfig, ModelUnavailable, load_procedure
from stepguard.guard import DeviationEvent, GuardResult, StepOutcome, context_block, sqlite_checkpointer
from tests._fakes import ScriptedModel
from tests._paths import ROOT

INVOICE = load_procedure(ROOT / "examples/invoice.yaml")
A = {"subtotal": "100.10", "rate": "0.1"}
CTX = [{"role": "system", "content": "You bill for ACME."}, {"role": "user", "content": "Invoice order 42."}]


def test_stream_yields_each_step_as_committed_then_the_result() -> None:
    model = ScriptedModel(faults={"tax": ["wrong"]})
    items = list(Guard(model, GuardConfig(chunk_size=2)).stream(INVOICE, A))
    assert isinstance(items[-1], GuardResult) and items[-1].status == "verified"
    steps = [i.var for i in items if isinstance(i, StepOutcome)]
    assert steps == ["discount", "net", "tax", "total"]
    devs = [i for i in items if isinstance(i, DeviationEvent)]
    assert [d.step for d in devs] == ["tax"] and devs[0].action == "reprompt"
    assert items.index(devs[0]) < steps.index("tax") + 1 + len(devs)  # the re-prompt comes before tax commits
    assert {i.var: i.text for i in items if isinstance(i, StepOutcome)} == items[-1].texts


def test_stream_with_graph_updates_names_the_controller_nodes() -> None:
    items = list(Guard(ScriptedModel()).stream(INVOICE, A, graph_updates=True))
    nodes = [i[0] for i in items if isinstance(i, tuple)]
    assert nodes[:6] == ["plan", "ask", "verify", "intend", "act", "commit"] and nodes[-1] == "finish"


def test_astream_matches_stream() -> None:
    async def collect() -> list[object]:
        return [i async for i in Guard(ScriptedModel()).astream(INVOICE, A)]

    items = asyncio.run(collect())
    assert [type(i).__name__ for i in items] == ["StepOutcome"] * 4 + ["GuardResult"]


def test_context_is_in_every_chunk_prompt_and_prompts_are_unchanged_without_it() -> None:
    model = ScriptedModel()
    result = Guard(model, GuardConfig(chunk_size=2)).run(INVOICE, A, context=CTX)
    assert result.status == "verified" and len(model.calls) == 2
    for messages in model.calls:
        assert [m["role"] for m in messages] == ["system", "user"]
        assert messages[1]["content"].startswith(context_block(CTX) + "\n\nKnown values:")
        assert "[system] You bill for ACME.\n[user] Invoice order 42." in messages[1]["content"]
    plain = ScriptedModel()
    Guard(plain, GuardConfig(chunk_size=2)).run(INVOICE, A)
    assert plain.calls[0][1]["content"].startswith("Known values:")


def test_context_keys_the_run_identity() -> None:
    guard = Guard(ScriptedModel())
    assert "context" not in guard.run_identity(INVOICE, A)  # identities written before context still match
    one, two = guard.run_identity(INVOICE, A, CTX), guard.run_identity(INVOICE, A, CTX[:1])
    assert one["context"] != two["context"]


@pytest.mark.slow
def test_a_thread_is_not_resumed_for_another_context(tmp_path: Path) -> None:
    model = ScriptedModel()
    guard = Guard(model, checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite"))
    first = guard.run(INVOICE, A, thread_id="t", context=CTX)
    calls = len(model.calls)
    assert guard.run(INVOICE, A, thread_id="t", context=CTX).answer == first.answer
    assert len(model.calls) == calls  # the same work: the finished run, no new call
    with pytest.raises(CheckpointError, match="the caller's context messages"):
        guard.run(INVOICE, A, thread_id="t", context=CTX[:1])


def test_bad_context_message_is_refused_before_any_call() -> None:
    model = ScriptedModel()
    with pytest.raises(Exception, match=r"context\[0\]"):
        Guard(model).run(INVOICE, A, context=[{"role": "user", "content": ["parts"]}])  # type: ignore[list-item]
    assert model.calls == []


class _Failing(ScriptedModel):
    def complete(self, messages, settings=None):  # type: ignore[no-untyped-def]
        if len(self.calls) >= 1:
            raise ModelUnavailable("down", "scripted")
        return super().complete(messages, settings)


def test_a_model_error_carries_the_partial_result() -> None:
    with pytest.raises(ModelUnavailable) as info:
        Guard(_Failing(), GuardConfig(chunk_size=2)).run(INVOICE, A)
    partial = info.value.result
    assert partial is not None and partial.status == "failed"
    assert partial.texts["discount"] == "5.01" and partial.texts["tax"] is None
