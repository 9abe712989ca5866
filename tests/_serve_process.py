"""Child processes in tests: ``stepguard serve`` on a free port (``--port 0``), for the tests that need a
real process (curl, several workers, a worker killed): the proxy binds port 0 itself and prints its base
URL, so no test picks a port that another process may take first; and :func:`gone`, whether a process ended.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx
import pytest

from tests._paths import ROOT

__all__ = ["gone", "start_serve"]

_BASE_URL = re.compile(r"base URL: (http://127\.0\.0\.1:\d+/v1)")


def start_serve(args: Sequence[str], log: Path, *, env: Mapping[str, str] | None = None,
                new_session: bool = False, wait_s: float = 60.0) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``python -m stepguard serve ARGS --port 0`` with its output in ``log``; wait until it answers.

    Returns the process and its base URL (``http://127.0.0.1:PORT/v1``, read from the line the proxy
    prints). ``new_session``: the process leads its own process group (``os.killpg`` stops it with its
    workers). Fails the test with the log when the proxy exits, or does not answer ``GET /models``
    (any status) within ``wait_s`` seconds; the caller stops the process.
    """
    cmd = [sys.executable, "-m", "stepguard", "serve", *args, "--port", "0"]
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=dict(env if env is not None else os.environ), stdout=fh,
                                stderr=subprocess.STDOUT, start_new_session=new_session)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        found = _BASE_URL.search(log.read_text())
        if found:
            try:
                httpx.get(f"{found.group(1)}/models", timeout=5)
                return proc, found.group(1)
            except httpx.HTTPError:
                pass
        if proc.poll() is not None:
            pytest.fail(f"stepguard serve exited {proc.returncode}:\n{log.read_text()}")
        time.sleep(0.1)
    proc.kill()
    proc.wait(timeout=10)
    pytest.fail(f"stepguard serve did not answer within {wait_s:.0f} s:\n{log.read_text()}")


def gone(pid: int) -> bool:
    """True when ``pid`` no longer runs (absent, or a zombie awaiting a non-reaping init)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True
