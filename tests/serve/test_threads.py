"""One run of a thread at a time, and nothing runs for nobody (issue 41, part 6), through the proxy
served in-process with the stock ``openai`` client and a scripted upstream (tests/_stub_server.py):

- a retry of a request whose run is in flight is refused (409 ``thread_in_flight``, naming the thread,
  with ``Retry-After``), so one ``create()`` with the client's timeout and retries issues one refund;
- a streamed run whose client went during the refund step's model call executes no tool; the
  reconnect resumes and refunds once;
- an empty thread id is refused in every way in (proxy, drop-in client, CLI, ``Guard.run``);
- a reader that goes while the upstream sends no text (reasoning, tool-call or empty deltas, a stall)
  closes the upstream at once, through the proxy and through the drop-in client.

The same across two proxy processes sharing Postgres: tests/serve/test_threads_postgres.py.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests._paths import ROOT

pytest.importorskip("starlette", reason="the serve extra is not installed: pip install 'stepguard[serve]'")

from stepguard import Guard, load_procedure
from stepguard.guard import OptionError, sqlite_checkpointer
from stepguard.serve import BackgroundServer, Upstream, create_app, load_procedure_folder, open_checkpointer
from stepguard.tools import Tool
from tests._stub_server import StubServer

pytestmark = pytest.mark.slow

PROCS = load_procedure_folder(ROOT / "examples")
REFUND_IN = {"sku": "A-12", "amount": "19.99"}
LOOKUP = 'CALL catalog_lookup(sku="A-12")'
REFUND = 'CALL issue_refund(order_id="ORD-7", amount=19.99)'


class Refunds:
    """The refund procedure's world: its tools, and one log of what the upstream was asked and what ran."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.asked_refund = threading.Event()  # the upstream holds the refund step's model call ...
        self.release = threading.Event()  # ... until this is set
        self.hold_s = 10.0
        self.hold_in_tool = False  # hold in the refund tool instead of in its step's model call
        self.in_tool = threading.Event()

    def tools(self) -> list[Tool]:
        def catalog_lookup(sku: str) -> str:
            self.log.append("lookup")
            return "ORD-7"

        def issue_refund(order_id: str, amount: Any) -> str:
            self.log.append("refund")
            if self.hold_in_tool:  # between the intent (checkpointed) and the result
                self.in_tool.set()
                self.release.wait(self.hold_s)
            return f"RF-{order_id}-{self.log.count('refund')}"

        return [Tool("catalog_lookup", catalog_lookup), Tool("issue_refund", issue_refund)]

    def script(self, prompt: str) -> str:
        if "issue_refund" in prompt:
            self.log.append("ask refund")
            first = not self.asked_refund.is_set()
            self.asked_refund.set()
            if first and not self.hold_in_tool:
                self.release.wait(self.hold_s)
            return REFUND
        self.log.append("ask lookup")
        return LOOKUP


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


def _proxy(stub: StubServer, world: Refunds, tmp_path: Path) -> BackgroundServer:
    stub.script = world.script
    app = create_app(Upstream(f"{stub.base_url}#scripted"), PROCS, tools=world.tools(),
                     checkpointer=open_checkpointer(tmp_path / "ck.sqlite"))
    return BackgroundServer(app)


def _body(thread_id: str, **extra: Any) -> dict[str, Any]:
    return {"model": "stepguard/refund", "messages": [], "stepguard": {"inputs": REFUND_IN, "thread_id": thread_id}, **extra}


def _create(client: openai.OpenAI, thread_id: str, **kwargs: Any) -> Any:
    return client.chat.completions.create(model="stepguard/refund", messages=[],
                                          extra_body={"stepguard": {"inputs": REFUND_IN, "thread_id": thread_id}}, **kwargs)


def _until(check: Callable[[], bool], what: str, limit_s: float = 20.0) -> None:
    end = time.monotonic() + limit_s
    while not check():
        if time.monotonic() > end:
            pytest.fail(f"never happened: {what}")
        time.sleep(0.02)


def _after_the_run_in_flight(post: Callable[[], httpx.Response]) -> httpx.Response:
    """``post()`` again while it is refused as a thread in flight; the first other answer."""
    for _ in range(500):
        resp = post()
        if not (resp.status_code == 409 and resp.json()["error"]["code"] == "thread_in_flight"):
            return resp
        time.sleep(0.05)
    pytest.fail("the thread stayed in flight")


# --- one run of a thread at a time ----------------------------------------------------------------------


def test_a_request_for_a_thread_in_flight_is_refused_naming_it_and_the_refund_runs_once(stub: StubServer, tmp_path: Path) -> None:
    world = Refunds()
    with _proxy(stub, world, tmp_path) as server:
        first: dict[str, httpx.Response] = {}
        t = threading.Thread(target=lambda: first.update(resp=httpx.post(f"{server.base_url}/chat/completions",
                                                                         json=_body("r-1"), timeout=30)))
        t.start()
        assert world.asked_refund.wait(20)
        client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        with pytest.raises(openai.ConflictError) as err:  # a retry, landing while the first run holds the refund step
            _create(client, "r-1")
        body = err.value.body
        assert isinstance(body, dict) and body["code"] == "thread_in_flight" and body["param"] == "stepguard.thread_id"
        assert "'r-1'" in body["message"] and "in flight" in body["message"] and body["thread_id"] == "r-1"
        assert err.value.response.headers["retry-after"] == "1"
        streamed = httpx.post(f"{server.base_url}/chat/completions", json=_body("r-1", stream=True), timeout=30)
        assert streamed.status_code == 409 and streamed.json()["error"]["code"] == "thread_in_flight"  # before any event
        world.release.set()
        t.join(30)
        assert first["resp"].status_code == 200, first["resp"].text
        again = _create(client, "r-1")
        assert again.choices[0].message.content == first["resp"].json()["choices"][0]["message"]["content"] == "RF-ORD-7-1"
    assert world.log.count("refund") == 1, world.log


def test_a_retry_landing_between_the_intent_and_the_result_is_told_the_run_is_in_flight(stub: StubServer, tmp_path: Path) -> None:
    """It was told "the process stopped during the call" (a 409 that said the run was dead) while the
    refund was still running."""
    world = Refunds()
    world.hold_in_tool = True
    with _proxy(stub, world, tmp_path) as server:
        t = threading.Thread(target=lambda: httpx.post(f"{server.base_url}/chat/completions", json=_body("r-4"), timeout=30))
        t.start()
        assert world.in_tool.wait(20)
        retry = httpx.post(f"{server.base_url}/chat/completions", json=_body("r-4"), timeout=30)
        assert retry.status_code == 409 and retry.json()["error"]["code"] == "thread_in_flight", retry.text
        assert "stopped during" not in retry.text
        world.release.set()
        t.join(30)
        done = httpx.post(f"{server.base_url}/chat/completions", json=_body("r-4"), timeout=30)
        assert done.status_code == 200 and done.json()["choices"][0]["message"]["content"] == "RF-ORD-7-1"
    assert world.log.count("refund") == 1


def test_one_create_of_the_stock_client_with_its_timeout_and_retries_issues_one_refund(stub: StubServer, tmp_path: Path) -> None:
    """The issue's report: timeout, then the client's retries. Each retry lands on the run in flight and
    is refused (the client waits ``Retry-After`` and asks again); nothing starts a second run."""
    world = Refunds()
    world.hold_s = 1.5  # the refund step's model call outlasts the client's timeout
    with _proxy(stub, world, tmp_path) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x", timeout=0.5)  # default retries (2)
        try:
            resp = _create(client, "r-2")
            assert resp.choices[0].message.content == "RF-ORD-7-1"
        except (openai.APITimeoutError, openai.ConflictError):
            pass  # the client gave up while the run went on: a later retry answers from the thread
        done = _after_the_run_in_flight(lambda: httpx.post(f"{server.base_url}/chat/completions", json=_body("r-2"), timeout=30))
        assert done.status_code == 200 and done.json()["choices"][0]["message"]["content"] == "RF-ORD-7-1"
    assert world.log.count("refund") == 1, world.log
    assert world.log.count("ask refund") == 1  # no second run asked the refund step again


def test_a_streamed_run_whose_client_went_during_the_refund_call_runs_no_tool_and_the_reconnect_refunds_once(
        stub: StubServer, tmp_path: Path) -> None:
    world = Refunds()
    with _proxy(stub, world, tmp_path) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        stream = _create(client, "r-3", stream=True)
        next(iter(stream))
        assert world.asked_refund.wait(20)  # the refund step's model call is in flight ...
        stream.close()  # ... when the client goes
        world.release.set()  # the model answers the stopped run: it must not act on the answer

        def reconnect() -> httpx.Response:
            return httpx.post(f"{server.base_url}/chat/completions", json=_body("r-3", stream=True), timeout=30)

        resp = _after_the_run_in_flight(reconnect)
        assert resp.status_code == 200, resp.text
        assert '"status":"verified"' in resp.text and "RF-ORD-7-1" in resp.text
    # the stopped run asked the refund step and ran nothing; the resumed run asked it again and refunded once
    assert world.log == ["ask lookup", "lookup", "ask refund", "ask refund", "refund"], world.log


# --- an empty thread id names no thread -----------------------------------------------------------------


@pytest.mark.parametrize("thread_id", ["", "   ", "\t\n"])
def test_an_empty_thread_id_is_refused_by_the_proxy(stub: StubServer, tmp_path: Path, thread_id: str) -> None:
    world = Refunds()
    with _proxy(stub, world, tmp_path) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        for stream in (False, True):
            with pytest.raises(openai.BadRequestError) as err:
                _create(client, thread_id, stream=stream)
            body = err.value.body
            assert isinstance(body, dict) and body["param"] == "stepguard.thread_id" and body["code"] == "invalid_option"
            assert "must not be empty" in body["message"]
    assert world.log == []  # nothing asked, nothing run


@pytest.mark.parametrize("thread_id", ["", "  "])
def test_an_empty_thread_id_is_refused_by_the_drop_in_client_guard_and_cli(stub: StubServer, tmp_path: Path, thread_id: str) -> None:
    from typer.testing import CliRunner

    from stepguard.adapters import GuardedOpenAI, InvalidGuardedCall, load_model
    from stepguard.cli import app

    world = Refunds()
    stub.script = world.script
    proc = load_procedure(ROOT / "examples/refund.yaml")
    client = GuardedOpenAI(openai.OpenAI(base_url=stub.base_url, api_key="x"), procedures={"refund": proc},
                           checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite"), tools=world.tools())
    with pytest.raises(InvalidGuardedCall) as err:
        client.chat.completions.create(model="scripted", messages=[],
                                       extra_body={"stepguard": {"procedure": "refund", "inputs": REFUND_IN, "thread_id": thread_id}})
    assert isinstance(err.value, openai.OpenAIError) and "thread_id" in err.value.location and "must not be empty" in str(err.value)

    guard = Guard(load_model("sim:perfect", procedure=proc), checkpointer=sqlite_checkpointer(tmp_path / "g.sqlite"), tools=world.tools())
    with pytest.raises(OptionError, match="must not be empty") as gerr:
        guard.run(proc, REFUND_IN, thread_id=thread_id)
    assert isinstance(gerr.value, ValueError) and gerr.value.field == "thread_id"
    with pytest.raises(OptionError):
        list(guard.stream(proc, REFUND_IN, thread_id=thread_id))

    out = CliRunner().invoke(app, ["run", str(ROOT / "examples/invoice.yaml"), "-i", "subtotal=100.10", "-i", "rate=0.1",
                                   "--model", "sim:perfect", "--checkpoint", str(tmp_path / "cli.sqlite"), "--thread-id", thread_id])
    assert out.exit_code == 2 and "--thread-id" in out.output and "must not be empty" in out.output, out.output
    assert world.log == []


# --- a reader that goes closes the upstream, whatever it is sending -------------------------------------


@pytest.mark.parametrize("quiet", ["reasoning", "tool_calls", "empty", "stall"])
def test_a_client_that_goes_while_the_upstream_sends_no_text_closes_the_upstream(stub: StubServer, quiet: str) -> None:
    stub.script = lambda prompt: "".join(f"S{k} = 1\n" for k in range(1, 4))
    stub.line_s = 0.05
    if quiet == "stall":
        stub.hold_at, stub.hold_s = 0, 60.0  # nothing at all until released
    else:
        stub.quiet, stub.quiet_events = quiet, 1200  # a minute of events with no text
    with BackgroundServer(create_app(Upstream(f"{stub.base_url}#lines"), PROCS)) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="x", max_retries=0)
        stream = client.chat.completions.create(model="stepguard/invoice", messages=[], stream=True,
                                                extra_body={"stepguard": {"inputs": {"subtotal": "100.10", "rate": "0.1"},
                                                                          "streamed": True}})
        next(iter(stream))
        _until(lambda: stub.counts["lines"] >= 1 and (quiet == "stall" or stub.quiet_sent["lines"] >= 2), "the upstream began")
        stream.close()
        _until(lambda: stub.aborted["lines"] == 1, "the upstream saw its client go")
    assert stub.lines_sent["lines"] == 0  # not a line was written: the close came from the proxy, not from the next text
    assert stub.quiet_sent["lines"] < 1200


@pytest.mark.parametrize("quiet", ["reasoning", "stall"])
def test_closing_the_drop_in_clients_stream_closes_the_upstream_at_once(stub: StubServer, quiet: str) -> None:
    """The client has read a verified step; then the upstream writes no text while the caller closes."""
    from stepguard.adapters import GuardedOpenAI, load_model

    proc = PROCS["invoice"]
    sim = load_model("sim:perfect", procedure=proc)
    stub.script = lambda prompt: sim.complete([{"role": "user", "content": prompt}]).text  # right, one line a step
    stub.line_s = 0.05
    if quiet == "stall":
        stub.hold_at, stub.hold_s = 2, 60.0  # two lines (the first step is judged once the second starts), then nothing
    else:
        stub.quiet, stub.quiet_at, stub.quiet_events = quiet, 2, 1200
    client = GuardedOpenAI(openai.OpenAI(base_url=stub.base_url, api_key="x", max_retries=0), procedures={"invoice": proc})
    stream = client.chat.completions.create(model="lines", messages=[], stream=True,
                                            extra_body={"stepguard": {"procedure": "invoice", "streamed": True,
                                                                      "inputs": {"subtotal": "100.10", "rate": "0.1"}}})
    chunks = iter(stream)
    while getattr(getattr(next(chunks), "stepguard", None), "var", None) != "discount":
        pass  # read up to the first verified step
    _until(lambda: quiet == "stall" or stub.quiet_sent["lines"] >= 2, "the upstream went quiet")
    stream.close()  # returns once the run has stopped: its upstream call was closed from this side
    _until(lambda: stub.aborted["lines"] == 1, "the upstream saw its client go")
    assert stub.lines_sent["lines"] == 2  # not a line after the quiet began
    assert stub.quiet_sent["lines"] < 1200


def test_closing_the_async_drop_in_clients_stream_closes_the_upstream_at_once(stub: StubServer) -> None:
    """The async neighbour of the test above (it closed at once before too: closing the run cancels
    the read on the event loop); kept so that the abort from the stopping side never gets in its way."""
    import asyncio

    from stepguard.adapters import GuardedOpenAI, load_model

    proc = PROCS["invoice"]
    sim = load_model("sim:perfect", procedure=proc)
    stub.script = lambda prompt: sim.complete([{"role": "user", "content": prompt}]).text
    stub.line_s = 0.05
    stub.quiet, stub.quiet_at, stub.quiet_events = "reasoning", 2, 1200

    async def go() -> None:
        client = GuardedOpenAI(openai.AsyncOpenAI(base_url=stub.base_url, api_key="x", max_retries=0), procedures={"invoice": proc})
        stream = await client.chat.completions.create(model="lines", messages=[], stream=True,
                                                      extra_body={"stepguard": {"procedure": "invoice", "streamed": True,
                                                                                "inputs": {"subtotal": "100.10", "rate": "0.1"}}})
        chunks = stream.__aiter__()
        while getattr(getattr(await chunks.__anext__(), "stepguard", None), "var", None) != "discount":
            pass
        while stub.quiet_sent["lines"] < 2:
            await asyncio.sleep(0.02)
        await stream.close()

    asyncio.run(go())
    _until(lambda: stub.aborted["lines"] == 1, "the upstream saw its client go")
    assert stub.lines_sent["lines"] == 2 and stub.quiet_sent["lines"] < 1200
