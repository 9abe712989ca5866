"""A flagged or failed guarded answer is never delivered as a bare value with ``finish_reason: "stop"``
unless the caller asked for it (issue 45): through ``GuardedOpenAI`` (sync, async, streamed), the proxy
(JSON and server-sent events) and the LangGraph node, every policy that leaves a value unchecked.

The model is the stub server's ``scripted`` one, answering as ``sim:perfect`` but writing ``tax`` as
9.52 (the right value is 9.51): under ``policy="flag"`` the run keeps the wrong value, flagged.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

pytest.importorskip("starlette", reason="the serve extra is not installed: pip install 'stepguard[serve]'")

from starlette.testclient import TestClient

from stepguard.adapters import GuardedOpenAI, guarded_node, load_model
from stepguard.guard import Guard, GuardConfig
from stepguard.procedure import load_procedure
from stepguard.serve import create_app
from stepguard.serve._upstream import Upstream
from tests._stub_server import StubServer

INVOICE = load_procedure("examples/invoice.yaml")
INPUTS = {"subtotal": "100.10", "rate": "0.1"}
SIM = load_model("sim:perfect")
FLAG = {"procedure": "invoice", "inputs": INPUTS, "policy": "flag"}
MESSAGES = [{"role": "user", "content": "Invoice order 42."}]


def _wrong_tax(prompt: str) -> str:
    return SIM.complete([{"role": "user", "content": prompt}]).text.replace("9.51", "9.52")


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        server.script = _wrong_tax
        yield server


@pytest.fixture(scope="module")
def client(stub: StubServer) -> Iterator[GuardedOpenAI]:
    real = openai.OpenAI(base_url=stub.base_url, api_key="k", max_retries=0, timeout=10)
    yield GuardedOpenAI(real, procedures={"invoice": INVOICE})
    real.close()


@pytest.fixture(scope="module")
def proxy(stub: StubServer) -> Iterator[TestClient]:
    with TestClient(create_app(Upstream(f"{stub.base_url}#scripted"), {"invoice": INVOICE})) as c:
        yield c


# --- the drop-in client ---------------------------------------------------------------------------------


def test_a_flagged_answer_is_withheld_by_the_client(client: GuardedOpenAI) -> None:
    resp = client.chat.completions.create(model="scripted", messages=MESSAGES, extra_body={"stepguard": FLAG})
    assert resp.stepguard.status == "flagged" and resp.stepguard.texts["tax"] == "9.52"
    assert (resp.choices[0].message.content, resp.choices[0].finish_reason) == (None, "content_filter")


def test_a_flagged_answer_is_delivered_when_asked(client: GuardedOpenAI) -> None:
    resp = client.chat.completions.create(model="scripted", messages=MESSAGES,
                                          extra_body={"stepguard": {**FLAG, "deliver_flagged": True}})
    assert resp.stepguard.status == "flagged"
    assert (resp.choices[0].message.content, resp.choices[0].finish_reason) == (resp.stepguard.answer_text, "stop")
    assert resp.choices[0].message.content is not None


def test_a_flagged_stream_ends_withheld(client: GuardedOpenAI) -> None:
    chunks = list(client.chat.completions.create(model="scripted", messages=MESSAGES, stream=True,
                                                 extra_body={"stepguard": FLAG}))
    last = chunks[-1]
    assert (last.choices[0].delta.content, last.choices[0].finish_reason, last.stepguard.status) == (
        None, "content_filter", "flagged")
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == ""
    asked = list(client.chat.completions.create(model="scripted", messages=MESSAGES, stream=True,
                                                extra_body={"stepguard": {**FLAG, "deliver_flagged": True}}))
    assert asked[-1].choices[0].finish_reason == "stop"
    assert "".join(c.choices[0].delta.content or "" for c in asked) == asked[-1].stepguard.answer_text


def test_the_async_client_withholds_too(stub: StubServer) -> None:
    async def go() -> Any:
        real = openai.AsyncOpenAI(base_url=stub.base_url, api_key="k", max_retries=0, timeout=10)
        try:
            return await GuardedOpenAI(real, procedures={"invoice": INVOICE}).chat.completions.create(
                model="scripted", messages=MESSAGES, extra_body={"stepguard": FLAG})
        finally:
            await real.close()

    resp = asyncio.run(go())
    assert (resp.stepguard.status, resp.choices[0].message.content, resp.choices[0].finish_reason) == (
        "flagged", None, "content_filter")


def test_json_content_writes_null_for_each_flagged_value_and_the_answer(client: GuardedOpenAI) -> None:
    resp = client.chat.completions.create(model="scripted", messages=MESSAGES, response_format={"type": "json_object"},
                                          extra_body={"stepguard": FLAG})
    content = json.loads(resp.choices[0].message.content or "")
    flagged = {s.var for s in resp.stepguard.steps if s.provenance == "flagged"}
    assert flagged and all(content["values"][v] is None for v in flagged)
    assert content["values"]["discount"] == "5.01"  # a verified value is written
    assert (content["answer"], content["status"], resp.choices[0].finish_reason) == (None, "flagged", "content_filter")
    asked = client.chat.completions.create(model="scripted", messages=MESSAGES, response_format={"type": "json_object"},
                                           extra_body={"stepguard": {**FLAG, "deliver_flagged": True}})
    assert json.loads(asked.choices[0].message.content or "")["values"]["tax"] == "9.52"
    assert asked.choices[0].finish_reason == "stop"


def test_deliver_flagged_must_be_a_boolean(client: GuardedOpenAI) -> None:
    from stepguard.adapters import InvalidGuardedCall

    with pytest.raises(InvalidGuardedCall, match="deliver_flagged must be true or false, not 'true'"):
        client.chat.completions.create(model="scripted", messages=MESSAGES,
                                       extra_body={"stepguard": {**FLAG, "deliver_flagged": "true"}})


def test_a_verified_run_is_unchanged(stub: StubServer, client: GuardedOpenAI) -> None:
    resp = client.chat.completions.create(model="sim", messages=MESSAGES,
                                          extra_body={"stepguard": {"procedure": "invoice", "inputs": INPUTS}})
    assert (resp.stepguard.status, resp.choices[0].message.content, resp.choices[0].finish_reason) == (
        "verified", "104.60", "stop")


# --- the proxy ------------------------------------------------------------------------------------------


def _post(proxy: TestClient, run: dict[str, Any], **fields: Any) -> Any:
    body = {"model": "stepguard/invoice", "messages": MESSAGES, "stepguard": {k: v for k, v in run.items() if k != "procedure"},
            **fields}
    return proxy.post("/v1/chat/completions", json=body)


def test_the_proxy_withholds_a_flagged_answer(proxy: TestClient) -> None:
    reply = _post(proxy, FLAG)
    data = reply.json()
    assert reply.status_code == 200 and data["stepguard"]["status"] == "flagged"
    assert (data["choices"][0]["message"]["content"], data["choices"][0]["finish_reason"]) == (None, "content_filter")
    asked = _post(proxy, {**FLAG, "deliver_flagged": True}).json()
    assert asked["choices"][0]["finish_reason"] == "stop"
    assert asked["choices"][0]["message"]["content"] == asked["stepguard"]["answer"]


def test_the_proxy_stream_ends_withheld(proxy: TestClient) -> None:
    reply = _post(proxy, FLAG, stream=True)
    events = [json.loads(line[6:]) for line in reply.text.splitlines() if line.startswith("data: {")]
    last = events[-1]
    assert (last["choices"][0]["delta"]["content"], last["choices"][0]["finish_reason"]) == (None, "content_filter")
    assert last["stepguard"]["status"] == "flagged"
    assert "".join(e["choices"][0]["delta"].get("content") or "" for e in events) == ""


def test_the_proxy_refuses_a_deliver_flagged_that_is_not_a_boolean(proxy: TestClient) -> None:
    reply = _post(proxy, {**FLAG, "deliver_flagged": "yes"})
    assert reply.status_code == 400 and reply.json()["error"]["param"] == "stepguard.deliver_flagged"


def test_a_failed_run_ends_content_filter_through_the_proxy(proxy: TestClient) -> None:
    data = _post(proxy, {"inputs": INPUTS, "on_exhausted": "flag", "max_total_tokens": 1}).json()
    assert (data["stepguard"]["status"], data["choices"][0]["message"]["content"], data["choices"][0]["finish_reason"]) == (
        "failed", None, "content_filter")


# --- the LangGraph node ---------------------------------------------------------------------------------


class _WrongTax:
    """A ChatModel that answers as sim:perfect but writes tax 9.52."""

    spec = model_name = "wrong-tax"
    provider = "test"
    simulated = True

    def complete(self, messages: Any, settings: Any = None) -> Any:
        resp = SIM.complete(messages, settings)
        return dataclasses.replace(resp, text=resp.text.replace("9.51", "9.52"))

    async def acomplete(self, messages: Any, settings: Any = None) -> Any:
        return self.complete(messages, settings)


@pytest.mark.parametrize("deliver", [False, True])
def test_the_langgraph_node_withholds_flagged_values_unless_asked(deliver: bool) -> None:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    class State(TypedDict, total=False):
        subtotal: str
        rate: str
        stepguard_result: dict[str, Any]
        total: str | None
        values: dict[str, Any]

    node = guarded_node(Guard(_WrongTax(), GuardConfig.for_procedure(INVOICE, policy="flag")), INVOICE,
                        answer_key="total", values_key="values", deliver_flagged=deliver, state_schema=State)
    graph = StateGraph(State)
    graph.add_node("invoice", node)
    graph.add_edge(START, "invoice")
    graph.add_edge("invoice", END)
    compiled = graph.compile()
    for out in (compiled.invoke(dict(INPUTS)), asyncio.run(compiled.ainvoke(dict(INPUTS)))):
        assert out["stepguard_result"]["status"] == "flagged"
        tax = next(s for s in out["stepguard_result"]["steps"] if s["var"] == "tax")
        assert (tax["value"], tax["provenance"]) == ("9.52", "flagged")  # the result keeps the value with its provenance
        if deliver:
            assert out["values"]["tax"] == "9.52" and out["total"] is not None
        else:
            assert out["values"]["tax"] is None and out["total"] is None
            assert out["values"]["discount"] == "5.01"  # a verified value is written


def test_an_unverifiable_step_withholds_its_value_too() -> None:
    """A step with neither expr nor check is unverifiable: the run is flagged, never verified, and its
    value is the model's, unchecked: withheld as a flagged one is, through the proxy on sim:perfect."""
    from stepguard.procedure import parse_procedure

    proc = parse_procedure("name: note\ninputs: [a]\nsteps:\n  - {var: b, expr: a + 1}\n"
                           "  - {var: c, instruction: Add 2 to b., type: integer}\n", "note.yaml")
    with TestClient(create_app(Upstream("sim:perfect"), {"note": proc})) as proxy:
        body = {"model": "stepguard/note", "messages": [], "stepguard": {"inputs": {"a": 1}},
                "response_format": {"type": "json_object"}}
        data = proxy.post("/v1/chat/completions", json=body).json()
    assert data["stepguard"]["status"] == "flagged", data
    content = json.loads(data["choices"][0]["message"]["content"])
    assert (content["values"]["b"], content["values"]["c"], content["answer"]) == (2, None, None)
    assert data["choices"][0]["finish_reason"] == "content_filter"


def test_a_bounded_run_s_answer_is_withheld_too_unless_asked_for() -> None:
    """New-user pass: a value that passed only a predicate reached a plain client as content with
    finish_reason "stop"; a bounded run's answer is withheld as a flagged one's is."""
    from stepguard import Procedure
    from stepguard.guard import Guard, GuardConfig
    from stepguard.wire import ContentWriter, ResponseShape, finish_reason

    proc = Procedure.model_validate({"name": "m", "inputs": {"x": "integer"}, "steps": [
        {"var": "d", "check": "0 <= value <= 10"}, {"var": "t", "expr": "x - d"}]})

    class One:
        spec = provider = model_name = "one"
        simulated = True

        def complete(self, messages, settings=None):
            from stepguard.model import ChatResponse, Usage

            return ChatResponse("d = 3\nt = 7", Usage(1, 1), "stop", 0.0, "one", True)

    result = Guard(One(), GuardConfig.for_procedure(proc, on_exhausted="flag")).run(proc, {"x": 10})
    assert result.status == "bounded"
    assert finish_reason(result, ResponseShape()) == "content_filter"
    assert ContentWriter(ResponseShape()).whole(result) in (None, "")
    asked = ResponseShape(deliver_flagged=True)
    assert finish_reason(result, asked) == "stop" and ContentWriter(asked).whole(result) == "7"
