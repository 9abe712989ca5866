"""The run store: one benchmark run's metadata and results in a folder (RUNDIR), crash-safe and resumable.

Layout of RUNDIR::

    run.json        metadata, written once (atomically) when the run is created: model, mode,
                    guard config, generation settings, seed, instances file and its sha256,
                    stepguard version, server settings, simulated flag
    results.jsonl   append-only, one finished row per instance id (ids never repeat)
    errors.jsonl    append-only, one row per failed attempt (a model error); such ids are not
                    finished and are retried by the next run on the same RUNDIR
    .lock           held with ``fcntl.flock`` while a process writes; holds the holder's PID

Durability: every row is one ``write()`` of a whole line (newline included), then ``flush`` and
``os.fsync``. A process killed mid-write (SIGKILL, power loss) can leave at most one torn last
line without its newline; opening the store cuts it off (truncates the file) and reports it in
:attr:`RunStore.torn`. A malformed line anywhere else is not a crash artifact: opening raises
:class:`~stepguard.errors.RunStoreError` naming the file and line, and changes nothing.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from stepguard.errors import RunStoreError

__all__ = ["IDENTITY_KEYS", "RunStore", "TornLine", "iter_rows", "read_meta"]

IDENTITY_KEYS: tuple[str, ...] = ("model", "mode", "guard_config", "generation", "instances_sha256")
"""run.json keys that must match to resume a run (a different value is a different experiment)."""

RESULTS, ERRORS, META, LOCK = "results.jsonl", "errors.jsonl", "run.json", ".lock"


class TornLine:
    """A torn last line cut off when the store was opened.

    Attributes:
        file: the file it was cut from.
        line: its 1-based line number.
        size: bytes removed.
    """

    def __init__(self, file: Path, line: int, size: int) -> None:
        self.file, self.line, self.size = file, line, size

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: cut a torn last line ({self.size} bytes, an interrupted write); that instance will run again"


def read_meta(rundir: str | Path) -> dict[str, Any]:
    """The run.json of ``rundir`` as a dict.

    Raises:
        RunStoreError: run.json is missing or not a JSON object.
    """
    path = Path(rundir) / META
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise RunStoreError(f"{path}: not found: {rundir} is not a run directory") from None
    except (OSError, ValueError) as exc:
        raise RunStoreError(f"{path}: unreadable: {exc}") from None
    if not isinstance(meta, dict):
        raise RunStoreError(f"{path}: expected a JSON object")
    return meta


def _parse(path: Path, lineno: int, line: bytes) -> dict[str, Any]:
    try:
        row = json.loads(line)
    except ValueError as exc:
        raise RunStoreError(
            f"{path}:{lineno}: corrupt line ({exc}); the other rows are intact: "
            "fix or delete that line, then run again"
        ) from None
    if not isinstance(row, dict) or not isinstance(row.get("id"), str):
        raise RunStoreError(f"{path}:{lineno}: a row must be a JSON object with a string 'id'")
    return row


def iter_rows(path: str | Path) -> Iterator[dict[str, Any]]:
    """Stream the rows of a JSONL file of the store (read-only; a torn last line is skipped).

    Yields:
        One dict per complete line, in file order.

    Raises:
        RunStoreError: a complete line is not a JSON object with a string ``id`` (names file and line).
    """
    path = Path(path)
    if not path.exists():
        return
    with path.open("rb") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.endswith(b"\n"):
                return  # torn last line: the writer's next open cuts it
            if line.strip():
                yield _parse(path, lineno, line)


def _check_and_cut(path: Path) -> tuple[set[str], TornLine | None]:
    """Read ``path`` once: the set of ids, with a torn last line truncated away."""
    ids: set[str] = set()
    good_end, lineno = 0, 0
    torn: TornLine | None = None
    if not path.exists():
        return ids, None
    with path.open("rb") as fh:
        for lineno, line in enumerate(fh, 1):  # noqa: B007
            if not line.endswith(b"\n"):
                torn = TornLine(path, lineno, len(line))
                break
            good_end += len(line)
            if not line.strip():
                continue
            row = _parse(path, lineno, line)
            if row["id"] in ids and path.name == RESULTS:
                raise RunStoreError(f"{path}:{lineno}: duplicate id {row['id']!r} (each instance has one row)")
            ids.add(row["id"])
    if torn is not None:
        with path.open("r+b") as fh:
            fh.truncate(good_end)
            fh.flush()
            os.fsync(fh.fileno())
    return ids, torn


class RunStore:
    """An open, locked run store. Use :meth:`open`; close with :meth:`close` or a ``with`` block.

    Attributes:
        rundir: the folder.
        meta: run.json's contents.
        finished: ids with a row in results.jsonl (these instances are skipped on resume).
        failed: ids with an error row and no result row (retried on resume).
        torn: torn last lines cut off at open (at most one per file).
        resumed: True when the store already existed.
    """

    def __init__(self, rundir: Path, meta: dict[str, Any], lock_fd: int) -> None:
        self.rundir, self.meta, self._lock_fd = rundir, meta, lock_fd
        self.finished: set[str] = set()
        self.failed: set[str] = set()
        self.torn: list[TornLine] = []
        self.resumed = False
        self._fh: dict[str, Any] = {}

    @classmethod
    def open(cls, rundir: str | Path, meta: Mapping[str, Any]) -> RunStore:
        """Create or resume the store in ``rundir`` and take its lock.

        Args:
            rundir: the folder (created if missing).
            meta: the run's metadata (JSON-serialisable); written to run.json for a new run,
                compared on :data:`IDENTITY_KEYS` with run.json for an existing one.

        Raises:
            RunStoreError: another process holds the lock (the message gives its PID); run.json
                differs in model, mode, guard config, generation settings or instances file;
                a corrupt line or duplicate id (names file and line).
        """
        rundir = Path(rundir)
        rundir.mkdir(parents=True, exist_ok=True)
        fd = _lock(rundir)
        try:
            store = cls(rundir, dict(meta), fd)
            store._load(dict(meta))
        except BaseException:
            _unlock(fd)
            raise
        return store

    def _load(self, meta: dict[str, Any]) -> None:
        path = self.rundir / META
        if path.exists():
            old = read_meta(self.rundir)
            diff = [k for k in IDENTITY_KEYS if old.get(k) != meta.get(k)]
            if diff:
                details = "; ".join(f"{k}: stored {old.get(k)!r}, now {meta.get(k)!r}" for k in diff)
                raise RunStoreError(
                    f"{path}: this run directory holds a different run ({details}); "
                    "use another --out directory, or the same settings to resume"
                )
            self.meta, self.resumed = old, True
        else:
            meta.setdefault("created_at", time.strftime("%Y-%m-%dT%H:%M:%S%z"))
            tmp = path.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
            os.replace(tmp, path)
            self.meta = meta
        self.finished, torn = _check_and_cut(self.rundir / RESULTS)
        errors, torn_err = _check_and_cut(self.rundir / ERRORS)
        self.failed = errors - self.finished
        self.torn = [t for t in (torn, torn_err) if t is not None]

    def _append(self, name: str, row: Mapping[str, Any]) -> None:
        fh = self._fh.get(name)
        if fh is None:
            fh = self._fh[name] = (self.rundir / name).open("ab", buffering=0)
        line = (json.dumps(row, separators=(",", ":"), default=str) + "\n").encode("utf-8")
        fh.write(line)
        fh.flush()
        os.fsync(fh.fileno())

    def add_result(self, row: Mapping[str, Any]) -> None:
        """Append one finished row (``row["id"]`` a string) durably.

        Raises:
            RunStoreError: the id already has a row, or the store is closed.
        """
        rid = row.get("id")
        if not isinstance(rid, str):
            raise RunStoreError("a result row needs a string 'id'")
        if rid in self.finished:
            raise RunStoreError(f"{self.rundir / RESULTS}: id {rid!r} already has a row")
        self._check_open()
        self._append(RESULTS, row)
        self.finished.add(rid)
        self.failed.discard(rid)

    def add_error(self, row: Mapping[str, Any]) -> None:
        """Append one error row (``{id, error, ...}``); the id stays unfinished and is retried on resume."""
        self._check_open()
        self._append(ERRORS, row)
        self.failed.add(str(row.get("id")))

    def _check_open(self) -> None:
        if self._lock_fd < 0:
            raise RunStoreError(f"{self.rundir}: the store is closed")

    def rows(self) -> Iterator[dict[str, Any]]:
        """Stream the finished rows (see :func:`iter_rows`)."""
        return iter_rows(self.rundir / RESULTS)

    def close(self) -> None:
        """Close the files and release the lock. Idempotent."""
        for fh in self._fh.values():
            fh.close()
        self._fh.clear()
        if self._lock_fd >= 0:
            _unlock(self._lock_fd)
            self._lock_fd = -1

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _lock(rundir: Path) -> int:
    """Take the exclusive, non-blocking lock on ``rundir/.lock`` and write our PID into it."""
    path = rundir / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
        os.close(fd)
        raise RunStoreError(
            f"{rundir}: in use by another process (PID {holder}); wait for it or stop it, "
            "or use another --out directory"
        ) from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
    return fd


def _unlock(fd: int) -> None:
    try:
        os.ftruncate(fd, 0)
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
