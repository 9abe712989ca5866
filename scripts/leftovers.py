"""Name and stop the processes a test run left behind that still hold its output open.

CI reads the test command's output through a pipe and waits until every process holding the pipe's
write end has closed it. A process the tests started and never stopped (a server, a child that inherited
stdout) keeps that pipe open after pytest has exited, and CI then waits until its time limit, with the
summary already printed. ``scripts/test.sh`` runs this after pytest::

    python scripts/leftovers.py SINCE_EPOCH_S

It looks for processes started at or after ``SINCE_EPOCH_S`` (the test command's start), other than
itself and its ancestors, whose standard output or error is this process's standard output or error;
prints each (pid and command line) to stderr and sends it SIGKILL. Exit status 0 always: the tests'
own status is the verdict; this only keeps their leftovers from holding CI.
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

_TICKS = os.sysconf("SC_CLK_TCK")


def _boot_s() -> float:
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    raise RuntimeError("/proc/stat has no btime")


def _stat(pid: int) -> tuple[int, float]:
    """``(parent pid, start time in seconds since boot)`` of ``pid``."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[1]), int(fields[19]) / _TICKS


def _ancestors(pid: int) -> set[int]:
    out = set()
    while pid > 1:
        out.add(pid)
        try:
            pid = _stat(pid)[0]
        except OSError:
            break
    return out


def _outputs(pid: int) -> set[str]:
    found = set()
    for fd in (1, 2):
        try:
            found.add(os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            pass
    return found


def main(since_epoch_s: float) -> None:
    """Kill and name the leftovers described in the module docstring."""
    ours = {target for target in _outputs(os.getpid()) if target.startswith("pipe:")}
    if not ours:
        return  # not writing to a pipe: nothing can hold a reader waiting
    since = since_epoch_s - _boot_s()
    skip = _ancestors(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        pid = int(entry.name)
        try:
            started = _stat(pid)[1]
            held = _outputs(pid) & ours
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if held and started >= since - 1:
            print(f"leftovers: process {pid} outlived the tests and holds their output; killed: {cmd[:300]}",
                  file=sys.stderr, flush=True)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


if __name__ == "__main__":
    main(float(sys.argv[1]))
