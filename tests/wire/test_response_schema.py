"""A ``json_schema`` response format is honoured or refused, never broken (issue 33 #11).

The rule: a schema the guard cannot honour for a procedure is refused before any model call, naming
the property (``InvalidGuardedCall`` in the drop-in client, a 400 with ``param`` from the proxy);
every content the guard writes validates against the caller's schema, whatever the run's outcome
(verified, failed with steps not reached, flagged values off their type). Proven by validating each
content with ``jsonschema`` over a table of schemas, through ``GuardedOpenAI`` (a client whose
model is ``sim:perfect``) and the proxy (Starlette's TestClient over ``sim:perfect``), streamed and
not, and by the content writer over results built by hand (the outcomes a simulated run cannot give).
"""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from openai.types.chat import ChatCompletion

from stepguard.adapters import GuardedOpenAI, InvalidGuardedCall, load_model
from stepguard.guard import GuardResult, StepOutcome
from stepguard.procedure import load_procedure
from stepguard.wire import ContentWriter, completion_body, response_shape

jsonschema = pytest.importorskip("jsonschema")

SHAPES_YAML = """\
name: shapes
inputs:
  price: decimal
  qty: integer
steps:
  - {var: count, expr: qty * 2, type: integer}
  - {var: amount, expr: price * qty, type: decimal, scale: 2}
  - {var: big, expr: amount >= 100, type: boolean}
  - {var: size, expr: "'large' if amount >= 100 else 'small'", type: one_of, choices: [small, large]}
  - {var: label, expr: "'ok' if big else 'low'", type: string}
  - {var: ratio, expr: amount / 4, type: number}
answer: amount
"""
INPUTS = {"price": "40.50", "qty": 3}
SIM = load_model("sim:perfect")


@pytest.fixture(scope="module")
def shapes(tmp_path_factory: pytest.TempPathFactory) -> Any:
    path = tmp_path_factory.mktemp("procs") / "shapes.yaml"
    path.write_text(SHAPES_YAML, encoding="utf-8")
    return load_procedure(path)


def _n(*types: str) -> dict[str, Any]:
    return {"type": [*types, "null"]}


def _obj(props: dict[str, Any], required: Any = "all", **more: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props) if required == "all" else required,
            "additionalProperties": False, **more}


STATUS = {"type": "string", "enum": ["verified", "repaired", "flagged", "failed"]}

# Schemas the guard honours: each content it writes, whatever the outcome, must validate.
HONOURED: dict[str, dict[str, Any]] = {
    "strict, every key nullable": _obj({"count": _n("integer"), "amount": _n("number"), "big": _n("boolean"),
                                        "size": _n("string"), "label": _n("string"), "ratio": _n("number"),
                                        "answer": _n("string"), "status": {"type": "string"},
                                        "first_unverified": _n("string")}),
    "boolean and integer under string": _obj({"big": _n("string"), "count": _n("string"), "amount": _n("string")}),
    "integer under number, decimal under integer-or-string": _obj({"count": _n("number"), "amount": _n("integer", "string")}),
    "not required: keys left out, not null": _obj({"count": {"type": "integer"}, "amount": {"type": "number"},
                                                   "big": {"type": "boolean"}, "first_unverified": {"type": "string"},
                                                   "answer": {"type": "number"}}, required=[]),
    "anyOf as pydantic writes Optional": _obj({"amount": {"anyOf": [{"type": "number"}, {"type": "null"}], "title": "Amount"},
                                               "big": {"anyOf": [{"type": "boolean"}, {"type": "null"}]}}),
    "enums over the few values": _obj({"status": STATUS, "size": {"type": ["string", "null"], "enum": ["small", "large", None]},
                                       "big": {"enum": [True, False, None]},
                                       "first_unverified": {"enum": ["count", "amount", "big", "size", "label", "ratio", None]}}),
    "answer typed apart from its step": _obj({"answer": _n("string"), "amount": _n("number"), "status": {"type": "string"}}),
    "no type at all: anything": _obj({"amount": {}, "big": True, "count": {"description": "twice qty"}}),
    "only result keys": _obj({"status": {"type": "string"}, "first_unverified": _n("string")}),
    "empty properties": {"type": "object", "properties": {}, "additionalProperties": False},
}

# (schema, the location named, a word of the reason)
REFUSED: list[tuple[dict[str, Any], str, str]] = [
    (_obj({"big": _n("integer")}), "properties.big", "cannot hold 'true'"),
    (_obj({"amount": _n("integer")}), "properties.amount", "2 places"),
    (_obj({"label": _n("number")}), "properties.label", "cannot hold"),
    (_obj({"amount": {"type": "number"}}), "properties.amount", "allow null"),
    (_obj({"first_unverified": {"type": "string"}}), "properties.first_unverified", "when the run is verified"),
    (_obj({"status": {"type": "integer"}}), "properties.status", "cannot hold 'verified'"),
    (_obj({"status": {"type": "string", "enum": ["verified"]}}), "properties.status", "cannot hold 'repaired'"),
    (_obj({"size": {"enum": ["small", None]}}), "properties.size", "cannot hold 'large'"),
    (_obj({"amount": {**_n("number"), "minimum": 0}}), "properties.amount.minimum", "cannot promise"),
    (_obj({"label": {**_n("string"), "maxLength": 3}}), "properties.label.maxLength", "cannot promise"),
    (_obj({"amount": {**_n("number"), "enum": [121.5, None]}}), "properties.amount.enum", "enum cannot be promised"),
    (_obj({"amount": _n("number")}, minProperties=1), "schema.minProperties", "cannot promise"),
    (_obj({"amount": _n("number")}, required=["amount", "total"]), "required[1]", "not a property"),
    (_obj({"amount": {"type": "object"}}), "properties.amount", "JSON type object cannot hold"),
    (_obj({"amount": False}), "properties.amount", "accepts no value"),
    (_obj({"amount": {"anyOf": [{"type": "number", "minimum": 1}, {"type": "null"}]}}), "properties.amount.anyOf[0]", "only a type"),
    (_obj({"amount": {"$ref": "#/$defs/x"}}), "properties.amount.$ref", "cannot promise"),
]


def _fmt(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "shapes", "schema": schema, "strict": True}}


def _valid(content: str, schema: dict[str, Any]) -> dict[str, Any]:
    """``content`` read as JSON (duplicate keys refused), validated against ``schema``."""
    def no_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        assert len(keys) == len(set(keys)), f"a key twice in {content}"
        return dict(pairs)

    data = json.loads(content, parse_float=Decimal, object_pairs_hook=no_repeats)
    jsonschema.validate(json.loads(content), schema)
    return data


# ------------------------------------------------------------------------------------------ the ways in
class _SimCompletions:
    """``chat.completions`` whose model is ``sim:perfect`` (given the procedure, for no-expr steps)."""

    def create(self, **kw: Any) -> ChatCompletion:
        reply = SIM.complete(kw["messages"])
        return ChatCompletion.model_validate(completion_body(kw["model"], reply.text, {
            "prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}))


def _client(procedure: Any) -> GuardedOpenAI:
    return GuardedOpenAI(SimpleNamespace(chat=SimpleNamespace(completions=_SimCompletions())), {"shapes": procedure})


def via_client(procedure: Any, fmt: dict[str, Any], stream: bool, **options: Any) -> str:
    create = _client(procedure).chat.completions.create
    eb = {"stepguard": {"procedure": "shapes", "inputs": INPUTS, **options}}
    if not stream:
        return create(model="sim", messages=[], extra_body=eb, response_format=fmt).choices[0].message.content
    return "".join(c.choices[0].delta.content or "" for c in create(model="sim", messages=[], extra_body=eb,
                                                                    response_format=fmt, stream=True))


@pytest.fixture(scope="module")
def proxy(shapes: Any) -> Any:
    pytest.importorskip("starlette")
    from starlette.testclient import TestClient

    from stepguard.serve import Upstream, create_app

    with TestClient(create_app(Upstream("sim:perfect"), {"shapes": shapes})) as client:
        yield client


def via_proxy(proxy: Any, fmt: dict[str, Any], stream: bool, **options: Any) -> str:
    body = {"model": "stepguard/shapes", "messages": [{"role": "user", "content": "go"}], "response_format": fmt,
            "stream": stream, "stepguard": {"inputs": INPUTS, **options}}
    reply = proxy.post("/v1/chat/completions", json=body)
    assert reply.status_code == 200, reply.text[:400]
    if not stream:
        return reply.json()["choices"][0]["message"]["content"]
    out = []
    for line in reply.text.splitlines():
        if line.startswith("data: {"):
            data = json.loads(line[6:])
            assert "error" not in data, data
            out.append(data["choices"][0]["delta"].get("content") or "")
    return "".join(out)


OUTCOMES = {
    "verified": {},
    "failed: a budget spent before any step": {"max_total_tokens": 1, "on_exhausted": "flag", "chunk_size": 1},
}


@pytest.mark.slow
@pytest.mark.parametrize("outcome", list(OUTCOMES))
@pytest.mark.parametrize("name", list(HONOURED))
def test_every_content_validates_against_the_schema_both_ways_in(shapes: Any, proxy: Any, name: str, outcome: str) -> None:
    schema, options = HONOURED[name], OUTCOMES[outcome]
    contents = {way: [fn(target, _fmt(schema), stream, **options) for stream in (False, True)]
                for way, fn, target in (("client", via_client, shapes), ("proxy", via_proxy, proxy))}
    for way, (whole, streamed) in contents.items():
        assert whole == streamed, way  # the deltas add up to the content
        data = _valid(whole, schema)
        assert set(data) <= set(schema["properties"])
        want = {"count": "6", "amount": "121.50", "big": "true", "size": "large", "label": "ok", "ratio": "30.375",
                "answer": "121.50", "status": "verified", "first_unverified": "None"}
        got = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in data.items()}
        if outcome == "verified":
            assert got == {k: want[k] for k in data}, way
        else:  # a value is the right one or null; the status and first step not verified say so
            assert all(v in (want[k], "None") for k, v in got.items() if k not in ("status", "first_unverified")), got
            assert got.get("status", "failed") == "failed" and got.get("first_unverified", "count") in shapes.variables


def test_a_value_keeps_its_places_and_a_boolean_under_string_is_text(shapes: Any) -> None:
    content = via_client(shapes, _fmt(HONOURED["boolean and integer under string"]), False)
    assert content == '{"count": "6", "amount": "121.50", "big": "true"}'
    content = via_client(shapes, _fmt(HONOURED["answer typed apart from its step"]), False)
    assert content == '{"amount": 121.50, "answer": "121.50", "status": "verified"}'


@pytest.mark.parametrize(("schema", "where", "says"), REFUSED, ids=[r[1] + ":" + r[2] for r in REFUSED])
def test_a_schema_the_guard_cannot_honour_is_refused_naming_the_part(shapes: Any, proxy: Any, schema: dict[str, Any],
                                                                     where: str, says: str) -> None:
    with pytest.raises(InvalidGuardedCall, match=r"\." + where.replace(".", r"\.").replace("[", r"\[").replace("$", r"\$")) as info:
        _client(shapes).chat.completions.create(model="sim", messages=[], response_format=_fmt(schema),
                                                extra_body={"stepguard": {"procedure": "shapes", "inputs": INPUTS}})
    assert says in str(info.value), str(info.value)
    assert info.value.location.endswith(where)
    reply = proxy.post("/v1/chat/completions", json={"model": "stepguard/shapes", "messages": [], "response_format": _fmt(schema),
                                                     "stepguard": {"inputs": INPUTS}})
    assert reply.status_code == 400 and reply.json()["error"]["param"] == info.value.location
    assert says in reply.json()["error"]["message"]


# ---------------------------------------------------------------- outcomes a simulated run cannot give
def _result(procedure: Any, values: dict[str, Any], provenance: str, status: str) -> GuardResult:
    steps = [StepOutcome(var=s.var, value=values.get(s.var), type=s.type, scale=s.scale,
                         provenance=provenance if s.var in values else "missing") for s in procedure.steps]
    first = next((s.var for s in steps if s.provenance not in ("model_verified", "tool")), None)
    return GuardResult(procedure="shapes", model="x", inputs={}, status=status, answer=values.get("amount"),
                       answer_var="amount", first_unverified=first, steps=steps)


ODD_RESULTS = {
    "flagged values off their type": ({"count": Decimal("3.5"), "amount": "abc", "big": "maybe", "size": "huge",
                                       "label": "x", "ratio": Fraction(1, 3)}, "flagged", "flagged"),
    "flagged: a boolean for a number, a number for a boolean": ({"count": True, "amount": True, "big": 1, "size": "small",
                                                                 "label": "", "ratio": Decimal("1E+3")}, "flagged", "flagged"),
    "repaired: a number with no finite decimal form": ({"count": 6, "amount": Decimal("121.50"), "big": True, "size": "large",
                                                        "label": "ok", "ratio": Fraction(243, 14)}, "repaired", "repaired"),
    "failed half way": ({"count": 6, "amount": Decimal("121.50")}, "model_verified", "failed"),
    "huge and tiny decimals": ({"count": 10**60, "amount": Decimal("-0.00"), "big": False, "size": "small", "label": "é\"\\\n",
                                "ratio": Decimal("0.000000000000000000000000001")}, "model_verified", "verified"),
}


@pytest.mark.parametrize("odd", list(ODD_RESULTS))
@pytest.mark.parametrize("name", list(HONOURED))
def test_the_writer_never_breaks_the_schema_whatever_the_values(shapes: Any, name: str, odd: str) -> None:
    schema = HONOURED[name]
    shape = response_shape(_fmt(schema), shapes)
    result = _result(shapes, *ODD_RESULTS[odd])
    whole = ContentWriter(shape).whole(result)
    writer = ContentWriter(shape)  # streamed: each committed step as it comes, then the rest
    streamed = "".join(writer.step(s) for s in result.steps if s.provenance != "missing") + writer.finish(result)
    assert streamed == whole
    data = _valid(whole, schema)
    for key, value in data.items():  # a value written is the committed value, never another
        step = next((s for s in result.steps if s.var == ("amount" if key == "answer" else key)), None)
        if isinstance(value, Decimal):  # a number literal with its places, as committed
            assert value.as_tuple() == Decimal(step.text).as_tuple(), (key, value, step.text)
        elif step is not None and value is not None:
            assert str(value).lower() == (step.text or "").lower(), (key, value, step.text)


def test_json_object_content_stays_valid_json_for_every_outcome(shapes: Any) -> None:
    shape = response_shape({"type": "json_object"}, shapes)
    for values, prov, status in ODD_RESULTS.values():
        data = json.loads(ContentWriter(shape).whole(_result(shapes, values, prov, status)))
        assert set(data) == {"values", "answer", "status", "first_unverified"}


def test_a_step_named_like_a_result_key_is_the_step_and_written_once(tmp_path: Path) -> None:
    path = tmp_path / "named.yaml"
    path.write_text("name: named\ninputs: {x: integer}\nsteps:\n  - {var: status, expr: x > 1, type: boolean}\n"
                    "  - {var: answer, expr: x * 2, type: integer}\n", encoding="utf-8")
    proc = load_procedure(path)
    schema = _obj({"status": _n("boolean"), "answer": _n("integer")})
    shape = response_shape(_fmt(schema), proc)
    res = GuardResult(procedure="named", model="x", inputs={}, status="verified", answer=4, answer_var="answer",
                      steps=[StepOutcome(var="status", value=True, type="boolean", provenance="model_verified"),
                             StepOutcome(var="answer", value=4, type="integer", provenance="model_verified")])
    content = ContentWriter(shape).whole(res)
    assert content == '{"status": true, "answer": 4}'
    _valid(content, schema)
