"""The run store: one benchmark run's metadata and results in a folder (RUNDIR), crash-safe and resumable.

Layout of RUNDIR::

    run.json        metadata, written once (atomically) when the run is created: model, mode,
                    guard config, generation settings, seed, instances file and its sha256,
                    stepguard version, server settings, simulated flag
    results.jsonl   append-only, one finished row per instance id (ids never repeat)
    errors.jsonl    append-only, one row per failed attempt (a model error); such ids are not
                    finished and are retried by the next run on the same RUNDIR
    .lock           held with ``fcntl.flock`` while a process writes; holds the holder's PID

Durability: every row is one ``write()`` of a whole line (newline included) to an unbuffered
append-mode file, then ``os.fsync``: inline by default (``sync_interval_s=None``), or, for the
benchmark runner, by a background thread (group commit: one fsync covers every row written before
it, at most one fsync per ``sync_interval_s``), so concurrent instances never wait on the disk. A
killed process loses nothing already written (the kernel holds it); a power loss can lose the rows
of the last ``sync_interval_s``, which then simply run again.

A process killed mid-write can leave at most one torn last line without its newline; opening the
store cuts it off (truncates the file) and reports it in :attr:`RunStore.torn`. A malformed line
anywhere else is not a crash artifact: opening raises :class:`~stepguard.errors.RunStoreError`
naming the file and line, and changes nothing.
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from stepguard.bench._storefiles import ERRORS, LOCK, META, RESULTS, Syncer, TornLine, check_and_cut, fsync, iter_rows, lock, unlock
from stepguard.errors import RunStoreError

__all__ = ["ERRORS", "IDENTITY_KEYS", "LOCK", "META", "RESULTS", "RunStore", "TornLine", "iter_rows", "read_meta"]

IDENTITY_KEYS: tuple[str, ...] = ("model", "mode", "guard_config", "generation", "instances_sha256", "prompts_sha256", "raw_prompt")
"""run.json keys that must match to resume a run (a different value is a different experiment).
``raw_prompt`` (the prompt files a raw run sends, by sha256) is absent from runs made before prompt
files existed, which read as ``None``: stepguard's own prompt, as then."""


def _replaced(path: Path, fh: Any) -> bool:
    """Whether the file open as ``fh`` is no longer the one at ``path`` (replaced or removed)."""
    try:
        now = os.stat(path)
    except FileNotFoundError:
        return True
    held = os.fstat(fh.fileno())
    return (now.st_ino, now.st_dev) != (held.st_ino, held.st_dev)


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

    def __init__(self, rundir: Path, meta: dict[str, Any], lock_fd: int, sync_interval_s: float | None = None) -> None:
        self.rundir, self.meta, self._lock_fd, self.sync_interval_s = rundir, meta, lock_fd, sync_interval_s
        self.finished: set[str] = set()
        self.failed: set[str] = set()
        self.torn: list[TornLine] = []
        self.resumed = False
        self._fh: dict[str, Any] = {}
        self._syncers: dict[str, Syncer] = {}

    @classmethod
    def open(cls, rundir: str | Path, meta: Mapping[str, Any], *, sync_interval_s: float | None = None) -> RunStore:
        """Create or resume the store in ``rundir`` and take its lock.

        Args:
            rundir: the folder (created if missing).
            meta: the run's metadata (JSON-serialisable); written to run.json for a new run,
                compared on :data:`IDENTITY_KEYS` with run.json for an existing one.
            sync_interval_s: ``None``: fsync every row inline. A number: fsync from a background
                thread at most once per that many seconds (:class:`~stepguard.bench._storefiles.Syncer`),
                for many concurrent writers (the benchmark runner).

        Raises:
            RunStoreError: another process holds the lock (the message gives its PID); run.json
                differs in model, mode, guard config, generation settings or instances file;
                a corrupt line or duplicate id (names file and line).
        """
        rundir = Path(rundir)
        rundir.mkdir(parents=True, exist_ok=True)
        fd = lock(rundir)
        try:
            plain = json.loads(json.dumps(dict(meta), default=str))  # as run.json will read back
            store = cls(rundir, plain, fd, sync_interval_s)
            store._load(plain)
        except BaseException:
            unlock(fd)
            raise
        return store

    def _load(self, meta: dict[str, Any]) -> None:
        path = self.rundir / META
        if path.exists():
            old = read_meta(self.rundir)
            diff = [k for k in IDENTITY_KEYS if old.get(k) != meta.get(k)]
            if diff:
                details = "; ".join(_differences(k, old.get(k), meta.get(k)) for k in diff)
                if "prompts_sha256" in diff and old.get("prompt_forms") != meta.get("prompt_forms"):
                    # unlike a checkpoint, a store is not resumed across forms: its calls, tokens and re-prompts measure the wording
                    details += f"; prompt forms: stored {old.get('prompt_forms', '(not recorded)')}, now {meta.get('prompt_forms')}"
                raise RunStoreError(
                    f"{path}: this run directory holds a different run ({details}); "
                    "use another --out directory, or the same settings to resume"
                    + _settings_hint(old.get("guard_config"), meta.get("guard_config"))
                )
            if meta.get("instances_sha256") is None:
                raise RunStoreError(
                    f"{path}: this run directory holds a run, and these instances come from a one-shot "
                    "iterable whose content cannot be checked against it; pass an instances file or a "
                    "list to resume, or use another --out directory"
                )
            self.meta, self.resumed = old, True
        else:
            meta.setdefault("created_at", time.strftime("%Y-%m-%dT%H:%M:%S%z"))
            tmp = path.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(meta, indent=2, sort_keys=True, default=str) + "\n", encoding="utf-8")
            os.replace(tmp, path)
            self.meta = meta
        self.finished, torn = check_and_cut(self.rundir / RESULTS)
        errors, torn_err = check_and_cut(self.rundir / ERRORS)
        self.failed = errors - self.finished
        self.torn = [t for t in (torn, torn_err) if t is not None]

    def _append(self, name: str, row: Mapping[str, Any]) -> None:
        """Write one row (:meth:`_write`), then ``fsync`` it (inline, or by the group-commit thread).

        Raises:
            RunStoreError: the store is closed, or the write failed (a full disk): names the file;
                no partial line is left behind.
        """
        self._check_open()
        try:
            fh = self._write(name, row)
        except OSError as exc:
            raise RunStoreError(f"{self.rundir / name}: cannot write a row ({exc.strerror or exc})") from None
        if self.sync_interval_s is not None:
            self._syncers[name].wrote()
        else:
            fsync(fh)

    def _write(self, name: str, row: Mapping[str, Any]) -> Any:
        """One ``write()`` of the whole line (newline included) to the unbuffered append-mode file
        ``name`` (a short write, as on a nearly full disk, is completed); returns the file.

        Raises:
            OSError: the write failed; the file is cut back to its previous end first.
        """
        fh = self._fh.get(name)
        if fh is not None and _replaced(self.rundir / name, fh):
            fh = self._rejoin(name, fh)
        if fh is None:
            fh = self._open_file(name)
        data = memoryview((json.dumps(row, separators=(",", ":"), default=str) + "\n").encode("utf-8"))
        start = fh.seek(0, os.SEEK_END)
        try:
            while data:
                data = data[fh.write(data):]
            fh.flush()
        except OSError:
            os.ftruncate(fh.fileno(), start)
            raise
        return fh

    def _open_file(self, name: str) -> Any:
        """Open ``name`` to append (and read back: :meth:`_rejoin`), unbuffered; its syncer where one is used."""
        fh = self._fh[name] = (self.rundir / name).open("a+b", buffering=0)
        if self.sync_interval_s is not None:
            self._syncers[name] = Syncer(fh, self.sync_interval_s)
        return fh

    def _rejoin(self, name: str, old: Any) -> Any:
        """The file at ``name`` was replaced or removed while this store wrote it (a ``git stash``,
        ``checkout`` or ``pull`` of a committed store during a run): the rows this store wrote are
        in the file it still holds open, which no path reaches. Every line of that file that the
        file now at the path lacks is appended to it, so nothing written is lost, and writing
        continues there. Warns (:class:`RuntimeWarning`) naming the file and the lines restored."""
        old.seek(0)
        lines = [line for line in old.read().splitlines(keepends=True) if line.endswith(b"\n")]
        if (syncer := self._syncers.pop(name, None)) is not None:
            syncer.close()
        old.close()
        del self._fh[name]
        fh = self._open_file(name)
        fh.seek(0)
        present = set(fh.read().splitlines(keepends=True))
        missing = b"".join(line for line in lines if line not in present)
        if missing:
            fh.seek(0, os.SEEK_END)
            view = memoryview(missing)
            while view:
                view = view[fh.write(view):]
            fsync(fh)
        count = len(missing.splitlines())
        warnings.warn(f"{self.rundir / name} was replaced while this run wrote it (a git stash, checkout or pull?): "
                      f"{count} of its rows were missing from the file now there and are written to it again",
                      RuntimeWarning, stacklevel=4)
        return fh

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
        self._append(RESULTS, row)
        self.finished.add(rid)
        self.failed.discard(rid)

    def add_error(self, row: Mapping[str, Any]) -> None:
        """Append one error row (``{id, error, ...}``); the id stays unfinished and is retried on resume."""
        self._append(ERRORS, row)
        self.failed.add(str(row.get("id")))

    def _check_open(self) -> None:
        if self._lock_fd < 0:
            raise RunStoreError(f"{self.rundir}: the store is closed")

    def rows(self) -> Iterator[dict[str, Any]]:
        """Stream the finished rows (see :func:`iter_rows`)."""
        return iter_rows(self.rundir / RESULTS)

    def close(self) -> None:
        """fsync and close the files, release the lock. Idempotent."""
        for syncer in self._syncers.values():
            syncer.close()
        self._syncers.clear()
        for fh in self._fh.values():
            fsync(fh)
            fh.close()
        self._fh.clear()
        if self._lock_fd >= 0:
            unlock(self._lock_fd)
            self._lock_fd = -1

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()




# what a field left out of an embedded model's identity means (the default runtime is left out, so
# that runs recorded before runtimes existed still resume); other models have no runtime at all
_ABSENT_LOCAL = {("model", "runtime"): "'python' (the default runtime)",
                 ("model", "binary_sha256"): "none (the python runtime has no llama-server binary)",
                 ("model", "parallel"): "1 (one request slot)"}


def _settings_hint(old: Any, new: Any) -> str:
    """The flags that resume a store made before a run's default settings changed (:func:`stepguard.guard.settings_resume_hint`)."""
    from stepguard.guard import settings_resume_hint  # a refusal's path only: the store is read without the guard

    return settings_resume_hint(old, new)


def _differences(key: str, old: Any, new: Any) -> str:
    """``key: stored X, now Y``, or for two mappings only the fields that differ
    (``guard_config.chunk_size: stored 5, now 1``), so a refusal names what changed."""
    if isinstance(old, dict) and isinstance(new, dict):
        def shown(d: dict[str, Any], k: str) -> str:
            if k in d:
                return repr(d[k])
            local = str(d.get("spec", "")).startswith("local")
            return _ABSENT_LOCAL.get((key, k), "(not recorded)") if local else "(not recorded)"

        return "; ".join(f"{key}.{k}: stored {shown(old, k)}, now {shown(new, k)}"
                         for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k))
    return f"{key}: stored {old!r}, now {new!r}"
