"""One run of a checkpoint thread at a time, and a stopped run executes no tool (issue 41, part 6),
from Python: ``Guard.run`` / ``arun``, the drop-in client, and a second process on the same SQLite
file. The proxy's side (and two proxy processes on Postgres): tests/serve/test_threads*.py."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from stepguard import CheckpointError, Guard, RunClosed, ThreadInFlight, load_procedure
from stepguard.guard import RunStop, sqlite_checkpointer
from stepguard.model import ChatMessage, ChatResponse, GenerationSettings, Usage
from stepguard.tools import Tool
from tests._paths import ROOT

pytestmark = pytest.mark.slow

REFUND = load_procedure(ROOT / "examples/refund.yaml")
REFUND_IN = {"sku": "A-12", "amount": "19.99"}


class RefundModel:
    """Answers the refund procedure's two tool steps; ``on_refund`` runs inside the refund step's call."""

    spec = "refund-model"
    provider = "test"
    model_name = "refund-model"
    simulated = True

    def __init__(self, on_refund: Any = None) -> None:
        self.on_refund = on_refund
        self.asked: list[str] = []

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        prompt = messages[-1]["content"]
        if "issue_refund" in prompt:
            self.asked.append("refund")
            if self.on_refund is not None:
                self.on_refund()
            text = 'CALL issue_refund(order_id="ORD-7", amount=19.99)'
        else:
            self.asked.append("lookup")
            text = 'CALL catalog_lookup(sku="A-12")'
        return ChatResponse(text, Usage(10, 5), model=self.model_name, simulated=True)

    async def acomplete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        return self.complete(messages, settings)


def _tools(ran: list[str]) -> list[Tool]:
    def catalog_lookup(sku: str) -> str:
        ran.append("lookup")
        return "ORD-7"

    def issue_refund(order_id: str, amount: Any) -> str:
        ran.append("refund")
        return f"RF-{order_id}"

    return [Tool("catalog_lookup", catalog_lookup), Tool("issue_refund", issue_refund)]


def test_a_second_run_of_a_thread_in_flight_is_refused_and_other_threads_run(tmp_path: Path) -> None:
    saver = sqlite_checkpointer(tmp_path / "ck.sqlite")
    inside, release = threading.Event(), threading.Event()
    ran: list[str] = []
    guard = Guard(RefundModel(on_refund=lambda: (inside.set(), release.wait(20))), checkpointer=saver, tools=_tools(ran))
    first: dict[str, Any] = {}
    t = threading.Thread(target=lambda: first.update(result=guard.run(REFUND, REFUND_IN, thread_id="t-1")))
    t.start()
    assert inside.wait(20)
    other = Guard(RefundModel(), checkpointer=saver, tools=_tools(ran))
    with pytest.raises(ThreadInFlight, match="'t-1' has a run in flight .in this process") as err:
        other.run(REFUND, REFUND_IN, thread_id="t-1")
    assert err.value.thread_id == "t-1" and isinstance(err.value, CheckpointError)
    with pytest.raises(ThreadInFlight):
        other.check_thread(REFUND, REFUND_IN, "t-1")  # the proxy's probe before a stream
    with pytest.raises(ThreadInFlight):
        asyncio.run(other.arun(REFUND, REFUND_IN, thread_id="t-1"))
    assert other.run(REFUND, REFUND_IN, thread_id="t-2").status == "verified"  # another thread is not held
    release.set()
    t.join(20)
    assert first["result"].status == "verified"
    again = other.run(REFUND, REFUND_IN, thread_id="t-1")  # the lock went with the run: the thread answers
    assert again.answer == "RF-ORD-7" and again.resumed == "finished"
    assert ran.count("refund") == 2  # t-1 once, t-2 once


def test_a_run_of_the_thread_in_another_process_on_the_same_sqlite_file_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "ck.sqlite"
    saver = sqlite_checkpointer(db)
    holder = ("import sys; from stepguard.guard import sqlite_checkpointer; from stepguard.guard._thread_lock import hold_thread\n"
              f"saver = sqlite_checkpointer({str(db)!r})\n"
              "with hold_thread(saver, 't-9'):\n    print('held', flush=True); sys.stdin.read()\n")
    child = subprocess.Popen([sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        ran: list[str] = []
        with pytest.raises(ThreadInFlight, match="in another process on the same checkpoint database"):
            Guard(RefundModel(), checkpointer=saver, tools=_tools(ran)).run(REFUND, REFUND_IN, thread_id="t-9")
        assert ran == []
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(20)
    assert Guard(RefundModel(), checkpointer=saver, tools=_tools([])).run(REFUND, REFUND_IN, thread_id="t-9").status == "verified"


def test_the_drop_in_client_raises_its_thread_in_flight_error(tmp_path: Path) -> None:
    import openai

    from stepguard.adapters import GuardedOpenAI, GuardedThreadInFlight
    from tests._stub_server import StubServer

    saver = sqlite_checkpointer(tmp_path / "ck.sqlite")
    inside, release = threading.Event(), threading.Event()
    held = Guard(RefundModel(on_refund=lambda: (inside.set(), release.wait(20))), checkpointer=saver, tools=_tools([]))
    t = threading.Thread(target=lambda: held.run(REFUND, REFUND_IN, thread_id="t-3"))
    t.start()
    try:
        assert inside.wait(20)
        with StubServer() as stub:
            client = GuardedOpenAI(openai.OpenAI(base_url=stub.base_url, api_key="x"), procedures={"refund": REFUND},
                                   checkpointer=saver, tools=_tools([]))
            with pytest.raises(GuardedThreadInFlight, match="'t-3'") as err:
                client.chat.completions.create(model="ok", messages=[], extra_body={
                    "stepguard": {"procedure": "refund", "inputs": REFUND_IN, "thread_id": "t-3"}})
        assert isinstance(err.value, openai.OpenAIError) and isinstance(err.value, ThreadInFlight)
    finally:
        release.set()
        t.join(20)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_run_stopped_during_the_tool_steps_model_call_executes_no_tool_and_resumes_once(tmp_path: Path, mode: str) -> None:
    saver = sqlite_checkpointer(tmp_path / "ck.sqlite")
    stop = RunStop()
    ran: list[str] = []
    model = RefundModel(on_refund=stop.set)  # the caller goes while the model answers the refund step
    guard = Guard(model, checkpointer=saver, tools=_tools(ran))
    with pytest.raises(RunClosed):
        if mode == "sync":
            guard.run(REFUND, REFUND_IN, thread_id="s-1", stop=stop)
        else:
            asyncio.run(guard.arun(REFUND, REFUND_IN, thread_id="s-1", stop=stop))
    assert ran == ["lookup"]  # the answer came after the stop: nothing acted on it
    model.on_refund = None
    result = guard.run(REFUND, REFUND_IN, thread_id="s-1")  # no intent left behind: the resume asks the step again
    assert result.status == "verified" and result.answer == "RF-ORD-7"
    assert ran == ["lookup", "refund"] and model.asked == ["lookup", "refund", "refund"]


class _StopAtIntent(InMemorySaver):
    """A checkpointer that sets ``stop`` once the refund step's intent is checkpointed: the caller
    goes between the intent and the act."""

    def __init__(self, stop: threading.Event) -> None:
        super().__init__()
        self.stop = stop

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        out = super().put(config, checkpoint, metadata, new_versions)
        progress = checkpoint.get("channel_values", {}).get("progress") or {}
        record = (progress.get("actions") or {}).get("refund_ref") or {}
        if "intent" in record and "result" not in record:
            self.stop.set()
        return out

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return self.put(config, checkpoint, metadata, new_versions)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_run_stopped_between_the_intent_and_the_act_takes_the_intent_back(mode: str) -> None:
    stop = RunStop()
    saver = _StopAtIntent(stop)
    ran: list[str] = []
    model = RefundModel()
    guard = Guard(model, checkpointer=saver, tools=_tools(ran))
    with pytest.raises(RunClosed):
        if mode == "sync":
            guard.run(REFUND, REFUND_IN, thread_id="s-2", stop=stop)
        else:
            asyncio.run(guard.arun(REFUND, REFUND_IN, thread_id="s-2", stop=stop))
    assert ran == ["lookup"]
    saver.stop = threading.Event()  # the resume is not stopped
    result = guard.run(REFUND, REFUND_IN, thread_id="s-2")  # not refused as "stopped during the call": nothing ran
    assert result.status == "verified" and ran == ["lookup", "refund"]


class _StalledStream:
    """A reply that writes ``S1 = 1`` and half of ``S2``'s line, then stalls until aborted (from another thread)."""

    def __init__(self) -> None:
        self.response: ChatResponse | None = None
        self.stalled, self._gate = threading.Event(), threading.Event()

    def __iter__(self) -> Any:
        yield "S1 = 1\n"
        yield "S2 = 1"  # the model is writing S2 = 12
        self.stalled.set()
        self._gate.wait(20)
        if self.response is not None:
            return
        yield "2\n"
        self.response = ChatResponse("S1 = 1\nS2 = 12\n", Usage(5, 5), "stop")

    def abort(self) -> None:
        self.response = ChatResponse("S1 = 1\nS2 = 1", Usage(5, 3), "cut")
        self._gate.set()

    def close(self) -> None:
        self.abort()


class _StalledModel:
    spec = provider = model_name = "stalled"

    def __init__(self) -> None:
        self.reply = _StalledStream()

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        raise AssertionError("streamed only")

    def stream(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> _StalledStream:
        return self.reply


def test_a_window_stopped_during_a_stall_is_closed_from_the_stopping_side_and_cut_at_its_last_complete_line() -> None:
    from stepguard import Procedure
    from stepguard.guard._window import StreamWatch, read_window

    proc = Procedure.model_validate({"name": "w", "inputs": ["a"], "steps": [{"var": "S1", "expr": "a"}, {"var": "S2", "expr": "S1 + 11"}]})
    stop = RunStop()
    model = _StalledModel()
    threading.Thread(target=lambda: (model.reply.stalled.wait(20), stop.set())).start()  # the reader goes during the stall
    resp = read_window(model, [{"role": "user", "content": "go"}], GenerationSettings(), StreamWatch(proc, 0, 2, {"a": 1}, closed=stop))
    assert resp.finish_reason == "cut" and resp.cut is not None
    assert resp.cut.kind == "closed"
    assert resp.text == "S1 = 1\n"  # the line the close broke off ("S2 = 1" of "S2 = 12") is never read as a value
