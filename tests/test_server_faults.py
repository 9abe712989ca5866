"""Server faults against the OpenAI-compatible adapter: retries and backoff where right, typed
errors where not; a guarded, checkpointed run survives an outage and resumes its committed prefix."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from adapters.openai_compat import OpenAICompatibleModel
from stepguard import Guard, GuardConfig, sqlite_checkpointer
from stepguard.errors import ModelError, ModelOutputTruncated, ModelTimeout, ModelUnavailable
from tests._fakes import ScriptedModel
from tests._stub_server import StubServer
from tests.test_guard import INPUTS, _expected, _procedure

MSG = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def stub():
    """One stub server for the module (hang requests are held 3 s)."""
    with StubServer(hang_s=3.0) as server:
        yield server


def _model(stub: StubServer, name: str, **kw) -> OpenAICompatibleModel:  # noqa: ANN003
    """An adapter on the stub, sending ``name`` as the model (which picks the stub's behaviour)."""
    return OpenAICompatibleModel(name, base_url=stub.base_url, api_key_env=None, **{"timeout": 5.0, "max_retries": 2, **kw})


def test_connection_reset_mid_response_is_retried_then_model_unavailable(stub: StubServer) -> None:
    before = stub.counts["reset"]
    with _model(stub, "reset") as m, pytest.raises(ModelUnavailable, match="cannot reach") as info:
        m.complete(MSG)
    assert stub.counts["reset"] - before == 3  # first try + 2 retries
    assert info.value.model and "chat/completions" in str(info.value)


def test_429_with_retry_after_is_honoured(stub: StubServer) -> None:
    with _model(stub, "retry_after") as m:
        t0 = time.perf_counter()
        reply = m.complete(MSG)
        waited = time.perf_counter() - t0
    assert reply.text == "reply to: hi" and stub.counts["retry_after"] == 2
    assert waited >= 0.9  # Retry-After: 1 was waited for, not ignored


def test_503_retries_with_backoff_then_a_typed_error_naming_the_status(stub: StubServer) -> None:
    before = stub.counts["error503"]
    with _model(stub, "error503") as m, pytest.raises(ModelUnavailable, match="HTTP 503 .3 attempt"):
        m.complete(MSG)
    assert stub.counts["error503"] - before == 3


def test_truncated_json_body_is_a_model_error_not_a_crash(stub: StubServer) -> None:
    with _model(stub, "truncated") as m, pytest.raises(ModelError, match="not a chat completion") as info:
        m.complete(MSG)
    assert not isinstance(info.value, (ModelUnavailable, ModelTimeout))


def test_slow_server_past_timeout_is_model_timeout(stub: StubServer) -> None:
    with _model(stub, "hang", timeout=0.3, max_retries=1) as m:
        t0 = time.perf_counter()
        with pytest.raises(ModelTimeout, match=r"within 0.3 s \(2 attempt"):
            m.complete(MSG)
    assert time.perf_counter() - t0 < 3.0


def test_finish_reason_length_is_reported_or_raised(stub: StubServer) -> None:
    with _model(stub, "length") as m:
        assert m.complete(MSG).finish_reason == "length"
    with _model(stub, "length", raise_on_truncation=True) as m, pytest.raises(ModelOutputTruncated) as info:
        m.complete(MSG)
    assert info.value.text == "reply to: hi"


def test_a_changed_model_name_in_the_response_is_reported_as_is(stub: StubServer) -> None:
    with _model(stub, "renamed") as m:
        reply = m.complete(MSG)
    assert reply.model == "renamed-by-server" and m.model_name == "renamed"


@pytest.mark.slow
def test_guarded_run_surfaces_an_outage_and_resumes_the_committed_prefix(stub: StubServer, tmp_path: Path) -> None:
    proc = _procedure(12)
    scripted = ScriptedModel()
    asked: list[str] = []

    def script(prompt: str) -> str:
        """Answer like ScriptedModel; after the second chunk the server goes down."""
        asked.append(prompt.split("Steps:\n")[1].split(" = ")[0])
        text = scripted.complete([{"role": "user", "content": prompt}]).text
        if len(asked) == 2:
            stub.down = True
        return text

    stub.script = script
    try:
        with _model(stub, "scripted", max_retries=1) as m:
            guard = Guard(m, GuardConfig(chunk_size=3), sqlite_checkpointer(tmp_path / "ck.sqlite"))
            with pytest.raises(ModelUnavailable, match="HTTP 503"):
                guard.run(proc, INPUTS, thread_id="outage")
            assert asked == ["S1", "S4"]
            stub.down = False
            result = Guard(m, GuardConfig(chunk_size=3), sqlite_checkpointer(tmp_path / "ck.sqlite")).run(proc, INPUTS, thread_id="outage")
    finally:
        stub.down, stub.script = False, None
    assert asked == ["S1", "S4", "S7", "S10"]  # committed chunks S1..S6 were not asked again
    assert result.status == "verified" and result.values == _expected(proc)
    assert [s.chunk for s in result.steps][:6] == [0, 0, 0, 1, 1, 1]  # 0-based chunks, from the first run
