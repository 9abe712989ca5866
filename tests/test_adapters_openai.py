"""OpenAICompatibleModel against a local stub server: replies, usage, retries, timeouts, truncation.

Every case keeps its timeouts short; nothing here may hang.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from stepguard.adapters.local import free_port
from stepguard.adapters.openai_compat import OpenAICompatibleModel, provider_for_url
from stepguard.errors import ModelOutputTruncated, ModelTimeout, ModelUnavailable
from stepguard.model import ChatModel, GenerationSettings, Usage
from tests._stub_server import StubServer

HI = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(hang_s=5.0) as server:
        yield server


def make(stub: StubServer, model: str = "ok", **kw) -> OpenAICompatibleModel:
    kw.setdefault("timeout", 2.0)
    kw.setdefault("max_retries", 0)
    return OpenAICompatibleModel(model, base_url=stub.base_url, api_key_env=None, **kw)


def test_reply_usage_cached_tokens_latency(stub: StubServer) -> None:
    with make(stub) as model:
        assert isinstance(model, ChatModel)
        r = model.complete(HI)
    assert r.text == "reply to: hi"
    assert r.usage == Usage(input_tokens=12, output_tokens=5, cached_tokens=8)
    assert r.finish_reason == "stop" and r.model == "ok" and not r.simulated
    assert 0 < r.latency_s < 2


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


def test_unreachable_endpoint_is_unavailable_quickly() -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    model = OpenAICompatibleModel("m", base_url=url, api_key_env=None, timeout=2, max_retries=0)
    started = time.perf_counter()
    with pytest.raises(ModelUnavailable, match="cannot reach") as info:
        model.complete(HI)
    assert time.perf_counter() - started < 2
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


def test_hang_times_out_within_the_timeout(stub: StubServer) -> None:
    started = time.perf_counter()
    with pytest.raises(ModelTimeout, match="within 0.5 s"):
        make(stub, "hang", timeout=0.5).complete(HI)
    assert 0.4 < time.perf_counter() - started < 2.5


async def test_async_hang_times_out(stub: StubServer) -> None:
    with pytest.raises(ModelTimeout):
        await make(stub, "hang", timeout=0.5).acomplete(HI)


def test_truncated_reply_is_returned_or_raised(stub: StubServer) -> None:
    r = make(stub, "length").complete(HI)
    assert r.finish_reason == "length" and r.text == "reply to: hi"
    with pytest.raises(ModelOutputTruncated) as info:
        make(stub, "length", raise_on_truncation=True).complete(HI)
    assert info.value.text == "reply to: hi"


def test_key_never_in_repr_or_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_KEY", "sk-very-secret")
    url = f"http://127.0.0.1:{free_port()}/v1"
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
