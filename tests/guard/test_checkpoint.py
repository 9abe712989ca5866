"""A guarded run killed with SIGKILL resumes from its last committed chunk."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stepguard import GuardResult
from tests._fakes import chain_expected as _expected, chain_procedure as _procedure
from tests._paths import ROOT

pytestmark = pytest.mark.slow


def _child(tmp: Path, delay: float) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "tests._resume_child", str(tmp / "ck.sqlite"), str(tmp / "calls.log"), str(delay), str(tmp / "out.json")]
    return subprocess.Popen(args, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_sigkill_mid_run_resumes_without_repeating_committed_chunks(tmp_path):
    proc = _child(tmp_path, 0.3)
    log = tmp_path / "calls.log"
    deadline = time.time() + 60
    while time.time() < deadline and (not log.exists() or len(log.read_text().split()) < 4):
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = log.read_text().split()
    assert 4 <= len(before) < 10, before  # killed mid-procedure (30 steps = 10 chunks)
    assert not (tmp_path / "out.json").exists()

    again = _child(tmp_path, 0.0)
    assert again.wait(timeout=120) == 0
    after = log.read_text().split()[len(before):]
    # it resumes at the first uncommitted chunk: at most the chunk in flight at the kill is asked again
    committed_starts = before[:-1]
    assert not set(after) & set(committed_starts), (before, after)
    assert len(before) + len(after) <= 11
    result = GuardResult.model_validate_json((tmp_path / "out.json").read_text())
    assert result.status == "verified"
    assert result.values == _expected(_procedure(30))
    assert [s.var for s in result.steps] == [f"S{k}" for k in range(1, 31)]


def test_a_finished_thread_returns_its_result_without_model_calls(tmp_path):
    assert _child(tmp_path, 0.0).wait(timeout=120) == 0
    calls = len((tmp_path / "calls.log").read_text().split())
    assert _child(tmp_path, 0.0).wait(timeout=120) == 0
    assert len((tmp_path / "calls.log").read_text().split()) == calls


def test_sigkill_mid_stream_resumes_from_the_window_in_flight(tmp_path):
    """Streamed mode (issue 29): killed while the model streams the window after a cut and a
    re-ask, the run resumes at the first uncommitted step; nothing committed is asked again, none
    is lost, none verified twice."""
    args = [sys.executable, "-m", "tests._stream_resume_child", str(tmp_path / "ck.sqlite"), str(tmp_path / "calls.log")]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    log = tmp_path / "calls.log"
    child = subprocess.Popen([*args, "0.1", str(tmp_path / "out.json")], cwd=ROOT, env=env)
    deadline = time.time() + 60
    while time.time() < deadline and (not log.exists() or "line S15" not in log.read_text()):
        time.sleep(0.02)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    before = log.read_text().split("\n")
    asks = [line.split()[1] for line in before if line.startswith("ask ")]
    assert asks[:3] == ["S1", "S10", "S11"], asks  # the first window, cut at S10; its re-ask; the window after it
    assert not (tmp_path / "out.json").exists()

    again = subprocess.Popen([*args, "0.0", str(tmp_path / "out.json")], cwd=ROOT, env=env)
    assert again.wait(timeout=120) == 0
    after = [line.split()[1] for line in log.read_text().split("\n")[len(before) - 1:] if line.startswith("ask ")]
    assert after and after[0] == "S11", after  # the window in flight is asked again, from its first step
    result = GuardResult.model_validate_json((tmp_path / "out.json").read_text())
    assert result.status == "verified"
    assert result.values == _expected(_procedure(30))
    assert [s.var for s in result.steps] == [f"S{k}" for k in range(1, 31)]
    assert [s.var for s in result.steps if s.reprompts] == ["S10"]  # the re-ask before the kill is kept, once
