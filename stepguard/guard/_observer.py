"""Hooks at each stage of a guarded run, for tracing and metrics (``stepguard.telemetry``).

The controller calls a :class:`GuardObserver` at run, chunk, model-call and step boundaries. The
default, :class:`GlobalTelemetry`, does nothing until an application sets OpenTelemetry's global
tracer provider, and then traces through it (``stepguard.telemetry.OtelObserver``): a guard that
the caller built without an observer (``GuardedOpenAI``, ``guarded_node``) is traced like the
rest of the application. :class:`NullObserver` never does anything. Observers must not raise: an
exception inside one is swallowed so that telemetry never breaks a run.
"""

from __future__ import annotations

import contextlib
import contextvars
import sys
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from stepguard.guard._config import GuardConfig
    from stepguard.guard._result import GuardResult
    from stepguard.model import ChatMessage, ChatModel, ChatResponse, GenerationSettings
    from stepguard.procedure import Procedure

__all__ = ["GlobalTelemetry", "GuardObserver", "ModelCallOnly", "ModelCallRecord", "NullObserver", "SafeObserver", "ToolCallRecord"]


class ModelCallRecord(Protocol):
    """Handed to the caller inside :meth:`GuardObserver.model_call`; told the response when it comes."""

    def response(self, response: ChatResponse) -> None:
        """Record the model's response."""
        ...


class ToolCallRecord(Protocol):
    """Handed to the caller inside :meth:`GuardObserver.tool_call`; told the tool's result when it comes."""

    def result(self, value: str) -> None:
        """Record the tool's result (as the value text the step commits)."""
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
        """A step was checked.

        ``outcome`` pass/fail; ``kind`` the deviation kind; ``action`` the policy's action;
        ``rung`` the re-prompt rung.
        """
        ...

    def tool_call(
        self, step: str, name: str, args: dict[str, str], verdicts: list[tuple[str, bool, str]]
    ) -> contextlib.AbstractContextManager[ToolCallRecord]:
        """Context manager around one executed tool call of step ``step``: ``args`` as text, and
        every argument's ``(name, passed, detail)`` verdict (all passed: a call runs only then)."""
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

    def result(self, value: str) -> None:
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

    @contextlib.contextmanager
    def tool_call(self, *args: Any, **kwargs: Any) -> Iterator[ToolCallRecord]:
        """Do nothing around the call."""
        yield _NullRecord()

    def chunk_finished(self, *args: Any, **kwargs: Any) -> None:
        """Do nothing."""

    def run_finished(self, *args: Any, **kwargs: Any) -> None:
        """Do nothing."""


_shared: Any = None
_shared_lock = threading.Lock()


def _global_otel() -> Any | None:
    """The shared ``OtelObserver()`` of the global providers, or None while no tracer provider is set.

    Imports ``stepguard.telemetry`` (and the OpenTelemetry SDK) only once a provider is set.
    """
    trace = sys.modules.get("opentelemetry.trace")
    if trace is None:  # nothing imported OpenTelemetry, so nothing set a provider
        return None
    if isinstance(trace.get_tracer_provider(), (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
        return None
    global _shared
    with _shared_lock:
        if _shared is None:
            from stepguard.telemetry import OtelObserver

            _shared = OtelObserver()
        return _shared


class GlobalTelemetry(NullObserver):
    """The default observer: traces through OpenTelemetry's global providers once a tracer provider is set.

    Whether a run is traced is decided when it starts: a run that starts after the application
    called ``opentelemetry.trace.set_tracer_provider`` is traced (its spans, events and metrics
    as :class:`stepguard.telemetry.OtelObserver` records them, by one observer shared by every
    guard); before that, every hook does nothing and nothing is imported.
    """

    def __init__(self) -> None:
        self._inner: contextvars.ContextVar[Any | None] = contextvars.ContextVar(f"stepguard_global_{id(self)}", default=None)

    def run_started(self, procedure: Procedure, model: ChatModel, config: GuardConfig, thread_id: str) -> None:
        """Trace this run if a global tracer provider is set."""
        inner = _global_otel()
        self._inner.set(inner)
        if inner is not None:
            inner.run_started(procedure, model, config, thread_id)

    def _forward(self, hook: str, *args: Any, **kwargs: Any) -> Any:
        """Call ``hook`` on the traced run's observer, or :class:`NullObserver`'s (does nothing)."""
        inner = self._inner.get()
        return getattr(inner, hook)(*args, **kwargs) if inner is not None else getattr(NullObserver, hook)(self, *args, **kwargs)

    def chunk_started(self, *args: Any, **kwargs: Any) -> None:
        """Forward when this run is traced."""
        self._forward("chunk_started", *args, **kwargs)

    def model_call(self, *args: Any, **kwargs: Any) -> Any:
        """The traced run's context manager around the call, or one that does nothing."""
        return self._forward("model_call", *args, **kwargs)

    def step_checked(self, *args: Any, **kwargs: Any) -> None:
        """Forward when this run is traced."""
        self._forward("step_checked", *args, **kwargs)

    def tool_call(self, *args: Any, **kwargs: Any) -> Any:
        """The traced run's context manager around a tool call, or one that does nothing."""
        return self._forward("tool_call", *args, **kwargs)

    def chunk_finished(self, *args: Any, **kwargs: Any) -> None:
        """Forward when this run is traced."""
        self._forward("chunk_finished", *args, **kwargs)

    def run_finished(self, *args: Any, **kwargs: Any) -> None:
        """Forward when this run is traced; the run is over either way."""
        inner = self._inner.get()
        self._inner.set(None)
        if inner is not None:
            inner.run_finished(*args, **kwargs)


class ModelCallOnly(NullObserver):
    """Passes model calls to ``parent`` and drops the rest: the observer of a nested guard run.

    A ``decompose`` or ``commute`` rung runs a small guard of its own; its model calls belong in
    the parent's trace (as ``chat`` spans under the chunk that asked), its runs and chunks do not.
    """

    def __init__(self, parent: GuardObserver) -> None:
        self.parent = parent

    def model_call(self, messages: list[ChatMessage], settings: GenerationSettings) -> Any:
        """The parent's context manager around this call."""
        return self.parent.model_call(messages, settings)


class _SafeRecord:
    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def response(self, response: ChatResponse) -> None:
        try:
            self.inner.response(response)
        except Exception:  # noqa: BLE001 - telemetry must not break the run
            pass

    def result(self, value: str) -> None:
        try:
            self.inner.result(value)
        except Exception:  # noqa: BLE001
            pass


class SafeObserver:
    """Wraps an observer so that none of its hooks can break a run: an exception inside one is dropped.

    The controller calls only this wrapper, by typed method, so a type checker sees every call
    (a misspelled hook is an attribute error in the checker, not a silent no-op at run time).
    """

    def __init__(self, inner: GuardObserver) -> None:
        self.inner = inner

    def run_started(self, procedure: Procedure, model: ChatModel, config: GuardConfig, thread_id: str) -> None:
        """Forward :meth:`GuardObserver.run_started`."""
        try:
            self.inner.run_started(procedure, model, config, thread_id)
        except Exception:  # noqa: BLE001 - telemetry must not break the run
            pass

    def chunk_started(self, chunk: int, start: int, end: int, rung: str | None, attempt: int) -> None:
        """Forward :meth:`GuardObserver.chunk_started`."""
        try:
            self.inner.chunk_started(chunk, start, end, rung, attempt)
        except Exception:  # noqa: BLE001
            pass

    @contextlib.contextmanager
    def model_call(self, messages: list[ChatMessage], settings: GenerationSettings) -> Iterator[ModelCallRecord]:
        """Forward :meth:`GuardObserver.model_call`; the model's own errors pass through unchanged."""
        try:
            cm = self.inner.model_call(messages, settings)
            record = cm.__enter__()
        except Exception:  # noqa: BLE001
            yield _NullRecord()
            return
        try:
            yield _SafeRecord(record)
        except BaseException as exc:
            with contextlib.suppress(Exception):
                cm.__exit__(type(exc), exc, exc.__traceback__)
            raise
        with contextlib.suppress(Exception):
            cm.__exit__(None, None, None)

    def step_checked(
        self, var: str, outcome: str, kind: str | None, action: str | None, detail: str = "", rung: str | None = None
    ) -> None:
        """Forward :meth:`GuardObserver.step_checked`."""
        try:
            self.inner.step_checked(var, outcome, kind, action, detail, rung=rung)
        except Exception:  # noqa: BLE001
            pass

    @contextlib.contextmanager
    def tool_call(self, step: str, name: str, args: dict[str, str], verdicts: list[tuple[str, bool, str]]) -> Iterator[ToolCallRecord]:
        """Forward :meth:`GuardObserver.tool_call` (an observer without the hook is skipped); the tool's own errors pass through."""
        try:
            cm = self.inner.tool_call(step, name, args, verdicts)
            record = cm.__enter__()
        except Exception:  # noqa: BLE001 - an older observer without tool_call, or a broken one
            yield _NullRecord()
            return
        try:
            yield _SafeRecord(record)
        except BaseException as exc:
            with contextlib.suppress(Exception):
                cm.__exit__(type(exc), exc, exc.__traceback__)
            raise
        with contextlib.suppress(Exception):
            cm.__exit__(None, None, None)

    def chunk_finished(self, chunk: int, verified: int, deviation: str | None) -> None:
        """Forward :meth:`GuardObserver.chunk_finished`."""
        try:
            self.inner.chunk_finished(chunk, verified, deviation)
        except Exception:  # noqa: BLE001
            pass

    def run_finished(self, result: GuardResult | None, error: BaseException | None) -> None:
        """Forward :meth:`GuardObserver.run_finished`."""
        try:
            self.inner.run_finished(result, error)
        except Exception:  # noqa: BLE001
            pass
