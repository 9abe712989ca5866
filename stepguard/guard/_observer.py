"""Hooks at each stage of a guarded run, for tracing and metrics (``stepguard.telemetry``).

The controller calls a :class:`GuardObserver` at run, chunk, model-call and step boundaries. The
default, :class:`NullObserver`, does nothing. Observers must not raise: an exception inside one
is swallowed so that telemetry never breaks a run.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from stepguard.guard._config import GuardConfig
    from stepguard.guard._result import GuardResult
    from stepguard.model import ChatMessage, ChatModel, ChatResponse, GenerationSettings
    from stepguard.procedure import Procedure

__all__ = ["GuardObserver", "ModelCallOnly", "ModelCallRecord", "NullObserver"]


class ModelCallRecord(Protocol):
    """Handed to the caller inside :meth:`GuardObserver.model_call`; told the response when it comes."""

    def response(self, response: ChatResponse) -> None:
        """Record the model's response."""
        ...


class GuardObserver(Protocol):
    """What the controller reports. Every method is optional in spirit: see :class:`NullObserver`."""

    def run_started(self, procedure: Procedure, model: ChatModel, config: GuardConfig, thread_id: str) -> None:
        """A run (or a resumed run) begins."""
        ...

    def chunk_started(self, chunk: int, start: int, end: int, rung: str | None, attempt: int) -> None:
        """A chunk's prompt is about to be sent: steps ``start..end-1`` (0-based), on ``rung``."""
        ...

    def model_call(self, messages: list[ChatMessage], settings: GenerationSettings) -> contextlib.AbstractContextManager[ModelCallRecord]:
        """Context manager around one model call."""
        ...

    def step_checked(
        self, var: str, outcome: str, kind: str | None, action: str | None, detail: str = "", rung: str | None = None
    ) -> None:
        """A step was checked: ``outcome`` pass/fail; ``kind`` the deviation kind; ``action`` the policy's action; ``rung`` the re-prompt rung."""
        ...

    def chunk_finished(self, chunk: int, verified: int, deviation: str | None) -> None:
        """A chunk's reply was checked: ``verified`` steps committed; the first deviation's kind or None."""
        ...

    def run_finished(self, result: GuardResult | None, error: BaseException | None) -> None:
        """The run ended with ``result`` or ``error``."""
        ...


class _NullRecord:
    def response(self, response: Any) -> None:
        return None


class NullObserver:
    """An observer that does nothing (the default)."""

    def run_started(self, *args: Any, **kwargs: Any) -> None:
        """Do nothing."""

    def chunk_started(self, *args: Any, **kwargs: Any) -> None:
        """Do nothing."""

    @contextlib.contextmanager
    def model_call(self, *args: Any, **kwargs: Any) -> Iterator[ModelCallRecord]:
        """Do nothing around the call."""
        yield _NullRecord()

    def step_checked(self, *args: Any, **kwargs: Any) -> None:
        """Do nothing."""

    def chunk_finished(self, *args: Any, **kwargs: Any) -> None:
        """Do nothing."""

    def run_finished(self, *args: Any, **kwargs: Any) -> None:
        """Do nothing."""


class ModelCallOnly(NullObserver):
    """Passes model calls to ``parent`` and drops the rest: the observer of a nested guard run.

    A ``decompose`` or ``commute`` rung runs a small guard of its own; its model calls belong in
    the parent's trace (as ``chat`` spans under the chunk that asked), its runs and chunks do not.
    """

    def __init__(self, parent: GuardObserver) -> None:
        self.parent = parent

    def model_call(self, messages: ChatMessage | Any, settings: GenerationSettings | Any) -> Any:  # type: ignore[override]
        """The parent's context manager around this call."""
        return self.parent.model_call(messages, settings)
