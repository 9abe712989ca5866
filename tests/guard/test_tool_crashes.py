"""Nothing done twice (issue 33.12): a process killed -9 during a tool's call, or after it before
its step was committed, never has the call made again blindly on resume."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stepguard import GuardResult
from tests._paths import ROOT

pytestmark = pytest.mark.slow


def _child(tmp: Path, mode: str, tool: str) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "tests._tool_resume_child", str(tmp / "ck.sqlite"), str(tmp / "refunds.log"),
            str(tmp / "out.txt"), mode, tool]
    return subprocess.Popen(args, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})


def _refunds(tmp: Path) -> list[str]:
    log = tmp / "refunds.log"
    return log.read_text().splitlines() if log.exists() else []


def _killed_during_the_refund(tmp: Path, tool: str) -> None:
    """Run the refund and kill -9 the process while issue_refund is running (it has logged its call)."""
    proc = _child(tmp, "hang", tool)
    deadline = time.time() + 90
    while time.time() < deadline and not _refunds(tmp) and proc.poll() is None:
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert len(_refunds(tmp)) == 1 and not (tmp / "out.txt").exists()


@pytest.mark.slow
def test_a_call_cut_off_by_kill_9_is_not_made_again_and_the_resume_names_the_step(tmp_path: Path) -> None:
    _killed_during_the_refund(tmp_path, "plain")
    again = _child(tmp_path, "run", "plain")
    assert again.wait(timeout=120) == 3
    said = (tmp_path / "out.txt").read_text()
    assert said.startswith("refused:") and "step refund_ref" in said and "issue_refund(" in said and "25.00" in said, said
    assert len(_refunds(tmp_path)) == 1  # refunded once, not twice
    assert _child(tmp_path, "run", "plain").wait(timeout=120) == 3 and len(_refunds(tmp_path)) == 1  # and every time after


@pytest.mark.slow
def test_an_idempotent_tool_cut_off_by_kill_9_is_called_again(tmp_path: Path) -> None:
    _killed_during_the_refund(tmp_path, "idempotent")
    assert _child(tmp_path, "run", "idempotent").wait(timeout=120) == 0
    result = GuardResult.model_validate_json((tmp_path / "out.txt").read_text())
    assert result.status == "verified" and result.answer == "RF-ORD-7"
    assert len(_refunds(tmp_path)) == 2


@pytest.mark.slow
def test_a_keyed_tool_cut_off_by_kill_9_is_called_again_with_the_same_key(tmp_path: Path) -> None:
    _killed_during_the_refund(tmp_path, "keyed")
    assert _child(tmp_path, "run", "keyed").wait(timeout=120) == 0
    first, second = _refunds(tmp_path)
    assert first == second and len(first.split()[0]) == 32 and first.split()[1] == "25.00"  # the tool can deduplicate by it


@pytest.mark.slow
def test_a_kill_9_after_the_call_before_its_commit_commits_the_recorded_result(tmp_path: Path) -> None:
    proc = _child(tmp_path, "commit", "plain")
    assert proc.wait(timeout=120) == -signal.SIGKILL
    assert len(_refunds(tmp_path)) == 1 and not (tmp_path / "out.txt").exists()
    assert _child(tmp_path, "run", "plain").wait(timeout=120) == 0
    result = GuardResult.model_validate_json((tmp_path / "out.txt").read_text())
    assert result.status == "verified" and result.answer == "RF-ORD-7"
    assert len(_refunds(tmp_path)) == 1  # the result recorded after the call was committed; no second refund
