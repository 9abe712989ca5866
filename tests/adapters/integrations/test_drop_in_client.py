"""GuardedOpenAI as a drop-in client (issue 17): the REAL ``openai`` client, sync and async, on the stub server.

The stub's ``sim`` model answers the guard's chunk prompts as the seeded simulated executor
(sim:perfect) would; ``scripted`` answers what the test's script says. No fake client objects.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from stepguard import BudgetExhausted, ModelError, StepDeviation
from stepguard.adapters import GuardedOpenAI, GuardedStream, InvalidGuardedCall, load_model
from stepguard.guard import DeviationEvent, GuardResult, StepOutcome, sqlite_checkpointer
from stepguard.procedure import load_procedure
from stepguard.wire import GuardedCheckpointError, GuardedModelError, GuardedProcedureError
from tests._stub_server import StubServer

INVOICE = load_procedure("examples/invoice.yaml")
INPUTS = {"subtotal": "100.10", "rate": "0.1"}
SIM = load_model("sim:perfect")
CONTEXT = [{"role": "system", "content": "You bill for ACME."}, {"role": "user", "content": "Invoice order 42."}]


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(hang_s=2.0) as server:
        yield server


@pytest.fixture
def client(stub: StubServer) -> Iterator[GuardedOpenAI]:
    real = openai.OpenAI(base_url=stub.base_url, api_key="k", max_retries=0, timeout=10)
    yield GuardedOpenAI(real, procedures={"invoice": INVOICE})
    real.close()


def _aclient(stub: StubServer) -> GuardedOpenAI:
    return GuardedOpenAI(openai.AsyncOpenAI(base_url=stub.base_url, api_key="k", max_retries=0, timeout=10),
                         procedures={"invoice": INVOICE})


def _eb(**options: Any) -> dict[str, Any]:
    return {"stepguard": {"procedure": "invoice", "inputs": INPUTS, **options}}


def _since(stub: StubServer, n: int) -> list[dict[str, Any]]:
    return stub.requests[n:]


# --- 1. the caller's messages -------------------------------------------------------------------


@pytest.mark.slow
def test_messages_are_context_in_every_model_call(stub: StubServer, client: GuardedOpenAI) -> None:
    n = len(stub.requests)
    resp = client.chat.completions.create(model="sim", messages=CONTEXT, extra_body=_eb(chunk_size=2))
    assert isinstance(resp, ChatCompletion) and resp.choices[0].message.content == "104.60"
    assert resp.stepguard.status == "verified"
    sent = _since(stub, n)
    assert len(sent) == 2  # chunk_size from extra_body: two chunks of two steps
    for body in sent:
        assert [m["role"] for m in body["messages"]] == ["system", "user"]
        assert "[system] You bill for ACME.\n[user] Invoice order 42." in body["messages"][1]["content"]


def test_text_parts_tool_calls_and_names_are_kept(stub: StubServer, client: GuardedOpenAI) -> None:
    messages = [
        {"role": "user", "name": "bob", "content": [{"type": "text", "text": "Invoice "}, {"type": "text", "text": "42"}]},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "get_order", "arguments": '{"id": 42}'}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "subtotal 100.10"},
    ]
    n = len(stub.requests)
    client.chat.completions.create(model="sim", messages=messages, extra_body=_eb())
    prompt = stub.requests[n]["messages"][1]["content"]
    assert '[user] bob: Invoice 42\n[assistant] called get_order({"id": 42})\n[tool] subtotal 100.10' in prompt


@pytest.mark.parametrize(("message", "where"), [
    ({"role": "assistant", "content": None, "function_call": "x"}, r"messages\[0\]\.function_call"),
    ({"role": "assistant", "content": None, "tool_calls": [{"function": "x"}]}, r"messages\[0\]\.tool_calls\[0\]"),
    ({"role": "assistant", "content": None, "tool_calls": [{"function": None}]}, r"messages\[0\]\.tool_calls\[0\]"),
    ({"role": "assistant", "content": None, "tool_calls": "abc"}, r"messages\[0\]\.tool_calls"),
])
def test_malformed_tool_calls_in_messages_are_refused_by_place(stub: StubServer, client: GuardedOpenAI, message: dict, where: str) -> None:
    """Not an AttributeError from deep inside, and not silently dropped: named, before any model call."""
    n = len(stub.requests)
    with pytest.raises(InvalidGuardedCall, match=where):
        client.chat.completions.create(model="sim", messages=[message], extra_body=_eb())
    assert len(stub.requests) == n


def test_non_text_content_is_refused_not_dropped(stub: StubServer, client: GuardedOpenAI) -> None:
    n = len(stub.requests)
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}
    with pytest.raises(InvalidGuardedCall, match=r"messages\[0\]\.content\[1\]: a 'image_url' part"):
        client.chat.completions.create(model="sim", messages=[{"role": "user", "content": [
            {"type": "text", "text": "see"}, image]}], extra_body=_eb())
    assert len(stub.requests) == n


@pytest.mark.slow
def test_checkpoints_are_keyed_by_the_messages(stub: StubServer, tmp_path: Any) -> None:
    real = openai.OpenAI(base_url=stub.base_url, api_key="k", max_retries=0)
    client = GuardedOpenAI(real, {"invoice": INVOICE}, checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite"))
    first = client.chat.completions.create(model="sim", messages=CONTEXT, extra_body=_eb(thread_id="order-42"))
    n = len(stub.requests)
    again = client.chat.completions.create(model="sim", messages=CONTEXT, extra_body=_eb(thread_id="order-42"))
    assert again.choices[0].message.content == first.choices[0].message.content and len(stub.requests) == n
    with pytest.raises(openai.OpenAIError, match="the caller's context messages") as info:
        client.chat.completions.create(model="sim", messages=CONTEXT[:1], extra_body=_eb(thread_id="order-42"))
    assert isinstance(info.value, GuardedCheckpointError)


# --- 2. streaming ---------------------------------------------------------------------------------


def _check_stream(chunks: list[ChatCompletionChunk], whole: str) -> None:
    assert all(isinstance(c, ChatCompletionChunk) for c in chunks)
    assert len({c.id for c in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    steps = [c.stepguard.var for c in chunks if isinstance(getattr(c, "stepguard", None), StepOutcome)]
    assert steps == ["discount", "net", "tax", "total"]
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop" and isinstance(last.stepguard, GuardResult)
    assert last.usage is not None and last.usage.total_tokens == last.stepguard.usage.input_tokens + last.stepguard.usage.output_tokens
    assert [c.choices[0].finish_reason for c in chunks[:-1]] == [None] * (len(chunks) - 1)
    assert "".join(c.choices[0].delta.content or "" for c in chunks) == whole


def test_stream_sync_is_an_openai_stream_of_chunks(stub: StubServer, client: GuardedOpenAI) -> None:
    whole = client.chat.completions.create(model="sim", messages=[], extra_body=_eb()).choices[0].message.content
    with client.chat.completions.create(model="sim", messages=[], extra_body=_eb(), stream=True) as stream:
        assert isinstance(stream, openai.Stream) and isinstance(stream, GuardedStream)
        chunks = list(stream)
    _check_stream(chunks, whole)
    assert whole == "104.60"


def test_stream_progress_arrives_before_the_run_ends(stub: StubServer, client: GuardedOpenAI) -> None:
    n = len(stub.requests)
    stream = client.chat.completions.create(model="sim", messages=[], extra_body=_eb(chunk_size=1), stream=True)
    next(stream)  # the role
    first = next(stream)
    assert first.stepguard.var == "discount" and len(stub.requests) - n == 1  # one step verified, one call made
    stream.close()  # stops the run
    assert len(stub.requests) - n == 1


def test_stream_async_is_an_openai_async_stream(stub: StubServer) -> None:
    client = _aclient(stub)

    async def go() -> tuple[Any, list[ChatCompletionChunk], str]:
        whole = (await client.chat.completions.create(
            model="sim", messages=CONTEXT, extra_body=_eb(), response_format={"type": "json_object"})).choices[0].message.content
        stream = await client.chat.completions.create(model="sim", messages=CONTEXT, extra_body=_eb(), stream=True,
                                                      response_format={"type": "json_object"})
        async with stream:
            got = [c async for c in stream]
        await client.close()
        return stream, got, whole

    stream, chunks, whole = asyncio.run(go())
    assert isinstance(stream, openai.AsyncStream)
    _check_stream(chunks, whole)
    assert json.loads(whole)["values"]["total"] == "104.60"


def test_pass_through_streaming_is_unchanged(stub: StubServer, client: GuardedOpenAI) -> None:
    stream = client.chat.completions.create(model="ok", messages=[{"role": "user", "content": "hi"}], stream=True)
    assert type(stream) is openai.Stream
    assert "".join(c.choices[0].delta.content or "" for c in stream) == "reply to: hi"


def test_deviations_are_progress_chunks_too(stub: StubServer, client: GuardedOpenAI) -> None:
    asked: list[str] = []

    def script(prompt: str) -> str:
        asked.append(prompt)
        return "I am not sure." if len(asked) == 1 else SIM.complete([{"role": "user", "content": prompt}]).text

    stub.script = script
    chunks = list(client.chat.completions.create(model="scripted", messages=[], extra_body=_eb(), stream=True))
    events = [c.stepguard for c in chunks if isinstance(getattr(c, "stepguard", None), DeviationEvent)]
    assert events and events[0].action == "reprompt" and chunks[-1].stepguard.status == "verified"


# --- 3. response_format --------------------------------------------------------------------------


def test_json_object_gives_every_value_and_the_status(client: GuardedOpenAI) -> None:
    resp = client.chat.completions.create(model="sim", messages=[], extra_body=_eb(), response_format={"type": "json_object"})
    data = json.loads(resp.choices[0].message.content)
    assert data == {"values": {"discount": "5.01", "net": "95.09", "tax": "9.51", "total": "104.60"},
                    "answer": "104.60", "status": "verified", "first_unverified": None}


def test_json_schema_picks_steps_and_types_keeping_places(client: GuardedOpenAI) -> None:
    schema = {"type": "object", "properties": {"status": {"type": "string"}, "total": {"type": ["number", "null"]},
                                                "discount": {"type": ["string", "null"]}},
              "required": ["total", "status", "discount"], "additionalProperties": False}
    fmt = {"type": "json_schema", "json_schema": {"name": "invoice", "schema": schema, "strict": True}}
    content = client.chat.completions.create(model="sim", messages=[], extra_body=_eb(), response_format=fmt).choices[0].message.content
    assert content == '{"discount": "5.01", "total": 104.60, "status": "verified"}'
    assert json.loads(content, parse_float=Decimal)["total"] == Decimal("104.60")
    import jsonschema

    jsonschema.validate(json.loads(content), schema)


@pytest.mark.parametrize(("fmt", "where"), [
    ({"type": "regex", "regex": ".*"}, "response_format.type"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"totl": {}}}}},
     "properties.totl"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object", "properties": {"total": {"type": "integer"}}}}},
     "properties.total"),
    ({"type": "json_schema", "json_schema": {"name": "x"}}, "json_schema.schema"),
])
def test_unsupported_response_format_is_refused(stub: StubServer, client: GuardedOpenAI, fmt: Any, where: str) -> None:
    n = len(stub.requests)
    with pytest.raises(InvalidGuardedCall, match=where.replace(".", r"\.")):
        client.chat.completions.create(model="sim", messages=[], extra_body=_eb(), response_format=fmt)
    assert len(stub.requests) == n


# --- 4. extra_body["stepguard"] ------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(("spec", "message"), [
    ("payroll", r'extra_body\["stepguard"\]: must be an object such as \{"procedure": "invoice"'),
    ({"procedure": "payroll"}, r"unknown procedure 'payroll'; known: invoice"),
    ({"procedure": "invoice", "inputs": INPUTS, "polcy": "flag"}, r"\.polcy: unknown option 'polcy'; the options are: procedure"),
    ({"procedure": "invoice", "inputs": INPUTS, "temperature": 3}, r"\.temperature: temperature must be a number from 0 to 2"),
    ({"procedure": "invoice", "inputs": INPUTS, "policy": "ignore"}, r"\.policy: policy must be reprompt, repair, raise or flag, not 'ignore'"),
    ({"procedure": "invoice", "inputs": INPUTS, "ladder": ["nope"]}, r"unknown ladder rung 'nope'"),
    ({"procedure": "invoice", "inputs": INPUTS, "resample_temperature": float("inf")}, r"resample_temperature must be a finite number, not inf"),
    ({"procedure": "invoice", "inputs": INPUTS, "chunk_size": True}, r"\.chunk_size: chunk_size must be a whole number from 1 to 2147483647, not True"),
    ({"procedure": "invoice", "inputs": INPUTS, "adaptive": "false"}, r"\.adaptive: adaptive must be true or false, not 'false'"),
    ({"procedure": "invoice", "inputs": INPUTS, "max_wall_s": True}, r"\.max_wall_s: max_wall_s must be positive seconds, finite \(or None\), not True"),
    ({"procedure": "invoice", "inputs": INPUTS, "resample_temperature": "0.7"}, r"\.resample_temperature: resample_temperature must be a number from 0 to 2, not '0.7'"),
])
def test_stepguard_options_are_validated(stub: StubServer, client: GuardedOpenAI, spec: Any, message: str) -> None:
    n = len(stub.requests)
    with pytest.raises(InvalidGuardedCall, match=message) as info:
        client.chat.completions.create(model="sim", messages=[], extra_body={"stepguard": spec})
    assert isinstance(info.value, openai.OpenAIError) and isinstance(info.value, ValueError)
    assert len(stub.requests) == n


def test_policy_and_config_options_are_applied(stub: StubServer, client: GuardedOpenAI) -> None:
    stub.script = lambda prompt: SIM.complete([{"role": "user", "content": prompt}]).text.replace("9.51", "9.52")
    resp = client.chat.completions.create(model="scripted", messages=[],
                                          extra_body=_eb(policy="flag", labels={"order": "42"}))
    result = resp.stepguard
    assert result.status == "flagged" and result.texts["tax"] == "9.52" and result.labels == {"order": "42"}
    assert [d.action for d in result.deviations if d.step == "tax"] == ["flag"]  # flag never re-asks
    resp = client.chat.completions.create(model="scripted", messages=[], extra_body=_eb(policy="repair"))
    assert resp.stepguard.status == "repaired" and resp.choices[0].message.content == "104.60"


# --- 5. errors ----------------------------------------------------------------------------------


def test_budget_exhausted_is_an_openai_error_with_the_partial_result(stub: StubServer, client: GuardedOpenAI) -> None:
    stub.script = lambda prompt: SIM.complete([{"role": "user", "content": prompt}]).text.replace("9.51", "9.52")
    try:
        client.chat.completions.create(model="scripted", messages=[], extra_body=_eb(max_reprompts_per_step=1))
    except openai.OpenAIError as exc:
        assert isinstance(exc, BudgetExhausted) and exc.budget == "reprompts_per_step"
        assert exc.result.status == "failed" and exc.result.texts["net"] == "95.09" and exc.result.first_unverified == "tax"
    else:
        pytest.fail("no error")


def test_step_deviation_mid_stream_after_progress(stub: StubServer, client: GuardedOpenAI) -> None:
    stub.script = lambda prompt: SIM.complete([{"role": "user", "content": prompt}]).text.replace("9.51", "9.52")
    got: list[ChatCompletionChunk] = []
    with pytest.raises(StepDeviation) as info:
        for c in client.chat.completions.create(model="scripted", messages=[], extra_body=_eb(policy="raise"), stream=True):
            got.append(c)
    assert isinstance(info.value, openai.OpenAIError) and info.value.result.texts["net"] == "95.09"
    assert [c.stepguard.var for c in got if isinstance(getattr(c, "stepguard", None), StepOutcome)] == ["discount", "net"]


def test_model_error_keeps_the_clients_error_as_cause(client: GuardedOpenAI) -> None:
    with pytest.raises(openai.OpenAIError) as info:
        client.chat.completions.create(model="error400", messages=[], extra_body=_eb())
    exc = info.value
    assert isinstance(exc, GuardedModelError) and isinstance(exc, ModelError) and exc.status == 400
    assert isinstance(exc.__cause__, ModelError) and isinstance(exc.__cause__.__cause__, openai.BadRequestError)
    assert exc.result is None or exc.result.status == "failed"


def test_async_errors_are_openai_errors(stub: StubServer) -> None:
    client = _aclient(stub)
    stub.script = lambda prompt: "no idea"

    async def go() -> None:
        with pytest.raises(openai.OpenAIError) as info:
            await client.chat.completions.create(model="scripted", messages=[], extra_body=_eb(max_reprompts_per_step=0))
        assert isinstance(info.value, BudgetExhausted) and info.value.result is not None
        with pytest.raises(InvalidGuardedCall):
            await client.chat.completions.create(model="sim", messages=[], extra_body={"stepguard": "payroll"})
        await client.close()

    asyncio.run(go())


# --- 6. isinstance -----------------------------------------------------------------------------


def test_isinstance_of_the_wrapped_clients_class(stub: StubServer, client: GuardedOpenAI) -> None:
    assert isinstance(client, openai.OpenAI) and not isinstance(client, openai.AsyncOpenAI)
    assert type(client) is GuardedOpenAI and isinstance(client, GuardedOpenAI)
    aclient = _aclient(stub)
    assert isinstance(aclient, openai.AsyncOpenAI) and not isinstance(aclient, openai.OpenAI)
    asyncio.run(aclient.close())
    other = client.with_options(timeout=5)
    assert type(other) is GuardedOpenAI and isinstance(other, openai.OpenAI)
    assert other.chat.completions.create(model="sim", messages=[], extra_body=_eb()).stepguard.status == "verified"
    assert client.base_url == client.client.base_url and client.models is not None  # the client's own attributes
    with GuardedOpenAI(openai.OpenAI(base_url=stub.base_url, api_key="k"), {"invoice": INVOICE}) as inside:
        assert type(inside) is GuardedOpenAI


def test_unguarded_views_refuse_a_guarded_call(client: GuardedOpenAI) -> None:
    with pytest.raises(InvalidGuardedCall, match="with_raw_response.create is not guarded"):
        client.chat.completions.with_raw_response.create(model="sim", messages=[], extra_body=_eb())
    with pytest.raises(InvalidGuardedCall, match="parse is not guarded"):
        client.chat.completions.parse(model="sim", messages=[], extra_body=_eb())
    raw = client.chat.completions.with_raw_response.create(model="ok", messages=[{"role": "user", "content": "hi"}])
    assert raw.parse().choices[0].message.content == "reply to: hi"


# --- 7. sampling options ----------------------------------------------------------------------------


def test_callers_sampling_options_are_sent_and_resample_overrides_temperature(stub: StubServer, client: GuardedOpenAI) -> None:
    asked: list[str] = []

    def script(prompt: str) -> str:
        asked.append(prompt)
        return "not sure" if len(asked) == 1 else SIM.complete([{"role": "user", "content": prompt}]).text

    stub.script = script
    n = len(stub.requests)
    resp = client.chat.completions.create(
        model="scripted", messages=[], temperature=0.2, seed=7, top_p=0.9, max_completion_tokens=100,
        extra_headers={"X-Trace": "t1"}, extra_body={**_eb(ladder=["resample"], chunk_size=5), "top_k": 20})  # a chunk of 5: 224 tokens
    assert resp.stepguard.status == "verified"
    first, retry = _since(stub, n)[:2]
    assert (first["temperature"], first["seed"], first["top_p"], first["top_k"]) == (0.2, 7, 0.9, 20)
    assert first["max_completion_tokens"] == 100 and "max_tokens" not in first  # the caller's cap, below the guard's 224
    assert (retry["temperature"], retry["seed"], retry["top_p"]) == (0.7, 8, 0.9)  # resample: its temperature, seed + 1
    assert retry["max_completion_tokens"] == 80  # the guard's allowance for one step (48 + 32) is below the cap


@pytest.mark.parametrize(("kwargs", "where"), [
    ({"n": 2}, "n"), ({"tools": [{"type": "function", "function": {"name": "f"}}]}, "tools"),
    ({"stop": ["\n"]}, "stop"), ({"logprobs": True}, "logprobs"), ({"max_tokens": 0}, "max_tokens"),
])
def test_arguments_the_guard_cannot_honour_are_refused(stub: StubServer, client: GuardedOpenAI, kwargs: Any, where: str) -> None:
    n = len(stub.requests)
    with pytest.raises(InvalidGuardedCall, match=f"^{where}: "):
        client.chat.completions.create(model="sim", messages=[], extra_body=_eb(), **kwargs)
    assert len(stub.requests) == n


def test_bad_inputs_are_refused_at_create_even_when_streaming(stub: StubServer, client: GuardedOpenAI) -> None:
    n = len(stub.requests)
    for stream in (False, True):
        with pytest.raises(openai.OpenAIError, match="inputs: missing") as info:
            client.chat.completions.create(model="sim", messages=[], stream=stream,
                                           extra_body={"stepguard": {"procedure": "invoice", "inputs": {"subtotal": "1"}}})
        assert isinstance(info.value, GuardedProcedureError)
    assert len(stub.requests) == n


@pytest.mark.slow
def test_sampling_options_key_the_thread_but_headers_do_not(stub: StubServer, tmp_path: Any) -> None:
    real = openai.OpenAI(base_url=stub.base_url, api_key="k", max_retries=0)
    client = GuardedOpenAI(real, {"invoice": INVOICE}, checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite"))
    client.chat.completions.create(model="sim", messages=[], top_p=0.9, extra_body=_eb(thread_id="t"))
    client.chat.completions.create(model="sim", messages=[], top_p=0.9, extra_headers={"X-Req": "2"},
                                   extra_body=_eb(thread_id="t"))  # the same work: resumes
    with pytest.raises(GuardedCheckpointError, match="model.options"):
        client.chat.completions.create(model="sim", messages=[], top_p=0.5, extra_body=_eb(thread_id="t"))


# --- tools ----------------------------------------------------------------------------------------


def test_tool_steps_run_with_the_tools_given_to_the_client(stub: StubServer) -> None:
    """A procedure with tool steps through the real client: the tools given to GuardedOpenAI are called."""
    from examples.agent_tools import TOOLS

    refund = load_procedure("examples/refund.yaml")
    with openai.OpenAI(base_url=stub.base_url, api_key="k", max_retries=0) as real:
        client = GuardedOpenAI(real, {"refund": refund}, tools=TOOLS)
        resp = client.chat.completions.create(
            model="sim", messages=[], extra_body={"stepguard": {"procedure": "refund", "inputs": {"sku": "A-12", "amount": "19.99"}}})
        steps = {s.var: s for s in resp.stepguard.steps}
        assert resp.stepguard.status == "verified" and steps["order_id"].provenance == "tool"
        assert resp.choices[0].message.content == steps["refund_ref"].value != ""
        assert isinstance(client.with_options(timeout=5), GuardedOpenAI)  # the tools go with a rewrapped client
        with pytest.raises(ValueError, match=r"procedure 'refund' calls catalog_lookup, issue_refund \(given: none\)"):
            GuardedOpenAI(real, {"refund": refund})  # refused at once, not at the first call


@pytest.mark.slow
@pytest.mark.parametrize(("kwargs", "message"), [
    ({"temperature": float("nan")}, r"temperature: temperature must be a finite number, not nan"),
    ({"temperature": "0.5"}, r"temperature: temperature must be a number from 0 to 2"), ({"temperature": True}, "temperature: temperature must be"),
    ({"seed": 1.9}, r"seed: seed must be a whole number"), ({"seed": True}, "seed: seed must be"), ({"seed": 2**70}, "seed: seed must be"),
    ({"n": True}, "n must be 1"), ({"max_tokens": 2**40}, "max_tokens: max_tokens must be a whole number of tokens"),
    ({"stream": "false"}, r"stream: stream must be true or false, not 'false'"),
])
def test_the_callers_own_arguments_are_checked_too(stub: StubServer, client: GuardedOpenAI, kwargs: dict, message: str) -> None:
    """`temperature=nan` reached the model calls and `stream="false"` streamed (the proxy refuses both)."""
    n = len(stub.requests)
    with pytest.raises(InvalidGuardedCall, match=message):
        client.chat.completions.create(model="sim", messages=[], extra_body=_eb(), **kwargs)
    assert len(stub.requests) == n
