"""One run of a checkpoint thread at a time: the thread lock a run holds from before it reads its
thread until it ends.

The lock is keyed by what decides the result, the checkpoint thread, and has two layers:

- in this process, a set of the threads in flight per checkpoint database (every run, every saver);
- across processes, what the checkpointer's registered :class:`ThreadLocks` gives: a Postgres
  advisory lock for :func:`stepguard.guard.postgres_checkpointer` (so the workers of
  ``stepguard serve --workers N`` and several proxies on one database serialise), a byte-range
  file lock beside the database for :func:`stepguard.guard.sqlite_checkpointer`. Both are released
  by the operating system or the database when their process dies (``kill -9``), so a thread is
  never left locked by a run that no longer exists.

A second run of a thread in flight is refused at once (:class:`~stepguard.errors.ThreadInFlight`),
never queued: its caller decides whether to wait (the proxy answers 409 with ``Retry-After``).
A checkpointer with nothing registered (one made by hand) gets the in-process layer only.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import threading
import weakref
from collections.abc import Iterator
from typing import Any, Protocol

from stepguard.errors import CheckpointError, ThreadInFlight

__all__ = ["FileThreadLocks", "PostgresThreadLocks", "ThreadLocks", "hold_thread", "lock_key", "register_thread_locks"]


class ThreadLocks(Protocol):
    """The cross-process layer of the thread lock for one checkpoint database."""

    scope: str
    """What names the database (a file path, a connection string): the in-process layer's key."""

    def try_acquire(self, thread_id: str) -> bool:
        """Take the lock of ``thread_id`` if no process holds it; False if one does."""

    def release(self, thread_id: str) -> None:
        """Give back the lock of ``thread_id`` taken by :meth:`try_acquire`."""


def lock_key(thread_id: str) -> int:
    """A stable signed 64-bit key for ``thread_id`` (the first 8 bytes of its sha256): the same in
    every process and on every machine, as Postgres' ``pg_try_advisory_lock(bigint)`` takes it."""
    return int.from_bytes(hashlib.sha256(b"stepguard-thread:" + thread_id.encode()).digest()[:8], "big", signed=True)


_REGISTERED: weakref.WeakKeyDictionary[Any, ThreadLocks] = weakref.WeakKeyDictionary()
_IN_FLIGHT: set[tuple[str, str]] = set()
_IN_FLIGHT_LOCK = threading.Lock()


def register_thread_locks(checkpointer: Any, locks: ThreadLocks) -> None:
    """Make ``locks`` the cross-process thread lock of runs on ``checkpointer`` (for as long as it lives)."""
    _REGISTERED[checkpointer] = locks


def _busy(thread_id: str, where: str) -> ThreadInFlight:
    return ThreadInFlight(f"checkpoint thread {thread_id!r} has a run in flight ({where}); one thread runs once at a "
                          "time: try again when that run has finished (it resumes or answers from the thread)", thread_id)


@contextlib.contextmanager
def hold_thread(checkpointer: Any, thread_id: str) -> Iterator[None]:
    """Hold the lock of ``thread_id`` on ``checkpointer``'s database for the ``with`` block.

    Raises:
        ThreadInFlight: a run of the thread is in flight, in this process or another one.
        CheckpointError: the cross-process lock could not be asked for (the database is unreachable).
    """
    try:
        locks: ThreadLocks | None = _REGISTERED.get(checkpointer)
    except TypeError:  # a checkpointer that cannot be weakly referenced: nothing registered for it
        locks = None
    key = (locks.scope if locks is not None else f"id:{id(checkpointer)}", thread_id)
    with _IN_FLIGHT_LOCK:
        if key in _IN_FLIGHT:
            raise _busy(thread_id, "in this process")
        _IN_FLIGHT.add(key)
    try:
        if locks is not None and not locks.try_acquire(thread_id):
            raise _busy(thread_id, "in another process on the same checkpoint database")
        try:
            yield
        finally:
            if locks is not None:
                locks.release(thread_id)
    finally:
        with _IN_FLIGHT_LOCK:
            _IN_FLIGHT.discard(key)


class FileThreadLocks:
    """Thread locks for an SQLite checkpoint file: a 1-byte POSIX record lock (``lockf``) at the
    thread's offset in ``<database>.threads.lock``, on one descriptor per process (closing any
    other descriptor of the file would drop the process's locks, so it is never closed)."""

    _FILES: dict[str, int] = {}
    _FILES_LOCK = threading.Lock()

    def __init__(self, database: str) -> None:
        self.scope = os.path.realpath(database)
        self._path = self.scope + ".threads.lock"

    def _fd(self) -> int:
        with self._FILES_LOCK:
            fd = self._FILES.get(self._path)
            if fd is None:
                try:
                    fd = self._FILES[self._path] = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o600)
                except OSError as exc:
                    raise CheckpointError(f"{self._path}: cannot open the thread lock file: {exc}") from None
            return fd

    def _offset(self, thread_id: str) -> int:
        return lock_key(thread_id) & 0x7FFF_FFFF_FFFF

    def try_acquire(self, thread_id: str) -> bool:
        """Take the thread's byte lock without waiting."""
        try:
            fcntl.lockf(self._fd(), fcntl.LOCK_EX | fcntl.LOCK_NB, 1, self._offset(thread_id))
        except (BlockingIOError, PermissionError):
            return False
        return True

    def release(self, thread_id: str) -> None:
        """Give the thread's byte lock back."""
        with contextlib.suppress(OSError):
            fcntl.lockf(self._fd(), fcntl.LOCK_UN, 1, self._offset(thread_id))


class PostgresThreadLocks:
    """Thread locks on a Postgres checkpoint database: ``pg_try_advisory_lock`` on :func:`lock_key`
    of the thread, taken on one connection of this process kept for the locks alone (a session
    lock lasts as long as its connection: the database drops it when the process dies). The
    in-process layer comes first, so the connection never takes a lock it already holds."""

    def __init__(self, conninfo: str, connect: Any) -> None:
        self.scope = f"postgres:{conninfo}"
        self._conninfo = conninfo
        self._connect = connect  # psycopg.connect
        self._conn: Any = None
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def _query(self, sql: str, thread_id: str) -> bool:
        with self._lock:
            if self._conn is not None and (self._conn.closed or self._pid != os.getpid()):
                self._conn = None  # broken (its locks went with it), or inherited across a fork: a new one
            try:
                if self._conn is None:
                    self._conn = self._connect(self._conninfo, autocommit=True)
                    self._pid = os.getpid()
                row = self._conn.execute(sql, (lock_key(thread_id),)).fetchone()
            except Exception as exc:  # noqa: BLE001 - psycopg's errors: the lock cannot be known
                self._conn = None
                first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise CheckpointError(f"cannot take the lock of checkpoint thread {thread_id!r}: {first}") from None
        return bool(row[0] if not isinstance(row, dict) else next(iter(row.values())))

    def try_acquire(self, thread_id: str) -> bool:
        """``pg_try_advisory_lock``: True when this process now holds the thread."""
        return self._query("SELECT pg_try_advisory_lock(%s)", thread_id)

    def release(self, thread_id: str) -> None:
        """``pg_advisory_unlock``; a connection lost meanwhile had dropped the lock already."""
        with contextlib.suppress(CheckpointError):
            self._query("SELECT pg_advisory_unlock(%s)", thread_id)
