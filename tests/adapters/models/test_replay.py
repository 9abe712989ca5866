"""Record and replay: cassettes keyed by (model, messages, settings)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stepguard.adapters import OpenAICompatibleModel, RecordingModel, ReplayModel, request_key
from stepguard.errors import ModelError
from stepguard.model import ChatModel, ChatResponse, GenerationSettings, Usage
from tests._stub_server import StubServer


class Counter:
    """A fake model answering ``n: <last message>`` with a call counter."""

    spec = "fake:counter"
    provider = "fake"
    model_name = "counter"
    simulated = False

    def __init__(self) -> None:
        self.calls = 0

    def complete(self, messages, settings=None) -> ChatResponse:
        self.calls += 1
        return ChatResponse(f"{self.calls}: {messages[-1]['content']}", Usage(3, 2, 1), "stop", 0.25, "counter")

    async def acomplete(self, messages, settings=None) -> ChatResponse:
        return self.complete(messages, settings)


def msgs(text: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": "be exact"}, {"role": "user", "content": text}]


def test_key_is_stable_and_sensitive() -> None:
    k = request_key("m", msgs("a"), None)
    assert k == request_key("m", msgs("a"), GenerationSettings())  # None == all defaults
    assert len(k) == 64
    assert k != request_key("m2", msgs("a"), None)
    assert k != request_key("m", msgs("b"), None)
    assert k != request_key("m", msgs("a"), GenerationSettings(seed=1))


def test_record_then_replay(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "cassette.jsonl"
    inner = Counter()
    rec = RecordingModel(inner, path)
    assert isinstance(rec, ChatModel)
    first = rec.complete(msgs("a"))
    rec.complete(msgs("b"), GenerationSettings(temperature=0.5))
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(lines) == 2 and lines[0]["request"]["model"] == "counter"

    replay = ReplayModel(path)
    assert isinstance(replay, ChatModel) and replay.model_name == "counter"
    assert replay.complete(msgs("a")) == first
    assert replay.complete(msgs("b"), GenerationSettings(temperature=0.5)).text == "2: b"
    assert inner.calls == 2  # replay never calls the inner model


def test_missing_request_names_its_key(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    RecordingModel(Counter(), path).complete(msgs("a"))
    replay = ReplayModel(path)
    key = request_key("counter", msgs("zzz"), None)
    with pytest.raises(ModelError, match=key):
        replay.complete(msgs("zzz"))
    with pytest.raises(ModelError, match="not in cassette"):
        replay.complete(msgs("a"), GenerationSettings(seed=9))  # other settings: other key


def test_repeated_request_replays_in_order_then_repeats_last(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    rec = RecordingModel(Counter(), path)
    for _ in range(2):
        rec.complete(msgs("same"))
    replay = ReplayModel(path)
    assert [replay.complete(msgs("same")).text for _ in range(3)] == ["1: same", "2: same", "2: same"]


async def test_async_record_and_replay(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    r = await RecordingModel(Counter(), path).acomplete(msgs("x"))
    assert (await ReplayModel(path).acomplete(msgs("x"))) == r


def test_bad_cassettes(tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="cannot read cassette"):
        ReplayModel(tmp_path / "missing.jsonl")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"key": "k"}\nnot json\n')
    with pytest.raises(ModelError, match=r"bad\.jsonl:1"):
        ReplayModel(bad)
    two = tmp_path / "two.jsonl"
    a, b = Counter(), Counter()
    b.model_name = "other"
    RecordingModel(a, two).complete(msgs("a"))
    RecordingModel(b, two).complete(msgs("a"))
    with pytest.raises(ModelError, match="pass model_name"):
        ReplayModel(two)
    assert ReplayModel(two, model_name="other").complete(msgs("a")).text == "1: a"


@pytest.mark.slow
def test_record_a_real_endpoint_and_replay_offline(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    with StubServer() as stub:
        model = OpenAICompatibleModel("ok", base_url=stub.base_url, api_key_env=None, timeout=2, max_retries=0)
        live = RecordingModel(model, path).complete(msgs("2 + 3"))
        model.close()
    replayed = ReplayModel(path).complete(msgs("2 + 3"))
    assert replayed == live and replayed.usage.cached_tokens == 8
