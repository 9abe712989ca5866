"""The tool kind's faults (issues 28.4, 33.6, 33.12, 33.14), each with its neighbours.

* decimals keep their scale into a tool: ``amount=25.00`` reaches it as ``Decimal("25.00")``;
* tool results and call arguments are bounded: a bad result is a ``tool_error``, a bad argument a
  ``bad_argument`` re-ask, never a traceback or the caller's input error;
* a resume never mixes old and new tool data, and never repeats a call cut off by a crash
  (the kill -9 cases are in ``tests/guard/test_tool_crashes.py``).
"""

from __future__ import annotations

import json
import time
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from stepguard import Guard, GuardConfig, parse_procedure
from stepguard.errors import CheckpointError, ModelError
from stepguard.guard import sqlite_checkpointer
from stepguard.model import ChatResponse
from stepguard.tools import Tool
from tests._fakes import REFUND, ReplyModel
from tests._paths import ROOT

LOOKUP = 'CALL catalog_lookup(sku="A-12")'


class Recorded:
    """Tools that record every call's keyword arguments (``calls``)."""

    def __init__(self, result: Any = "RF-1") -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.result = result

    def lookup(self, sku: str) -> str:
        self.calls.append(("catalog_lookup", {"sku": sku}))
        return "ORD-7"

    def refund(self, order_id: str, amount: Decimal, **extra: Any) -> Any:
        self.calls.append(("issue_refund", {"order_id": order_id, "amount": amount, **extra}))
        return self.result

    def tools(self, **refund_opts: Any) -> list[Tool]:
        return [Tool("catalog_lookup", self.lookup), Tool("issue_refund", self.refund, **refund_opts)]

    def args(self, name: str) -> list[dict[str, Any]]:
        return [a for n, a in self.calls if n == name]


def _refund(amount: Any, reply_amount: str = "25") -> tuple[Any, Recorded]:
    rec = Recorded()
    model = ReplyModel([LOOKUP, f'CALL issue_refund(order_id="ORD-7", amount={reply_amount})'])
    result = Guard(model, tools=rec.tools()).run(REFUND, {"sku": "A-12", "amount": amount})
    return result, rec


def _same_decimal(got: Any, text: str) -> bool:
    """``got`` is the Decimal ``text``, its scale included (``Decimal("25") == Decimal("25.00")`` is not enough)."""
    return isinstance(got, Decimal) and str(got) == text


# --- issue 28.4: decimal scale --------------------------------------------------------------

def test_a_decimal_input_written_25_00_reaches_the_tool_as_25_00() -> None:
    result, rec = _refund("25.00")
    assert result.status == "verified", result.deviations
    assert _same_decimal(rec.args("issue_refund")[0]["amount"], "25.00"), rec.calls


@pytest.mark.parametrize("written, reply, want", [
    ("0.10", "0.1", "0.10"), ("100", "100", "100"), ("-3.50", "-3.5", "-3.50"), ("1,176.50", "1176.5", "1176.50"),
    (Decimal("25.00"), "25", "25.00"), (Decimal("7.250"), "7.25", "7.250"),
])
def test_decimal_inputs_keep_their_written_places(written: Any, reply: str, want: str) -> None:
    result, rec = _refund(written, reply)
    assert result.status == "verified", result.deviations
    assert _same_decimal(rec.args("issue_refund")[0]["amount"], want), rec.calls


def test_the_cli_passes_amount_25_00_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    import examples.agent_tools as agent_tools
    from stepguard.cli import app

    monkeypatch.chdir(ROOT)
    before = len(agent_tools.REFUNDS)
    out = CliRunner().invoke(app, ["run", "examples/refund.yaml", "-i", "sku=A-12", "-i", "amount=25.00", "--tools",
                                   "examples.agent_tools:TOOLS", "--model", "sim:perfect"])
    assert out.exit_code == 0, out.output
    assert len(agent_tools.REFUNDS) == before + 1 and _same_decimal(agent_tools.REFUNDS[-1][1], "25.00")


SCALED = parse_procedure("""
name: scaled
inputs: {amount: decimal}
steps:
  - {var: half, expr: amount / 2, type: decimal, scale: 2}
  - {var: ref, kind: tool, tool: pay, args: {amount: half, twice: amount * 2, note: {type: decimal}}, type: string}
""")


@pytest.mark.parametrize("native", [False, True], ids=["text", "native"])
def test_a_step_with_scale_a_computed_and_a_free_decimal_argument(native: bool) -> None:
    got: list[dict[str, Any]] = []

    def pay(**kw: Any) -> str:
        got.append(kw)
        return "ok"

    call: Any = 'CALL pay(amount=12.5, twice=50, note=25.00)'
    if native:
        call = ChatResponse("", tool_calls=({"name": "pay", "arguments": '{"amount": 12.5, "twice": 50.0, "note": 25.00}'},))
    result = Guard(ReplyModel(["half = amount / 2 = 25 / 2 = 12.50", call]), tools=[pay]).run(SCALED, {"amount": "25"})
    assert result.status == "verified", result.deviations
    assert _same_decimal(got[0]["amount"], "12.50")  # the step's scale: 2
    assert got[0]["twice"] == 50 and not isinstance(got[0]["twice"], Decimal)  # computed: shortest exact form
    assert _same_decimal(got[0]["note"], "25.00")  # free: as the model wrote it


def test_an_argument_with_no_exact_decimal_form_is_never_sent_rounded() -> None:
    proc = parse_procedure("""
name: third
inputs: {total: decimal}
steps:
  - {var: ref, kind: tool, tool: pay, args: {amount: total / 3}, type: string}
""")
    got: list[Any] = []
    result = Guard(ReplyModel(["CALL pay(amount=1/3)", "CALL pay(amount=0.3333333333)"]),
                   GuardConfig(max_reprompts_per_step=1, on_exhausted="flag"), tools=[Tool("pay", lambda amount: got.append(amount) or "ok")]
                   ).run(proc, {"total": "1"})
    assert got == [] and result.status != "verified"


# --- issue 33.14: bounds ---------------------------------------------------------------------

def _lookup_returning(value: Any, type_: str = "string", scale: str = "") -> Any:
    proc = parse_procedure(f"""
name: bounded
inputs: {{sku: string}}
steps:
  - {{var: v, kind: tool, tool: catalog_lookup, args: {{sku: sku}}, type: {type_}{scale}}}
""")
    return Guard(ReplyModel([LOOKUP]), tools=[Tool("catalog_lookup", lambda sku: value)]).run(proc, {"sku": "A-12"})


@pytest.mark.parametrize("value, type_, scale", [
    (10**5000, "string", ""), (10**5000, "integer", ""), (Decimal("1e400"), "decimal", ", scale: 2"),
    (Decimal("1e99999999999"), "decimal", ", scale: 2"), (float("inf"), "number", ""), (float("nan"), "number", ""),
    ({"n": 10**5000}, "string", ""), (Decimal("1e-99999999999"), "number", ""),
], ids=["int5000-string", "int5000-integer", "1e400", "1e99999999999", "inf", "nan", "json-int5000", "1e-99999999999"])
def test_a_tool_result_past_the_bounds_is_a_tool_error(value: Any, type_: str, scale: str) -> None:
    t0 = time.perf_counter()
    result = _lookup_returning(value, type_, scale)
    assert result.status == "failed" and [d.kind for d in result.deviations] == ["tool_error"], result.deviations
    assert time.perf_counter() - t0 < 5


def test_a_tool_result_within_the_bounds_is_committed_exactly() -> None:
    result = _lookup_returning(10**300, "integer")
    assert result.status == "verified" and result.values["v"] == 10**300


@pytest.mark.parametrize("arg", ["1e400", "1e99999999999", "9" * 400, "-1e400", "1e-400"])
@pytest.mark.parametrize("native", [True, False], ids=["native", "text"])
def test_an_argument_past_the_bounds_is_a_bad_argument_reask(arg: str, native: bool) -> None:
    rec = Recorded()
    bad: Any = f'CALL issue_refund(order_id="ORD-7", amount={arg})'
    if native:
        bad = ChatResponse("", tool_calls=({"name": "issue_refund", "arguments": '{"order_id": "ORD-7", "amount": %s}' % arg},))
    t0 = time.perf_counter()
    result = Guard(ReplyModel([LOOKUP, bad, 'CALL issue_refund(order_id="ORD-7", amount=25.00)']), tools=rec.tools()
                   ).run(REFUND, {"sku": "A-12", "amount": "25.00"})
    assert time.perf_counter() - t0 < 10
    assert result.status == "verified", result.deviations
    assert [e.kind for e in result.deviations] == ["bad_argument"]
    assert len(rec.args("issue_refund")) == 1 and _same_decimal(rec.args("issue_refund")[0]["amount"], "25.00")


# --- issue 33.6: resume never mixes old and new tool data ------------------------------------

class StopAfter(ReplyModel):
    """Replies, then a model failure (the process's run ends there, its committed steps checkpointed)."""

    def complete(self, messages: Any, settings: Any = None) -> ChatResponse:
        if not self.replies:
            raise ModelError("the endpoint went away", "stop-after")
        return super().complete(messages, settings)


PRICES = parse_procedure("""
name: prices
inputs: {sku: string}
steps:
  - {var: p1, kind: tool, tool: price, args: {sku: sku}, type: decimal, scale: 2}
  - {var: p2, kind: tool, tool: price, args: {sku: sku}, type: decimal, scale: 2}
  - {var: diff, expr: p2 - p1, type: decimal, scale: 2}
""")
PRICE = 'CALL price(sku="A-12")'


class Catalogue:
    def __init__(self) -> None:
        self.price, self.version, self.calls = Decimal("10.00"), 1, 0

    def lookup(self, sku: str) -> Decimal:
        self.calls += 1
        return self.price


def _interrupted(tmp_path: Path, cat: Catalogue, **opts: Any) -> Any:
    """A run of PRICES that committed p1 and stopped; ``(checkpointer, thread)``."""
    ck = sqlite_checkpointer(tmp_path / "ck.sqlite")
    with pytest.raises(ModelError):
        Guard(StopAfter([PRICE]), checkpointer=ck, tools=[Tool("price", cat.lookup, **opts)]).run(PRICES, {"sku": "A-12"}, thread_id="t")
    return ck


def _resume(ck: Any, cat: Catalogue, **opts: Any) -> Any:
    return Guard(ReplyModel([PRICE, "diff = p2 - p1 = 0"]), checkpointer=ck, tools=[Tool("price", cat.lookup, **opts)]
                 ).run(PRICES, {"sku": "A-12"}, thread_id="t")


def test_resume_after_the_tools_data_changed_is_refused_naming_the_tool(tmp_path: Path) -> None:
    cat = Catalogue()
    ck = _interrupted(tmp_path, cat, data_version=lambda: cat.version)
    cat.price, cat.version = Decimal("12.00"), 2
    with pytest.raises(CheckpointError, match=r"step p1: tool price's data was version 1 .* version 2 now"):
        _resume(ck, cat, data_version=lambda: cat.version)
    assert cat.calls == 1


@pytest.mark.slow
def test_resume_with_the_same_data_version_goes_on(tmp_path: Path) -> None:
    cat = Catalogue()
    ck = _interrupted(tmp_path, cat, data_version=lambda: cat.version)
    result = _resume(ck, cat, data_version=lambda: cat.version)
    assert result.status == "verified" and result.values["diff"] == 0 and cat.calls == 2


def test_a_read_only_tool_is_rechecked_on_resume(tmp_path: Path) -> None:
    cat = Catalogue()
    ck = _interrupted(tmp_path, cat, read_only=True)
    cat.price = Decimal("12.00")  # the data changed: the recorded 10.00 is not the tool's answer now
    with pytest.raises(CheckpointError, match=r"step p1: price\(sku=\"A-12\"\) returned '10' before, and returns '12' now"):
        _resume(ck, cat, read_only=True)


@pytest.mark.slow
def test_a_read_only_tool_whose_answer_is_unchanged_resumes_after_a_version_change(tmp_path: Path) -> None:
    cat = Catalogue()
    ck = _interrupted(tmp_path, cat, read_only=True, data_version=lambda: cat.version)
    cat.version = 2  # a new version, the same price
    result = _resume(ck, cat, read_only=True, data_version=lambda: cat.version)
    assert result.status == "verified" and result.values["diff"] == 0


@pytest.mark.slow
def test_a_tool_whose_data_version_raises_on_resume_is_refused(tmp_path: Path) -> None:
    cat = Catalogue()
    ck = _interrupted(tmp_path, cat, data_version=lambda: cat.version)

    def broken() -> int:
        raise OSError("catalogue unreachable")

    with pytest.raises(CheckpointError, match="data_version raised OSError"):
        _resume(ck, cat, data_version=broken)


# --- issue 33.12: the intent is durable before the call ----------------------------------------

@pytest.mark.slow
def test_the_intent_is_checkpointed_before_the_tool_runs_and_the_result_after(tmp_path: Path) -> None:
    seen: list[Any] = []
    ck = sqlite_checkpointer(tmp_path / "ck.sqlite")
    guard: Guard

    def refund(order_id: str, amount: Decimal) -> str:
        seen.append(guard._graph.get_state({"configurable": {"thread_id": "t"}}).values["progress"]["actions"].get("refund_ref"))
        return "RF-1"

    guard = Guard(ReplyModel([LOOKUP, 'CALL issue_refund(order_id="ORD-7", amount=25.00)']), checkpointer=ck,
                  tools=[Tool("catalog_lookup", lambda sku: "ORD-7"), Tool("issue_refund", refund)])
    result = guard.run(REFUND, {"sku": "A-12", "amount": "25.00"}, thread_id="t")
    assert result.status == "verified"
    intent = seen[0]["intent"]
    assert seen[0].keys() == {"intent"} and intent["tool"] == "issue_refund"
    assert intent["args"] == {"order_id": "ORD-7", "amount": {"decimal": "25.00"}} and len(intent["key"]) == 32
    final = guard._graph.get_state({"configurable": {"thread_id": "t"}}).values["progress"]["actions"]["refund_ref"]
    assert final == {"intent": intent, "result": "RF-1"}


def test_the_idempotency_key_is_the_steps_identity_in_the_run() -> None:
    rec = Recorded()
    tools = rec.tools(idempotency_key="request_id")
    Guard(ReplyModel([LOOKUP, 'CALL issue_refund(order_id="ORD-7", amount=25.00)'] * 2), tools=tools
          ).run(REFUND, {"sku": "A-12", "amount": "25.00"}, thread_id="a")
    Guard(ReplyModel([LOOKUP, 'CALL issue_refund(order_id="ORD-7", amount=25.00)']), tools=tools
          ).run(REFUND, {"sku": "A-12", "amount": "25.00"}, thread_id="b")
    keys = [a["request_id"] for a in rec.args("issue_refund")]
    assert len(keys) == 2 and keys[0] != keys[1] and all(len(k) == 32 for k in keys)  # one key per thread and step
    assert "request_id" not in json.dumps(tools[1].schema(only=["order_id", "amount"]))  # never offered to the model
