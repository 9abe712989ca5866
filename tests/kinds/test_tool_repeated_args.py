"""Issue 41.5: a tool argument given twice is a ``bad_argument``, in a text call and in a native call,
re-asked; the tool never runs with either value (Python keeps the last keyword, ``json.loads`` the
last key, so before this the tool ran with ``note="DENIED"``).

Neighbours: the same value twice, a key repeated inside a nested object, a key spelled twice
through a JSON escape, names that differ only in case (different arguments: names are
case-sensitive), a positional argument beside a keyword, and the way a native call arrives from an
OpenAI-compatible server (``read_reply``, then the graph's one reader, ``calls_from_native``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from stepguard import BudgetExhausted, Guard, parse_procedure
from stepguard.adapters._openai.reply import read_reply
from stepguard.model import ChatResponse
from stepguard.tools import Tool, calls_from_native, parse_calls
from tests._fakes import ReplyModel

APPROVE = parse_procedure("""
name: approve
inputs: {order: string}
steps:
  - {var: ref, kind: tool, tool: record, args: {order_id: order, note: {type: string}}, type: string}
""")


def _native(arguments: str) -> ChatResponse:
    return ChatResponse("", tool_calls=({"name": "record", "arguments": arguments},))


def _run(*replies: str | ChatResponse) -> tuple[Any, list[dict[str, Any]]]:
    runs: list[dict[str, Any]] = []

    def record(order_id: str, note: str) -> str:
        runs.append({"order_id": order_id, "note": note})
        return "R-1"

    result = Guard(ReplyModel(list(replies)), tools=[Tool("record", record)]).run(APPROVE, {"order": "ORD-7"})
    return result, runs


# --- the reader: a repeated name is an error naming it and both values -------------------------

@pytest.mark.parametrize("call", [
    'CALL record(order_id="ORD-7", note="approved", note="DENIED")',
    'ref = CALL record(note="approved", order_id="ORD-7", note="DENIED")',
])
def test_a_keyword_given_twice_in_a_text_call_is_an_error_naming_it_and_both_values(call: str) -> None:
    (c,) = parse_calls(call)
    assert c.error is not None
    assert "note" in c.error and "given twice" in c.error
    assert '"approved"' in c.error and '"DENIED"' in c.error


def test_a_key_given_twice_in_native_arguments_is_an_error_naming_it_and_both_values() -> None:
    (c,) = calls_from_native([{"name": "record", "arguments": '{"order_id": "ORD-7", "note": "approved", "note": "DENIED"}'}])
    assert c.error is not None
    assert "note" in c.error and "given twice" in c.error
    assert '"approved"' in c.error and '"DENIED"' in c.error


@pytest.mark.parametrize("arguments", [
    '{"amount": 25.00, "amount": 25.00}',  # the same value twice is still two answers
    '{"note": "a", "no\\u0074e": "b"}',  # the same key through an escape
    '{"meta": {"k": 1, "k": 2}}',  # inside a nested object
])
def test_native_repeats_in_every_spelling_and_depth_are_errors(arguments: str) -> None:
    (c,) = calls_from_native([{"name": "record", "arguments": arguments}])
    assert c.error is not None and "given twice" in c.error, c.error


def test_the_same_value_twice_in_a_text_call_is_still_an_error() -> None:
    (c,) = parse_calls("CALL record(amount=25, amount=25)")
    assert c.error is not None and "amount" in c.error and "given twice" in c.error


def test_names_that_differ_only_in_case_are_two_arguments() -> None:
    """Argument names are case-sensitive, as Python and JSON read them: ``Note`` is not ``note``."""
    (text,) = parse_calls('CALL record(note="a", Note="b")')
    (native,) = calls_from_native([{"name": "record", "arguments": '{"note": "a", "Note": "b"}'}])
    for c in (text, native):
        assert c.error is None and c.args == {"note": "a", "Note": "b"}


def test_a_positional_argument_beside_its_keyword_is_refused_as_positional() -> None:
    (c,) = parse_calls('CALL record("ORD-7", order_id="ORD-7", note="ok")')
    assert c.error is not None and "named" in c.error


# --- the guard: a bad_argument, re-asked; the tool never runs with either value -----------------

GOOD = 'CALL record(order_id="ORD-7", note="approved")'


@pytest.mark.parametrize("bad", [
    'CALL record(order_id="ORD-7", note="approved", note="DENIED")',
    'CALL record(order_id="ORD-7", order_id="ORD-7", note="approved")',  # an expression argument, same value
    _native('{"order_id": "ORD-7", "note": "approved", "note": "DENIED"}'),
    _native('{"order_id": "ORD-8", "order_id": "ORD-7", "note": "approved"}'),
], ids=["text-free", "text-checked", "native-free", "native-checked"])
def test_a_repeated_argument_is_a_bad_argument_reask_and_the_tool_runs_once_with_the_answer(bad: Any) -> None:
    result, runs = _run(bad, GOOD)
    assert result.status == "verified", result.deviations
    assert [d.kind for d in result.deviations] == ["bad_argument"]
    assert "given twice" in result.deviations[0].detail
    assert runs == [{"order_id": "ORD-7", "note": "approved"}]


def test_the_reask_names_the_repeated_argument_and_both_values() -> None:
    model = ReplyModel([_native('{"order_id": "ORD-7", "note": "approved", "note": "DENIED"}'), GOOD])
    Guard(model, tools=[Tool("record", lambda order_id, note: "R-1")]).run(APPROVE, {"order": "ORD-7"})
    reask = model.prompts[1]
    assert "note" in reask and "given twice" in reask and "approved" in reask and "DENIED" in reask


def test_repeated_arguments_every_time_never_run_the_tool() -> None:
    bad = 'CALL record(order_id="ORD-7", note="approved", note="DENIED")'
    runs: list[str] = []
    with pytest.raises(BudgetExhausted) as err:
        Guard(ReplyModel([bad] * 10), tools=[Tool("record", lambda order_id, note: runs.append(note) or "R-1")]
              ).run(APPROVE, {"order": "ORD-7"})
    assert runs == []
    assert {d.kind for d in err.value.result.deviations} == {"bad_argument"}


def test_a_native_call_from_an_openai_compatible_server_keeps_its_repeat_to_the_reader() -> None:
    """``read_reply`` keeps ``arguments`` as the server's JSON text, so the repeat reaches ``calls_from_native``."""
    body = {"choices": [{"finish_reason": "tool_calls", "message": {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function",
         "function": {"name": "record", "arguments": '{"order_id": "ORD-7", "note": "approved", "note": "DENIED"}'}}]}}]}
    reply = read_reply(json.dumps(body))
    (c,) = calls_from_native(reply.tool_calls)
    assert c.error is not None and "given twice" in c.error
