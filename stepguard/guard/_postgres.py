"""The shared checkpointer: LangGraph's Postgres saver, for several processes or machines on one database.

SQLite (:func:`stepguard.guard.sqlite_checkpointer`) stays the single-machine default. With Postgres,
the worker processes of ``stepguard serve --workers N`` (or several proxies) share one set of
checkpoint threads: a guarded run whose worker died is resumed by the next request that names its
thread, in any worker, from its last committed chunk; nothing committed is asked again.
"""

from __future__ import annotations

from typing import Any

from stepguard._extra import import_extra
from stepguard.errors import CheckpointError
from stepguard.guard._thread_lock import PostgresThreadLocks, register_thread_locks

__all__ = ["postgres_checkpointer"]

_SETUP_LOCK = 0x5347_5043  # "SGPC": the advisory lock that serialises the saver's migrations across workers


def postgres_checkpointer(conninfo: str, *, max_connections: int = 16) -> Any:
    """A LangGraph ``PostgresSaver`` on ``conninfo`` over a connection pool, its tables set up.

    Args:
        conninfo: a libpq connection string or URL, e.g. ``postgresql://user@host:5432/stepguard``
            (a password is best given in ``PGPASSWORD`` or ``~/.pgpass``, not in the URL).
        max_connections: the pool's size; guarded runs in flight at once each hold one while they
            read or write a checkpoint.

    Returns:
        A ``langgraph.checkpoint.postgres.PostgresSaver`` usable by many threads at once (sync runs:
        :meth:`stepguard.Guard.run`). Its ``conn`` is the pool; ``saver.conn.close()`` ends it. Runs on
        it take a Postgres advisory lock of their thread (:mod:`stepguard.guard._thread_lock`), on one
        more connection per process: one run of a thread at a time across every worker.

    Raises:
        MissingExtraError: ``langgraph-checkpoint-postgres`` or ``psycopg`` is not installed
            (``pip install 'stepguard[postgres]'``).
        CheckpointError: the database cannot be reached or set up (the message says why, without the password).
    """
    what = "the Postgres checkpointer"
    saver_mod = import_extra("langgraph.checkpoint.postgres", "postgres", what)
    pool_mod = import_extra("psycopg_pool", "postgres", what)
    rows = import_extra("psycopg.rows", "postgres", what)
    psycopg = import_extra("psycopg", "postgres", what)
    kwargs = {"autocommit": True, "prepare_threshold": 0, "row_factory": rows.dict_row}
    try:
        pool = pool_mod.ConnectionPool(conninfo, min_size=1, max_size=max(2, max_connections), kwargs=kwargs, open=False)
        pool.open(wait=True, timeout=30)
    except (psycopg.Error, pool_mod.PoolTimeout) as exc:
        raise CheckpointError(f"cannot connect to the Postgres checkpoint database: {_quiet(exc)}") from None
    saver = saver_mod.PostgresSaver(pool)
    try:
        with pool.connection() as conn:  # one worker at a time runs the migrations
            conn.execute("SELECT pg_advisory_lock(%s)", (_SETUP_LOCK,))
            try:
                saver.setup()
            finally:
                conn.execute("SELECT pg_advisory_unlock(%s)", (_SETUP_LOCK,))
    except psycopg.Error as exc:
        pool.close()
        raise CheckpointError(f"cannot set up the Postgres checkpoint tables: {_quiet(exc)}") from None
    # one run of a thread at a time across every process on this database (stepguard.guard._thread_lock)
    register_thread_locks(saver, PostgresThreadLocks(conninfo, psycopg.connect))
    return saver


def _quiet(exc: BaseException) -> str:
    """An error's first line: psycopg's messages name host, port and user, never the password."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]
