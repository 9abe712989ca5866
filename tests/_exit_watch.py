"""A watch on the test process's own exit, so that CI reports a hang after the summary instead of timing out.

Once pytest has printed its summary the verdict is final, but the interpreter still has to exit: it joins
every non-daemon thread (a ``concurrent.futures`` worker still inside a tool, a stub server's thread) and
runs the ``atexit`` hooks (the embedded server's stop, telemetry's flush). A test that leaves one of those
blocked makes the process wait for ever, and CI ends at its time limit with nothing to say why.

:func:`arm` starts a daemon thread when pytest unconfigures: if the process is still alive ``grace_s``
seconds later, it writes every thread's stack and the child processes still running to stderr, kills
those children, and ends the process with pytest's own exit status (``os._exit``), so a hang at exit
costs ``grace_s`` (120 s; ``STEPGUARD_EXIT_GRACE_S`` sets another) and names its cause.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import threading
import time
from pathlib import Path

__all__ = ["arm", "children"]


def children(pid: int | None = None) -> list[tuple[int, str]]:
    """The live processes whose parent is ``pid`` (default: this one), as ``(pid, command line)``, from /proc."""
    parent, out = pid if pid is not None else os.getpid(), []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent:
            out.append((int(entry.name), cmd[:300]))
    return out


def _watch(grace_s: float, status: int) -> None:
    time.sleep(grace_s)
    err = sys.__stderr__ or sys.stderr
    alive = [t for t in threading.enumerate() if t is not threading.current_thread()]
    print(f"\ntests: the test process did not exit {grace_s:.0f} s after its summary; threads still alive: "
          f"{[(t.name, 'daemon' if t.daemon else 'non-daemon') for t in alive]}; their stacks:", file=err, flush=True)
    faulthandler.dump_traceback(file=err, all_threads=True)
    for pid, cmd in children():
        print(f"tests: child process {pid} still running, killed: {cmd}", file=err, flush=True)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    err.flush()
    os._exit(status)


def arm(status: int, grace_s: float | None = None) -> None:
    """Start the watch: end this process with ``status`` if it is still alive ``grace_s`` seconds from now
    (default: ``STEPGUARD_EXIT_GRACE_S``, else 120)."""
    if grace_s is None:
        grace_s = float(os.environ.get("STEPGUARD_EXIT_GRACE_S", "120"))
    threading.Thread(target=_watch, args=(grace_s, status), name="tests-exit-watch", daemon=True).start()
