"""Crashes: SIGKILL mid-benchmark, a full disk while writing the run store, corrupt checkpoint
databases and run stores, and two benchmark processes on one run directory."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from stepguard.bench.generate import generate_grid
from stepguard.bench.run import run_benchmark
from stepguard.bench.store import RESULTS, RunStore
from stepguard.errors import StepguardError, RunStoreError
from stepguard.guard import sqlite_checkpointer
from tests._paths import ROOT

N = 24


@pytest.fixture()
def instances(tmp_path: Path) -> Path:
    """An instances file of N small instances (5 steps, look-back 1)."""
    path = tmp_path / "instances.jsonl"
    with path.open("w") as fh:
        for inst in generate_grid(steps=[5], lookbacks=[1], per_config=N, seed=0):
            fh.write(inst.model_dump_json() + "\n")
    return path


def _bench(instances: Path, out: Path, latency: float) -> subprocess.Popen[str]:
    """Start ``stepguard bench run`` (raw, sim:paper, concurrency 2) in a child with ``latency`` per call."""
    args = [sys.executable, "-m", "tests._bench_child", str(latency), "--instances", str(instances), "--out", str(out),
            "--mode", "raw", "--model", "sim:paper", "--concurrency", "2", "--no-progress"]
    return subprocess.Popen(args, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _ids(rundir: Path) -> list[str]:
    """The ids of results.jsonl, complete lines only, in file order."""
    lines = (rundir / RESULTS).read_bytes().split(b"\n")[:-1] if (rundir / RESULTS).exists() else []
    return [json.loads(line)["id"] for line in lines if line.strip()]


def _wait_rows(rundir: Path, at_least: int, timeout: float = 60.0) -> None:
    """Wait until results.jsonl has ``at_least`` complete rows."""
    deadline = time.time() + timeout
    while time.time() < deadline and len(_ids(rundir)) < at_least:
        time.sleep(0.05)


@pytest.mark.slow
def test_sigkill_mid_benchmark_then_rerun_loses_and_duplicates_nothing(tmp_path: Path, instances: Path) -> None:
    out = tmp_path / "run"
    child = _bench(instances, out, 0.1)
    _wait_rows(out, 4)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    before = _ids(out)
    assert 4 <= len(before) < N, before
    again = _bench(instances, out, 0.0)
    stdout, stderr = again.communicate(timeout=120)
    assert again.returncode == 0, stderr
    after = _ids(out)
    assert after[: len(before)] == before  # rows written before the kill are intact, in place
    assert Counter(after) == Counter({i: 1 for i in after}) and len(after) == N


def test_full_disk_is_a_clear_error_and_the_run_resumes(tmp_path: Path, instances: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stepguard.adapters.models.sim import SimulatedExecutor

    out = tmp_path / "run"
    real = RunStore._write
    calls = {"n": 0}

    def full_disk(self, name, row):  # noqa: ANN001, ANN202
        """Write 5 rows, then fail like a full disk."""
        calls["n"] += 1
        if calls["n"] > 5:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, name, row)

    monkeypatch.setattr(RunStore, "_write", full_disk)
    with pytest.raises((OSError, StepguardError)) as info:
        run_benchmark(instances, "raw", SimulatedExecutor("paper"), out, concurrency=1, progress=False)
    assert "No space left" in str(info.value) or "ENOSPC" in str(info.value)
    assert len(_ids(out)) == 5
    monkeypatch.setattr(RunStore, "_write", real)
    summary = run_benchmark(instances, "raw", SimulatedExecutor("paper"), out, concurrency=1, progress=False)
    assert summary.skipped == 5 and summary.written == N - 5
    assert sorted(_ids(out)) == sorted(set(_ids(out))) and len(_ids(out)) == N


def test_corrupt_checkpoint_database_is_a_clear_error_naming_the_file(tmp_path: Path) -> None:
    db = tmp_path / "ck.sqlite"
    db.write_bytes(os.urandom(4096))
    before = db.read_bytes()
    with pytest.raises(StepguardError, match="ck.sqlite") as info:
        sqlite_checkpointer(db)
    assert "not a" in str(info.value) or "corrupt" in str(info.value)
    assert db.read_bytes() == before  # never silently started over


def test_corrupt_run_store_keeps_readable_rows_and_never_starts_over(tmp_path: Path, instances: Path) -> None:
    from stepguard.adapters.models.sim import SimulatedExecutor

    out = tmp_path / "run"
    run_benchmark(instances, "raw", SimulatedExecutor("paper"), out, limit=3, progress=False)
    path = out / RESULTS
    with path.open("ab") as fh:
        fh.write(b"\x00\xff\xfe garbage \x89PNG\n" + os.urandom(64).replace(b"\n", b"") + b"\n")
    before = path.read_bytes()
    with pytest.raises(RunStoreError, match=rf"{RESULTS}:4: corrupt line"):
        run_benchmark(instances, "raw", SimulatedExecutor("paper"), out, progress=False)
    assert path.read_bytes() == before


@pytest.mark.slow
def test_two_benchmark_processes_on_one_run_directory(tmp_path: Path, instances: Path) -> None:
    out = tmp_path / "run"
    first = _bench(instances, out, 0.5)  # about 6 s of work: the second starts well inside it
    _wait_rows(out, 1)
    second = _bench(instances, out, 0.0)
    _, err2 = second.communicate(timeout=120)
    _, err1 = first.communicate(timeout=120)
    assert first.returncode == 0, err1
    assert second.returncode == 7 and "in use by another process (PID" in err2, err2
    ids = _ids(out)
    assert len(ids) == N and len(set(ids)) == N


def test_full_disk_error_is_a_run_store_error_naming_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def full_disk(self, name, row):  # noqa: ANN001, ANN202
        """Fail like a full disk."""
        raise OSError(errno.ENOSPC, "No space left on device")

    with RunStore.open(tmp_path, {"model": None}) as store:
        monkeypatch.setattr(RunStore, "_write", full_disk)
        with pytest.raises(RunStoreError, match=RESULTS):
            store.add_result({"id": "a"})
