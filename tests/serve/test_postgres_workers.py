"""Several proxy workers on one Postgres checkpointer (issue 17, item 6): a guarded run whose worker dies
resumes on another worker, from its last committed step; no committed step is asked again.

Starts its own PostgreSQL server (tests/_postgres.py); skipped, with the reason, where none can start.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests._paths import ROOT
from tests._postgres import postgres_server, postgres_skip_reason
from tests._serve_process import start_serve
from tests._stub_server import StubServer

pytestmark = [pytest.mark.slow, pytest.mark.skipif(postgres_skip_reason() is not None, reason=str(postgres_skip_reason()))]

INPUTS = {"x": 3, "y": 4}


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    with postgres_server() as url:
        yield url


def test_postgres_checkpointer_keeps_a_finished_run_and_refuses_other_work(pg_url: str) -> None:
    from stepguard import CheckpointError, Guard, load_procedure
    from stepguard.adapters import load_model
    from stepguard.guard import postgres_checkpointer

    proc = load_procedure(ROOT / "examples/invoice.yaml")
    saver = postgres_checkpointer(pg_url)
    try:
        guard = Guard(load_model("sim:perfect", procedure=proc), checkpointer=saver)
        first = guard.run(proc, {"subtotal": "100.10", "rate": "0.1"}, thread_id="pg-1")
        again = guard.run(proc, {"subtotal": "100.10", "rate": "0.1"}, thread_id="pg-1")
        assert first.status == again.status == "verified" and again.usage.model_calls == first.usage.model_calls
        with pytest.raises(CheckpointError, match="inputs.rate"):
            guard.run(proc, {"subtotal": "100.10", "rate": "0.2"}, thread_id="pg-1")
    finally:
        saver.conn.close()


def test_a_thread_checkpointed_in_shape_2_resumes_from_postgres(pg_url: str) -> None:
    """A checkpoint written before the state's shape 3 (one channel per field) resumes from Postgres as from SQLite."""
    from stepguard import Guard
    from stepguard.guard import postgres_checkpointer
    from stepguard.procedure import parse_procedure
    from tests._fakes import FixedReplies
    from tests.guard.test_state_shape import PROC, SHAPE_2, _checkpoint

    proc = parse_procedure(PROC)
    saver = postgres_checkpointer(pg_url)
    try:
        guard = Guard(FixedReplies(["b = 6"]), checkpointer=saver)
        _checkpoint(saver, "pg-shape-2", {**SHAPE_2, "identity": guard.run_identity(proc, {"x": 2}), "attempt": 0, "rung": None,
                                          "note": None})
        result = guard.run(proc, {"x": 2}, thread_id="pg-shape-2")
        assert result.status == "verified" and result.values == {"a": 3, "b": 6} and result.resumed == "unfinished"
        assert result.spent.model_calls == 1
    finally:
        saver.conn.close()


def _serve(upstream: str, procedures: Path, pg_url: str, log: Path, workers: int = 1) -> tuple[subprocess.Popen[bytes], str]:
    """A proxy on ``pg_url`` in its own process group, answering; the process and its base URL."""
    return start_serve(["--upstream", upstream, "--procedures", str(procedures), "--checkpoint", pg_url,
                        "--workers", str(workers)], log, new_session=True)


def test_a_run_survives_its_workers_death_and_no_committed_step_is_asked_twice(pg_url: str, tmp_path: Path) -> None:
    from stepguard.adapters import load_model
    from stepguard.procedure import load_procedure

    folder = tmp_path / "procedures"
    folder.mkdir()
    shutil.copy(ROOT / "examples/benchmark_n23.yaml", folder / "n23.yaml")
    proc = load_procedure(folder / "n23.yaml")
    steps = [s.var for s in proc.steps]
    sim = load_model("sim:perfect", procedure=proc)
    asked: list[str] = []
    reached, release = threading.Event(), threading.Event()
    kill_at = steps[9]

    def script(prompt: str) -> str:  # the upstream: computes right; holds the first ask of kill_at
        var = prompt.split("Steps:\n")[1].split(" = ")[0].strip()
        asked.append(var)
        if var == kill_at and not reached.is_set():
            reached.set()
            release.wait(30)
        return sim.complete([{"role": "user", "content": prompt}]).text

    body = {"model": "stepguard/n23", "messages": [],
            "stepguard": {"inputs": INPUTS, "thread_id": "survivor-1", "chunk_size": 1}}
    with StubServer() as stub:
        stub.script = script
        upstream = f"{stub.base_url}#scripted"
        workers: list[subprocess.Popen[bytes]] = []
        bases: list[str] = []
        try:
            for i in range(2):
                proc, base = _serve(upstream, folder, pg_url, tmp_path / f"w{i}.log")
                workers.append(proc)
                bases.append(base)
            first: dict[str, Any] = {}

            def call_first() -> None:
                try:
                    first["resp"] = httpx.post(f"{bases[0]}/chat/completions", json=body, timeout=60)
                except httpx.HTTPError as exc:
                    first["error"] = exc

            t = threading.Thread(target=call_first)
            t.start()
            assert reached.wait(60), "the first worker never reached the step it dies at"
            os.killpg(workers[0].pid, signal.SIGKILL)  # the worker dies with kill_at's model call in flight
            workers[0].wait(timeout=10)
            release.set()
            t.join(timeout=30)
            assert "error" in first  # its client saw the connection drop

            resp = httpx.post(f"{bases[1]}/chat/completions", json=body, timeout=120)
            assert resp.status_code == 200, resp.text
            result = resp.json()["stepguard"]
            assert result["status"] == "verified" and result["thread_id"] == "survivor-1"
            k = steps.index(kill_at)
            assert asked == steps[: k + 1] + steps[k:]  # only the step in flight at the death is asked again
            assert all(asked.count(v) == 1 for v in steps if v != kill_at)

            again = httpx.post(f"{bases[1]}/chat/completions", json=body, timeout=60)
            assert again.json()["choices"][0]["message"]["content"] == resp.json()["choices"][0]["message"]["content"]
            assert len(asked) == len(steps) + 1  # a finished thread answers from its checkpoint
        finally:
            for w in workers:
                if w.poll() is None:
                    os.killpg(w.pid, signal.SIGTERM)
                    w.wait(timeout=20)


def test_workers_option_serves_with_a_shared_checkpointer(pg_url: str, tmp_path: Path) -> None:
    log = tmp_path / "serve.log"
    proc, base = _serve("sim:perfect", ROOT / "examples", pg_url, log, workers=2)
    try:
        body = {"model": "stepguard/invoice", "messages": [],
                "stepguard": {"inputs": {"subtotal": "100.10", "rate": "0.1"}, "thread_id": "multi-1"}}
        answers = {httpx.post(f"{base}/chat/completions", json=body, timeout=60).json()["choices"][0]["message"]["content"]
                   for _ in range(6)}
        assert answers == {"104.60"}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
    assert log.read_text().count("Started server process") >= 2, log.read_text()
