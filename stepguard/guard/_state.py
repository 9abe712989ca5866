"""The controller's state (checkpointed by LangGraph) and the per-run context (not checkpointed)."""

from __future__ import annotations

import operator
import time
from dataclasses import dataclass, field
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

from stepguard.evaluator import Number, parse_number
from stepguard.guard._config import GuardConfig
from stepguard.guard._observer import NullObserver, SafeObserver
from stepguard.guard._prompts import PromptSet
from stepguard.model import ChatModel
from stepguard.procedure import Procedure

__all__ = ["GuardState", "RunContext"]


class GuardState(TypedDict, total=False):
    """Everything the controller needs to resume a run, as JSON-friendly values.

    Values are exact number text (``"-12"``, ``"7/2"``) so every checkpointer can store them.
    """

    cursor: int  # 0-based index of the next uncommitted step
    values: dict[str, str]  # committed step values
    provenance: dict[str, str]  # var -> Provenance
    step_reprompts: dict[str, int]
    step_chunk: dict[str, int]
    chunk_no: int  # model-call groups started so far
    chunk_size: int  # current size (adaptive)
    chunk_end: int  # end (exclusive) of the chunk being asked
    attempt: int  # re-prompts so far for the step at ``cursor``
    rung: str | None  # rung of the pending ask, None on a first try
    note: str | None  # correction note of the pending ask
    reply: str  # the last reply's text
    finish_reason: str
    verified: list[list[str]]  # [[var, value text], ...] verified prefix of the last reply
    deviation: dict[str, Any] | None  # first deviation of the last reply (Deviation.model_dump())
    model_value: str | None  # what the model wrote for the deviating step
    events: Annotated[list[dict[str, Any]], operator.add]  # DeviationEvent dicts, appended
    usage: dict[str, float]
    reprompts: int
    stop: str | None  # why the run stopped early: "raise", "budget:<name>", None
    spent: str | None  # the budget found spent ("tokens", "wall_time", "reprompts_per_step", ...), else None
    identity: dict[str, Any]  # what decides the result (``_identity.run_identity``): checked on resume


@dataclass
class RunContext:
    """Objects a run needs that are not state: the graph's run-scoped context (LangGraph's ``context_schema``, reached by nodes as ``runtime.context``)."""

    procedure: Procedure
    model: ChatModel
    config: GuardConfig
    inputs: dict[str, Number | str]
    prompts: PromptSet = field(default_factory=PromptSet)
    observer: SafeObserver = field(default_factory=lambda: SafeObserver(NullObserver()))
    identity: dict[str, Any] = field(default_factory=dict)
    nested_guard: Callable[[GuardConfig], Any] = field(default=lambda cfg: None, repr=False)
    """Builds the nested guard that runs a derived rung's sub-procedure (set by :class:`Guard`)."""
    started: float = field(default_factory=time.monotonic)  # for ``GuardConfig.max_wall_s``
    _parsed: dict[str, tuple[str, Number | str]] = field(default_factory=dict, repr=False)

    def env(self, state: GuardState) -> dict[str, Number | str]:
        """Inputs plus committed values, exact (each value text is parsed once per run)."""
        env = dict(self.inputs)
        cache = self._parsed
        for var, text in state.get("values", {}).items():
            hit = cache.get(var)
            if hit is None or hit[0] != text:
                hit = cache[var] = (text, _parse(text, self._types.get(var)))
            env[var] = hit[1]
        return env

    def __post_init__(self) -> None:
        self._types: dict[str, str] = {s.var: s.type for s in self.procedure.steps}


def _parse(text: str, type_: str | None) -> Number | str:
    if type_ in ("string", "one_of"):
        return text
    if type_ == "boolean":
        return text == "true"
    if "/" in text:
        num, den = text.split("/", 1)
        from fractions import Fraction

        return Fraction(int(num), int(den))
    return parse_number(text)
