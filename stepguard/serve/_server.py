"""Serving the proxy: in the foreground (``stepguard serve``), with worker processes, or in a thread (tests)."""

from __future__ import annotations

import errno
import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

from stepguard._extra import import_extra

__all__ = ["OPTIONS_ENV", "TOKEN_ENV", "BackgroundServer", "ListenError", "StartupError", "app_from_env", "listen",
           "open_checkpointer", "serve"]

TOKEN_ENV = "STEPGUARD_PROXY_TOKEN"
"""Environment variable holding the proxy's bearer token (``--token`` sets it for worker processes)."""
OPTIONS_ENV = "STEPGUARD_SERVE_OPTIONS"
"""How ``serve`` hands its options (JSON, no secrets) to worker processes, which build their app in :func:`app_from_env`."""

_WHAT = "the guarding proxy (stepguard serve)"
_STARTUP_FAILURE = 3  # uvicorn's exit status for a worker that failed before it served (never ours: 3 is "flagged")


class ListenError(Exception):
    """The proxy cannot listen on its address: the port is in use, the host is not this machine's, ..."""


class StartupError(Exception):
    """The proxy did not start serving: its app could not be built or its upstream could not start (the log says why)."""


_HINTS = {
    errno.EADDRINUSE: "another process listens there: stop it, or choose another port",
    errno.EADDRNOTAVAIL: "not an address of this machine: choose another host",
    errno.EACCES: "not permitted (a port below 1024 needs privileges): choose another port",
}


def listen(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` (not yet listening), as uvicorn binds one: ``SO_REUSEADDR``,
    ``TCP_NODELAY`` (every response is written without waiting on Nagle's algorithm), IPv6 when
    ``host`` holds a ``:``. Port 0 binds a free port (``getsockname()`` says which).

    Raises:
        ListenError: it cannot be bound; the message names ``host:port`` and the reason, in one line.
    """
    ipv6 = ":" in host
    where = f"[{host}]:{port}" if ipv6 else f"{host}:{port}"
    # IPPROTO_TCP stated, not 0: asyncio sets TCP_NODELAY on an accepted connection only when its
    # socket says TCP, and without it a response's head and body (two writes) waited for the client's
    # delayed ACK, a constant ~40 ms a request (docs/proxy.md, "Overhead"); set here too, which
    # accepted sockets inherit
    sock = socket.socket(socket.AF_INET6 if ipv6 else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
    except (OSError, OverflowError) as exc:
        sock.close()
        if isinstance(exc, socket.gaierror):
            reason = f"{exc.strerror or exc} (not a host name or address this machine can resolve)"
        elif isinstance(exc, OSError) and exc.strerror:
            hint = _HINTS.get(exc.errno or 0)
            reason = exc.strerror.lower() + (f" ({hint})" if hint else "")
        else:
            reason = str(exc)
        raise ListenError(f"cannot listen on {where}: {reason}") from None
    sock.set_inheritable(True)  # worker processes serve on it
    return sock


def open_checkpointer(target: str | Path | None) -> Any:
    """The checkpointer ``target`` names: ``postgresql://...`` (shared by workers), a SQLite file path, or none.

    Raises:
        CheckpointError: the database cannot be opened, reached or set up.
        MissingExtraError: a Postgres URL without the ``postgres`` extra installed.
    """
    if target is None or str(target) == "":
        return None
    text = str(target)
    if text.startswith(("postgresql://", "postgres://")) or (" " in text and "dbname=" in text):
        from stepguard.guard import postgres_checkpointer

        return postgres_checkpointer(text)
    from stepguard.guard import sqlite_checkpointer

    return sqlite_checkpointer(text)


def app_from_env() -> Any:
    """The app a worker process serves, built from :data:`OPTIONS_ENV` and :data:`TOKEN_ENV` (uvicorn's factory)."""
    from stepguard.serve._app import create_app
    from stepguard.serve._limits import DEFAULT_MAX_BODY_BYTES
    from stepguard.serve._procedures import load_procedure_folder
    from stepguard.serve._upstream import Upstream
    from stepguard.tools import load_tools

    opts = json.loads(os.environ.get(OPTIONS_ENV) or "{}")
    procedures = load_procedure_folder(opts["procedures"]) if opts.get("procedures") else {}
    upstream = Upstream(opts.get("upstream") or "local", timeout=opts.get("timeout"))
    tools = load_tools(opts["tools"]) if opts.get("tools") else None
    return create_app(upstream, procedures, token=os.environ.get(TOKEN_ENV) or None,
                      checkpointer=open_checkpointer(opts.get("checkpoint")), max_runs=int(opts.get("max_runs") or 32),
                      tools=tools, max_body_bytes=int(opts.get("max_body_bytes") or DEFAULT_MAX_BODY_BYTES),
                      otel=bool(opts.get("otel")), trace_file=opts.get("trace_file") or None)


def serve(*, upstream: str, procedures: str | Path | None, host: str = "127.0.0.1", port: int = 8787,
          token: str | None = None, checkpoint: str | None = None, workers: int = 1, max_runs: int = 32,
          timeout: float | None = None, log_level: str = "info", tools: str | None = None,
          max_body_bytes: int | None = None, sock: socket.socket | None = None, otel: bool = False,
          trace_file: str | Path | None = None) -> None:
    """Serve the proxy in the foreground with uvicorn until interrupted.

    ``tools`` is a ``MODULE:ATTR`` (or ``path/file.py:ATTR``) spec of the tools that tool steps call
    (:func:`stepguard.tools.load_tools`), imported by each worker. ``max_body_bytes``: the largest
    request body taken (``None``: 32 MiB); a larger one is answered 413. ``sock``: a socket from
    :func:`listen` to serve on (closed when serving ends); ``None``: one bound to ``host:port`` here.
    ``otel`` / ``trace_file``: trace every guarded run as ``stepguard run --otel`` / ``--trace-file``
    do; each worker configures its own exporters when it starts and flushes them when it stops
    (several workers append to one trace file, one line per export).

    Each worker process builds its own app (:func:`app_from_env`); the token travels in
    :data:`TOKEN_ENV`, never on a command line. With ``workers > 1`` the checkpoint should be a
    Postgres URL (SQLite serialises writers across processes).

    Raises:
        ListenError: ``host:port`` cannot be bound (:func:`listen`).
        StartupError: the proxy did not start serving (the app could not be built, the upstream
            could not start): uvicorn's log above says why. uvicorn's own exit statuses never leak.
    """
    uvicorn = import_extra("uvicorn", "serve", _WHAT)
    import_extra("starlette", "serve", _WHAT)
    from uvicorn.supervisors import Multiprocess

    os.environ[OPTIONS_ENV] = json.dumps({"upstream": upstream, "procedures": str(procedures) if procedures else None,
                                          "checkpoint": checkpoint, "max_runs": max_runs, "timeout": timeout,
                                          "tools": tools, "max_body_bytes": max_body_bytes, "otel": otel,
                                          "trace_file": str(Path(trace_file).resolve()) if trace_file else None})
    if token:
        os.environ[TOKEN_ENV] = token
    config = uvicorn.Config("stepguard.serve._server:app_from_env", factory=True, host=host, port=port, workers=workers,
                            log_level=log_level, proxy_headers=False, server_header=False, timeout_graceful_shutdown=10)
    sock = sock if sock is not None else listen(host, port)
    failed = "the proxy did not start (the log above says why)"
    try:
        if workers > 1:  # uvicorn's own supervisor, on the socket bound here (as uvicorn.run does)
            supervisor = Multiprocess(config, sockets=[sock])
            supervisor.run()
            if any(p.exitcode == _STARTUP_FAILURE for p in supervisor.processes):
                raise StartupError(failed)
            return
        server = uvicorn.Server(config)
        try:
            server.run(sockets=[sock])
        except SystemExit:  # uvicorn exits when the app cannot be built or its start-up fails
            raise StartupError(failed) from None
        if not server.started:
            raise StartupError(failed)
    finally:
        sock.close()


class BackgroundServer:
    """Serve an ASGI app with uvicorn in a daemon thread, on 127.0.0.1 and a free port (tests, benchmarks).

    Usage::

        with BackgroundServer(create_app(Upstream("sim:perfect"), procedures)) as server:
            openai.OpenAI(base_url=server.base_url, api_key="-").models.list()

    Args:
        app: the ASGI application.
        host: the address to listen on.
        port: the port; 0 picks a free one.
    """

    def __init__(self, app: Any, host: str = "127.0.0.1", port: int = 0, log_level: str = "warning") -> None:
        uvicorn = import_extra("uvicorn", "serve", _WHAT)
        config = uvicorn.Config(app, host=host, port=port, log_level=log_level, lifespan="on", server_header=False)
        self.server = uvicorn.Server(config)
        self.server.install_signal_handlers = lambda: None  # not the main thread
        self._thread = threading.Thread(target=self.server.run, name="stepguard-serve", daemon=True)
        self.host = host

    @property
    def port(self) -> int:
        """The port it listens on."""
        return int(self.server.servers[0].sockets[0].getsockname()[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    def start(self, timeout: float = 30.0) -> BackgroundServer:
        """Start serving; return once it accepts connections.

        Raises:
            RuntimeError: it did not start within ``timeout`` seconds (the app's start-up failed).
        """
        self._thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the proxy did not start (see its log)")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        self.server.should_exit = True
        self._thread.join(timeout=15)

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
