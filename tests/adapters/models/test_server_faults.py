"""Server faults against the OpenAI-compatible adapter: retries and backoff where right, typed
errors where not; a guarded, checkpointed run survives an outage and resumes its committed prefix.

Time: every attempt has a total deadline (a server dripping one byte a second is cut off), a call
has one too, and the socket really stops. Every hostile reply shape and server behaviour, through
``Guard.run``/``arun`` and through ``GuardedOpenAI`` with the real ``openai`` clients, ends as a
GuardResult or a typed StepguardError, never a traceback. Bounds on elapsed time are generous:
the point is that each run ends, not how fast.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import openai
import pytest
from typer.testing import CliRunner

from stepguard import Guard, GuardConfig, GuardResult, sqlite_checkpointer
from stepguard.adapters import (
    GuardedBudgetExhausted,
    GuardedModelError,
    GuardedModelTimeout,
    GuardedModelUnavailable,
    GuardedOpenAI,
)
from stepguard.adapters.models.openai_compat import OpenAICompatibleModel
from stepguard.errors import (
    BudgetExhausted,
    ModelError,
    ModelOutputTruncated,
    ModelTimeout,
    ModelUnavailable,
    StepguardError,
)
from tests._fakes import CHAIN_INPUTS as INPUTS, ScriptedModel, chain_expected as _expected, chain_procedure as _procedure
from tests._stub_server import StubServer

MSG = [{"role": "user", "content": "hi"}]


@pytest.fixture(scope="module")
def stub():
    """One stub server for the module (hang requests are held 3 s)."""
    with StubServer(hang_s=3.0) as server:
        yield server


def _model(stub: StubServer, name: str, **kw) -> OpenAICompatibleModel:  # noqa: ANN003
    """An adapter on the stub, sending ``name`` as the model (which picks the stub's behaviour)."""
    return OpenAICompatibleModel(name, base_url=stub.base_url, api_key_env=None, **{"timeout": 5.0, "max_retries": 2, **kw})


@pytest.mark.slow
def test_connection_reset_mid_response_is_retried_then_model_unavailable(stub: StubServer) -> None:
    before = stub.counts["reset"]
    with _model(stub, "reset") as m, pytest.raises(ModelUnavailable, match="cannot reach") as info:
        m.complete(MSG)
    assert stub.counts["reset"] - before == 3  # first try + 2 retries
    assert info.value.model and "chat/completions" in str(info.value)


@pytest.mark.slow
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


@pytest.mark.slow
def test_slow_server_past_timeout_is_model_timeout(stub: StubServer) -> None:
    with _model(stub, "hang", timeout=0.3, max_retries=1) as m:
        t0 = time.perf_counter()
        with pytest.raises(ModelTimeout, match=r"within 0.3 s \(2 attempt"):
            m.complete(MSG)
    assert time.perf_counter() - t0 < 20  # generous: it ends


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


# -- time: a total deadline per attempt and per call; the socket stops ---------------------------------------
SLOW = ["drip", "drip_headers", "hang_forever"]  # one byte a second (body or headers), nothing at all


async def _call(m: OpenAICompatibleModel, mode: str) -> Any:
    if mode == "sync":
        return m.complete(MSG)
    try:
        return await m.acomplete(MSG)
    finally:
        await m.aclose()


def _wait_for(check: Any, limit_s: float = 15.0) -> bool:
    """Poll ``check()`` until true or ``limit_s`` passed (a generous bound on the server noticing)."""
    end = time.monotonic() + limit_s
    while not check() and time.monotonic() < end:
        time.sleep(0.05)
    return bool(check())


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("name", SLOW)
async def test_a_slow_server_is_cut_off_at_the_attempt_deadline(stub: StubServer, name: str, mode: str) -> None:
    before, aborted = stub.counts[name], stub.aborted[name]
    t0 = time.monotonic()
    with pytest.raises(ModelTimeout, match=rf"no complete reply from {stub.base_url}/chat/completions within 1 s \(2 attempt") as info:
        await _call(_model(stub, name, timeout=1.0, max_retries=1), mode)
    assert time.monotonic() - t0 < 20  # generous: per read each byte came within 1 s; the total did not
    assert stub.counts[name] - before == 2 and info.value.status is None
    if name != "hang_forever":  # the client closed the socket: the server's drip stopped on a failed write
        assert _wait_for(lambda: stub.aborted[name] - aborted == 2)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_the_call_deadline_bounds_all_attempts(stub: StubServer, mode: str) -> None:
    before = stub.counts["drip"]
    m = _model(stub, "drip", timeout=30.0, max_retries=5, call_timeout=1.5)
    t0 = time.monotonic()
    with pytest.raises(ModelTimeout, match=r"within the call's deadline of 1.5 s \(1 attempt"):
        await _call(m, mode)
    assert time.monotonic() - t0 < 20 and stub.counts["drip"] - before == 1


@pytest.mark.slow
def test_a_retry_after_past_the_call_deadline_is_not_waited_for() -> None:
    with StubServer() as fresh, _model(fresh, "retry_after", call_timeout=0.5) as m:
        with pytest.raises(ModelUnavailable, match=r"HTTP 429 \(1 attempt") as info:
            m.complete(MSG)
    assert fresh.counts["retry_after"] == 1 and info.value.status == 429


# -- guarded runs through every reply shape and server behaviour -------------------------------------------
RUN_ENDS = {  # model -> how a guarded run on it ends
    "parts": "verified", "scripted": "verified",
    "number": BudgetExhausted, "null": BudgetExhausted, "choices_empty": BudgetExhausted,
    "content_object": ModelError, "choices_object": ModelError, "no_choices": ModelError, "list_body": ModelError,
    "usage_garbage": ModelError, "html200": ModelError, "invalid_json": ModelError, "truncated": ModelError,
    "error200": ModelUnavailable, "error400": ModelUnavailable, "html502": ModelUnavailable,
    "error500": ModelUnavailable, "error503": ModelUnavailable, "reset": ModelUnavailable,
    "reset_early": ModelUnavailable, "drip": ModelTimeout, "drip_headers": ModelTimeout,
    "hang_forever": ModelTimeout, "hang": ModelTimeout,
}


def _answer(prompt: str) -> str:
    return ScriptedModel().complete([{"role": "user", "content": prompt}]).text


@pytest.fixture
def scripted(stub: StubServer) -> Any:
    """The stub answers every chunk prompt correctly (in whatever shape the model name picks)."""
    stub.script = _answer
    yield stub
    stub.script = None


def _ends(run: Any, proc: Any, expected: Any) -> None:
    if isinstance(expected, str):
        result = run()
        assert isinstance(result, GuardResult) and result.status == expected
        assert result.values == _expected(proc)
        return
    with pytest.raises(StepguardError) as info:
        run()
    assert type(info.value) is expected, repr(info.value)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(RUN_ENDS))
def test_guard_run_ends_well_on_every_shape(scripted: StubServer, name: str) -> None:
    proc, before = _procedure(6), scripted.counts[name]
    with _model(scripted, name, timeout=1.0, max_retries=1) as m:
        _ends(lambda: Guard(m, GuardConfig(chunk_size=3)).run(proc, INPUTS), proc, RUN_ENDS[name])
    assert scripted.counts[name] - before <= 60  # bounded work: attempts x (chunks + re-prompts)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["parts", "number", "choices_object", "error200", "drip", "hang_forever", "reset"])
async def test_guard_arun_ends_well_on_every_kind_of_shape(scripted: StubServer, name: str) -> None:
    proc = _procedure(6)
    m = _model(scripted, name, timeout=1.0, max_retries=1)
    expected = RUN_ENDS[name]
    try:
        if isinstance(expected, str):
            result = await Guard(m, GuardConfig(chunk_size=3)).arun(proc, INPUTS)
            assert result.status == expected and result.values == _expected(proc)
        else:
            with pytest.raises(StepguardError) as info:
                await Guard(m, GuardConfig(chunk_size=3)).arun(proc, INPUTS)
            assert type(info.value) is expected, repr(info.value)
    finally:
        await m.aclose()


# -- GuardedOpenAI: the user's real openai client, its errors typed ---------------------------------------
WRAPPED_ENDS = {
    "parts": "verified", "scripted": "verified", "null": GuardedBudgetExhausted, "choices_empty": GuardedBudgetExhausted,
    "number": GuardedModelError,  # the client already read 0.1000...1 as a float: its digits are gone, so refused
    "choices_object": GuardedModelError, "no_choices": GuardedModelError, "content_object": GuardedModelError,
    "list_body": GuardedModelError, "html200": GuardedModelError, "invalid_json": GuardedModelError,
    "error200": GuardedModelUnavailable, "error400": GuardedModelUnavailable, "error500": GuardedModelUnavailable,
    "html502": GuardedModelUnavailable, "reset": GuardedModelUnavailable, "hang": GuardedModelTimeout,
}
"""Each ends as stepguard's error of that kind that is also an ``openai.OpenAIError`` (stepguard/wire/_client_errors.py)."""


def _guarded_create(client: Any, name: str) -> Any:
    spec = {"stepguard": {"procedure": "p", "inputs": INPUTS}}
    return client.chat.completions.create(model=name, messages=[], extra_body=spec)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(WRAPPED_ENDS))
def test_guarded_openai_sync_ends_well_on_every_shape(scripted: StubServer, name: str) -> None:
    proc = _procedure(6)
    real = openai.OpenAI(base_url=scripted.base_url, api_key="k", max_retries=1, timeout=1.0)
    client = GuardedOpenAI(real, procedures={"p": proc}, config=GuardConfig(chunk_size=3))
    _ends(lambda: _guarded_create(client, name).stepguard, proc, WRAPPED_ENDS[name])


@pytest.mark.slow
@pytest.mark.parametrize("name", ["parts", "choices_object", "error500", "error200", "hang"])
async def test_guarded_openai_async_ends_well(scripted: StubServer, name: str) -> None:
    proc = _procedure(6)
    real = openai.AsyncOpenAI(base_url=scripted.base_url, api_key="k", max_retries=1, timeout=1.0)
    client = GuardedOpenAI(real, procedures={"p": proc}, config=GuardConfig(chunk_size=3))
    expected = WRAPPED_ENDS[name]
    if isinstance(expected, str):
        assert (await _guarded_create(client, name)).stepguard.status == expected
    else:
        with pytest.raises(StepguardError) as info:
            await _guarded_create(client, name)
        assert type(info.value) is expected, repr(info.value)
    await real.close()


def test_guarded_openai_http_500_is_model_unavailable_quoting_the_server(stub: StubServer) -> None:
    real = openai.OpenAI(base_url=stub.base_url, api_key="k", max_retries=0)
    client = GuardedOpenAI(real, procedures={"p": _procedure(3)})
    with pytest.raises(ModelUnavailable, match=r"HTTP 500 \(1 attempt\(s\)\): 'boom'") as info:
        _guarded_create(client, "error500")
    assert (info.value.status, info.value.server_message) == (500, "boom")


# -- the CLI: --timeout reaches the model ----------------------------------------------------------------
@pytest.mark.slow
def test_cli_run_timeout_ends_a_run_on_a_dripping_server(stub: StubServer, tmp_path: Path) -> None:
    from stepguard.cli import app
    from stepguard.cli._exit import ExitCode

    proc = tmp_path / "p.yaml"
    proc.write_text("name: p\ninputs: [x, y]\nsteps:\n  - {var: S1, expr: x}\n  - {var: S2, expr: x + y}\n")
    t0 = time.monotonic()
    result = CliRunner().invoke(app, ["run", str(proc), "-i", "x=7", "-i", "y=3", "--model",
                                      f"{stub.base_url}#drip", "--timeout", "1", "--chunked"])
    assert result.exit_code == ExitCode.MODEL, result.output
    assert "within 1 s (3 attempt(s))" in result.output and "Traceback" not in result.output
    followed = CliRunner().invoke(app, ["run", str(proc), "-i", "x=7", "-i", "y=3", "--model", f"{stub.base_url}#drip", "--timeout", "1",
                                        "--follow"])
    assert followed.exit_code == ExitCode.MODEL, followed.output  # a streamed window: the stall is named
    assert "the stream stalled" in followed.output and "Traceback" not in followed.output
    assert time.monotonic() - t0 < 30  # generous: 3 attempts of 1 s each


def test_cli_bench_run_passes_timeout_to_the_model(stub: StubServer) -> None:
    from stepguard.cli._open_model import open_model

    with open_model(f"{stub.base_url}#ok", 1.5) as chat:
        assert chat.timeout == 1.5
    with open_model(f"{stub.base_url}#ok") as chat:
        assert chat.timeout == 60.0


@pytest.mark.slow
@pytest.mark.parametrize("how", ["sync", "async"])
def test_a_streamed_reply_that_drips_bytes_but_no_event_is_cut_off_at_the_timeout(how: str) -> None:
    """The socket's read timeout alone never trips on a byte every 0.2 s; each event's read has ``timeout`` (a streamed
    window is the default's first try, so a dripping server must not hold a run past it). Without that bound the
    whole body is read (no event in it, no error) and the stub never sees its client go."""
    with StubServer(drip_s=0.2) as stub:
        _drip_cut_off(stub, how)


def _drip_cut_off(stub: StubServer, how: str) -> None:
    model = _model(stub, "drip", timeout=1.0, max_retries=0)

    def read_sync() -> str:
        return "".join(model.stream(MSG))

    async def read_async() -> str:
        stream = await model.astream(MSG)
        return "".join([delta async for delta in stream])

    before = stub.aborted["drip"]
    with pytest.raises(ModelTimeout, match="the stream stalled after 0 characters"):
        read_sync() if how == "sync" else asyncio.run(read_async())
    deadline = time.monotonic() + 10
    while stub.aborted["drip"] == before and time.monotonic() < deadline:  # the stub sees its client go
        time.sleep(0.05)
    assert stub.aborted["drip"] > before
