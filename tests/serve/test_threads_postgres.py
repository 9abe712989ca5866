"""One run of a thread at a time across two proxy processes sharing one Postgres checkpointer
(issue 41, part 6): the thread lock is a Postgres advisory lock, so a retry that lands on the other
worker while the first runs the refund step is refused (409 ``thread_in_flight``), and a streamed
run whose client went executes no tool; the refund runs once in all.

Starts its own PostgreSQL server (tests/_postgres.py) and two ``stepguard serve`` processes on a
scripted upstream (tests/_stub_server.py) with the tools of tests/_refund_tools.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests._paths import ROOT
from tests._postgres import postgres_server, postgres_skip_reason
from tests._serve_process import start_serve
from tests._stub_server import StubServer

pytestmark = [pytest.mark.slow, pytest.mark.skipif(postgres_skip_reason() is not None, reason=str(postgres_skip_reason()))]

LOOKUP = 'CALL catalog_lookup(sku="A-12")'
REFUND = 'CALL issue_refund(order_id="ORD-7", amount=19.99)'


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with postgres_server() as url:
        yield url


class _Upstream:
    """The scripted model: holds the first ask of the refund step until ``release`` (at most 20 s)."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.asked_refund = threading.Event()
        self.release = threading.Event()

    def __call__(self, prompt: str) -> str:
        if "issue_refund" not in prompt:
            self.asked.append("lookup")
            return LOOKUP
        self.asked.append("refund")
        if not self.asked_refund.is_set():
            self.asked_refund.set()
            self.release.wait(20)
        return REFUND


@pytest.fixture
def workers(pg_url: str, tmp_path: Path) -> Iterator[tuple[list[str], _Upstream, Path, list[int]]]:
    """Two proxy processes on one Postgres (one worker each: the process is the worker), their URLs,
    the stub upstream, the refund log file and the processes' ids."""
    log = tmp_path / "refunds.log"
    log.touch()
    upstream = _Upstream()
    with StubServer() as stub:
        stub.script = upstream
        env = {**os.environ, "STEPGUARD_TEST_REFUND_LOG": str(log)}
        procs: list[subprocess.Popen[bytes]] = []
        bases: list[str] = []
        try:
            for i in range(2):
                proc, base = start_serve(["--upstream", f"{stub.base_url}#scripted", "--procedures", str(ROOT / "examples"),
                                          "--tools", "tests._refund_tools:TOOLS", "--checkpoint", pg_url],
                                         tmp_path / f"w{i}.log", env=env, new_session=True)
                procs.append(proc)
                bases.append(base)
            yield bases, upstream, log, [p.pid for p in procs]
        finally:
            for proc in procs:
                if proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGTERM)
                    proc.wait(timeout=20)


def _body(thread_id: str, **extra: Any) -> dict[str, Any]:
    return {"model": "stepguard/refund", "messages": [],
            "stepguard": {"inputs": {"sku": "A-12", "amount": "19.99"}, "thread_id": thread_id}, **extra}


def _refunds(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if line.startswith("refund ")]


def _once_free(url: str, body: dict[str, Any]) -> httpx.Response:
    """POST ``body`` again while it is refused as a thread in flight; the first other answer."""
    for _ in range(400):
        resp = httpx.post(f"{url}/chat/completions", json=body, timeout=60)
        if not (resp.status_code == 409 and resp.json()["error"]["code"] == "thread_in_flight"):
            return resp
        time.sleep(0.05)
    pytest.fail("the thread stayed in flight")


def test_a_retry_on_the_other_worker_is_refused_while_the_first_runs_and_the_refund_runs_once(
        workers: tuple[list[str], _Upstream, Path, list[int]]) -> None:
    (w0, w1), upstream, log, pids = workers
    first: dict[str, httpx.Response] = {}
    t = threading.Thread(target=lambda: first.update(resp=httpx.post(f"{w0}/chat/completions", json=_body("pg-r1"), timeout=60)))
    t.start()
    assert upstream.asked_refund.wait(30)
    client = openai.OpenAI(base_url=w1, api_key="x", max_retries=0)
    with pytest.raises(openai.ConflictError) as err:  # the other worker, the same thread, the first run in flight
        client.chat.completions.create(model="stepguard/refund", messages=[], extra_body={"stepguard": _body("pg-r1")["stepguard"]})
    body = err.value.body
    assert isinstance(body, dict) and body["code"] == "thread_in_flight" and "'pg-r1'" in body["message"]
    assert "another process" in body["message"]
    upstream.release.set()
    t.join(60)
    assert first["resp"].status_code == 200, first["resp"].text
    again = httpx.post(f"{w1}/chat/completions", json=_body("pg-r1"), timeout=60)
    assert again.status_code == 200 and again.json()["choices"][0]["message"]["content"] == "RF-ORD-7"
    assert len(_refunds(log)) == 1, log.read_text()


def test_a_streamed_client_that_leaves_during_the_refund_call_and_reconnects_to_the_other_worker_refunds_once(
        workers: tuple[list[str], _Upstream, Path, list[int]]) -> None:
    (w0, w1), upstream, log, pids = workers
    client = openai.OpenAI(base_url=w0, api_key="x", max_retries=0)
    stream = client.chat.completions.create(model="stepguard/refund", messages=[], stream=True,
                                            extra_body={"stepguard": _body("pg-r2")["stepguard"]})
    next(iter(stream))
    assert upstream.asked_refund.wait(30)
    stream.close()  # the client leaves with the refund step's model call in flight
    upstream.release.set()  # the stopped run gets its answer: it must not act on it
    resp = _once_free(w1, _body("pg-r2", stream=True))
    assert resp.status_code == 200 and '"status":"verified"' in resp.text, resp.text
    assert _refunds(log) == [f"refund {pids[1]}"], log.read_text()  # once, by the reconnect's worker
    assert upstream.asked == ["lookup", "refund", "refund"]  # the stopped run asked the refund step; the resume asked again
