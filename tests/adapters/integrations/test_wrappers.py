"""GuardedOpenAI (the real client on the stub server; the drop-in behaviour is in test_drop_in_client) and the LangGraph node."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any, TypedDict

import openai
import pytest

from stepguard.adapters import GuardedOpenAI, InvalidGuardedCall, guarded_node, load_model
from stepguard.guard import GuardConfig
from stepguard.procedure import load_procedure
from tests._stub_server import StubServer

INVOICE = load_procedure("examples/invoice.yaml")
INPUTS = {"subtotal": "100.10", "rate": "0.1"}
SIM = load_model("sim:perfect")


@pytest.fixture(scope="module")
def stub() -> Any:
    with StubServer(hang_s=1.0) as server:
        yield server


def _guarded_call(client: GuardedOpenAI, **extra: Any) -> Any:
    return client.chat.completions.create(
        model="sim", messages=[], temperature=0, extra_body={"stepguard": {"procedure": "invoice", "inputs": INPUTS, **extra}}
    )


def test_guarded_call_returns_verified_answer_and_result(stub: StubServer) -> None:
    real = openai.OpenAI(base_url=stub.base_url, api_key="k", max_retries=0)
    client = GuardedOpenAI(real, procedures={"invoice": INVOICE})
    n = len(stub.requests)
    resp = _guarded_call(client)
    assert resp.choices[0].message.content == "104.60"
    assert resp.stepguard.status == "verified"
    assert resp.stepguard.values["discount"] == Decimal("5.01")  # ROUND_HALF_UP of 5.005
    calls = stub.requests[n:]
    assert calls and all(c["model"] == "sim" and c["temperature"] == 0 for c in calls)
    assert len(calls) == 1 and calls[0]["stream"]  # the default follows the model: one streamed call while it is right
    assert resp.usage.prompt_tokens > 0
    chunked = _guarded_call(client, follow=False)
    chunked_calls = stub.requests[n + 1:]
    assert chunked.choices[0].message.content == "104.60" and len(chunked_calls) > 1  # chunks of steps
    assert chunked.usage.prompt_tokens == 12 * len(chunked_calls)  # the calls' own usage, summed
    assert client.base_url == real.base_url  # other attributes are the client's own


def test_async_client_is_awaited(stub: StubServer) -> None:
    client = GuardedOpenAI(openai.AsyncOpenAI(base_url=stub.base_url, api_key="k", max_retries=0), procedures={"invoice": INVOICE})
    resp = asyncio.run(_guarded_call(client))
    assert resp.stepguard.status == "verified" and resp.choices[0].message.content == "104.60"


def test_unknown_procedure_is_a_clear_error(stub: StubServer) -> None:
    client = GuardedOpenAI(openai.OpenAI(base_url=stub.base_url, api_key="k"), procedures={"invoice": INVOICE})
    with pytest.raises(InvalidGuardedCall, match="unknown procedure 'nope'; known: invoice"):
        client.chat.completions.create(model="m", messages=[], extra_body={"stepguard": {"procedure": "nope"}})


def test_calls_without_a_procedure_pass_straight_through(stub: StubServer) -> None:
    real = openai.OpenAI(base_url=stub.base_url, api_key="k", max_retries=0)
    client = GuardedOpenAI(real, procedures={"invoice": INVOICE})
    n = len(stub.requests)
    resp = client.chat.completions.create(model="ok", messages=[{"role": "user", "content": "hi"}])
    assert resp.choices[0].message.content == "reply to: hi"
    assert not hasattr(resp, "stepguard") or getattr(resp, "stepguard", None) is None
    assert len(stub.requests) == n + 1
    real.close()


class _State(TypedDict, total=False):
    order_subtotal: str
    tax_rate: str
    invoice: dict[str, Any]
    total: str | None


def _graph(checkpointer: Any = None) -> Any:
    return _graph_of("typeddict", checkpointer, config=None)


def test_langgraph_node_sync_and_async_share_the_checkpointer() -> None:
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()
    graph = _graph(saver)
    cfg = {"configurable": {"thread_id": "order-1"}}
    out = graph.invoke({"order_subtotal": "100.10", "tax_rate": "0.1"}, cfg)
    assert out["total"] == "104.60" and out["invoice"]["status"] == "verified"
    nested = out["invoice"]["thread_id"]
    assert nested.startswith("order-1/stepguard/invoice/")
    threads = {c.config["configurable"]["thread_id"] for c in saver.list(None)}
    assert {"order-1", nested} <= threads
    out2 = asyncio.run(_graph().ainvoke({"order_subtotal": "100.10", "tax_rate": "0.1"}))
    assert out2["total"] == "104.60"


def test_langgraph_node_new_turn_with_new_inputs_runs_afresh() -> None:
    """Issue 14: a second turn on one conversation thread returned the first turn's answer."""
    from langgraph.checkpoint.memory import InMemorySaver

    from decimal import Decimal

    graph = _graph(InMemorySaver())
    cfg = {"configurable": {"thread_id": "conversation-7"}}
    first = graph.invoke({"order_subtotal": "100.10", "tax_rate": "0.1"}, cfg)
    second = graph.invoke({"order_subtotal": "200.00", "tax_rate": "0.1"}, cfg)
    assert first["total"] == "104.60"
    want = INVOICE.expected_values({"subtotal": "200.00", "rate": "0.1"})[INVOICE.answer_var]
    assert Decimal(second["total"]) == want and second["total"] == "209.00"
    assert second["invoice"]["status"] == "verified"
    assert second["invoice"]["inputs"]["subtotal"] == "200.00"  # as written
    assert second["total"] != first["total"]
    assert second["invoice"]["usage"]["model_calls"] > 0  # a new run, not the stored answer
    assert second["invoice"]["thread_id"] != first["invoice"]["thread_id"]
    again = graph.invoke({"order_subtotal": "100.10", "tax_rate": "0.1"}, cfg)
    assert again["total"] == first["total"]


def test_langgraph_node_missing_state_key() -> None:
    with pytest.raises(KeyError, match="tax_rate"):
        _graph().invoke({"order_subtotal": "100.10"})


@pytest.mark.parametrize("kind", ["pydantic", "dataclass"])
def test_langgraph_node_reads_a_pydantic_or_dataclass_state(kind: str) -> None:
    """The node failed on a pydantic state with a misleading missing-keys error."""
    out = _graph_of(kind, config=None).invoke({"order_subtotal": "100.10", "tax_rate": "0.1"})
    assert out["total"] == "104.60" and out["invoice"]["status"] == "verified"


def _state_class(kind: str) -> Any:
    from dataclasses import dataclass, field

    from pydantic import BaseModel

    if kind == "typeddict":
        return _State
    if kind == "pydantic":
        class PState(BaseModel):
            order_subtotal: str = ""
            tax_rate: str = ""
            invoice: dict[str, Any] = {}
            total: str | None = None

        return PState

    @dataclass
    class DState:
        order_subtotal: str = ""
        tax_rate: str = ""
        invoice: dict[str, Any] = field(default_factory=dict)
        total: str | None = None

    return DState


_TWO = GuardConfig(chunk_size=2)


def _graph_of(kind: str, checkpointer: Any = None, config: GuardConfig | None = _TWO) -> Any:
    """The node in a one-node graph over a ``typeddict``, ``dataclass`` or ``pydantic`` state."""
    from langgraph.graph import END, START, StateGraph

    node = guarded_node(SIM, INVOICE, inputs={"subtotal": "order_subtotal", "rate": "tax_rate"},
                        output_key="invoice", answer_key="total", config=config, checkpointer=checkpointer)
    g = StateGraph(_state_class(kind))
    g.add_node("invoice", node)
    g.add_edge(START, "invoice")
    g.add_edge("invoice", END)
    return g.compile(checkpointer=checkpointer)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["typeddict", "dataclass", "pydantic"])
@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_langgraph_node_inner_steps_show_in_subgraph_stream(kind: str, use_async: bool) -> None:
    """Issue 17.9: the guard's own nodes appear in ``graph.stream(..., subgraphs=True)``, namespaced as a subgraph's."""
    from langgraph.checkpoint.memory import InMemorySaver

    graph = _graph_of(kind, InMemorySaver())
    cfg = {"configurable": {"thread_id": f"s-{kind}-{use_async}"}}
    start = {"order_subtotal": "100.10", "tax_rate": "0.1"}
    if use_async:
        async def collect() -> list[Any]:
            return [e async for e in graph.astream(start, cfg, subgraphs=True)]

        events = asyncio.run(collect())
    else:
        events = list(graph.stream(start, cfg, subgraphs=True))
    inner = [(ns, next(iter(upd))) for ns, upd in events if ns]
    assert inner and all(len(ns) == 1 and ns[0].startswith("invoice:") for ns, _ in inner)
    nodes = [name for _, name in inner]
    assert nodes == ["plan", "ask", "verify", "intend", "act", "commit"] * 2 + ["finish"]  # two chunks of two steps
    commits = [upd["commit"] for ns, upd in events if ns and "commit" in upd]
    assert Decimal(commits[-1]["progress"]["values"]["total"]) == Decimal("104.60")  # the state keeps exact text
    outer = [upd for ns, upd in events if not ns]
    assert outer[-1]["invoice"]["total"] == "104.60" and outer[-1]["invoice"]["invoice"]["status"] == "verified"
    # without subgraphs=True the parent's stream is as before: the node's update alone
    plain = list(_graph_of(kind).stream(start, subgraphs=False))
    assert [list(u) for u in plain] == [["invoice"]]
