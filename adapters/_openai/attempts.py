"""One model call's attempts: which failures are retried, how long to wait, and the typed error.

Retried (bounded by ``max_retries``): no answer (timeouts, connection errors), HTTP 408, 409, 429
and 5xx, and a 200 whose body is ``{"error": ...}``; a server's ``x-should-retry`` header is
obeyed. The wait before a retry is the server's ``retry-after-ms`` / ``Retry-After`` when it is
at most 60 s (more: no retry), else exponential backoff 0.5 s x 2^n, capped at 8 s, with jitter
(the ``openai`` client's own policy). No wait and no attempt runs past the call's deadline.
Every failure maps onto stepguard's tree::

    openai.APITimeoutError, TimeoutError -> ModelTimeout      (names the deadline and the endpoint)
    openai.APIConnectionError            -> ModelUnavailable  (the cause)
    openai.APIStatusError                -> ModelUnavailable  (status; the server's message quoted)
    ServerSaidError (200 + error body)   -> ModelUnavailable  (status 200; the server's message)
    other openai.OpenAIError             -> ModelError
"""

from __future__ import annotations

import email.utils
import random
import time

import openai

from stepguard.errors import ModelError, ModelTimeout, ModelUnavailable

from .reply import server_message

__all__ = ["Attempts", "ServerSaidError", "map_error"]

MAX_RETRY_AFTER_S = 60.0
"""Longest server-asked wait that is honoured, seconds (the ``openai`` client's limit)."""
BACKOFF_S, BACKOFF_CAP_S = 0.5, 8.0


class ServerSaidError(Exception):
    """A 200 reply whose body is ``{"error": ...}``; ``message`` is what the server said."""

    def __init__(self, message: str) -> None:
        self.message = message
        super().__init__(message)


def _status_message(exc: openai.APIStatusError) -> str:
    try:
        return server_message(exc.response.text)
    except Exception:  # noqa: BLE001 - a body that cannot be read still leaves the client's message
        return str(getattr(exc, "message", "") or "")[:300]


def _retry_after(exc: Exception) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is None:
        return None
    try:
        if headers.get("retry-after-ms") is not None:
            return float(headers["retry-after-ms"]) / 1000
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return float(value)
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return when.timestamp() - time.time()
    except (TypeError, ValueError, OverflowError):
        return None


def _retryable(exc: Exception) -> bool:
    if isinstance(exc, (openai.APITimeoutError, openai.APIConnectionError, TimeoutError, ServerSaidError)):
        return True
    if isinstance(exc, openai.APIStatusError):
        should = exc.response.headers.get("x-should-retry")
        if should in ("true", "false"):
            return should == "true"
        return exc.status_code in (408, 409, 429) or exc.status_code >= 500
    return False


def map_error(exc: Exception, endpoint: str, spec: str | None, tries: str, deadline: str) -> ModelError:
    """The stepguard error for a failed call (see the module docstring for the mapping).

    Args:
        exc: the last attempt's failure.
        endpoint: the URL called, for the message.
        spec: the model specification, for ``ModelError.model``.
        tries: how many attempts were made, in words (``"3 attempt(s)"``).
        deadline: the deadline that applied, in words (``"1 s"``).
    """
    if isinstance(exc, (openai.APITimeoutError, TimeoutError)):
        return ModelTimeout(f"no complete reply from {endpoint} within {deadline} ({tries})", spec)
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc
        return ModelUnavailable(f"cannot reach {endpoint} ({tries}): {cause}", spec)
    if isinstance(exc, openai.APIStatusError):
        said = _status_message(exc)
        return ModelUnavailable(f"{endpoint} answered HTTP {exc.status_code} ({tries}): {said!r}", spec,
                                status=exc.status_code, server_message=said)
    if isinstance(exc, ServerSaidError):
        return ModelUnavailable(f"{endpoint} answered HTTP 200 with an error body ({tries}): {exc.message!r}", spec,
                                status=200, server_message=exc.message)
    return ModelError(f"{endpoint}: {type(exc).__name__}: {exc}", spec)


class Attempts:
    """The attempt plan of one call: per-attempt deadlines, waits between attempts, the final error.

    Args:
        timeout: seconds allowed for one attempt, the whole reply (not per read).
        max_retries: attempts after the first.
        call_timeout: seconds allowed for the whole call, waits included; ``None``: no limit beyond
            ``(max_retries + 1) x timeout`` plus the waits.
        endpoint: the URL called, for messages.
        spec: the model specification, for messages.
    """

    def __init__(self, timeout: float, max_retries: int, call_timeout: float | None, endpoint: str, spec: str) -> None:
        self.timeout, self.max_retries, self.call_timeout = timeout, max_retries, call_timeout
        self.endpoint, self.spec = endpoint, spec
        self.started = time.monotonic()
        self.call_deadline = self.started + call_timeout if call_timeout is not None else None
        self.made = 0
        self._cut = False  # the last attempt's deadline was the call's

    def next_deadline(self) -> float:
        """Start an attempt: its deadline, a :func:`time.monotonic` instant."""
        self.made += 1
        deadline = time.monotonic() + self.timeout
        self._cut = self.call_deadline is not None and self.call_deadline < deadline
        return min(deadline, self.call_deadline) if self._cut and self.call_deadline is not None else deadline

    def wait(self, exc: Exception) -> float | None:
        """Seconds to wait before the next attempt after ``exc``, or ``None``: no more attempts."""
        if self.made > self.max_retries or not _retryable(exc):
            return None
        asked = _retry_after(exc)
        if asked is not None and asked > MAX_RETRY_AFTER_S:
            return None
        if asked is None or asked < 0:
            asked = min(BACKOFF_S * 2 ** (self.made - 1), BACKOFF_CAP_S) * (1 - 0.25 * random.random())
        if self.call_deadline is not None and time.monotonic() + asked >= self.call_deadline:
            return None
        return asked

    def error(self, exc: Exception) -> ModelError:
        """The typed error for the last failure ``exc``."""
        tries = f"{self.made} attempt(s)"
        if self._cut:
            deadline = f"the call's deadline of {self.call_timeout:g} s"
        else:
            deadline = f"{self.timeout:g} s"
        return map_error(exc, self.endpoint, self.spec, tries, deadline)

    def __repr__(self) -> str:
        return f"Attempts(made={self.made}, timeout={self.timeout}, call_timeout={self.call_timeout})"
