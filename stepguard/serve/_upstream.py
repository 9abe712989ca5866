"""The model behind the proxy: a ChatModel for guarded runs, and where plain requests go.

An upstream is one model spec (:mod:`stepguard.adapters.models.spec`). Its HTTP endpoint, where it has one
(``http(s)://...#name``, ``openai:NAME``, and ``local`` once its llama.cpp server is up), receives
every plain request byte for byte; a model without one (``sim:``, ``replay:``) answers plain chat
requests itself. Its key is read from the environment as :func:`stepguard.adapters.load_model`
reads it (``STEPGUARD_API_KEY`` for ``http(s)://`` specs, ``OPENAI_API_KEY`` for ``openai:``), sent
only to the upstream, and never written into a response or a log line.
"""

from __future__ import annotations

import os
import threading
from typing import Any
from urllib.parse import urlsplit

import httpx

from stepguard.adapters import HTTP_KEY_ENV, load_model, parse_model_spec
from stepguard.model import ChatModel
from stepguard.procedure import Procedure

__all__ = ["Upstream"]

# Headers that belong to one connection, or that the proxy sets itself: never forwarded either way.
_HOP = frozenset({
    "host", "content-length", "connection", "keep-alive", "transfer-encoding", "te", "trailer", "upgrade",
    "proxy-authorization", "proxy-authenticate", "authorization", "accept-encoding", "content-encoding",
    "api-key", "x-api-key", "cookie", "set-cookie",
})


class _Secret:
    """Holds a key; its repr never shows it."""

    __slots__ = ("value",)

    def __init__(self, value: str | None) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "'***'" if self.value else "None"


class Upstream:
    """One upstream model, loaded from a spec.

    Args:
        spec: a model spec: ``local``, ``sim:perfect``, ``http://127.0.0.1:8000/v1#qwen``, ``openai:gpt-4o-mini``.
        timeout: seconds per model call attempt of a guarded run, and per pass-through read
            (``None``: the adapter's default for the first, 600 s for the second).

    Raises:
        ModelSpecError, ModelError, LocalServerError: as :func:`stepguard.adapters.load_model`.
    """

    def __init__(self, spec: str, timeout: float | None = None) -> None:
        self.spec = spec
        self.parsed = parse_model_spec(spec)
        self._options: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        self.model: ChatModel = load_model(spec, **self._options)
        self._per_procedure: dict[str, ChatModel] = {}
        self._lock = threading.Lock()
        self.read_timeout = timeout or 600.0
        env = {"http": HTTP_KEY_ENV, "openai": "OPENAI_API_KEY"}.get(self.parsed.kind)
        self._key = _Secret(os.environ.get(env) if env else None)
        self.client: httpx.AsyncClient | None = None

    def __repr__(self) -> str:
        return f"Upstream(spec={self.spec!r}, base_url={self.base_url!r}, key={self._key!r})"

    @property
    def model_name(self) -> str:
        """The upstream's model name (``qwen``, ``gpt-4o-mini``; the spec for ``sim``/``replay``)."""
        return str(getattr(self.model, "model_name", "") or self.spec)

    @property
    def base_url(self) -> str | None:
        """The endpoint plain requests are forwarded to (``http://host/v1``), or ``None`` (answered by the model)."""
        url = getattr(self.model, "base_url", None)
        return str(url).rstrip("/") if url else None

    def start(self) -> None:
        """Start what the upstream needs (the embedded llama.cpp server for ``local``); idempotent."""
        start = getattr(self.model, "start", None)
        if callable(start):
            start()

    def guard_model(self, procedure: Procedure, name: str) -> ChatModel:
        """The model a guarded run of ``procedure`` talks to: the upstream's, or for ``sim`` one that reads it."""
        if self.parsed.kind != "sim":
            return self.model
        with self._lock:  # the simulator computes instruction steps from the procedure
            model = self._per_procedure.get(name)
            if model is None:
                model = self._per_procedure[name] = load_model(self.spec, procedure=procedure, **self._options)
            return model

    def headers(self, incoming: Any) -> dict[str, str]:
        """Headers for a forwarded request: the client's, less per-connection and credential ones, plus the upstream's key."""
        out = {k: v for k, v in incoming.items() if k.lower() not in _HOP}
        if self._key.value:
            out["authorization"] = f"Bearer {self._key.value}"
        return out

    @staticmethod
    def response_headers(headers: Any) -> dict[str, str]:
        """The upstream's response headers that may go back to the client."""
        return {k: v for k, v in headers.items() if k.lower() not in _HOP}

    def http(self) -> httpx.AsyncClient:
        """The pass-through client (one per event loop, made on first use)."""
        if self.client is None:
            loopback = (urlsplit(self.base_url or "").hostname or "") in ("127.0.0.1", "localhost", "::1")
            self.client = httpx.AsyncClient(
                timeout=httpx.Timeout(30.0, read=self.read_timeout),
                limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
                trust_env=not loopback,  # a loopback upstream never goes through an HTTP(S)_PROXY
            )
        return self.client

    async def models(self) -> list[dict[str, Any]]:
        """The upstream's ``/models`` list; its own model alone when it has no endpoint or the call fails."""
        own = [{"id": self.model_name, "object": "model", "created": 0, "owned_by": "upstream"}]
        if self.base_url is None:
            return own
        try:
            resp = await self.http().get(f"{self.base_url}/models", headers=self.headers({}), timeout=10.0)
            data = resp.json().get("data") if resp.status_code == 200 else None
        except (httpx.HTTPError, ValueError, AttributeError):
            data = None
        return [m for m in data if isinstance(m, dict)] if isinstance(data, list) else own

    async def aclose(self) -> None:
        """Close the pass-through client and the model (stops a ``local`` server)."""
        if self.client is not None:
            await self.client.aclose()
            self.client = None
        close = getattr(self.model, "close", None)
        if callable(close):
            close()
