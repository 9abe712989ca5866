"""kill -9 inside a derived rung's nested run, then resume (issue 41, part 6): the sub-steps verified
before the kill are not asked again, the one in flight is, and the result is whole and verified. The
killed process's thread lock goes with it, so the resume is not refused as a run in flight."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from stepguard import GuardResult
from stepguard.guard.rungs import get_rung
from tests._fakes import DIGIT_PRODUCT as PRODUCT
from tests._paths import ROOT

pytestmark = pytest.mark.slow

SHEET = len(get_rung("digits").derive(PRODUCT, 2, {"x": 478, "y": 36}).steps)  # type: ignore[union-attr]
"""The sub-steps of ``478 * 36`` digit by digit (tests/_rung_resume_child.py)."""



def _child(tmp: Path, delay: float) -> subprocess.Popen[bytes]:
    args = [sys.executable, "-m", "tests._rung_resume_child", str(tmp / "ck.sqlite"), str(tmp / "calls.log"), str(delay),
            str(tmp / "out.json")]
    return subprocess.Popen(args, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})


def _asked(log: Path) -> list[str]:
    return log.read_text().split("\n")[:-1] if log.exists() else []


def test_sigkill_inside_a_digit_rungs_nested_run_resumes_at_the_sub_step_in_flight(tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    child = _child(tmp_path, 0.2)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "d4" not in _asked(log):
        time.sleep(0.02)
    os.kill(child.pid, signal.SIGKILL)  # with d4's model call in flight, d1 .. d3 verified and checkpointed
    child.wait()
    before = _asked(log)
    assert before[0] == "x y r" and before[1:] == [f"d{k}" for k in range(1, 5)], before
    assert not (tmp_path / "out.json").exists()

    assert _child(tmp_path, 0.0).wait(timeout=120) == 0
    after = _asked(log)[len(before):]
    assert after == [f"d{k}" for k in range(4, SHEET + 1)], after  # from the sub-step in flight on: none twice, none lost
    result = GuardResult.model_validate_json((tmp_path / "out.json").read_text())
    assert result.status == "verified" and result.values["r"] == 478 * 36
    assert result.resumed == "unfinished" and result.usage.model_calls == 1 + SHEET
