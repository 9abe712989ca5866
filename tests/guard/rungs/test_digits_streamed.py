"""Faults found by the breaker in the streamed guard and the digit rungs used together."""

from __future__ import annotations

import asyncio

import pytest

from stepguard import Guard, GuardConfig, Procedure
from stepguard.guard.rungs import get_rung, rung_names
from tests._fakes import DIGIT_PRODUCT as PRODUCT, ScriptedModel, asked_steps as _asked_steps

pytestmark = pytest.mark.slow

SHEET = len(get_rung("digits").derive(PRODUCT, 2, {"x": 4789, "y": 356}).steps)  # type: ignore[union-attr]
"""The sub-steps of ``4789 * 356`` digit by digit."""


@pytest.mark.parametrize("use_async", [False, True])
def test_a_streamed_runs_digit_rung_asks_one_sub_step_a_call(use_async: bool) -> None:
    """In streamed mode the digit rung's nested run asked the whole sheet (:data:`SHEET` sub-steps) in one
    streamed window, showing the model every carry and partial product it was about to write:
    the step was then marked model_verified from digits the guard wrote into the prompt."""
    model = ScriptedModel(always_wrong={"r"})
    guard = Guard(model, GuardConfig(ladder=("digits",), max_reprompts_per_step=1, streamed=True))
    run = guard.arun(PRODUCT, {"a": 4789, "b": 356}) if use_async else None
    result = asyncio.run(run) if run is not None else guard.run(PRODUCT, {"a": 4789, "b": 356})
    assert result.status == "verified" and result.values["r"] == 4789 * 356
    nested = [a for a in map(_asked_steps, model.calls) if any(v.startswith("d") for v in a)]
    assert len(nested) == SHEET and all(len(asked) == 1 for asked in nested), [len(a) for a in nested]


def test_a_streamed_runs_one_at_a_time_rung_asks_one_sub_step_a_call() -> None:
    """The neighbour: ``chain`` (one sub-step a call, operands written into the line) under a streamed run."""
    proc = Procedure.model_validate({"name": "c", "inputs": ["a", "b"], "steps": [
        {"var": "x", "expr": "a"}, {"var": "r", "expr": "max(0, min(x, 50000) - b) * 3"}]})
    model = ScriptedModel(always_wrong={"r"})
    result = Guard(model, GuardConfig(ladder=("chain",), max_reprompts_per_step=1, streamed=True)).run(proc, {"a": 61000, "b": 12000})
    assert result.status == "verified"
    nested = [a for a in map(_asked_steps, model.calls) if any(v.startswith("t") for v in a)]
    assert len(nested) >= 3 and all(len(asked) == 1 for asked in nested), nested


@pytest.mark.parametrize("name", rung_names())
def test_no_rungs_nested_run_is_streamed(name: str) -> None:
    """A derived run's sub-steps are asked by its rung's own chunking (docs/policies.md, "Streamed
    mode": re-asks use the chunking and ladder of chunked mode), never as a streamed window."""
    rung = get_rung(name)
    cfg = rung.nested_config(GuardConfig(streamed=True, window=100), 1, None, None)
    assert cfg.streamed is False


class _FailsOnce(ScriptedModel):
    """A scripted model whose call number ``fail_at`` (0-based) raises a model error, once."""

    def __init__(self, fail_at: int, **kw: object) -> None:
        super().__init__(**kw)  # type: ignore[arg-type]
        self.fail_at, self.failed = fail_at, False

    def complete(self, messages, settings=None):
        if len(self.calls) == self.fail_at and not self.failed:
            from stepguard.errors import ModelError

            self.failed = True
            raise ModelError("the server went away", "scripted")
        return super().complete(messages, settings)


@pytest.mark.parametrize("streamed", [False, True])
@pytest.mark.parametrize("use_async", [False, True])
def test_a_run_that_fails_inside_a_digit_rung_resumes_without_asking_a_verified_sub_step_again(tmp_path, streamed, use_async):
    """A model error (or a kill) at the 10th sub-step of the digit rung: the 9 sub-steps verified
    before it were asked again on resume (every carry re-asked, 9 calls lost), and the partial
    result said the thread had made 1 call where it had made 10."""
    from stepguard import sqlite_checkpointer
    from stepguard.errors import ModelError

    db = tmp_path / "ck.sqlite"
    cfg = GuardConfig(ladder=("digits",), max_reprompts_per_step=1, streamed=streamed)
    inputs = {"a": 4789, "b": 356}

    def run(model):
        guard = Guard(model, cfg, checkpointer=sqlite_checkpointer(db))
        return asyncio.run(guard.arun(PRODUCT, inputs, "t")) if use_async else guard.run(PRODUCT, inputs, "t")

    first = _FailsOnce(10, always_wrong={"r"})  # call 0: the step; calls 1-9: d1 .. d9; call 10 (d10) fails
    with pytest.raises(ModelError) as err:
        run(first)
    assert err.value.result is not None and err.value.result.usage.model_calls == 10
    assert err.value.result.procedure == PRODUCT.name and err.value.result.values["r"] is None
    again = ScriptedModel(always_wrong={"r"})
    result = run(again)
    assert result.status == "verified" and result.values["r"] == 4789 * 356
    asked = [a[0] for a in map(_asked_steps, again.calls)]
    assert asked == [f"d{k}" for k in range(10, SHEET + 1)], asked  # from the sub-step in flight on; none twice, none lost
    assert result.usage.model_calls == 1 + SHEET and result.spent.model_calls == SHEET - 9


def test_a_client_that_leaves_the_proxy_during_a_digit_rung_stops_the_upstream_calls() -> None:
    """The client went after the digit rung's reprompt event; the proxy went on to make every one of
    the rung's sub-step calls (:data:`SHEET`) upstream (a run slot held for a reader that had gone)."""
    pytest.importorskip("starlette", reason="the serve extra is not installed")
    import threading
    import time

    import httpx

    from stepguard.serve import BackgroundServer, Upstream, create_app
    from tests._stub_server import StubServer

    answers = ScriptedModel(always_wrong={"r"})
    calls: list[float] = []
    lock = threading.Lock()

    def script(message: str) -> str:
        with lock:
            calls.append(time.monotonic())
            text = answers.complete([{"role": "user", "content": message}]).text
        time.sleep(0.05)
        return text

    with StubServer() as stub:
        stub.script = script
        app = create_app(Upstream(f"{stub.base_url}#scripted"), {"d": PRODUCT})
        body = {"model": "stepguard/d", "messages": [], "stream": True,
                "stepguard": {"inputs": {"a": 4789, "b": 356}, "ladder": ["digits"], "max_reprompts_per_step": 1}}
        with BackgroundServer(app) as proxy, httpx.Client(timeout=30) as client:
            with client.stream("POST", f"{proxy.base_url}/chat/completions", json=body) as resp:
                for line in resp.iter_lines():
                    if '"rung":"digits"' in line:
                        break  # the client goes while the rung's sub-steps are asked
            left_at = time.monotonic()
            for _ in range(100):  # the proxy's run ends once it sees the client gone
                time.sleep(0.05)
                if calls and time.monotonic() - calls[-1] > 1.0:
                    break
    after = [t for t in calls if t > left_at]
    assert len(calls) < 1 + SHEET and len(after) <= 3, (len(calls), len(after))


@pytest.mark.parametrize("use_async", [False, True])
def test_a_run_stopped_from_another_thread_inside_a_digit_rung_asks_nothing_more_and_resumes(tmp_path, use_async: bool) -> None:
    """``stop``, set by another thread while the rung's nested run asks its sub-steps: no model call
    starts after it (the nested run's included), the run raises RunClosed with its partial result,
    and the thread resumes at the sub-step in flight."""
    import threading

    from stepguard import RunClosed, sqlite_checkpointer

    stop = threading.Event()

    class StopsAtD5(ScriptedModel):
        def complete(self, messages, settings=None):
            if "d5 = " in str(messages[-1]["content"]).split("Steps:", 1)[-1]:
                threading.Thread(target=stop.set).start()
                threading.Event().wait(0.2)
            return super().complete(messages, settings)

    cfg = GuardConfig(ladder=("digits",), max_reprompts_per_step=1)
    model = StopsAtD5(always_wrong={"r"})
    guard = Guard(model, cfg, checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite"))
    with pytest.raises(RunClosed) as err:
        if use_async:
            asyncio.run(guard.arun(PRODUCT, {"a": 4789, "b": 356}, "t", stop=stop))
        else:
            guard.run(PRODUCT, {"a": 4789, "b": 356}, "t", stop=stop)
    assert len(model.calls) == 1 + 5  # the step, d1 .. d5 (in flight when stop was set); nothing after
    assert err.value.result is not None and err.value.result.usage.model_calls == 6
    again = ScriptedModel(always_wrong={"r"})
    result = Guard(again, cfg, checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite")).run(PRODUCT, {"a": 4789, "b": 356}, "t")
    assert result.status == "verified" and [a[0] for a in map(_asked_steps, again.calls)][0] == "d6"
