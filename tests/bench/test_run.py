"""run_benchmark: raw and guarded rows on the simulated executor, resume, error rows, kill -9 and resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from stepguard.adapters import load_model
from stepguard.bench.generate import generate_grid
from stepguard.bench.instances import write_instances
from stepguard.bench.run import parse_configs, run_benchmark
from stepguard.bench.store import ERRORS, RESULTS, iter_rows, read_meta
from stepguard.errors import ModelError, ModelUnavailable, RunStoreError
from stepguard.guard import GuardConfig
from tests._paths import ROOT

SHARED = {"id", "n_steps", "lookback", "mode", "first_answer", "correct", "exact", "labels", "usage", "simulated"}
TIMING = {"latency_s", "wall_s", "model_s", "attempt_s"}


@pytest.fixture(scope="module")
def instances(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("inst") / "instances.jsonl"
    write_instances(generate_grid([5, 23], [1, 3], 3, seed=0), path)  # 12 instances
    return path


def _rows(rundir: Path) -> list[dict[str, Any]]:
    return list(iter_rows(rundir / RESULTS))


def _untimed(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _untimed(v) for k, v in value.items() if k not in TIMING}
    if isinstance(value, list):
        return [_untimed(v) for v in value]
    return value


def test_raw_rows_are_complete(instances: Path, tmp_path: Path) -> None:
    summary = run_benchmark(instances, "raw", load_model("sim:paper"), tmp_path, concurrency=3, progress=False)
    rows = _rows(tmp_path)
    assert summary.written == summary.selected == len(rows) == 12
    assert len({r["id"] for r in rows}) == 12
    for r in rows:
        assert SHARED <= r.keys() and {"text", "finish_reason", "labels", "steps_emitted"} <= r.keys()
        assert r["mode"] == "raw" and r["simulated"] is True and r["usage"]["model_calls"] == 1
        assert r["exact"] == ("exact" in r["labels"])
    meta = read_meta(tmp_path)
    assert meta["mode"] == "raw" and meta["simulated"] is True and meta["generation"]["temperature"] == 0.0
    assert meta["instances_sha256"] and meta["model"]["spec"] == "sim:paper"


def test_guarded_rows_are_complete(instances: Path, tmp_path: Path) -> None:
    run_benchmark(instances, "guarded", load_model("sim:paper"), tmp_path, configs="23x3,5x1", progress=False)
    rows = _rows(tmp_path)
    assert sorted({(r["n_steps"], r["lookback"]) for r in rows}) == [(5, 1), (23, 3)] and len(rows) == 6
    for r in rows:
        assert SHARED <= r.keys() and {"status", "reprompts", "chunks", "repaired", "guard", "verified_correct"} <= r.keys()
        assert r["correct"] == (r["status"] == "verified" and r["first_answer_correct"])
        assert r["usage"]["model_calls"] == r["guard"]["usage"]["model_calls"] >= r["chunks"] >= 1
    assert read_meta(tmp_path)["guard_config"]["on_exhausted"] == "flag"


@pytest.mark.slow
def test_perfect_model_is_right_everywhere_and_repairs_never_count(instances: Path, tmp_path: Path) -> None:
    run_benchmark(instances, "guarded", load_model("sim:perfect"), tmp_path / "p", limit=1, progress=False)
    assert all(r["correct"] and r["exact"] and r["verified_correct"] for r in _rows(tmp_path / "p"))
    cfg = GuardConfig(policy="repair")
    run_benchmark(instances, "guarded", load_model("sim:paper"), tmp_path / "r", guard_config=cfg, progress=False)
    for r in _rows(tmp_path / "r"):
        if r["repaired"]:
            assert not r["exact"] and not r["verified_correct"] and not r["correct"]


def test_resume_runs_only_what_is_missing(instances: Path, tmp_path: Path) -> None:
    model = load_model("sim:paper")
    first = run_benchmark(instances, "raw", model, tmp_path, limit=1, progress=False)
    assert first.written == 4
    second = run_benchmark(instances, "raw", model, tmp_path, limit=2, progress=False)
    assert (second.skipped, second.written, second.resumed) == (4, 4, True)
    with pytest.raises(RunStoreError, match="different run"):
        run_benchmark(instances, "guarded", model, tmp_path, progress=False)


class Flaky:
    """Fails for chosen instance prompts (by input x), answers otherwise like the wrapped model."""

    def __init__(self, inner: Any, fail_all: bool = False) -> None:
        self.inner, self.fail_all, self.calls = inner, fail_all, 0
        self.spec, self.model_name, self.provider, self.simulated = inner.spec, inner.model_name, "test", True
        self.seed = inner.seed

    async def acomplete(self, messages: Any, settings: Any = None) -> Any:
        self.calls += 1
        if self.fail_all or self.calls == 2:
            raise ModelUnavailable("endpoint down", self.spec)
        return await self.inner.acomplete(messages, settings)


def test_model_errors_become_error_rows_and_are_retried(instances: Path, tmp_path: Path) -> None:
    sim = load_model("sim:paper")
    s = run_benchmark(instances, "raw", Flaky(sim), tmp_path, concurrency=1, progress=False)
    assert (s.written, s.errors) == (11, 1)
    errors = list(iter_rows(tmp_path / ERRORS))
    assert errors[0]["error_type"] == "ModelUnavailable" and "endpoint down" in errors[0]["error"]
    s = run_benchmark(instances, "raw", sim, tmp_path, progress=False)
    assert (s.skipped, s.written, s.errors) == (11, 1, 0)
    assert len(_rows(tmp_path)) == 12
    with pytest.raises(ModelError, match="3 model errors in a row"):
        run_benchmark(instances, "raw", Flaky(sim, fail_all=True), tmp_path / "dead", max_consecutive_errors=3, progress=False)


def test_parse_configs() -> None:
    assert parse_configs("95x7, 23x2") == {(95, 7), (23, 2)}
    assert parse_configs(None) is None
    with pytest.raises(ValueError, match="95y7"):
        parse_configs("95y7")


CHILD = """
import sys
from stepguard.adapters import load_model
from stepguard.bench.run import run_benchmark
run_benchmark(sys.argv[1], sys.argv[2], load_model("sim:paper", latency_s=0.05), sys.argv[3], concurrency=2, progress=False)
"""


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["raw", "guarded"])
def test_kill_9_then_resume_equals_an_uninterrupted_run(instances: Path, tmp_path: Path, mode: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    killed = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(instances), mode, str(killed)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        results = killed / RESULTS
        while time.monotonic() < deadline and proc.poll() is None:
            if results.exists() and results.read_bytes().count(b"\n") >= 3:
                break
            time.sleep(0.02)
        assert proc.poll() is None, f"child ended early: {proc.communicate()[1].decode()[-2000:]}"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    partial = results.read_bytes().count(b"\n")
    assert 3 <= partial < 12
    with results.open("ab") as fh:  # a torn line as a kill mid-write leaves it
        fh.write(b'{"id":"n23-l3-s0-i2","mode":"')
    s = run_benchmark(instances, mode, load_model("sim:paper"), killed, concurrency=4, progress=False)
    assert s.resumed and s.skipped == partial and s.written == 12 - partial and len(s.torn) == 1
    run_benchmark(instances, mode, load_model("sim:paper"), tmp_path / "clean", concurrency=4, progress=False)
    got = {r["id"]: _untimed(r) for r in _rows(killed)}
    want = {r["id"]: _untimed(r) for r in _rows(tmp_path / "clean")}
    assert len(got) == 12 and got == want
    assert json.loads((killed / "run.json").read_text())["mode"] == mode


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_keeps_rows(instances: Path, tmp_path: Path) -> None:
    code = "import signal\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n" + CHILD
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", code, str(instances), "guarded", str(tmp_path)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    results = tmp_path / RESULTS
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None and not (results.exists() and results.read_bytes().count(b"\n") >= 2):
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode != 0 and b"KeyboardInterrupt" in err
    kept = _rows(tmp_path)
    assert 2 <= len(kept) < 12 and results.read_bytes().endswith(b"\n")
    s = run_benchmark(instances, "guarded", load_model("sim:paper"), tmp_path, progress=False)  # lock released
    assert s.skipped == len(kept) and not s.torn and len(_rows(tmp_path)) == 12
