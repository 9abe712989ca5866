"""A total deadline for one HTTP attempt, enforced at the socket.

The ``openai`` client runs on httpx/httpcore (1.x) or httpx2/httpcore2 (newer releases); the
wrappers below take the timeout exceptions of whichever core the pool belongs to.

httpx's timeouts bound each connect, read and write on its own, so a server that sends one byte
a second never trips a 2 s read timeout. Here every network operation of a client gets
``min(its own timeout, seconds left to the attempt's deadline)``, and none starts once the
deadline has passed: the operation raises httpcore's ``ConnectTimeout``/``ReadTimeout``/
``WriteTimeout``, httpx closes the connection (the socket stops) and the ``openai`` client raises
``APITimeoutError``. The deadline is a context variable set per attempt (:func:`attempt_deadline`),
so it follows a thread (sync) or a task (async), and concurrent calls each keep their own.
"""

from __future__ import annotations

import contextlib
import contextvars
import importlib
import inspect
import time
from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import Any

__all__ = ["attempt_deadline", "enforce_deadlines"]

_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("stepguard_attempt_deadline", default=None)


@contextlib.contextmanager
def attempt_deadline(deadline: float) -> Iterator[None]:
    """Within the block, network operations of deadline-enforcing clients end by ``deadline``.

    Args:
        deadline: a :func:`time.monotonic` instant, seconds.
    """
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _bound(timeout: float | None, exc: type[Exception]) -> float | None:
    deadline = _DEADLINE.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise exc("the attempt's deadline has passed")
    return left if timeout is None else min(timeout, left)


class _Stream:
    """A sync network stream whose operations end by the attempt's deadline."""

    def __init__(self, inner: Any, core: ModuleType) -> None:
        self._inner, self._core = inner, core

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data: bytes = self._inner.read(max_bytes, _bound(timeout, self._core.ReadTimeout))
        return data

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._inner.write(buffer, _bound(timeout, self._core.WriteTimeout))

    def close(self) -> None:
        self._inner.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> _Stream:
        t = _bound(timeout, self._core.ConnectTimeout)
        return _Stream(self._inner.start_tls(ssl_context, server_hostname, t), self._core)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _Backend:
    """A sync network backend whose connections end their operations by the attempt's deadline."""

    def __init__(self, inner: Any, core: ModuleType) -> None:
        self._inner, self._core = inner, core

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Iterable[Any] | None = None) -> _Stream:
        t = _bound(timeout, self._core.ConnectTimeout)
        return _Stream(self._inner.connect_tcp(host, port, t, local_address, socket_options), self._core)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Iterable[Any] | None = None) -> _Stream:
        t = _bound(timeout, self._core.ConnectTimeout)
        return _Stream(self._inner.connect_unix_socket(path, t, socket_options), self._core)

    def sleep(self, seconds: float) -> None:
        self._inner.sleep(seconds)


class _AsyncStream:
    """The async twin of :class:`_Stream`."""

    def __init__(self, inner: Any, core: ModuleType) -> None:
        self._inner, self._core = inner, core

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        data: bytes = await self._inner.read(max_bytes, _bound(timeout, self._core.ReadTimeout))
        return data

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, _bound(timeout, self._core.WriteTimeout))

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                        timeout: float | None = None) -> _AsyncStream:
        t = _bound(timeout, self._core.ConnectTimeout)
        return _AsyncStream(await self._inner.start_tls(ssl_context, server_hostname, t), self._core)

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class _AsyncBackend:
    """The async twin of :class:`_Backend`."""

    def __init__(self, inner: Any, core: ModuleType) -> None:
        self._inner, self._core = inner, core

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                          socket_options: Iterable[Any] | None = None) -> _AsyncStream:
        t = _bound(timeout, self._core.ConnectTimeout)
        return _AsyncStream(await self._inner.connect_tcp(host, port, t, local_address, socket_options), self._core)

    async def connect_unix_socket(self, path: str, timeout: float | None = None,
                                  socket_options: Iterable[Any] | None = None) -> _AsyncStream:
        t = _bound(timeout, self._core.ConnectTimeout)
        return _AsyncStream(await self._inner.connect_unix_socket(path, t, socket_options), self._core)

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


def enforce_deadlines(client: Any) -> Any:
    """Make every transport of an ``httpx.Client``/``AsyncClient`` honour :func:`attempt_deadline`.

    httpx offers no public hook for a connection pool's network backend, so this wraps the
    ``_network_backend`` of each transport's httpcore pool (the default transport and any proxy
    mounts). The stub-server drip tests fail loudly if a future httpx or httpcore moves it.

    Args:
        client: an ``httpx.Client`` or ``httpx.AsyncClient`` (e.g. ``openai.DefaultHttpxClient()``).

    Returns:
        The same client.

    Raises:
        RuntimeError: a transport has no httpcore pool to wrap (a custom transport).
    """
    transports = [client._transport, *(t for t in client._mounts.values() if t is not None)]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        inner = getattr(pool, "_network_backend", None)
        if pool is None or inner is None:
            raise RuntimeError(f"cannot enforce attempt deadlines on {type(transport).__name__}: no httpcore pool")
        if not isinstance(inner, (_Backend, _AsyncBackend)):
            core = importlib.import_module(type(inner).__module__.split(".")[0])  # httpcore or httpcore2
            wrapper = _AsyncBackend if inspect.iscoroutinefunction(inner.connect_tcp) else _Backend
            pool._network_backend = wrapper(inner, core)
    return client
