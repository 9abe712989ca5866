"""A run's stop: the event a caller sets to stop a guarded run, which also closes what the run has open."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

__all__ = ["RunStop", "closing_on_stop"]


class RunStop(threading.Event):
    """A :class:`threading.Event` that, when set, also runs the closers registered with it (in the
    setting thread): a streamed reply in flight is closed from the stopping side, so the model's
    server sees its client go at once, even while it sends no text (reasoning, tool-call or empty
    deltas, or nothing at all), and a reader blocked on it wakes.

    Pass one as ``Guard.run(..., stop=RunStop())``; a plain event is seen by the reader at the
    stream's next event instead. Closing :meth:`stepguard.Guard.stream`'s iterator sets the run's own.
    """

    def __init__(self) -> None:
        super().__init__()
        self._closers: dict[int, Callable[[], None]] = {}
        self._guard = threading.Lock()
        self._next = 0

    def set(self) -> None:
        """Set the event, then run (once) every closer registered and not yet removed."""
        super().set()
        with self._guard:
            closers, self._closers = list(self._closers.values()), {}
        for close in closers:
            with contextlib.suppress(Exception):  # a closer that fails leaves the reader to see the stop itself
                close()

    def _add(self, close: Callable[[], None]) -> int | None:
        with self._guard:
            if self.is_set():
                return None
            self._next += 1
            self._closers[self._next] = close
            return self._next

    def _remove(self, handle: int) -> None:
        with self._guard:
            self._closers.pop(handle, None)


@contextlib.contextmanager
def closing_on_stop(stop: threading.Event | None, close: Callable[[], None]) -> Iterator[None]:
    """Within the block, ``close()`` runs as soon as ``stop`` is set (at once if it is set already),
    from the thread that sets it; ``stop`` a plain event (or ``None``): nothing is registered."""
    if not isinstance(stop, RunStop):
        yield
        return
    handle = stop._add(close)
    if handle is None:
        with contextlib.suppress(Exception):
            close()
    try:
        yield
    finally:
        if handle is not None:
            stop._remove(handle)
