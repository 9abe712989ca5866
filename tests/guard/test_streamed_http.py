"""The streamed guard against a real HTTP server through the official ``openai`` client: the reply
arrives as server-sent events, and a cut closes the connection, so the server stops writing."""

from __future__ import annotations

import asyncio
import time

import pytest

from stepguard import Guard, GuardConfig
from stepguard.adapters import load_model
from stepguard.model import open_stream
from stepguard.procedure import parse_procedure
from tests._stub_server import StubServer

pytestmark = pytest.mark.slow

PROC = parse_procedure("inputs: [x]\nsteps:\n" + "".join(
    f"  - {{var: s{k}, expr: s{k - 1} + {k}}}\n" if k > 1 else "  - {var: s1, expr: x + 1}\n" for k in range(1, 21)))
RIGHT = {f"s{k}": 2 + sum(range(1, k + 1)) for k in range(1, 21)}


@pytest.fixture
def stub():
    with StubServer() as server:
        yield server


def _text(values: dict[str, int]) -> str:
    return "".join(f"{k} = {v}\n" for k, v in values.items())


def test_a_right_model_is_one_streamed_request(stub: StubServer) -> None:
    model = load_model(f"{stub.base_url}#sim")
    result = Guard(model, GuardConfig(streamed=True)).run(PROC, {"x": 2})
    assert result.status == "verified" and result.usage.model_calls == 1
    assert [r.get("stream") for r in stub.requests] == [True]


def test_a_cut_closes_the_connection_and_the_server_stops_writing(stub: StubServer) -> None:
    stub.line_s = 0.05
    wrong = {**RIGHT, "s3": 0}
    stub.script = lambda last: _text(wrong) if "s20" in last and "s3 = s2" in last else _text({"s3": RIGHT["s3"]})
    model = load_model(f"{stub.base_url}#lines")
    first = open_stream(model, [{"role": "user", "content": "s3 = s2 + 3 ... s20"}])
    got = ""
    for delta in first:
        got += delta
        if got.count("\n") == 4:
            first.close()
            break
    assert first.response is not None and first.response.finish_reason == "cut"
    assert first.response.text == _text(dict(list(wrong.items())[:4]))
    time.sleep(0.5)  # the server would have written every line by now had the stream stayed open
    assert stub.lines_sent["lines"] < 10 and stub.aborted["lines"] == 1


def test_the_guard_cuts_a_wrong_stream_and_resumes_from_the_next_step(stub: StubServer) -> None:
    stub.line_s = 0.01
    wrong = {**RIGHT, "s3": 0}

    def script(last: str) -> str:
        if "Recompute" in last or "was wrong" in last:
            return f"s3 = {RIGHT['s3']}\n"
        if "s4 = s3" in last and "s1 = x" not in last:
            return _text({k: v for k, v in RIGHT.items() if int(k[1:]) >= 4})
        return _text(wrong)

    stub.script = script
    result = Guard(load_model(f"{stub.base_url}#lines"), GuardConfig(streamed=True, ladder=("restate",))).run(PROC, {"x": 2})
    assert result.status == "verified" and result.values == RIGHT
    assert result.usage.model_calls == 3
    assert stub.aborted["lines"] == 1  # the first stream, cut after s4's line


def test_the_async_guard_streams_over_http(stub: StubServer) -> None:
    model = load_model(f"{stub.base_url}#sim")
    result = asyncio.run(Guard(model, GuardConfig(streamed=True)).arun(PROC, {"x": 2}))
    assert result.status == "verified" and result.usage.model_calls == 1


def test_a_stream_that_stalls_ends_typed_and_named(stub: StubServer) -> None:
    from stepguard.errors import ModelTimeout

    stub.line_s = 2.0  # the second line comes after the client's read timeout
    stub.script = lambda last: _text(RIGHT)
    model = load_model(f"{stub.base_url}#lines", timeout=0.5, max_retries=0)
    with pytest.raises(ModelTimeout, match=r"stream stalled after \d+ characters"):
        Guard(model, GuardConfig(streamed=True)).run(PROC, {"x": 2})
