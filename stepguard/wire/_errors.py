"""The error a request the proxy refuses raises: answered with its status and the OpenAI error shape."""

from __future__ import annotations

from typing import Any

__all__ = ["RequestError"]


class RequestError(Exception):
    """A request the proxy refuses, answered with ``status`` and the OpenAI error shape.

    Attributes:
        status: the HTTP status (400 bad request, 404 unknown procedure, ...).
        param: where in the request: ``"stepguard.chunk_size"``, ``"model"``.
        code: a short machine-readable code: ``unknown_option``, ``procedure_not_found``, ...
        extra: more fields for the error object (``known`` procedure names).
    """

    def __init__(self, status: int, message: str, param: str | None = None, code: str | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code, self.extra = status, message, param, code, extra
