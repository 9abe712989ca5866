"""Private: the llama.cpp server process, started and stopped.

Two runtimes serve the same OpenAI-compatible API: llama-cpp-python's server (``python -m
llama_cpp.server``, ``runtime="python"``) and llama.cpp's own ``llama-server`` binary
(``runtime="native"``; :func:`native_binary` finds it).

A :class:`LocalServer` runs the server in its own session (so a terminal's Ctrl-C reaches
stepguard, not the server), waits until ``GET /v1/models`` answers, and stops it by its own
process group: SIGTERM, then SIGKILL after a grace period. Every live server is also stopped at
interpreter exit, and is sent SIGTERM when the caller receives SIGINT or SIGTERM, after which
the caller's previous handler runs as before.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any

import httpx

from stepguard.errors import LocalServerError, LocalServerSettingError

_LIVE: set[LocalServer] = set()
_LIVE_LOCK = threading.RLock()
_PREVIOUS: dict[int, Any] = {}
_INSTALLED = False
_SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")

DRAFT_TOKENS = 0
"""Default tokens drafted per decode step by prompt-lookup decoding (n-gram drafts copied from the
prompt and the reply so far, no second model: ``llama_cpp.server --draft_model
prompt-lookup-decoding --draft_model_num_pred_tokens N``): off, because on a CPU a batch of drafted
tokens costs nearly as much as the steps it saves, and drafting can flip a temperature-0 near-tie
(figures: docs/speed.md, "Prompt-lookup drafting"). Opt in with ``draft_tokens=3`` or
``STEPGUARD_DRAFT_TOKENS=3`` where a batch costs little more than one token (more cores, a GPU)."""

DRAFT_TOKENS_ENV = "STEPGUARD_DRAFT_TOKENS"
"""Environment variable that sets the embedded server's draft tokens when the caller gives none
(``0``: no drafting), so commands that build the model themselves (``stepguard bench run``) can
turn drafting on or off."""


def draft_tokens_default() -> int:
    """The draft tokens to use when none are given: ``$STEPGUARD_DRAFT_TOKENS`` or :data:`DRAFT_TOKENS`.

    Raises:
        LocalServerError: the variable is not a whole number >= 0.
    """
    raw = os.environ.get(DRAFT_TOKENS_ENV, "").strip()
    if not raw:
        return DRAFT_TOKENS
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise LocalServerSettingError(f"{DRAFT_TOKENS_ENV}={raw!r}: give a whole number of tokens >= 0 (0 turns drafting off)")
    return value


PARALLEL_ENV = "STEPGUARD_PARALLEL"
"""Environment variable giving the native runtime's request slots when the caller gives none."""


def _checked_parallel(value: object, runtime: str, where: str = "parallel") -> int:
    """``value`` as a number of slots the runtime can serve (``where`` names it in the error)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise LocalServerSettingError(f"{where} must be a whole number of slots, at least 1; got {value!r}")
    if value > 1 and runtime != "native":
        raise LocalServerSettingError(f"{where}={value} needs the native runtime (runtime='native', "
                                      f"{RUNTIME_ENV}=native): the Python server serves one request at a time")
    return value


def parallel_default(runtime: str) -> int:
    """The slots to serve when none are given: ``$STEPGUARD_PARALLEL`` or 1.

    Raises:
        LocalServerSettingError: the variable is not a whole number >= 1, or above 1 for the Python runtime.
    """
    raw = os.environ.get(PARALLEL_ENV, "").strip()
    if not raw:
        return 1
    try:
        value: object = int(raw)
    except ValueError:
        value = raw
    return _checked_parallel(value, runtime, PARALLEL_ENV)


RUNTIMES = ("python", "native")
"""The embedded server's runtimes: llama-cpp-python's server, or llama.cpp's own ``llama-server``."""

RUNTIME = "python"
"""The default runtime (docs/speed.md compares the two on the guard's requests)."""

RUNTIME_ENV = "STEPGUARD_RUNTIME"
"""Environment variable naming the runtime when the caller gives none (``python`` or ``native``)."""

SERVER_BINARY_ENV = "STEPGUARD_LLAMA_SERVER"
"""Environment variable giving the path of a ``llama-server`` binary for ``runtime="native"``."""


def runtime_default() -> str:
    """The runtime to use when none is given: ``$STEPGUARD_RUNTIME`` or :data:`RUNTIME`.

    Raises:
        LocalServerError: the variable names no runtime of :data:`RUNTIMES`.
    """
    raw = os.environ.get(RUNTIME_ENV, "").strip()
    if raw and raw not in RUNTIMES:
        raise LocalServerSettingError(f"{RUNTIME_ENV}={raw!r}: give one of {', '.join(RUNTIMES)}")
    return raw or RUNTIME


def _chosen_runtime(runtime: str | None) -> str:
    """``runtime``, or :func:`runtime_default` for ``None``; refused unless one of :data:`RUNTIMES`."""
    runtime = runtime_default() if runtime is None else runtime
    if runtime not in RUNTIMES:
        raise LocalServerSettingError(f"runtime must be one of {', '.join(RUNTIMES)}, not {runtime!r}")
    return runtime


def _built_binaries() -> list[Path]:
    """``llama-server`` binaries built by ``scripts/build_llama_server.sh``, newest first."""
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "stepguard" / "llama-server"
    found = [p for p in cache.glob("*/llama-server") if p.is_file() and os.access(p, os.X_OK)]
    return sorted(found, key=lambda p: p.stat().st_mtime, reverse=True)


def native_binary(path: str | Path | None = None) -> Path:
    """The ``llama-server`` binary for ``runtime="native"``.

    Looked for in this order: ``path``; ``$STEPGUARD_LLAMA_SERVER``; ``llama-server`` on ``PATH``;
    the newest build of ``scripts/build_llama_server.sh`` (under ``~/.cache/stepguard/llama-server``).

    Raises:
        LocalServerError: none is found, or the one given is not an executable file.
    """
    given = path or os.environ.get(SERVER_BINARY_ENV, "").strip() or None
    if given is not None:
        p = Path(given).expanduser()
        if not (p.is_file() and os.access(p, os.X_OK)):
            where = "" if path else f" (from {SERVER_BINARY_ENV})"
            raise LocalServerSettingError(f"llama-server binary {str(p)!r}{where} is not an executable file")
        return p
    on_path = shutil.which("llama-server")
    if on_path:
        return Path(on_path)
    built = _built_binaries()
    if built:
        return built[0]
    raise LocalServerSettingError(
        "the native runtime needs llama.cpp's llama-server: build it once with `bash scripts/build_llama_server.sh` "
        f"(10 to 25 minutes on 2 cores), or set {SERVER_BINARY_ENV} to a binary of your own"
    )


def check_runtime(runtime: str | None = None, binary: str | Path | None = None) -> str:
    """Check the embedded server's settings before anything starts: the runtime (``None``:
    :func:`runtime_default`), the draft tokens, and that the runtime's server is installed (for the
    native runtime, ``binary`` or the one :func:`native_binary` finds). Returns the runtime.

    Raises:
        LocalServerError: ``$STEPGUARD_RUNTIME``, ``$STEPGUARD_DRAFT_TOKENS`` or ``$STEPGUARD_PARALLEL``
            is not valid, or the runtime's server is not installed (llama-cpp-python, or a ``llama-server`` binary).
    """
    runtime = _chosen_runtime(runtime)
    draft_tokens_default()
    parallel_default(runtime)
    if runtime == "native":
        native_binary(binary)
    else:
        check_llama_cpp()
    return runtime


def _stop_all() -> None:
    with _LIVE_LOCK:
        servers = list(_LIVE)
    for server in servers:
        server.stop()


def _on_signal(signum: int, frame: FrameType | None) -> None:
    # Only send signals here, never wait: the interrupted code may be inside Popen.wait itself.
    # SIGINT then unwinds as KeyboardInterrupt through the callers' stop(); SIGTERM ends us.
    with _LIVE_LOCK:
        servers = list(_LIVE)
    for server in servers:
        server.terminate()
    previous = _PREVIOUS.get(signum, signal.SIG_DFL)
    if callable(previous):
        previous(signum, frame)
    elif previous == signal.SIG_DFL:  # we die now: tidy what no stop() will
        for server in servers:
            # nobody is left to wait out a graceful shutdown (uvicorn waits for the request in
            # flight, which can be minutes of generation): kill the server's group outright
            server.terminate(signal.SIGKILL)
            server._remove_log()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


def _install_cleanup() -> None:
    """Register the atexit hook and, from the main thread, the SIGINT/SIGTERM handlers (once)."""
    global _INSTALLED
    if _INSTALLED:
        return
    _INSTALLED = True
    atexit.register(_stop_all)
    if threading.current_thread() is not threading.main_thread():
        return
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):  # SIGHUP: the terminal was closed
        previous = signal.getsignal(signum)
        if previous in (None, signal.SIG_IGN) or previous is _on_signal:  # set from C, ignored, or ours
            continue
        _PREVIOUS[signum] = previous
        signal.signal(signum, _on_signal)


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def check_llama_cpp() -> None:
    """Raise :class:`LocalServerError` unless llama-cpp-python with its server extras is importable."""
    missing = [m for m in _SERVER_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise LocalServerError(
            f"the embedded model server needs llama-cpp-python[server] (missing: {', '.join(missing)}): "
            'pip install -e ".[local]"'
        )


class LocalServer:
    """A llama.cpp server on 127.0.0.1 serving one GGUF file; a context manager.

    Args:
        model_path: the GGUF file.
        alias: the model name the server answers to (``--model_alias``); default the file stem.
        port: TCP port; ``None`` picks a free one.
        n_ctx: context window, tokens.
        n_threads: CPU threads for generation.
        seed: the server's sampling seed (``None`` = llama.cpp's default).
        ready_timeout: seconds to wait for ``/v1/models`` to answer.
        stop_grace: seconds between SIGTERM and SIGKILL when stopping.
        log_path: where the server's output goes; ``None`` = a temporary file removed on stop.
        extra_args: more command-line arguments for ``llama_cpp.server`` (after stepguard's own,
            so they win).
        draft_tokens: prompt-lookup draft tokens per decode step (:data:`DRAFT_TOKENS`); ``None`` =
            :func:`draft_tokens_default`; ``0`` = no drafting. Batched checking can flip a
            near-tie, so a temperature-0 reply may differ (docs/speed.md). The native runtime
            drafts with its ``ngram-simple`` speculative type.
        runtime: ``"python"`` (llama-cpp-python's server) or ``"native"`` (llama.cpp's
            ``llama-server``); ``None`` = :func:`runtime_default`. ``extra_args`` are the chosen
            runtime's own arguments.
        binary: the ``llama-server`` binary for the native runtime; ``None`` = :func:`native_binary`.
        parallel: request slots the native runtime serves at once, decoding them in one batch
            (continuous batching), each with its own ``n_ctx`` tokens of context; ``None`` =
            ``$STEPGUARD_PARALLEL`` or 1 (requests queue, as on the Python server, which has one
            slot). More slots raise throughput where several requests are in flight (a proxy's
            clients, ``bench run --concurrency``); batched kernels can flip a near-tie, so a
            temperature-0 reply may differ (docs/speed.md).

    Raises:
        LocalServerSettingError: ``draft_tokens`` is negative, ``runtime`` is not one of
            :data:`RUNTIMES`, or ``parallel`` is below 1, or above 1 on the Python runtime.
    """

    host = "127.0.0.1"

    def __init__(
        self,
        model_path: str | Path,
        *,
        alias: str | None = None,
        port: int | None = None,
        n_ctx: int = 8192,
        n_threads: int = 2,
        seed: int | None = None,
        ready_timeout: float = 120.0,
        stop_grace: float = 5.0,
        log_path: str | Path | None = None,
        extra_args: tuple[str, ...] = (),
        draft_tokens: int | None = None,
        runtime: str | None = None,
        binary: str | Path | None = None,
        parallel: int | None = None,
    ) -> None:
        self.model_path = Path(model_path)
        self.runtime = _chosen_runtime(runtime)
        self.parallel = parallel_default(self.runtime) if parallel is None else _checked_parallel(parallel, self.runtime)
        self.binary = Path(binary).resolve() if binary is not None and self.runtime == "native" else None
        self._binary_sha256: str | None = None
        self.draft_tokens = draft_tokens_default() if draft_tokens is None else draft_tokens
        if self.draft_tokens < 0:
            raise LocalServerSettingError(f"draft_tokens must be >= 0, not {self.draft_tokens}")
        self.alias = alias or self.model_path.stem
        self.port = port
        self.n_ctx, self.n_threads, self.seed = n_ctx, n_threads, seed
        self.ready_timeout, self.stop_grace = ready_timeout, stop_grace
        self.extra_args = tuple(extra_args)
        self._log_path = Path(log_path) if log_path else None
        self._own_log = log_path is None
        self._proc: subprocess.Popen[bytes] | None = None
        self.ready_s: float | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL, ``http://127.0.0.1:PORT/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def binary_sha256(self) -> str | None:
        """The sha256 of the native runtime's binary (hex; read once), or ``None`` for the Python runtime.

        It tells one ``llama-server`` build from another: two builds can differ in their replies.

        Raises:
            LocalServerError: the native runtime's binary is not found (:func:`native_binary`).
        """
        if self.runtime != "native":
            return None
        if self._binary_sha256 is None:
            import hashlib

            with self._native_binary().open("rb") as fh:
                self._binary_sha256 = hashlib.file_digest(fh, "sha256").hexdigest()
        return self._binary_sha256

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs, else ``None``."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def command(self) -> list[str]:
        """The command line that starts the server.

        Raises:
            LocalServerError: the native runtime's binary is not found (:func:`native_binary`).
        """
        if self.runtime == "native":
            return self._native_command()
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(self.model_path),
               "--host", self.host, "--port", str(self.port), "--n_ctx", str(self.n_ctx),
               "--n_threads", str(self.n_threads), "--model_alias", self.alias]
        if self.seed is not None:
            cmd += ["--seed", str(self.seed)]
        if self.draft_tokens:
            cmd += ["--draft_model", "prompt-lookup-decoding", "--draft_model_num_pred_tokens", str(self.draft_tokens)]
        return cmd + list(self.extra_args)

    def _native_binary(self) -> Path:
        """The native runtime's binary (the one given, else :func:`native_binary`'s), kept resolved in ``binary``."""
        self.binary = native_binary(self.binary).resolve()
        return self.binary

    def _native_command(self) -> list[str]:
        """``llama-server`` with the same settings: one slot, so requests queue as they do on the Python
        server, or ``parallel`` slots sharing one KV pool of ``n_ctx`` tokens a slot."""
        # with several slots, no -c: the pool is sized parallel x n_ctx, so each slot holds a whole raw reply
        ctx = ["-c", str(self.n_ctx)] if self.parallel == 1 else []
        cmd = [str(self._native_binary()), "-m", str(self.model_path), "--host", self.host, "--port", str(self.port),
               *ctx, "-t", str(self.n_threads), "-np", str(self.parallel), "--alias", self.alias]
        if self.parallel > 1:
            cmd += ["--kv-unified", "--kv-unified-per-slot", str(self.n_ctx)]
        if self.seed is not None:
            cmd += ["--seed", str(self.seed)]
        if self.draft_tokens:
            cmd += ["--spec-type", "ngram-simple", "--spec-draft-n-max", str(self.draft_tokens)]
        return cmd + list(self.extra_args)

    def _log_tail(self, lines: int = 20) -> str:
        try:
            if self._log_path is None:  # not started yet: no log file
                return "(no log)"
            with self._log_path.open("rb") as f:
                f.seek(max(0, f.seek(0, os.SEEK_END) - 8192))
                text = f.read().decode("utf-8", "replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def start(self) -> LocalServer:
        """Start the server and wait until it answers.

        Returns:
            ``self``, running.

        Raises:
            LocalServerError: llama-cpp-python (or the native runtime's binary) is missing or
                cannot be executed, the model file is missing, or the server died or did not answer
                within ``ready_timeout`` seconds (the message holds the last lines of its log).
        """
        if self.pid is not None:
            return self
        if self.runtime == "python":
            check_llama_cpp()
        if not self.model_path.is_file():
            raise LocalServerError(f"model file not found: {self.model_path}")
        self.port = self.port or free_port(self.host)
        command = self.command()
        if self._log_path is None:
            fd, name = tempfile.mkstemp(prefix="stepguard-llama-", suffix=".log")
            os.close(fd)
            self._log_path = Path(name)
        _install_cleanup()
        started = time.monotonic()
        try:
            with self._log_path.open("ab") as log:
                self._proc = subprocess.Popen(
                    command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
        except OSError as exc:  # a binary that cannot be executed (no #!, a missing interpreter)
            self._remove_log()
            error = LocalServerSettingError if self.runtime == "native" else LocalServerError  # the binary it was given
            raise error(f"the {self.runtime} runtime's server could not be started ({command[0]}): {exc}") from None
        with _LIVE_LOCK:
            _LIVE.add(self)
        try:
            self._wait_ready(started + self.ready_timeout)
        except BaseException:  # not ready, or interrupted: leave nothing behind
            self.stop()
            raise
        self.ready_s = time.monotonic() - started
        return self

    def _wait_ready(self, deadline: float) -> None:
        assert self._proc is not None
        with httpx.Client(trust_env=False, timeout=2.0) as client:
            while True:
                code = self._proc.poll()
                if code is not None:
                    raise LocalServerError(
                        f"llama.cpp server for {self.model_path.name} exited with code {code} before it was "
                        f"ready; last lines of its log ({self._log_path}):\n{self._log_tail()}"
                    )
                # llama-server answers /health with 503 while it loads the model, 200 once ready
                url = f"http://{self.host}:{self.port}/health" if self.runtime == "native" else f"{self.base_url}/models"
                try:
                    if client.get(url).status_code == 200:
                        return
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise LocalServerError(
                        f"llama.cpp server for {self.model_path.name} did not answer on {url} within "
                        f"{self.ready_timeout:g} s; last lines of its log:\n{self._log_tail()}"
                    )
                time.sleep(0.1)

    def wait(self, timeout: float | None = None) -> int | None:
        """Wait for the server process to exit by itself.

        Args:
            timeout: seconds to wait; ``None`` waits until it exits.

        Returns:
            Its exit code, or ``None`` if it is not running or still runs after ``timeout``.
        """
        proc = self._proc
        if proc is None:
            return None
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def log_tail(self, lines: int = 20) -> str:
        """The last ``lines`` lines of the server's log (``"(no log)"`` once removed)."""
        return self._log_tail(lines)

    def terminate(self, sig: int = signal.SIGTERM) -> None:
        """Send ``sig`` (default SIGTERM) to the server's process group without waiting (safe in a signal handler)."""
        proc = self._proc
        if proc is not None and proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, sig)

    def stop(self) -> None:
        """Stop the server (SIGTERM, SIGKILL after ``stop_grace`` s) and wait for it. Idempotent."""
        proc, self._proc = self._proc, None
        with _LIVE_LOCK:
            _LIVE.discard(self)
        if proc is not None:
            for sig, wait in ((signal.SIGTERM, self.stop_grace), (signal.SIGKILL, 10.0)):
                if proc.poll() is not None:
                    break
                try:
                    os.killpg(proc.pid, sig)  # its own group: start_new_session made pgid == pid
                except ProcessLookupError:
                    break
                try:
                    proc.wait(timeout=wait)
                except subprocess.TimeoutExpired:
                    continue
            proc.poll()
        self._remove_log()

    def _remove_log(self) -> None:
        if self._own_log and self._log_path is not None:
            self._log_path.unlink(missing_ok=True)
            self._log_path = None

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
