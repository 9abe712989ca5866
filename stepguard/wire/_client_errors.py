"""The errors a guarded ``chat.completions.create`` raises: stepguard's errors, and the ``openai`` client's.

Code written against the ``openai`` client catches ``openai.OpenAIError``; code written against
stepguard catches ``BudgetExhausted``, ``StepDeviation`` and friends. A guarded call raises one
error that both catch::

    openai.OpenAIError                       (and stepguard.StepguardError)
    └── GuardedCallError                     any failure of a guarded call; ``result``: the partial GuardResult or None
        ├── InvalidGuardedCall               (also ValueError) a bad ``extra_body["stepguard"]``, ``response_format``,
        │                                    message or argument; raised before any model call; ``location`` says where
        ├── GuardedProcedureError            (also ProcedureError) inputs the procedure refuses
        ├── GuardedStepDeviation             (also StepDeviation) ``policy="raise"`` and a step deviated
        ├── GuardedBudgetExhausted           (also BudgetExhausted) a budget spent with ``on_exhausted="raise"``
        ├── GuardedCheckpointError           (also CheckpointError) the thread holds other work
        └── GuardedModelError                (also ModelError) the wrapped client's call failed; its own
            │                                ``openai`` error (``RateLimitError``, ...) is ``__cause__``
            ├── GuardedModelUnavailable      (also ModelUnavailable)
            ├── GuardedModelTimeout          (also ModelTimeout)
            └── GuardedModelOutputTruncated  (also ModelOutputTruncated)

Why ``OpenAIError`` and not ``APIError``: an ``APIError`` stands for one HTTP request and its
response, and retry helpers (tenacity recipes, LangChain's ``with_retry``) retry on it; a guarded
call is many requests, and retrying a spent budget or a raised deviation would spend it again.
"""

from __future__ import annotations

from typing import Any

import openai

from stepguard.errors import (
    BudgetExhausted,
    CheckpointError,
    ModelError,
    ModelOutputTruncated,
    ModelTimeout,
    ModelUnavailable,
    ProcedureError,
    StepDeviation,
    StepguardError,
)

__all__ = [
    "GuardedBudgetExhausted",
    "GuardedCallError",
    "GuardedCheckpointError",
    "GuardedModelError",
    "GuardedModelOutputTruncated",
    "GuardedModelTimeout",
    "GuardedModelUnavailable",
    "GuardedProcedureError",
    "GuardedStepDeviation",
    "InvalidGuardedCall",
    "client_error",
]


class GuardedCallError(StepguardError, openai.OpenAIError):
    """A guarded call failed. ``result``: the partial :class:`~stepguard.guard.GuardResult`, or ``None``
    when the call failed before the run began."""

    result: Any = None


class InvalidGuardedCall(GuardedCallError, ValueError):
    """A guarded call's request is not one the guard can run; nothing was sent to the model.

    Attributes:
        location: where, as the request spells it: ``extra_body["stepguard"].polcy``,
            ``response_format``, ``messages[2].content[1]``, ``n``.
    """

    def __init__(self, message: str, location: str) -> None:
        self.location = location
        super().__init__(f"{location}: {message}")


class GuardedProcedureError(GuardedCallError, ProcedureError):
    """The procedure refuses the inputs (names the input)."""


class GuardedStepDeviation(GuardedCallError, StepDeviation):
    """``policy="raise"`` and a step deviated; ``deviation`` and ``result`` as :class:`StepDeviation`."""


class GuardedBudgetExhausted(GuardedCallError, BudgetExhausted):
    """A budget was spent with ``on_exhausted="raise"``; ``budget`` and ``result`` as :class:`BudgetExhausted`."""


class GuardedCheckpointError(GuardedCallError, CheckpointError):
    """The ``thread_id`` holds a run of other work, or its checkpoint cannot be read."""


class GuardedModelError(GuardedCallError, ModelError):
    """The wrapped client's call failed; the client's own error is ``__cause__``."""


class GuardedModelUnavailable(GuardedModelError, ModelUnavailable):
    """The endpoint could not be reached, or answered errors until the client's retries were spent."""


class GuardedModelTimeout(GuardedModelError, ModelTimeout):
    """A call ran past the client's timeout."""


class GuardedModelOutputTruncated(GuardedModelError, ModelOutputTruncated):
    """A reply was cut at max tokens."""


# Most specific first: the first class in an error's MRO found here picks its twin.
_TWINS: dict[type[StepguardError], type[GuardedCallError]] = {
    ModelUnavailable: GuardedModelUnavailable,
    ModelTimeout: GuardedModelTimeout,
    ModelOutputTruncated: GuardedModelOutputTruncated,
    ModelError: GuardedModelError,
    StepDeviation: GuardedStepDeviation,
    BudgetExhausted: GuardedBudgetExhausted,
    CheckpointError: GuardedCheckpointError,
    ProcedureError: GuardedProcedureError,
}


def client_error(exc: StepguardError) -> GuardedCallError:
    """The guarded-call twin of a stepguard error: same message and attributes (``result``,
    ``budget``, ``deviation``, ``status``...), also an ``openai.OpenAIError``.

    Raise it ``from exc`` so the traceback keeps where the error began.
    """
    if isinstance(exc, GuardedCallError):
        return exc
    twin = next((_TWINS[c] for c in type(exc).__mro__ if c in _TWINS), GuardedCallError)
    out = twin.__new__(twin)
    out.args = exc.args
    out.__dict__.update(exc.__dict__)
    return out
