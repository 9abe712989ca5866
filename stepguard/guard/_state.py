"""The controller's state (checkpointed by LangGraph) and the per-run context (not checkpointed)."""

from __future__ import annotations

import operator
import time
from dataclasses import dataclass, field, fields
from collections.abc import Callable, Mapping
from typing import Annotated, Any

from stepguard.evaluator import Number
from stepguard.guard._config import GuardConfig
from stepguard.guard._observer import NullObserver, SafeObserver
from stepguard.guard._prompts import PromptSet
from stepguard.kinds import kind_of
from stepguard.model import ChatMessage, ChatModel
from stepguard.procedure import Procedure
from stepguard.tools import ToolSet
from stepguard.verify import Deviation

__all__ = ["GuardState", "RunContext"]


@dataclass
class GuardState:
    """Everything the controller needs to resume a run, read by attribute; every field has its default here.

    Values are JSON-friendly, so every checkpointer (SQLite, Postgres, memory) stores them without
    registering types: numbers as exact text (``"-12"``, ``"7/2"``), the deviation as the dump of
    :class:`stepguard.verify.Deviation` (read back by :attr:`deviation_model`), events as dumps of
    :class:`stepguard.guard.DeviationEvent`. Nodes return partial updates as dicts of these fields.
    """

    cursor: int = 0
    """0-based index of the next uncommitted step."""
    values: dict[str, str] = field(default_factory=dict)
    """Committed step values, exact text."""
    provenance: dict[str, str] = field(default_factory=dict)
    """var -> :data:`stepguard.guard.Provenance`."""
    step_reprompts: dict[str, int] = field(default_factory=dict)
    """var -> re-prompts spent on that step."""
    step_chunk: dict[str, int] = field(default_factory=dict)
    """var -> 0-based chunk that committed it."""
    chunk_no: int = 0
    """Model-call groups started so far."""
    chunk_size: int = 0
    """Current chunk size (adaptive); 0 until the run sets it from the config."""
    chunk_start: int = 0
    """Start of the chunk being asked (a step index)."""
    chunk_end: int = 0
    """End (exclusive) of the chunk being asked."""
    attempt: int = 0
    """Re-prompts so far for the step at ``cursor``."""
    rung: str | None = None
    """Rung of the pending ask; ``None`` on a first try."""
    note: str | None = None
    """Correction note of the pending ask."""
    reply: str = ""
    """The last reply's text."""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    """The last reply's native tool calls, ``[{"name": ..., "arguments": "<JSON>"}]`` (empty for a text reply)."""
    pending_call: bool = False
    """True when the last reply's tool call passed every check and is to be executed (the ``act`` node)."""
    finish_reason: str = ""
    """The last reply's finish reason (``length``: cut at max tokens)."""
    derived_spent: str | None = None
    """The run budget (``tokens``, ``wall_time``) that stopped the last reply's nested run, if one did."""
    derived_note: str | None = None
    """Where the last reply came from a derived rung's nested run that did not verify: the sub-step
    it ended on (``sub-step t2 = t1 / 4 never verified; the model wrote `t2 = 326.5 / 4 = 81.6```),
    added to the deviation's detail; ``None`` otherwise."""
    verified: list[list[str]] = field(default_factory=list)
    """``[[var, value text], ...]``: the verified prefix of the last reply."""
    deviation: dict[str, Any] | None = None
    """The first deviation of the last reply, ``Deviation.model_dump()``."""
    model_value: str | None = None
    """What the model wrote for the deviating step."""
    kept_value: list[str] | None = None
    """``[var, value text]``: the last value the model wrote for a deviating step on any try, so a
    ``flag`` after a try that gave none (a derived rung that stopped at a wrong sub-step) still
    keeps the model's value rather than ending the run."""
    events: Annotated[list[dict[str, Any]], operator.add] = field(default_factory=list)
    """``DeviationEvent`` dumps, appended by every node that reports one."""
    usage: dict[str, float] = field(default_factory=dict)
    """Model calls, tokens, model seconds; ``finished_at`` once the run finished."""
    reprompts: int = 0
    """Re-prompts in the whole run."""
    stop: str | None = None
    """Why the run stopped early: ``raise``, ``budget:<name>``, ``unrepairable``; ``None``."""
    spent: str | None = None
    """The budget found spent (``tokens``, ``wall_time``, ``reprompts_per_step``, ...), else ``None``."""
    identity: dict[str, Any] = field(default_factory=dict)
    """What decides the result (:func:`stepguard.guard.run_identity`); checked on resume."""

    @property
    def deviation_model(self) -> Deviation | None:
        """The pending deviation as the one deviation type, :class:`stepguard.verify.Deviation`."""
        return Deviation.model_validate(self.deviation) if self.deviation else None

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> GuardState:
        """A state from a checkpoint's or a finished run's channel values (unknown keys ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in names})


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
    tools: ToolSet = field(default_factory=ToolSet)
    """The tools given to the guard, by name (tool steps call them)."""
    context: tuple[ChatMessage, ...] = ()
    """The caller's messages, shown to the model as a block at the top of every chunk prompt."""
    nested_guard: Callable[[GuardConfig], Any] = field(default=lambda cfg: None, repr=False)
    """Builds the nested guard that runs a derived rung's sub-procedure (set by :class:`Guard`)."""
    depth: int = 0
    """How many derived rungs this run is nested in (0: the caller's run); see :data:`MAX_NESTING`."""
    started: float = field(default_factory=time.monotonic)  # for ``GuardConfig.max_wall_s``
    _parsed: dict[str, tuple[str, Any]] = field(default_factory=dict, repr=False)

    def env(self, state: GuardState) -> dict[str, Any]:
        """Inputs plus committed values, each as its kind reads it (:meth:`stepguard.kinds.Kind.value_of`:
        a list step's value is a tuple of its items), each value text parsed once per run."""
        env: dict[str, Any] = dict(self.inputs)
        cache = self._parsed
        steps = self.procedure.steps
        index = self.procedure.index_of
        for var, text in state.values.items():
            hit = cache.get(var)
            if hit is None or hit[0] != text:
                step = steps[index[var]]
                hit = cache[var] = (text, kind_of(step).value_of(step, text))
            env[var] = hit[1]
        return env
