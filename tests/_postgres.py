"""A throwaway PostgreSQL server for the shared-checkpointer tests: ``initdb`` into a temporary folder,
``pg_ctl start`` listening only on a Unix socket in that folder (no TCP port, so none to collide on),
trust auth for one user, stopped and removed afterwards.

It needs the server binaries (Debian: ``apt-get install postgresql``; ``.ci/run`` installs them);
as root it runs the server as the ``postgres`` user, which refuses root. :func:`postgres_skip_reason`
says why it cannot run here, or ``None``.
"""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["pg_bindir", "postgres_server", "postgres_skip_reason"]


def pg_bindir() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl`` (on PATH, else Debian's ``/usr/lib/postgresql/N/bin``), or None."""
    found = shutil.which("initdb")
    if found:
        return Path(found).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parent.parent.name)
                      if p.parent.parent.name.isdigit() else 0)
    return versions[-1].parent if versions else None


def _server_user() -> str | None:
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        return ""
    return "postgres"


def postgres_skip_reason() -> str | None:
    """Why no PostgreSQL server can be started here (a skip reason), or None when one can."""
    if pg_bindir() is None:
        return "no PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql (.ci/run does)"
    if _server_user() == "":
        return "running as root and there is no 'postgres' user to run the server as (apt-get install postgresql adds it)"
    try:
        import langgraph.checkpoint.postgres  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        return "the postgres extra is not installed: pip install 'stepguard[postgres]'"
    return None


@contextmanager
def postgres_server() -> Iterator[str]:
    """Start a PostgreSQL server; yield its URL (``postgresql://stepguard@/postgres?host=FOLDER``: the
    socket folder, no TCP)."""
    bindir = pg_bindir()
    assert bindir is not None, postgres_skip_reason()
    user = _server_user()
    root = Path(tempfile.mkdtemp(prefix="stepguard-pg-"))
    data = root / "data"
    if user:
        info = pwd.getpwnam(user)
        os.chown(root, info.pw_uid, info.pw_gid)
    run = {"user": user} if user else {}
    try:
        subprocess.run([str(bindir / "initdb"), "-D", str(data), "-U", "stepguard", "--auth=trust", "-E", "UTF8", "--no-sync"],
                       check=True, capture_output=True, timeout=120, **run)
        opts = f"-k {root} -c listen_addresses='' -c fsync=off -c max_connections=100"
        subprocess.run([str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "log"), "-w", "-t", "60", "start"],
                       check=True, capture_output=True, timeout=90, **run)
        yield f"postgresql://stepguard@/postgres?host={root}"
    finally:
        subprocess.run([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                       capture_output=True, timeout=60, **run)
        shutil.rmtree(root, ignore_errors=True)
