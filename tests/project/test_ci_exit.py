"""CI waits for the test command's output to close: neither pytest's own exit nor a process the tests
left behind may hold it open after the summary (tests/_exit_watch.py, scripts/leftovers.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests._paths import ROOT

pytestmark = pytest.mark.slow

STUCK = """
import threading

def test_leaves_a_thread_that_never_ends():
    threading.Thread(target=threading.Event().wait, name="stuck-worker").start()
"""


def test_a_thread_left_blocked_ends_the_run_with_its_verdict_and_stack(tmp_path: Path) -> None:
    (tmp_path / "test_stuck.py").write_text(STUCK)
    env = {**os.environ, "STEPGUARD_EXIT_GRACE_S": "2"}
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "tests.conftest",
                           "--rootdir", str(tmp_path), str(tmp_path / "test_stuck.py")],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert "1 passed" in done.stdout
    assert done.returncode == 0, done.stderr  # the tests' verdict, not the hang's
    assert "did not exit 2 s after its summary" in done.stderr
    assert "stuck-worker" in done.stderr


def test_a_process_left_holding_the_output_is_named_and_stopped() -> None:
    script = f'since=$(date +%s); (sleep 600 &); "{sys.executable}" scripts/leftovers.py "$since"'
    done = subprocess.run(["bash", "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)  # waits for the pipe
    assert done.returncode == 0
    assert "leftovers: process" in done.stderr and "sleep 600" in done.stderr
