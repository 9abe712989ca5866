"""The LangGraph node (issue 32 item 5): a failed run is reported in the output key by default (the docs
branch on ``status``), and a graph state that cannot hold the output key is refused, not silently dropped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from stepguard import BudgetExhausted, GuardConfig
from stepguard.adapters import guarded_node, load_model
from stepguard.errors import ProcedureError
from stepguard.procedure import load_procedure
from tests._fakes import ScriptedModel

INVOICE = load_procedure("examples/invoice.yaml")
INPUTS = {"subtotal": "100.10", "rate": "0.1"}


class Order(TypedDict, total=False):
    subtotal: str
    rate: str
    stepguard_result: dict


class NoResult(TypedDict, total=False):
    subtotal: str
    rate: str


def _app(node: Any, schema: Any = Order) -> Any:
    graph = StateGraph(schema)
    graph.add_node("invoice", node)
    graph.add_edge(START, "invoice")
    graph.add_edge("invoice", END)
    return graph.compile()


def _failing() -> ScriptedModel:
    return ScriptedModel(always_wrong={"net"})


def test_a_failed_run_is_reported_in_the_output_key_by_default() -> None:
    node = guarded_node(_failing(), INVOICE, config=GuardConfig(chunk_size=1, max_reprompts_per_step=1))
    state = _app(node).invoke(dict(INPUTS))  # raised BudgetExhausted before (on_exhausted="raise")
    result = state["stepguard_result"]
    assert result["status"] == "failed" and result["first_unverified"] == "net"
    assert "budget spent at step net" in result["error"]


async def test_async_reports_it_too() -> None:
    node = guarded_node(_failing(), INVOICE, config=GuardConfig(chunk_size=1, max_reprompts_per_step=1))
    state = await _app(node).ainvoke(dict(INPUTS))
    assert state["stepguard_result"]["status"] == "failed"


def test_on_failure_raise_keeps_the_old_behaviour() -> None:
    node = guarded_node(_failing(), INVOICE, config=GuardConfig(chunk_size=1, max_reprompts_per_step=1), on_failure="raise")
    with pytest.raises(BudgetExhausted):
        _app(node).invoke(dict(INPUTS))


def test_a_state_without_the_output_key_is_refused_at_the_first_run() -> None:
    node = guarded_node(load_model("sim:perfect"), INVOICE)
    with pytest.raises(ValueError, match=r"the graph's state has no key for output_key='stepguard_result'"):
        _app(node, NoResult).invoke(dict(INPUTS))  # returned the state without the result before, silently


def test_a_state_schema_without_the_key_is_refused_when_built() -> None:
    with pytest.raises(ValueError, match=r"answer_key='total'"):
        guarded_node(load_model("sim:perfect"), INVOICE, answer_key="total", state_schema=Order)
    guarded_node(load_model("sim:perfect"), INVOICE, state_schema=Order)  # holds stepguard_result: taken


@dataclass
class DataOrder:
    subtotal: str = ""
    rate: str = ""
    invoice: dict | None = None


def test_a_dataclass_state_that_holds_the_key_runs() -> None:
    node = guarded_node(load_model("sim:perfect"), INVOICE, output_key="invoice")
    state = _app(node, DataOrder).invoke(DataOrder(**INPUTS))
    assert state["invoice"]["status"] == "verified"


def test_a_misspelt_state_input_says_did_you_mean() -> None:
    node = guarded_node(load_model("sim:perfect"), INVOICE, inputs={"subtotl": "subtotal", "rate": "rate"})
    with pytest.raises(ProcedureError, match="'subtotl': did you mean 'subtotal'"):
        _app(node).invoke(dict(INPUTS))
