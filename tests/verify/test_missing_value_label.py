"""A reply with no value for the step is a missing value (``under_executed``), not an ``arithmetic_error``
(issue 32 item 4), and a wrong value is printed with its places (``19.90``, not ``19.9``).

A model that obeys a caller's "reply with the final price" (the caller's system prompt is context in
every step prompt) writes the step's expression, or only the price: nothing was computed. The label is
the same through ``Guard``, ``GuardedOpenAI`` and the proxy (the stub server's scripted model)."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from stepguard import Guard, GuardConfig
from stepguard.adapters import GuardedOpenAI
from stepguard.model import ChatResponse, Usage
from stepguard.procedure import parse_procedure
from stepguard.trace import parse_trace
from stepguard.verify import verify_chunk
from tests._stub_server import StubServer

# These tests give a whole GuardConfig on purpose (the ladder or chunking under test), so the
# warning that it replaces the procedure's defaults says nothing here.
pytestmark = pytest.mark.filterwarnings("ignore::stepguard.guard.LadderWarning")

PRICE = parse_procedure("""
name: price
inputs: {weight_kg: {type: decimal}}
steps:
  - {var: base, expr: weight_kg * 8, type: decimal, scale: 2}
  - {var: total, expr: base + 4, type: decimal, scale: 2}
""", "price.yaml")
INPUTS = {"weight_kg": "2.5"}
SYSTEM = {"role": "system", "content": "You are a shipping assistant. Reply with the final price only."}
OBEYING = ["base = weight_kg * 8", "base: see the final price", "base = the price below"]
"""Replies that obey the caller's prompt rather than the step's: a step line without a number."""


@pytest.mark.parametrize("reply", OBEYING)
def test_a_step_line_with_no_number_is_a_missing_value(reply: str) -> None:
    env = PRICE.bind_inputs(INPUTS)
    dev = verify_chunk(PRICE, 0, 1, env, parse_trace(reply, var_names=PRICE.variables)).deviation
    assert dev is not None and dev.kind == "under_executed"  # was arithmetic_error: "no readable value for base (no number)"
    assert dev.detail in ("no value for base: the line holds no number", "step base is missing")


def test_a_number_that_cannot_be_read_is_still_a_wrong_value() -> None:
    env = PRICE.bind_inputs(INPUTS)
    dev = verify_chunk(PRICE, 0, 1, env, parse_trace("base = 19,90", var_names=PRICE.variables)).deviation
    assert dev is not None and dev.kind == "arithmetic_error" and "no readable value" in dev.detail


@pytest.mark.parametrize(("reply", "shown"), [("base = 19.90", "19.90"), ("base = 2.5 * 8 = 19.9", "19.90")])
def test_a_wrong_value_is_printed_with_its_places(reply: str, shown: str) -> None:
    env = PRICE.bind_inputs(INPUTS)
    dev = verify_chunk(PRICE, 0, 1, env, parse_trace(reply, var_names=PRICE.variables)).deviation
    assert dev is not None and dev.detail == f"base = weight_kg * 8 was computed as {shown}, which is wrong"  # printed 19.9


class Obeying:
    """A model that obeys the caller's system prompt on its first reply, then writes the step."""

    spec = provider = model_name = "obeying"
    simulated = True

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, messages, settings=None) -> ChatResponse:
        """First the final price's working with no number, then the steps."""
        self.calls += 1
        prompt = messages[-1]["content"]
        step = "base = 20.00" if "base" in prompt.split("Steps", 1)[-1] else "total = 24.00"
        text = "base = weight_kg * 8" if self.calls == 1 else step
        return ChatResponse(text, Usage(10, 10), "stop", 0.0, "obeying", True)

    async def acomplete(self, messages, settings=None) -> ChatResponse:
        """Async twin."""
        return self.complete(messages, settings)


def test_guard_records_a_missing_value() -> None:
    result = Guard(Obeying(), GuardConfig(chunk_size=1)).run(PRICE, INPUTS, context=[SYSTEM])
    assert result.status == "verified"
    assert result.deviations[0].kind == "under_executed" and result.deviations[0].step == "base"  # was arithmetic_error


def _script(prompt: str) -> str:
    return "base = weight_kg * 8" if "base" in prompt.split("Steps", 1)[-1] else "total = 24.00"


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        server.script = _script
        yield server


@pytest.mark.slow
def test_the_client_and_the_proxy_label_it_missing_too(stub: StubServer) -> None:
    real = openai.OpenAI(base_url=stub.base_url, api_key="k", max_retries=0, timeout=30)
    client = GuardedOpenAI(real, {"price": PRICE}, config=GuardConfig(chunk_size=1, max_reprompts_per_step=1, on_exhausted="flag"))
    reply = client.chat.completions.create(model="scripted", messages=[SYSTEM, {"role": "user", "content": '{"weight_kg": 2.5}'}],
                                           extra_body={"stepguard": {"procedure": "price"}})
    kinds = {d.kind for d in reply.stepguard.deviations}
    real.close()
    assert kinds == {"under_executed"}, reply.stepguard.deviations

    from starlette.testclient import TestClient

    from stepguard.serve import create_app
    from stepguard.serve._upstream import Upstream

    app = create_app(Upstream(f"{stub.base_url}#scripted"), {"price": PRICE},
                     config=GuardConfig(chunk_size=1, max_reprompts_per_step=1, on_exhausted="flag"))
    with TestClient(app) as proxy:
        body = {"model": "stepguard/price", "messages": [SYSTEM, {"role": "user", "content": '{"weight_kg": 2.5}'}]}
        data = proxy.post("/v1/chat/completions", json=body).json()
    assert {d["kind"] for d in data["stepguard"]["deviations"]} == {"under_executed"}, data
