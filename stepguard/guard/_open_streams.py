"""Graph streams a caller left open are closed before the interpreter waits for its threads.

A run streams LangGraph's graph with the ``custom`` stream mode (steps reported while a window is
written), so LangGraph waits for those reports in a worker thread of its executor until the graph's
stream is closed. :meth:`stepguard.guard.Guard.stream` closes it when the run ends, fails or is closed;
but a caller may drop a ``Guard.stream`` iterator half-read where no reference count reaches zero (in a
reference cycle, or kept in an object), and then nothing closes it: at exit the interpreter waits for
every worker thread before it collects garbage, so the process never ends.

:func:`track` records each open graph stream with its run's ``closed`` event; at exit, before the
interpreter joins the executors' threads (``threading._register_atexit``, the hook ``concurrent.futures``
itself uses, run in reverse order of registration, so after-registered hooks run first), each one still
open is cut (``closed`` set: a window in flight stops at its next delta) and closed.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Generator
from typing import Any

__all__ = ["close_all", "track", "untrack"]

_OPEN: weakref.WeakKeyDictionary[Generator[Any, None, None], threading.Event] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()
_REGISTERED = False


def track(stream: Generator[Any, None, None], closed: threading.Event) -> None:
    """Record ``stream`` (a graph's stream, open) and its run's ``closed`` event until :func:`untrack`."""
    global _REGISTERED
    with _LOCK:
        _OPEN[stream] = closed
        if not _REGISTERED:
            register = getattr(threading, "_register_atexit", None)
            if register is not None:  # CPython 3.9+; elsewhere open streams are left to the caller
                register(close_all)
            _REGISTERED = True


def untrack(stream: Generator[Any, None, None]) -> None:
    """Forget ``stream`` (closed by its run)."""
    with _LOCK:
        _OPEN.pop(stream, None)


def close_all() -> None:
    """Cut and close every graph stream still open (what the exit hook runs)."""
    with _LOCK:
        open_now = list(_OPEN.items())
        _OPEN.clear()
    for stream, closed in open_now:
        closed.set()
        try:
            stream.close()
        except Exception:  # noqa: BLE001 - exiting: a stream another thread is reading, or one that fails to close, is left
            pass
