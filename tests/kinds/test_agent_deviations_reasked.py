"""Issue 18.6: each agent-workflow fault is re-asked or reported, never passed on as verified, and
no tool ever runs with a wrong argument (the test tools count their executions)."""

from __future__ import annotations

import asyncio
from decimal import Decimal
from typing import Any

import pytest

from stepguard import BudgetExhausted, Guard, GuardConfig, ProcedureError, parse_procedure
from stepguard.model import ChatResponse
from stepguard.tools import Tool, parse_calls
from tests._fakes import REFUND, REFUND_INPUTS as REFUND_IN, ReplyModel

# These tests give a whole GuardConfig on purpose (the ladder or chunking under test), so the
# warning that it replaces the procedure's defaults says nothing here.
pytestmark = pytest.mark.filterwarnings("ignore::stepguard.guard.LadderWarning")

AGE = parse_procedure("""
name: age_power
inputs: {person: string}
steps:
  - {var: age, kind: tool, tool: lookup_age, args: {name: person}, type: integer}
  - {var: factor, kind: tool, tool: power, args: {base: age, exponent: "0.23"}, type: decimal, scale: 6}
""")

RECEIPT = parse_procedure("""
name: receipt
inputs: {receipt_text: string}
steps:
  - {var: total, kind: extract, source: receipt_text, label: Total, type: decimal, scale: 2}
  - {var: tax, kind: extract, source: receipt_text, label: VAT, type: decimal, scale: 2}
  - {var: subtotal, expr: total - tax, type: decimal, scale: 2}
""")
RECEIPT_TEXT = "CORNER GROCER\n12 March 2026\nSubtotal 17.63\nVAT 1.23\nTotal $18.86\n"


class Counted:
    """The test tools; every execution is appended to ``runs``."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, dict[str, Any]]] = []

    def tools(self) -> list[Tool]:
        def catalog_lookup(sku: str) -> str:
            self.runs.append(("catalog_lookup", {"sku": sku}))
            return {"A-12": "ORD-7"}[sku]

        def issue_refund(order_id: str, amount: Decimal) -> str:
            self.runs.append(("issue_refund", {"order_id": order_id, "amount": amount}))
            return f"RF-{order_id}"

        def lookup_age(name: str) -> int:
            self.runs.append(("lookup_age", {"name": name}))
            return 36

        def power(base: Decimal, exponent: Decimal) -> Decimal:
            self.runs.append(("power", {"base": base, "exponent": exponent}))
            return Decimal("2.280077")

        return [Tool("catalog_lookup", catalog_lookup), Tool("issue_refund", issue_refund),
                Tool("lookup_age", lookup_age), Tool("power", power)]


def _run(proc: Any, inputs: dict[str, Any], replies: list[Any], **cfg: Any) -> tuple[Any, Counted, ReplyModel]:
    counted = Counted()
    model = ReplyModel(replies)
    result = Guard(model, GuardConfig(**cfg), tools=counted.tools()).run(proc, inputs)
    return result, counted, model


def _no_wrong_executions(counted: Counted) -> None:
    for name, args in counted.runs:
        if name == "issue_refund":
            assert args == {"order_id": "ORD-7", "amount": Decimal("19.99")}
        if name == "power":
            assert args == {"base": 36, "exponent": Decimal("0.23")}


LOOKUP = 'CALL catalog_lookup(sku="A-12")'
REFUND_OK = 'CALL issue_refund(order_id="ORD-7", amount=19.99)'


def test_clean_run_executes_each_tool_once_with_provenance_tool() -> None:
    result, counted, _ = _run(REFUND, REFUND_IN, [LOOKUP, REFUND_OK])
    assert result.status == "verified" and result.answer == "RF-ORD-7"
    assert [s.provenance for s in result.steps] == ["tool", "tool"]
    assert [n for n, _ in counted.runs] == ["catalog_lookup", "issue_refund"]
    assert counted.runs[1][1]["amount"] == Decimal("19.99") and isinstance(counted.runs[1][1]["amount"], Decimal)


def test_made_up_id_is_never_executed_and_is_reasked() -> None:
    result, counted, model = _run(REFUND, REFUND_IN, [LOOKUP, 'CALL issue_refund(order_id="ORD-999", amount=19.99)', REFUND_OK])
    assert result.status == "verified"
    assert [n for n, _ in counted.runs] == ["catalog_lookup", "issue_refund"]
    _no_wrong_executions(counted)
    dev = result.deviations[0]
    assert (dev.kind, dev.step, dev.action) == ("bad_argument", "refund_ref", "reprompt")
    assert "ORD-999" in model.prompts[2] and "was not executed" in model.prompts[2]


def test_made_up_id_every_time_fails_without_a_single_refund() -> None:
    bad = 'CALL issue_refund(order_id="ORD-999", amount=19.99)'
    with pytest.raises(BudgetExhausted) as caught:  # the default on_exhausted: raise, with the partial result
        _run(REFUND, REFUND_IN, [LOOKUP] + [bad] * 10, max_reprompts_per_step=2)
    result = caught.value.result
    assert result.status == "failed" and result.first_unverified == "refund_ref"
    result, counted, _ = _run(REFUND, REFUND_IN, [LOOKUP] + [bad] * 10, max_reprompts_per_step=2, on_exhausted="flag")
    assert result.status == "failed" and result.first_unverified == "refund_ref"
    assert [n for n, _ in counted.runs] == ["catalog_lookup"]
    assert result.steps[1].provenance == "missing" and result.steps[1].value is None


def test_made_up_id_under_the_flag_policy_is_not_flagged_through() -> None:
    bad = 'CALL issue_refund(order_id="ORD-999", amount=19.99)'
    result, counted, _ = _run(REFUND, REFUND_IN, [LOOKUP] + [bad] * 10, policy="flag", max_reprompts_per_step=2, on_exhausted="flag")
    assert result.status != "verified" and result.steps[1].provenance != "tool"
    assert [n for n, _ in counted.runs] == ["catalog_lookup"]


def test_symbolic_argument_is_refused_not_evaluated() -> None:
    result, counted, model = _run(AGE, {"person": "Ada"}, [
        'CALL lookup_age(name="Ada")',
        "CALL power(base=age ^ 0.23, exponent=0.23)",
        'CALL power(base="age ^ 0.23", exponent=0.23)',
        "CALL power(base=36, exponent=0.23)",
    ])
    assert result.status == "verified" and result.answer == Decimal("2.280077")
    assert [n for n, _ in counted.runs] == ["lookup_age", "power"]
    _no_wrong_executions(counted)
    kinds = [(d.kind, d.step) for d in result.deviations]
    assert kinds == [("bad_argument", "factor"), ("bad_argument", "factor")]
    assert "not a literal value" in result.deviations[0].detail


def test_lookup_skipped_is_wrong_tool_and_nothing_runs() -> None:
    result, counted, _ = _run(REFUND, REFUND_IN, [REFUND_OK, LOOKUP, REFUND_OK])
    assert result.status == "verified"
    assert result.deviations[0].kind == "wrong_tool" and result.deviations[0].step == "order_id"
    assert [n for n, _ in counted.runs] == ["catalog_lookup", "issue_refund"]


def test_value_written_instead_of_a_call_is_not_the_tools() -> None:
    result, counted, _ = _run(REFUND, REFUND_IN, ["order_id = ORD-7", LOOKUP, REFUND_OK])
    assert result.status == "verified" and result.steps[0].provenance == "tool"
    assert result.deviations[0].kind == "under_executed" and "not the tool's result" in result.deviations[0].detail
    assert [n for n, _ in counted.runs] == ["catalog_lookup", "issue_refund"]


def test_tool_called_twice_runs_neither_call() -> None:
    result, counted, _ = _run(REFUND, REFUND_IN, [LOOKUP + "\n" + LOOKUP, LOOKUP, REFUND_OK])
    assert result.status == "verified"
    assert result.deviations[0].kind == "repeated_call"
    assert [n for n, _ in counted.runs] == ["catalog_lookup", "issue_refund"]


def test_native_calls_twice_and_then_once() -> None:
    twice = ChatResponse("", tool_calls=({"name": "catalog_lookup", "arguments": '{"sku": "A-12"}'},) * 2)
    once = ChatResponse("", tool_calls=({"name": "catalog_lookup", "arguments": '{"sku": "A-12"}'},))
    refund = ChatResponse("", tool_calls=({"name": "issue_refund", "arguments": '{"order_id": "ORD-7", "amount": 19.99}'},))
    result, counted, model = _run(REFUND, REFUND_IN, [twice, once, refund])
    assert result.status == "verified" and result.deviations[0].kind == "repeated_call"
    assert [n for n, _ in counted.runs] == ["catalog_lookup", "issue_refund"]
    _no_wrong_executions(counted)
    offered = model.settings[0].tools
    assert offered[0]["function"]["name"] == "catalog_lookup"
    assert list(offered[0]["function"]["parameters"]["properties"]) == ["sku"]


@pytest.mark.parametrize("swapped", [
    'CALL issue_refund(order_id=19.99, amount="ORD-7")',  # values in the wrong places
    'CALL issue_refund("ORD-7", 19.99)',  # positional: which is which is not said
])
def test_arguments_in_the_wrong_order_are_refused(swapped: str) -> None:
    result, counted, _ = _run(REFUND, REFUND_IN, [LOOKUP, swapped, REFUND_OK])
    assert result.status == "verified" and result.deviations[0].kind == "bad_argument"
    assert [n for n, _ in counted.runs] == ["catalog_lookup", "issue_refund"]
    _no_wrong_executions(counted)


def test_tool_that_raises_is_a_recorded_failure_and_nothing_after_it_is_verified() -> None:
    def catalog_lookup(sku: str) -> str:
        raise ConnectionError("catalogue down")

    later: list[Any] = []
    tools = [Tool("catalog_lookup", catalog_lookup), Tool("issue_refund", lambda **kw: later.append(kw) or "RF")]
    model = ReplyModel([LOOKUP, REFUND_OK])
    result = Guard(model, tools=tools).run(REFUND, REFUND_IN)
    assert result.status == "failed" and result.first_unverified == "order_id"
    assert [s.provenance for s in result.steps] == ["missing", "missing"]
    dev = result.deviations[-1]
    assert (dev.kind, dev.step, dev.action) == ("tool_error", "order_id", "stop")
    assert "ToolError" in dev.detail and "ConnectionError: catalogue down" in dev.detail
    assert later == [] and len(model.prompts) == 1  # not re-asked, nothing after it


def test_tool_that_times_out_is_a_typed_failure() -> None:
    import time

    tools = [Tool("catalog_lookup", lambda sku: time.sleep(2) or "ORD-7", timeout_s=0.05), Tool("issue_refund", lambda **kw: "RF")]
    result = Guard(ReplyModel([LOOKUP, REFUND_OK]), tools=tools).run(REFUND, REFUND_IN)
    assert result.status == "failed" and result.deviations[-1].kind == "tool_error"
    assert "ToolTimeout" in result.deviations[-1].detail


def test_tool_result_of_the_wrong_type_is_a_tool_error() -> None:
    tools = [Tool("lookup_age", lambda name: {"age": 36}), Tool("power", lambda **kw: 1)]
    result = Guard(ReplyModel(['CALL lookup_age(name="Ada")']), tools=tools).run(AGE, {"person": "Ada"})
    assert result.status == "failed" and result.deviations[-1].kind == "tool_error"


def test_value_the_document_does_not_contain_is_reasked() -> None:
    model = ReplyModel(["total = 19.86", "total = $18.86", "tax = 2.00", "tax = 1.23", "subtotal = 18.86 - 1.23 = 17.63"])
    result = Guard(model).run(RECEIPT, {"receipt_text": RECEIPT_TEXT})
    assert result.status == "verified" and result.answer == Decimal("17.63")
    assert [(d.kind, d.step) for d in result.deviations] == [("not_in_source", "total"), ("not_in_source", "tax")]
    assert "does not occur in receipt_text right after 'Total'" in result.deviations[0].detail


def test_a_number_from_the_wrong_line_is_refused() -> None:
    model = ReplyModel(["total = 17.63"] * 10)  # the subtotal: in the text, but not after the label Total
    result = Guard(model, GuardConfig(max_reprompts_per_step=1, on_exhausted="flag")).run(RECEIPT, {"receipt_text": RECEIPT_TEXT})
    assert result.status != "verified" and result.steps[0].provenance == "flagged"  # reported, never verified
    flagged = [d for d in result.deviations if d.step == "total" and d.action == "flag"]
    assert [d.kind for d in flagged] == ["not_in_source"]


def test_tool_not_given_is_refused_before_any_model_call() -> None:
    model = ReplyModel([LOOKUP])
    with pytest.raises(ProcedureError, match="issue_refund is not among the tools"):
        Guard(model, tools=[Tool("catalog_lookup", lambda sku: "x")]).run(REFUND, REFUND_IN)
    assert model.prompts == []


def test_async_run_executes_tools_the_same_way() -> None:
    counted = Counted()
    model = ReplyModel([LOOKUP, 'CALL issue_refund(order_id="ORD-1", amount=19.99)', REFUND_OK])
    result = asyncio.run(Guard(model, tools=counted.tools()).arun(REFUND, REFUND_IN))
    assert result.status == "verified" and [n for n, _ in counted.runs] == ["catalog_lookup", "issue_refund"]
    _no_wrong_executions(counted)


def test_identity_names_the_tools_and_their_versions() -> None:
    a = Guard(ReplyModel([]), tools=[Tool("catalog_lookup", len, version="1"), Tool("issue_refund", len)])
    b = Guard(ReplyModel([]), tools=[Tool("catalog_lookup", len, version="2"), Tool("issue_refund", len)])
    from stepguard.guard._identity import identity_diff

    diff = identity_diff(a.run_identity(REFUND, REFUND_IN), b.run_identity(REFUND, REFUND_IN))
    assert diff == ["tools.catalog_lookup: stored version 1, now version 2"]


def test_parse_calls_is_strict() -> None:
    from fractions import Fraction

    assert parse_calls('CALL f(a="x", b=-1.5, c=true)')[0].args == {"a": "x", "b": Fraction(-3, 2), "c": True}
    assert parse_calls("x = CALL f(b=0.23)")[0].args == {"b": Fraction(23, 100)}
    assert parse_calls("CALL f(a=__import__('os'))")[0].error
    assert parse_calls("CALL f(a=x)")[0].error
    assert parse_calls("CALL f(**{'a': 1})")[0].error
    assert parse_calls("please CALL me maybe")[0].error


def test_openai_adapter_sends_tools_and_reads_native_calls() -> None:
    import json

    from stepguard.adapters._openai.reply import read_reply
    from stepguard.adapters.models.openai_compat import OpenAICompatibleModel
    from stepguard.model import GenerationSettings

    model = OpenAICompatibleModel("m", base_url="http://127.0.0.1:9/v1", api_key_env=None, timeout=1, max_retries=0)
    offered = ({"type": "function", "function": {"name": "catalog_lookup", "parameters": {"type": "object"}}},)
    body = model._body([{"role": "user", "content": "x"}], GenerationSettings(tools=offered))
    assert body["tools"] == [dict(offered[0])]
    assert "tools" not in model._body([{"role": "user", "content": "x"}], GenerationSettings())
    raw = json.dumps({"choices": [{"finish_reason": "tool_calls", "message": {"content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "catalog_lookup", "arguments": '{"sku": "A-12"}'}}]}}]})
    assert read_reply(raw).tool_calls == ({"name": "catalog_lookup", "arguments": '{"sku": "A-12"}'},)
    assert model._response(raw, 0.0).tool_calls == ({"name": "catalog_lookup", "arguments": '{"sku": "A-12"}'},)


def test_langgraph_node_accepts_langchain_tools() -> None:
    from langchain_core.tools import tool
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    from stepguard.adapters.integrations.langgraph_node import guarded_node

    calls: list[str] = []

    @tool
    def catalog_lookup(sku: str) -> str:
        """Look up the order that bought a SKU."""
        calls.append(sku)
        return "ORD-7"

    @tool
    def issue_refund(order_id: str, amount: float) -> str:
        """Refund an order."""
        return f"RF-{order_id}"

    class S(TypedDict, total=False):
        sku: str
        amount: str
        ref: str
        stepguard_result: dict

    g = StateGraph(S)
    model = ReplyModel([LOOKUP, 'CALL issue_refund(order_id="ORD-8", amount=19.99)', REFUND_OK])
    g.add_node("refund", guarded_node(model, REFUND, answer_key="ref", tools=[catalog_lookup, issue_refund]))
    g.add_edge(START, "refund")
    g.add_edge("refund", END)
    out = g.compile().invoke({"sku": "A-12", "amount": "19.99"})
    assert out["ref"] == "RF-ORD-7" and calls == ["A-12"]
    assert model.settings[0].tools[0]["function"]["name"] == "catalog_lookup"


@pytest.mark.slow
def test_a_thread_is_not_resumed_with_other_code_behind_a_tool_name(tmp_path) -> None:
    """Tools without a version are keyed by their code: a checkpoint made with one catalog_lookup
    returned its old answer, verified, when resumed with another function of that name."""
    from functools import partial

    from stepguard.adapters import load_model
    from stepguard.errors import CheckpointError
    from stepguard.guard import sqlite_checkpointer

    def v1(sku: str) -> str:
        return "ORD-7"

    def v2(sku: str) -> str:
        return "ORD-19"

    def refund(order_id: str, amount: object) -> str:
        return f"RF-{order_id}"

    saver = sqlite_checkpointer(tmp_path / "ck.sqlite")
    model = load_model("sim:perfect", procedure=REFUND)
    first = Guard(model, checkpointer=saver, tools={"catalog_lookup": v1, "issue_refund": refund}).run(REFUND, REFUND_IN, thread_id="T")
    assert first.answer == "RF-ORD-7"
    again = Guard(model, checkpointer=saver, tools={"catalog_lookup": v1, "issue_refund": refund}).run(REFUND, REFUND_IN, thread_id="T")
    assert again.answer == "RF-ORD-7"  # the same code resumes
    with pytest.raises(CheckpointError, match="tools.catalog_lookup"):
        Guard(model, checkpointer=saver, tools={"catalog_lookup": v2, "issue_refund": refund}).run(REFUND, REFUND_IN, thread_id="T")
    ids = [Guard(model, tools={"catalog_lookup": partial(v1, sku=s), "issue_refund": refund}).tools.identity()["catalog_lookup"]
           for s in ("a", "b")]
    assert ids[0] != ids[1]  # a partial is keyed by its arguments too


def test_several_missing_tools_are_named_in_the_plural() -> None:
    proc = parse_procedure("""
inputs: {sku: string}
steps:
  - {var: a, kind: tool, tool: lookup, args: {sku: sku}}
  - {var: b, kind: tool, tool: refund, args: {sku: sku}}
""")
    with pytest.raises(ProcedureError, match="tools lookup, refund are not among the tools"):
        Guard(ReplyModel([])).run(proc, {"sku": "A-1"})
