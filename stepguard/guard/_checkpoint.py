"""The embedded checkpointer: LangGraph's SQLite saver, usable from sync and async runs alike."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, ChannelVersions, Checkpoint, CheckpointMetadata, CheckpointTuple
from langgraph.checkpoint.sqlite import SqliteSaver

from stepguard.errors import CheckpointError
from stepguard.guard._thread_lock import FileThreadLocks, register_thread_locks

__all__ = ["ThreadedSqliteSaver", "async_capable", "sqlite_checkpointer"]


class ThreadedSqliteSaver(SqliteSaver):
    """LangGraph's ``SqliteSaver`` with its async methods run in a worker thread.

    ``SqliteSaver`` raises ``NotImplementedError`` from every async method, so ``Guard.arun`` (and
    ``graph.ainvoke``) failed on the embedded checkpointer. This one serves both on one SQLite
    connection (``check_same_thread=False``; the saver's own lock serialises access), so a thread
    started by a sync run resumes in an async one and back.
    """

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """Async twin of ``get_tuple``."""
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        """Async twin of ``list``."""
        rows = await asyncio.to_thread(lambda: list(self.list(config, filter=filter, before=before, limit=limit)))
        for row in rows:
            yield row

    async def aput(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, new_versions: ChannelVersions
    ) -> RunnableConfig:
        """Async twin of ``put``."""
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str, task_path: str = "") -> None:
        """Async twin of ``put_writes``."""
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        """Async twin of ``delete_thread``."""
        await asyncio.to_thread(self.delete_thread, thread_id)


def async_capable(saver: BaseCheckpointSaver[Any] | None) -> BaseCheckpointSaver[Any] | None:
    """``saver``, or, for a plain sync-only ``SqliteSaver``, a :class:`ThreadedSqliteSaver` on its connection."""
    if type(saver) is SqliteSaver:
        return _with_thread_locks(ThreadedSqliteSaver(saver.conn, serde=saver.serde))
    return saver


def _with_thread_locks(saver: ThreadedSqliteSaver) -> ThreadedSqliteSaver:
    """``saver`` with its database file's thread locks registered (:class:`FileThreadLocks`), so
    two processes on one SQLite file never run one thread at once; an in-memory database has none."""
    try:
        rows = saver.conn.execute("PRAGMA database_list").fetchall()
    except sqlite3.Error:
        return saver
    path = next((str(r[2]) for r in rows if r[1] == "main"), "")
    if path:
        register_thread_locks(saver, FileThreadLocks(path))
    return saver


def sqlite_checkpointer(path: str | Path) -> BaseCheckpointSaver[Any]:
    """A LangGraph SQLite checkpointer on ``path`` (the embedded default; WAL mode, one writer).

    Serves sync and async runs (:class:`ThreadedSqliteSaver`). For multi-worker deployments pass
    LangGraph's Postgres checkpointer to :class:`stepguard.Guard` instead.

    Raises:
        CheckpointError: ``path`` cannot be opened or is not an SQLite database (garbage bytes, a
            truncated file); the file is left as it is, never started over.
    """
    try:
        conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
    except sqlite3.Error as exc:
        raise CheckpointError(f"{path}: cannot open the checkpoint database: {exc}") from None
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # reads the schema: fails on garbage
    except sqlite3.Error as exc:
        conn.close()
        raise CheckpointError(
            f"{path}: not a usable checkpoint database ({exc}); it was left unchanged: "
            "move it away to start the runs it holds over, or restore it"
        ) from None
    return _with_thread_locks(ThreadedSqliteSaver(conn))
