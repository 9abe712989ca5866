"""OpenAICompatibleModel against a local stub server: replies, usage, retries, timeouts, truncation,
and every reply shape (sync and async) ending as text, an empty answer or a typed error.

Every case keeps its timeouts short; nothing here may hang.
"""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from stepguard.adapters.models.openai_compat import OpenAICompatibleModel, provider_for_url
from stepguard.errors import ModelError, ModelOutputTruncated, ModelTimeout, ModelUnavailable
from stepguard.model import ChatModel, GenerationSettings, Usage
from tests._stub_server import StubServer

HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(hang_s=5.0) as server:
        yield server


def make(stub: StubServer, model: str = "ok", **kw) -> OpenAICompatibleModel:
    kw.setdefault("timeout", 20.0)  # generous: a busy CI machine made a 2 s reply limit time out a plain reply
    kw.setdefault("max_retries", 0)
    return OpenAICompatibleModel(model, base_url=stub.base_url, api_key_env=None, **kw)


def test_reply_usage_cached_tokens_latency(stub: StubServer) -> None:
    with make(stub) as model:
        assert isinstance(model, ChatModel)
        r = model.complete(HI)
    assert r.text == "reply to: hi"
    assert r.usage == Usage(input_tokens=12, output_tokens=5, cached_tokens=8)
    assert r.finish_reason == "stop" and r.model == "ok" and not r.simulated
    assert r.latency_s > 0
    assert r.response_id == "chatcmpl-stub"  # traced as gen_ai.response.id


def test_defaults_and_per_call_settings_are_sent(stub: StubServer) -> None:
    model = make(stub, seed=11, max_tokens=64)
    model.complete(HI)
    body = stub.requests[-1]
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.0, 11, 64)
    model.complete(HI, GenerationSettings(temperature=0.7, seed=None, max_tokens=9))
    body = stub.requests[-1]
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.7, 11, 9)
    assert body["messages"] == HI


def test_openai_provider_sends_max_completion_tokens(stub: StubServer) -> None:
    make(stub, provider="openai", api_key="sk-test", max_tokens=5).complete(HI)
    assert stub.requests[-1]["max_completion_tokens"] == 5 and "max_tokens" not in stub.requests[-1]


async def test_async_reply(stub: StubServer) -> None:
    model = make(stub)
    r = await model.acomplete([{"role": "user", "content": "async"}])
    assert r.text == "reply to: async" and r.usage.cached_tokens == 8
    await model.aclose()


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A base URL nothing answers on: a port bound here (port 0) and held unlistened, so a connection is refused."""
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{held.getsockname()[1]}/v1"


def test_unreachable_endpoint_is_unavailable_quickly(refused_url: str) -> None:
    url = refused_url
    model = OpenAICompatibleModel("m", base_url=url, api_key_env=None, timeout=2, max_retries=0)
    started = time.perf_counter()
    with pytest.raises(ModelUnavailable, match="cannot reach") as info:
        model.complete(HI)
    assert time.perf_counter() - started < 20  # generous: the point is that it ends, refused, not retried
    assert f"{url}/chat/completions" in str(info.value)


def test_http_500_is_retried_then_unavailable(stub: StubServer) -> None:
    before = stub.counts["error500"]
    with pytest.raises(ModelUnavailable) as info:
        make(stub, "error500", max_retries=2).complete(HI)
    assert stub.counts["error500"] - before == 3  # first attempt + 2 retries
    message = str(info.value)
    assert "HTTP 500" in message and f"{stub.base_url}/chat/completions" in message


def test_http_429_is_retried_until_it_succeeds(stub: StubServer) -> None:
    r = make(stub, "error429", max_retries=2).complete(HI)
    assert r.text == "reply to: hi" and stub.counts["error429"] == 3


@pytest.mark.slow
def test_hang_times_out_within_the_timeout(stub: StubServer) -> None:
    started = time.perf_counter()
    with pytest.raises(ModelTimeout, match="within 0.5 s"):
        make(stub, "hang", timeout=0.5).complete(HI)
    assert 0.4 < time.perf_counter() - started < 20  # generous: the point is that it ends


@pytest.mark.slow
async def test_async_hang_times_out(stub: StubServer) -> None:
    with pytest.raises(ModelTimeout):
        await make(stub, "hang", timeout=0.5).acomplete(HI)


def test_truncated_reply_is_returned_or_raised(stub: StubServer) -> None:
    r = make(stub, "length").complete(HI)
    assert r.finish_reason == "length" and r.text == "reply to: hi"
    with pytest.raises(ModelOutputTruncated) as info:
        make(stub, "length", raise_on_truncation=True).complete(HI)
    assert info.value.text == "reply to: hi"


def test_key_never_in_repr_or_errors(monkeypatch: pytest.MonkeyPatch, refused_url: str) -> None:
    monkeypatch.setenv("MY_KEY", "sk-very-secret")
    url = refused_url
    model = OpenAICompatibleModel("m", base_url=url, api_key_env="MY_KEY", timeout=1, max_retries=0)
    assert "sk-very-secret" not in repr(model)
    with pytest.raises(ModelUnavailable) as info:
        model.complete(HI)
    assert "sk-very-secret" not in str(info.value)


@pytest.mark.parametrize(
    ("url", "provider"),
    [
        ("https://api.openai.com/v1", "openai"),
        ("https://api.groq.com/openai/v1", "groq"),
        ("http://127.0.0.1:8000/v1", "openai_compatible"),
        ("http://vllm.internal:8000/v1", "openai_compatible"),
    ],
)
def test_provider_for_url(url: str, provider: str) -> None:
    assert provider_for_url(url) == provider


# -- every reply shape ends as text, an empty answer, or a typed error quoting the server ------------------
TEXT_SHAPES = [  # (model, text, finish_reason)
    ("parts", "reply to: hi", "stop"),  # a thinking part skipped, two text parts joined
    ("null", "", "stop"),
    ("choices_empty", "", "empty"),  # an empty answer: the guard re-asks
    ("number", "0.10000000000000000001", "stop"),  # the literal as written, not float 0.1
]
ERROR_SHAPES = [  # (model, error type, message pattern, status, server_message)
    ("content_object", ModelError, r"choices\[0\]\.message\.content is an object, not text", 200, None),
    ("choices_object", ModelError, r"choices is an object, not a list: '\{", 200, None),
    ("no_choices", ModelError, r"the body has no choices", 200, None),
    ("list_body", ModelError, r"the body is a list, not an object", 200, None),
    ("usage_garbage", ModelError, r"usage\.prompt_tokens is not a token count: 'lots'", 200, None),
    ("html200", ModelError, r"not JSON .*'<html><head><title>502", 200, None),
    ("invalid_json", ModelError, r"not JSON .*oops", 200, None),
    ("truncated", ModelError, r"not JSON", 200, None),
    ("error200", ModelUnavailable, r"HTTP 200 with an error body \(1 attempt\(s\)\): 'model overloaded'", 200, "model overloaded"),
    ("error400", ModelUnavailable, r"HTTP 400 \(1 attempt\(s\)\): 'context length exceeded", 400,
     "context length exceeded: 9000 > 8192 tokens"),
    ("html502", ModelUnavailable, r"HTTP 502 \(1 attempt\(s\)\): '<html>", 502,
     "<html><head><title>502 Bad Gateway</title></head><body><h1>502 Bad Gateway</h1></body></html>"),
    ("error500", ModelUnavailable, r"HTTP 500 \(1 attempt\(s\)\): 'boom'", 500, "boom"),
    ("reset", ModelUnavailable, r"cannot reach .*chat/completions \(1 attempt\(s\)\)", None, None),
    ("reset_early", ModelUnavailable, r"cannot reach .*chat/completions \(1 attempt\(s\)\)", None, None),
]


async def _call(model: OpenAICompatibleModel, mode: str) -> Any:
    if mode == "sync":
        return model.complete(HI)
    try:
        return await model.acomplete(HI)
    finally:
        await model.aclose()


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(("name", "text", "finish"), TEXT_SHAPES)
async def test_reply_shapes_that_are_text(stub: StubServer, name: str, text: str, finish: str, mode: str) -> None:
    r = await _call(make(stub, name), mode)
    assert (r.text, r.finish_reason) == (text, finish)
    assert r.usage == Usage(12, 5, 8)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(("name", "kind", "pattern", "status", "said"), ERROR_SHAPES)
async def test_reply_shapes_that_are_typed_errors_quoting_the_server(
    stub: StubServer, name: str, kind: type, pattern: str, status: int | None, said: str | None, mode: str
) -> None:
    with pytest.raises(ModelError) as info:
        await _call(make(stub, name), mode)
    err = info.value
    assert type(err) is kind, repr(err)
    assert re.search(pattern, str(err)), str(err)
    assert f"{stub.base_url}/chat/completions" in str(err) and err.model == f"{stub.base_url}#{name}"
    assert err.status == status
    if said is not None:
        assert err.server_message == said
    assert not isinstance(err.__cause__, (TypeError, KeyError, IndexError, AttributeError))


@pytest.mark.parametrize(
    "literal", ["0.10000000000000000001", "1e400", "-0.0", "12345678901234567890123", "1E-7", "42"]
)
def test_a_number_content_is_read_exactly_as_written_in_every_notation(stub: StubServer, literal: str) -> None:
    stub.number = literal
    try:
        assert make(stub, "number").complete(HI).text == literal
    finally:
        stub.number = "0.10000000000000000001"


@pytest.mark.slow
def test_a_400_is_not_retried_and_a_502_html_page_is(stub: StubServer) -> None:
    before = stub.counts.copy()
    for name in ("error400", "html502", "error200"):
        with pytest.raises(ModelUnavailable, match=r"\(3 attempt\(s\)\)" if name != "error400" else r"\(1 attempt"):
            make(stub, name, max_retries=2).complete(HI)
    assert [stub.counts[n] - before[n] for n in ("error400", "html502", "error200")] == [1, 3, 3]


@pytest.mark.parametrize(("option", "value"), [("timeout", 0), ("timeout", -1), ("timeout", float("inf")),
                                               ("timeout", "soon"), ("call_timeout", 0), ("max_retries", -1)])
def test_timeouts_must_be_positive_seconds(option: str, value: Any) -> None:
    with pytest.raises(ValueError, match=option):
        OpenAICompatibleModel("m", base_url="http://127.0.0.1:9/v1", api_key_env=None, **{option: value})


def test_native_tools_false_leaves_the_tools_out_of_the_request() -> None:
    """The embedded server's model answers an offered tool with a JSON code block, not tool_calls."""
    from stepguard.model import GenerationSettings

    tool = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object", "properties": {}}}}
    settings = GenerationSettings(temperature=0, seed=0, max_tokens=8, tools=(tool,))
    native = OpenAICompatibleModel("m", base_url="http://127.0.0.1:9/v1", api_key_env=None)
    plain = OpenAICompatibleModel("m", base_url="http://127.0.0.1:9/v1", api_key_env=None, native_tools=False)
    assert native._body([], settings)["tools"] == [tool]
    assert "tools" not in plain._body([], settings)


def test_the_embedded_model_is_never_offered_native_tools(monkeypatch: pytest.MonkeyPatch) -> None:
    local = pytest.importorskip("stepguard.adapters.models.local")
    try:
        model = local.LocalModel()
    except Exception as exc:  # noqa: BLE001 - no runtime or model installed here
        pytest.skip(f"no embedded model: {exc}")
    monkeypatch.setattr(model.server, "start", lambda: None)  # no server: only the client it would bind
    monkeypatch.setattr(type(model.server), "pid", property(lambda self: 1))
    assert model.start().native_tools is False
