"""A list or JSON value keeps its type in the result, in Python and in every JSON a result leaves as.

A text step with ``format: list`` commits a JSON list of strings, one with ``format: json`` a JSON
value. ``GuardResult.values`` gave both back as their JSON text, and every JSON the result was
written as (``model_dump_json``, ``stepguard run --json``, the proxy's and ``GuardedOpenAI``'s
responses, the LangGraph node's output) held that text as a JSON string. Now a list is a
``list[str]``, a JSON value is the value itself (integers ``int``, other numbers the exact
``Decimal``, never ``float``), and in JSON they are an array and that JSON value, a non-integer
number written with the model's digits so that ``GuardResult.model_validate_json`` reads back the
same value. ``texts``/``answer_text`` still give text. Neighbours: the plain ``text`` format, decimal
steps (still text with their places), a JSON string, number and null as the whole value, a flagged
unreadable reply, a caller's float, a checkpointed run resumed.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from stepguard import Guard, GuardConfig
from stepguard.guard import GuardResult, StepOutcome, sqlite_checkpointer
from stepguard.procedure import parse_procedure
from tests._fakes import FixedReplies

PROC = """
name: structured
inputs: {}
steps:
  - var: names
    kind: text
    format: list
    instruction: Name three primary colours.
  - var: count
    expr: len(names)
    type: integer
  - var: price
    expr: "2.5"
    type: decimal
    scale: 2
  - var: doc
    kind: text
    format: json
    instruction: Write the order as JSON.
accept_bounded: [names, doc]
"""
DOC = '{"n": 3, "price": 2.50, "big": 10.0000000000000001, "exp": 1E+2, "tags": ["a"], "ok": true, "none": null, "s": "2.50"}'
REPLIES = ['names = ["red", "yellow", "blue"]', "count = 3", "price = 2.50", f"doc = {DOC}"]
WANT_DOC = {"n": 3, "price": Decimal("2.50"), "big": Decimal("10.0000000000000001"), "exp": Decimal("1E+2"),
            "tags": ["a"], "ok": True, "none": None, "s": "2.50"}


def _run(replies: list[str] | None = None, text: str = PROC, **kw: Any) -> GuardResult:
    return Guard(FixedReplies(list(replies or REPLIES)), GuardConfig(chunk_size=1), **kw).run(parse_procedure(text), {})


def _same(a: Any, b: Any) -> None:
    """Equal, and of the same types all the way down (a Decimal's places too; never a float)."""
    assert type(a) is type(b), (a, b)
    if isinstance(a, dict):
        assert list(a) == list(b)
        for k in a:
            _same(a[k], b[k])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif isinstance(a, Decimal):
        assert a.as_tuple() == b.as_tuple()
    else:
        assert a == b


def _script(prompt: str) -> str:
    """The replies by the step a prompt asks for (a stub server's script)."""
    for reply in REPLIES:
        if f"{reply.split(' = ')[0]} = ?" in prompt:
            return reply
    return REPLIES[1] if "count" in prompt.rsplit("Steps", 1)[-1] else REPLIES[2]


# --- in Python ------------------------------------------------------------------------------------------------


def test_a_list_is_a_list_of_strings_and_json_is_its_value_with_exact_numbers() -> None:
    result = _run()
    assert result.status == "verified", result.deviations
    _same(result.values["names"], ["red", "yellow", "blue"])
    _same(result.values["doc"], WANT_DOC)
    _same(result.answer, WANT_DOC)  # the answer step is the JSON step
    assert result.values["count"] == 3 and result.values["price"] == Decimal("2.50")
    # text stays text: the committed JSON, numbers as written
    assert result.texts["names"] == '["red", "yellow", "blue"]'
    assert result.texts["doc"] == DOC
    assert result.answer_text == result.texts["doc"] and result.texts["price"] == "2.50"
    shapes = {s.var: s.shape for s in result.steps}
    assert shapes == {"names": "list", "count": "scalar", "price": "scalar", "doc": "json"}


@pytest.mark.parametrize(("reply", "want", "text"), [
    ('"hello"', "hello", '"hello"'),  # a JSON string as the whole value: the string, its text quoted
    ("12.50", Decimal("12.50"), "12.50"),  # a number: the exact Decimal, never the text "12.50"
    ("7", 7, "7"),
    ("null", None, "null"),
    ("[1, 2.0]", [1, Decimal("2.0")], "[1, 2.0]"),
    ("true", True, "true"),
])
def test_a_json_value_of_any_json_type(reply: str, want: Any, text: str) -> None:
    result = _run([*REPLIES[:3], f"doc = {reply}"])
    step = result.steps[-1]
    assert step.provenance == "model_verified"
    _same(step.value, want)
    assert step.text == text
    again = GuardResult.model_validate_json(result.model_dump_json())
    _same(again.steps[-1].value, want)
    assert again.steps[-1].text == text and again == result


def test_a_plain_text_step_stays_a_string() -> None:
    text = PROC.replace("format: json", "format: text")
    result = _run([*REPLIES[:3], "doc = 2.50"], text)
    _same(result.values["doc"], "2.50")
    assert json.loads(result.model_dump_json())["steps"][-1]["value"] == "2.50"


def test_a_callers_float_is_read_as_its_decimal_and_a_non_finite_one_refused() -> None:
    out = StepOutcome(var="doc", value={"x": 2.5, "y": [0.1]}, type="string", shape="json", provenance="model_verified")
    _same(out.value, {"x": Decimal("2.5"), "y": [Decimal("0.1")]})
    with pytest.raises(ValueError, match="not a JSON number"):
        StepOutcome(var="doc", value={"x": float("nan")}, type="string", shape="json")
    listed = StepOutcome(var="names", value=("a", "b"), type="string", shape="list")
    _same(listed.value, ["a", "b"])


def test_committed_text_that_is_not_json_stays_its_text() -> None:
    """A flagged reply kept as the model wrote it is never turned into something it did not say."""
    from stepguard.guard._result import outcome

    proc = parse_procedure(PROC)
    kept = outcome(proc.steps[0], "red, blue", provenance="flagged")
    assert kept.value == "red, blue" and kept.shape == "list" and kept.text == "red, blue"
    assert GuardResult.model_validate_json(_run().model_copy(update={"steps": [kept]}).model_dump_json()).steps[0] == kept


# --- as JSON ---------------------------------------------------------------------------------------------------


def test_the_results_json_holds_an_array_and_the_json_value_and_reads_back_exactly() -> None:
    result = _run()
    text = result.model_dump_json()
    data = json.loads(text, parse_float=Decimal)
    steps = {s["var"]: s for s in data["steps"]}
    assert steps["names"]["value"] == ["red", "yellow", "blue"]
    _same(steps["doc"]["value"], WANT_DOC)  # the JSON value itself, numbers with the model's digits
    _same(data["answer"], WANT_DOC)
    assert steps["price"]["value"] == "2.50"  # a decimal step: text with its places, as before
    assert '"big": 10.0000000000000001' in text and '"exp": 1E+2' in text and '"s": "2.50"' in text
    again = GuardResult.model_validate_json(text)
    assert again == result
    _same(again.values["doc"], WANT_DOC)
    _same(again.answer, WANT_DOC)
    _same(again.values["names"], ["red", "yellow", "blue"])
    assert again.values["price"] == Decimal("2.50") and again.texts == result.texts


def test_model_dump_json_mode_reads_back_through_model_validate_and_indents() -> None:
    result = _run()
    data = result.model_dump(mode="json")
    _same(data["steps"][-1]["value"], WANT_DOC)
    assert GuardResult.model_validate(data) == result
    indented = result.model_dump_json(indent=2)
    assert "\n  " in indented and GuardResult.model_validate_json(indented) == result
    with pytest.raises(ValueError):  # not JSON: pydantic's own error
        GuardResult.model_validate_json("{not json")


def test_the_cli_json_output_holds_the_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from stepguard.cli import run as cli_run

    result = _run()
    cli_run._print(result, True)
    out = capsys.readouterr().out
    assert GuardResult.model_validate_json(out) == result
    data = json.loads(out, parse_float=Decimal)
    assert data["steps"][0]["value"] == ["red", "yellow", "blue"]
    _same(data["steps"][-1]["value"], WANT_DOC)


def test_the_cli_run_end_to_end_writes_a_json_array(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from stepguard.cli import app

    path = tmp_path / "p.yaml"
    path.write_text(PROC.replace("  - var: count\n    expr: len(names)\n    type: integer\n", ""))
    got = CliRunner().invoke(app, ["run", str(path), "--model", "sim:perfect", "--json"])
    assert got.exit_code == 0, got.output
    data = json.loads(got.stdout)
    names, price, doc = (s["value"] for s in data["steps"])
    assert isinstance(names, list) and names and all(isinstance(x, str) for x in names)
    assert price == "2.50" and isinstance(doc, dict) and isinstance(doc["summary"], str)


# --- the ways a result leaves ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_proxy_answers_with_the_array_and_the_json_value() -> None:
    pytest.importorskip("starlette")
    import openai

    from stepguard.serve import BackgroundServer, Upstream, create_app
    from tests._stub_server import StubServer

    with StubServer() as stub:
        stub.script = _script
        app = create_app(Upstream(f"{stub.base_url}#scripted"), {"structured": parse_procedure(PROC)},
                         config=GuardConfig(chunk_size=1))
        with BackgroundServer(app) as server:
            raw = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0).chat.completions.with_raw_response.create(
                model="stepguard/structured", messages=[], response_format={"type": "json_object"},
                extra_body={"stepguard": {"inputs": {}}})
            body = raw.http_response.text
            chunks = list(openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0).chat.completions.create(
                model="stepguard/structured", messages=[], stream=True, extra_body={"stepguard": {"inputs": {}}}))
    result = GuardResult.model_validate(json.loads(body, parse_float=Decimal)["stepguard"])
    _same(result.values["doc"], WANT_DOC)
    _same(result.values["names"], ["red", "yellow", "blue"])
    content = json.loads(json.loads(body)["choices"][0]["message"]["content"], parse_float=Decimal)
    assert content["values"]["names"] == ["red", "yellow", "blue"]
    _same(content["values"]["doc"], WANT_DOC)
    _same(content["answer"], WANT_DOC)
    steps = [(c.model_extra or {}).get("stepguard") for c in chunks]
    events = {e["var"]: e["value"] for e in steps if e and e.get("event") == "step"}
    assert events["names"] == ["red", "yellow", "blue"] and events["price"] == "2.50"
    assert events["doc"]["tags"] == ["a"] and events["doc"]["n"] == 3
    assert steps[-1]["steps"][-1]["value"]["s"] == "2.50"


@pytest.mark.slow
def test_guarded_openai_gives_the_typed_result_and_json_content() -> None:
    import openai

    from stepguard.adapters import GuardedOpenAI
    from tests._stub_server import StubServer

    with StubServer() as stub:
        stub.script = _script
        real = openai.OpenAI(base_url=stub.base_url, api_key="k", max_retries=0)
        client = GuardedOpenAI(real, {"structured": parse_procedure(PROC)}, config=GuardConfig(chunk_size=1))
        resp = client.chat.completions.create(model="scripted", messages=[], response_format={"type": "json_object"},
                                              extra_body={"stepguard": {"procedure": "structured", "inputs": {}}})
    result = resp.stepguard  # type: ignore[attr-defined]  # the guarded report: an attribute openai's type does not declare
    _same(result.values["doc"], WANT_DOC)
    content = json.loads(resp.choices[0].message.content or "", parse_float=Decimal)
    _same(content["values"]["doc"], WANT_DOC)
    assert content["values"]["names"] == ["red", "yellow", "blue"] and content["values"]["price"] == "2.50"


def test_a_json_schema_property_for_a_list_step_must_take_an_array() -> None:
    from stepguard.adapters import InvalidGuardedCall
    from stepguard.wire import response_shape

    proc = parse_procedure(PROC)

    def fmt(prop: dict[str, Any]) -> dict[str, Any]:
        return {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"names": prop}}}}

    with pytest.raises(InvalidGuardedCall, match="cannot hold"):
        response_shape(fmt({"type": "string"}), proc)
    assert response_shape(fmt({"type": "array"}), proc).steps == (("names", "array"),)


def test_the_langgraph_node_writes_the_typed_values() -> None:
    from typing import TypedDict

    from langgraph.graph import END, START, StateGraph

    from stepguard.adapters import guarded_node

    class State(TypedDict, total=False):
        stepguard_result: dict[str, Any]
        values: dict[str, Any]

    node = guarded_node(Guard(FixedReplies(list(REPLIES)), GuardConfig(chunk_size=1)), parse_procedure(PROC), values_key="values")
    graph = StateGraph(State)
    graph.add_node("guard", node)
    graph.add_edge(START, "guard")
    graph.add_edge("guard", END)
    from langgraph.checkpoint.memory import InMemorySaver

    compiled = graph.compile(checkpointer=InMemorySaver())  # the graph's own checkpointer keeps the Decimals
    cfg: Any = {"configurable": {"thread_id": "g1"}}
    out = compiled.invoke({}, cfg)
    _same(compiled.get_state(cfg).values["stepguard_result"]["steps"][-1]["value"], WANT_DOC)
    result = GuardResult.model_validate(out["stepguard_result"])
    _same(result.values["doc"], WANT_DOC)
    _same(out["stepguard_result"]["steps"][0]["value"], ["red", "yellow", "blue"])
    assert out["values"]["doc"] == DOC  # values_key: text, as before


@pytest.mark.slow
def test_a_resumed_run_gives_the_same_typed_values(tmp_path: Path) -> None:
    saver = sqlite_checkpointer(tmp_path / "ck.sqlite")
    first = Guard(FixedReplies(list(REPLIES)), GuardConfig(chunk_size=1), saver).run(parse_procedure(PROC), {}, thread_id="t1")
    again = Guard(FixedReplies([]), GuardConfig(chunk_size=1), saver).run(parse_procedure(PROC), {}, thread_id="t1")
    _same(again.values["doc"], WANT_DOC)
    _same(again.values["names"], ["red", "yellow", "blue"])
    _same(again.values["doc"], first.values["doc"])
    # stopped after the list step, resumed: the list committed before the stop reads back as a list
    proc = parse_procedure(PROC)
    partial = Guard(FixedReplies(REPLIES[:1]), GuardConfig(chunk_size=1), saver)
    with pytest.raises(AssertionError, match="no reply left"):
        partial.run(proc, {}, thread_id="t2")
    done = Guard(FixedReplies(REPLIES[1:]), GuardConfig(chunk_size=1), saver).run(proc, {}, thread_id="t2")
    _same(done.values["names"], ["red", "yellow", "blue"])
    _same(done.values["doc"], WANT_DOC)
