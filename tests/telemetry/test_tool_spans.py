"""Issue 18.4: an ``execute_tool {name}`` span per executed tool call, under its step's chunk span,
with one evaluation event per argument; a refused call runs no tool and makes no such span."""

from __future__ import annotations

from stepguard import Guard
from stepguard.tools import Tool
from tests._fakes import REFUND as PROC, ReplyModel
from tests._traced import Traced

TOOLS = [Tool("catalog_lookup", lambda sku: "ORD-7"), Tool("issue_refund", lambda order_id, amount: f"RF-{order_id}")]
REPLIES = ['CALL catalog_lookup(sku="A-12")', 'CALL issue_refund(order_id="ORD-9", amount=19.99)',
           'CALL issue_refund(order_id="ORD-7", amount=19.99)']


def _run(traced: Traced, **kw) -> None:
    result = Guard(ReplyModel(list(REPLIES)), observer=traced.observer(**kw), tools=TOOLS).run(PROC, {"sku": "A-12", "amount": "19.99"})
    assert result.status == "verified"


def test_execute_tool_spans_under_the_steps_chunk_with_argument_verdicts() -> None:
    traced = Traced()
    _run(traced)
    tools = traced.named("execute_tool")
    assert [s.name for s in tools] == ["execute_tool catalog_lookup", "execute_tool issue_refund"]  # the refused call: none
    chunks = {s.context.span_id: s for s in traced.named("stepguard.chunk")}
    for span, step in zip(tools, ["order_id", "refund_ref"]):
        parent = chunks[span.parent.span_id]
        assert parent.attributes["stepguard.chunk.first_step"] == step
        assert span.attributes["gen_ai.operation.name"] == "execute_tool"
        assert span.attributes["gen_ai.tool.name"] == span.name.split(" ", 1)[1]
        assert "gen_ai.tool.call.arguments" not in span.attributes  # content is opt-in
    events = [(e.attributes["stepguard.tool.argument"], e.attributes["gen_ai.evaluation.score.label"]) for e in tools[1].events]
    assert events == [("order_id", "pass"), ("amount", "pass")]
    assert all(e.attributes["gen_ai.evaluation.name"] == "stepguard.tool_argument" for e in tools[1].events)


def test_arguments_and_result_only_with_content_capture() -> None:
    traced = Traced()
    _run(traced, capture_content=True)
    span = traced.named("execute_tool issue_refund")[0]
    assert '"order_id": "ORD-7"' in span.attributes["gen_ai.tool.call.arguments"]
    assert span.attributes["gen_ai.tool.call.result"] == "RF-ORD-7"
