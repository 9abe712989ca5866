"""Every way in streams what verifies while the model is still writing (issue 29.4).

A scripted streaming stub server (``lines``: one line an event) holds its stream after a few lines
until the test releases it. Each test reads the first verified step from its way in (``Guard.stream``,
``Guard.astream``, ``GuardedOpenAI(..., stream=True)`` through the real ``openai`` client, the
proxy's server-sent events, the LangGraph node's custom stream) and only then releases the server:
a way in that waited for the model's whole reply would never see a step before the release (the
server writes nothing more until then), so each test proves the order of events, not a time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any, TypedDict

import openai
import pytest

from stepguard import Guard, GuardConfig
from stepguard.adapters import GuardedOpenAI, guarded_node, load_model
from stepguard.guard import GuardResult, StepOutcome
from stepguard.procedure import parse_procedure
from tests._stub_server import StubServer

pytestmark = pytest.mark.slow

N = 12
PROC = parse_procedure("name: sums\ninputs: [x]\nsteps:\n" + "".join(
    f"  - {{var: s{k}, expr: s{k - 1} + {k}}}\n" if k > 1 else "  - {var: s1, expr: x + 1}\n" for k in range(1, N + 1)))
RIGHT = {f"s{k}": 2 + sum(range(1, k + 1)) for k in range(1, N + 1)}
HELD = 3
"""Lines the stub writes before it holds its stream: s1 and s2 are then judged (s3's line has started)."""


def _text(values: dict[str, int]) -> str:
    return "".join(f"{k} = {v}\n" for k, v in values.items())


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        server.line_s = 0.0
        server.hold_at = HELD
        server.script = lambda last: _text(RIGHT)
        yield server


def _held(stub: StubServer) -> None:
    """Assert the model is still writing (held mid-stream), then let it go on."""
    assert not stub.release.is_set() and stub.lines_sent["lines"] <= HELD  # (counted just after each write)
    stub.release.set()


Step = tuple[str, str | None, str, int | None]
"""A verified step as every way in tells it: ``(variable, value text, provenance, step index)``."""


def _told(step: StepOutcome) -> Step:
    return step.var, step.text, step.provenance, step.index


def _check(steps: list[Step], result: GuardResult) -> None:
    assert result.status == "verified" and result.values == RIGHT and result.usage.model_calls == 1
    assert steps == [(var, str(value), "model_verified", i) for i, (var, value) in enumerate(RIGHT.items())]


def test_guard_stream_yields_a_verified_step_while_the_model_writes(stub: StubServer) -> None:
    guard = Guard(load_model(f"{stub.base_url}#lines"), GuardConfig(streamed=True))
    steps: list[StepOutcome] = []
    result = None
    for item in guard.stream(PROC, {"x": 2}):
        if isinstance(item, StepOutcome):
            if not steps:
                assert item.var == "s1" and item.value == RIGHT["s1"] and item.index == 0
                _held(stub)
            steps.append(item)
        elif isinstance(item, GuardResult):
            result = item
    assert result is not None
    _check([_told(s) for s in steps], result)
    assert all(s.chunk == 0 and s.reprompts == 0 for s in steps)
    assert [s.model_dump() for s in steps] == [s.model_dump() for s in result.steps]  # what was told is what committed


def test_guard_astream_yields_a_verified_step_while_the_model_writes(stub: StubServer) -> None:
    async def main() -> tuple[list[Step], GuardResult | None]:
        guard = Guard(load_model(f"{stub.base_url}#lines"), GuardConfig(streamed=True))
        steps: list[Step] = []
        result = None
        async for item in guard.astream(PROC, {"x": 2}):
            if isinstance(item, StepOutcome):
                if not steps:
                    _held(stub)
                steps.append(_told(item))
            elif isinstance(item, GuardResult):
                result = item
        return steps, result

    steps, result = asyncio.run(main())
    assert result is not None
    _check(steps, result)


def _guarded_call(stream: bool = True) -> dict[str, Any]:
    return {"model": "lines", "messages": [{"role": "user", "content": "sum it"}], "stream": stream,
            "extra_body": {"stepguard": {"procedure": "sums", "inputs": {"x": 2}, "streamed": True}}}


def _step_of(chunk: Any) -> Step | None:
    """The step a chunk tells: the drop-in client's ``chunk.stepguard`` (a StepOutcome), or the proxy's
    event under ``stepguard`` (``{"event": "step", ...}``)."""
    report = getattr(chunk, "stepguard", None)
    if isinstance(report, StepOutcome):
        return _told(report)
    if isinstance(report, dict) and report.get("event") == "step":
        return report["var"], report["value"], report["provenance"], report["index"]
    return None


def _read_chunks(chunks: Any, stub: StubServer) -> tuple[list[Step], Any]:
    steps: list[Step] = []
    last = None
    for chunk in chunks:
        step = _step_of(chunk)
        if step is not None:
            if not steps:
                _held(stub)
            steps.append(step)
        last = chunk
    return steps, last


def test_the_drop_in_client_streams_a_verified_step_while_the_model_writes(stub: StubServer) -> None:
    client = GuardedOpenAI(openai.OpenAI(base_url=stub.base_url, api_key="x", max_retries=0), procedures={"sums": PROC})
    steps, last = _read_chunks(client.chat.completions.create(**_guarded_call()), stub)
    _check(steps, last.stepguard)
    sent = [r for r in stub.requests if r.get("model") == "lines"]
    assert len(sent) == 1 and sent[0]["stream"] is True  # the guard's one call streamed through the user's client


def test_the_async_drop_in_client_streams_a_verified_step_while_the_model_writes(stub: StubServer) -> None:
    async def main() -> tuple[list[Step], Any]:
        client = GuardedOpenAI(openai.AsyncOpenAI(base_url=stub.base_url, api_key="x", max_retries=0), procedures={"sums": PROC})
        steps: list[Step] = []
        last = None
        async for chunk in await client.chat.completions.create(**_guarded_call()):
            step = _step_of(chunk)
            if step is not None:
                if not steps:
                    _held(stub)
                steps.append(step)
            last = chunk
        return steps, last

    steps, last = asyncio.run(main())
    _check(steps, last.stepguard)


def test_the_proxy_streams_a_verified_step_while_the_model_writes(stub: StubServer) -> None:
    pytest.importorskip("starlette", reason="the serve extra is not installed")
    from stepguard.serve import BackgroundServer, Upstream, create_app

    app = create_app(Upstream(f"{stub.base_url}#lines"), {"sums": PROC})
    with BackgroundServer(app) as proxy:
        client = openai.OpenAI(base_url=proxy.base_url, api_key="x", max_retries=0)
        stream = client.chat.completions.create(model="stepguard/sums", messages=[], stream=True,
                                                extra_body={"stepguard": {"inputs": {"x": 2}, "streamed": True}})
        steps, last = _read_chunks(stream, stub)
    result = GuardResult.model_validate((last.model_extra or {})["stepguard"])
    _check(steps, result)


class _State(TypedDict, total=False):
    x: int
    result: dict[str, Any]


def test_the_langgraph_node_surfaces_each_verified_step_in_the_custom_stream(stub: StubServer) -> None:
    from langgraph.graph import END, START, StateGraph

    node = guarded_node(load_model(f"{stub.base_url}#lines"), PROC, output_key="result", config=GuardConfig(streamed=True))
    graph = StateGraph(_State)
    graph.add_node("sums", node)
    graph.add_edge(START, "sums")
    graph.add_edge("sums", END)
    app = graph.compile()
    seen: list[dict[str, Any]] = []
    final: dict[str, Any] = {}
    for mode, data in app.stream({"x": 2}, stream_mode=["custom", "values"]):
        if mode == "custom":
            if not seen:
                _held(stub)
            seen.append(data)
        else:
            final = data
    assert final["result"]["status"] == "verified"
    assert [d["stepguard"]["step"]["var"] for d in seen] == list(RIGHT)
    assert seen[0]["stepguard"] == {"node": "sums", "procedure": "sums",
                                    "step": {"var": "s1", "value": RIGHT["s1"], "type": "number", "scale": None,
                                             "provenance": "model_verified", "grade": "exact", "reprompts": 0, "chunk": 0,
                                             "index": 0, "shape": "scalar"}}


@pytest.mark.parametrize("tail", ["s1 = 99\n", "s1 = 99"])  # a line of its own, or the reply's last, unfinished
def test_a_verified_step_written_again_later_stands_and_is_yielded_once(stub: StubServer, tail: str) -> None:
    stub.hold_at = None
    stub.script = lambda last: _text(RIGHT) + tail
    items = list(Guard(load_model(f"{stub.base_url}#lines"), GuardConfig(streamed=True)).stream(PROC, {"x": 2}))
    steps = [i for i in items if isinstance(i, StepOutcome)]
    result = items[-1]
    assert isinstance(result, GuardResult)
    _check([_told(s) for s in steps], result)  # the stream was cut before the line that wrote s1 again


def test_a_client_that_disconnects_from_the_proxy_mid_stream_stops_the_upstream_generating(stub: StubServer) -> None:
    pytest.importorskip("starlette", reason="the serve extra is not installed")
    import httpx

    from stepguard.serve import BackgroundServer, Upstream, create_app

    stub.hold_at = None
    stub.line_s = 0.2  # the whole reply would take 2.4 s
    app = create_app(Upstream(f"{stub.base_url}#lines"), {"sums": PROC})
    body = {"model": "stepguard/sums", "messages": [], "stream": True, "stepguard": {"inputs": {"x": 2}, "streamed": True}}
    with BackgroundServer(app) as proxy, httpx.Client(timeout=30) as client:
        with client.stream("POST", f"{proxy.base_url}/chat/completions", json=body) as resp:
            for line in resp.iter_lines():
                if '"event":"step"' in line:
                    break  # the first verified step: the client goes away, mid-stream
        for _ in range(200):  # the upstream sees its connection closed at its next write
            if stub.aborted["lines"]:
                break
            time.sleep(0.05)
    assert stub.aborted["lines"] == 1 and stub.lines_sent["lines"] < N


def test_closing_the_drop_in_clients_stream_mid_window_stops_the_model_generating(stub: StubServer) -> None:
    stub.hold_at = None
    stub.line_s = 0.2  # the whole reply would take 2.4 s
    client = GuardedOpenAI(openai.OpenAI(base_url=stub.base_url, api_key="x", max_retries=0), procedures={"sums": PROC})
    stream = client.chat.completions.create(**_guarded_call())
    for chunk in stream:
        if _step_of(chunk) is not None:
            break
    stream.close()
    for _ in range(200):  # the server sees its connection closed at its next write
        if stub.aborted["lines"]:
            break
        time.sleep(0.05)
    assert stub.aborted["lines"] == 1 and stub.lines_sent["lines"] < N


@pytest.mark.parametrize("use_async", [False, True])
def test_the_langgraph_node_tells_a_deviation_and_the_step_it_fixed_in_the_custom_stream(use_async: bool) -> None:
    from langgraph.graph import END, START, StateGraph

    from tests._fakes import ScriptedModel

    node = guarded_node(ScriptedModel(faults={"s3": ["wrong"]}), PROC, output_key="result",
                        config=GuardConfig(chunk_size=4, ladder=("restate",)))
    graph = StateGraph(_State)
    graph.add_node("sums", node)
    graph.add_edge(START, "sums")
    graph.add_edge("sums", END)
    app = graph.compile()

    async def collect() -> list[Any]:
        return [item async for item in app.astream({"x": 2}, stream_mode=["custom", "values"])]

    items = asyncio.run(collect()) if use_async else list(app.stream({"x": 2}, stream_mode=["custom", "values"]))
    told = [data["stepguard"] for mode, data in items if mode == "custom"]
    assert [("deviation", t["deviation"]["step"], t["deviation"]["kind"]) if "deviation" in t else ("step", t["step"]["var"])
            for t in told][:4] == [("step", "s1"), ("step", "s2"), ("deviation", "s3", "arithmetic_error"), ("step", "s3")]
    assert told[3]["step"]["reprompts"] == 1 and items[-1][1]["result"]["status"] == "verified"
