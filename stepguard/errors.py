"""The exception tree of stepguard.

Every error stepguard raises on purpose derives from :class:`StepguardError`, and says what was
wrong and where (a file, a step, a line, an endpoint)::

    StepguardError
    ├── EvaluationError          an expression is unsafe, malformed, too large, or fails to evaluate
    ├── ProcedureError           a procedure file or object is invalid (names the file, step, field)
    ├── TraceError               model text could not be read at all (parsing never raises on odd text;
    │                            this is for inputs outside the caps it was given)
    ├── ModelError               a model call failed, or its reply is not a chat completion;
    │   │                        ``status`` and ``server_message`` hold what the server said
    │   ├── ModelSpecError       a model specification string is not one of the valid forms
    │   ├── ModelUnavailable     the endpoint is unreachable, or answered errors (an HTTP error status,
    │   │                        or a 200 whose body is ``{"error": ...}``) until the retries were spent
    │   ├── ModelTimeout         an attempt ran past its deadline (the whole reply, not one read)
    │   └── ModelOutputTruncated the reply was cut at max tokens (finish_reason == "length")
    ├── LocalServerError         the embedded llama.cpp server could not be found, verified or started
    │   └── LocalServerSettingError  its own settings are wrong (the runtime, the draft tokens, the
    │                            native runtime's binary): installing the local extra does not help
    ├── StepDeviation            the guard's ``raise`` policy: a step deviated; carries the partial result
    ├── BudgetExhausted          a re-prompt or token budget is spent and ``on_exhausted`` is ``raise``
    ├── RunClosed                the caller stopped the run (``stop``) before it finished; it resumes
    ├── RunStoreError            a benchmark run store is unreadable or corrupt (names file and line)
    ├── CheckpointError          a checkpoint database is unreadable or corrupt (names the file)
    │   └── ThreadInFlight       a run of the checkpoint thread is in flight (this process or another
    │                            sharing the database); ``thread_id`` names it
    ├── ToolError                a tool step's tool raised, or returned a value its step cannot hold;
    │   │                        ``tool`` and ``step`` name it (recorded in the result, not raised by a run)
    │   └── ToolTimeout          the tool ran past its ``timeout_s``
    └── MissingExtraError        an optional part needs packages not installed (names the pip extra;
                                 also an ImportError)
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "BudgetExhausted",
    "CheckpointError",
    "EvaluationError",
    "KindError",
    "LocalServerError",
    "LocalServerSettingError",
    "MissingExtraError",
    "ModelError",
    "ModelOutputTruncated",
    "ModelSpecError",
    "ModelTimeout",
    "ModelUnavailable",
    "ProcedureError",
    "RunClosed",
    "RunStoreError",
    "StepDeviation",
    "StepguardError",
    "ThreadInFlight",
    "ToolError",
    "ToolTimeout",
    "TraceError",
]


class StepguardError(Exception):
    """Base class of every error stepguard raises on purpose.

    Attributes:
        result: the partial :class:`stepguard.guard.GuardResult` (the steps committed before it)
            when the error ended a guarded run, else ``None``.
    """

    result: Any = None


class EvaluationError(StepguardError):
    """An expression is unsafe, malformed, exceeds a size cap, or fails to evaluate.

    Attributes:
        expression: the offending source text (truncated to 200 characters), or ``None``.
    """

    def __init__(self, message: str, expression: str | None = None) -> None:
        self.expression = expression[:200] if expression is not None else None
        super().__init__(message if expression is None else f"{message} in {self.expression!r}")


class ProcedureError(StepguardError):
    """A procedure is invalid. ``location`` names where: ``file``, ``steps[3].expr`` and so on."""

    def __init__(self, message: str, location: str | None = None) -> None:
        self.location = location
        super().__init__(f"{location}: {message}" if location else message)


class TraceError(StepguardError):
    """Model text could not be read at all (outside the parser's caps)."""


class ModelError(StepguardError):
    """A model call failed, or its reply could not be read as a chat completion.

    Attributes:
        model: the model specification, when known.
        status: the HTTP status the server answered (200 for a 200 whose body is an error or
            not a chat completion), or ``None`` when no answer came (unreachable, timed out).
        server_message: what the server said, as it said it (at most 300 characters): the
            ``error.message`` of a JSON error body, else the start of the body; ``None`` if nothing.
        result: the partial :class:`stepguard.guard.GuardResult` when the call failed inside a
            guarded run (the steps committed before it), else ``None``.
    """

    def __init__(
        self,
        message: str,
        model: str | None = None,
        *,
        status: int | None = None,
        server_message: str | None = None,
    ) -> None:
        self.model = model
        self.status = status
        self.server_message = server_message[:300] if server_message is not None else None
        super().__init__(f"{model}: {message}" if model else message)


class ModelSpecError(ModelError):
    """A model specification string is not one of the valid forms (the message lists them)."""


class ModelUnavailable(ModelError):
    """The endpoint is unreachable, or answered errors until the retries were spent (``status``
    and ``server_message`` say which and what; a 4xx other than 408/409/429 is not retried)."""


class ModelTimeout(ModelError):
    """An attempt ran past its deadline (seconds for the whole reply, not per read), or the
    call's own deadline was spent; the message names the deadline and the endpoint."""


class ModelOutputTruncated(ModelError):
    """A reply was cut at max tokens (``finish_reason == "length"``). ``text`` holds what came."""

    def __init__(self, message: str, model: str | None = None, text: str = "") -> None:
        self.text = text
        super().__init__(message, model, status=200)


class LocalServerError(StepguardError):
    """The embedded llama.cpp server could not be found, verified (sha256) or started."""


class LocalServerSettingError(LocalServerError):
    """The embedded server's own settings are wrong: the runtime (``$STEPGUARD_RUNTIME``), the draft
    tokens (``$STEPGUARD_DRAFT_TOKENS``), or the native runtime's ``llama-server`` binary (missing,
    not executable, or not a program). The message says what to set or build; installing the
    ``local`` extra does not help."""


class StepDeviation(StepguardError):
    """Raised by the guard's ``raise`` policy at the first deviation.

    Attributes:
        deviation: the :class:`stepguard.verify.Deviation` that triggered it.
        result: the partial :class:`stepguard.guard.GuardResult` (committed prefix, trace, usage).
    """

    def __init__(self, message: str, deviation: Any = None, result: Any = None) -> None:
        self.deviation = deviation
        self.result = result
        super().__init__(message)


class BudgetExhausted(StepguardError):
    """A re-prompt or token budget is spent and ``on_exhausted`` is ``raise``.

    Attributes:
        budget: which budget (``"reprompts_per_step"``, ``"reprompts_per_run"``, ``"tokens"``).
        result: the partial :class:`stepguard.guard.GuardResult`.
    """

    def __init__(self, message: str, budget: str, result: Any = None) -> None:
        self.budget = budget
        self.result = result
        super().__init__(message)


class RunClosed(StepguardError):
    """A guarded run was stopped by its caller (``Guard.run(..., stop=event)`` with the event set from
    another thread) before it finished: no model call started after it, a derived rung's nested
    calls included. Committed steps (and a rung's verified sub-steps) stay checkpointed; the same
    thread resumes where it stopped.

    Attributes:
        result: the partial :class:`stepguard.guard.GuardResult`.
    """


class RunStoreError(StepguardError):
    """A run store is unreadable or corrupt; the message names the file and line."""


class CheckpointError(StepguardError):
    """A checkpoint database is unreadable or corrupt; the message names the file. Nothing is
    overwritten: a run never silently starts over on a database it cannot read."""


class KindError(StepguardError):
    """A registered step kind's own code raised (not a :class:`StepguardError` of its own): the
    message names the kind, its method and the step. The run stops there; what it committed before
    stays checkpointed, so the thread resumes once the kind is fixed.

    Attributes:
        kind: the kind's name.
        method: the kind's method that raised (``check``, ``line``, ...).
        step: the step's variable (several, comma-separated, for a chunk's method).
    """

    def __init__(self, message: str, kind: str, method: str, step: str) -> None:
        super().__init__(message)
        self.kind, self.method, self.step = kind, method, step


class ThreadInFlight(CheckpointError):
    """A run of this checkpoint thread is in flight, in this process or in another one sharing its
    checkpoint database (a proxy worker): two runs of one thread would both act (a tool called twice),
    so the second is refused before it reads the thread. Try again once the first has finished.

    Attributes:
        thread_id: the thread whose run is in flight.
    """

    def __init__(self, message: str, thread_id: str) -> None:
        super().__init__(message)
        self.thread_id = thread_id


class ToolError(StepguardError):
    """A tool step's tool failed: it raised, or returned a value its step cannot hold, or is not
    among the tools given to the guard. The guard records it as the step's ``tool_error`` deviation
    and stops the run there (nothing after the step is verified from it); it is raised only by
    :func:`stepguard.tools.Tool.call` itself.

    Attributes:
        tool: the tool's name.
        step: the step's variable, or ``None``.
    """

    def __init__(self, message: str, tool: str, step: str | None = None) -> None:
        super().__init__(message)
        self.tool = tool
        self.step = step


class ToolTimeout(ToolError):
    """A tool ran past its ``timeout_s`` (its thread is left to finish; its result is discarded)."""


class MissingExtraError(StepguardError, ImportError):
    """An optional part of stepguard needs packages that are not installed, e.g. the benchmark's
    statistics and plots without ``pip install 'stepguard[bench]'``. The message names the missing
    module and the command that installs it; also an :class:`ImportError`, so code that guards an
    import with ``except ImportError`` still works.

    Attributes:
        extra: the pip extra that provides the module (``"bench"``).
    """

    def __init__(self, message: str, extra: str, name: str | None = None) -> None:
        self.extra = extra
        super().__init__(message)
        self.name = name
