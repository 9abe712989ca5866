"""The controller's state (checkpointed by LangGraph) and the per-run context (not checkpointed)."""

from __future__ import annotations

import operator
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, Literal, get_args

from pydantic import BaseModel

from stepguard.errors import CheckpointError
from stepguard.evaluator import Number
from stepguard.guard._config import GuardConfig
from stepguard.guard._observer import NullObserver, SafeObserver
from stepguard.guard._prompts import PromptSet
from stepguard.guard._result import DeviationEvent
from stepguard.guard._stop import RunStop
from stepguard.kinds import kind_of
from stepguard.model import ChatMessage, ChatModel
from stepguard.procedure import Procedure
from stepguard.tools import Env, ToolSet
from stepguard.verify import Deviation

__all__ = ["STATE_SHAPE", "check_against", "GuardState", "RunContext", "RunUsage", "Stop", "StopReason", "json_update"]


STATE_SHAPE = 2
"""The shape of :class:`GuardState` in checkpoints. 1 (no ``shape`` key): the stop reason as text
(``"budget:tokens"``) and ``finished_at`` inside ``usage``; read by moving both. 2: as below."""

StopReason = Literal["raise", "budget", "unrepairable", "tool_error"]
"""Why a run stopped before its last step:

* ``raise``: the ``raise`` policy, at a deviation;
* ``budget``: a budget was spent (:attr:`Stop.budget` names it) and nothing of the model's was left to keep;
* ``unrepairable``: the ``repair`` policy had no expected value to supply;
* ``tool_error``: a tool failed or its result failed its check.
"""


@dataclass(frozen=True)
class Stop:
    """Why and where a run stopped early; JSON in checkpoints (:meth:`as_json`)."""

    reason: StopReason
    """What stopped it."""
    budget: str | None = None
    """For ``budget``: which one (``tokens``, ``wall_time``, ``reprompts_per_step``, ``reprompts_per_run``)."""

    def as_json(self) -> dict[str, Any]:
        """``{"reason": ..., "budget": ...}``."""
        return {"reason": self.reason, "budget": self.budget}

    @classmethod
    def read(cls, value: Any) -> Stop | None:
        """A stop from its JSON, or from shape 1's text (``raise``, ``budget:<name>``, ``unrepairable``).

        Raises:
            CheckpointError: a value that is neither (the checkpoint is not one this version wrote).
        """
        if value is None or isinstance(value, Stop):
            return value
        given = value
        if isinstance(value, str):
            reason, _, budget = value.partition(":")
            value = {"reason": reason, "budget": budget or None}
        if isinstance(value, Mapping) and value.get("reason") in _STOP_REASONS and isinstance(value.get("budget"), (str, type(None))):
            return cls(value["reason"], value.get("budget"))
        raise CheckpointError(f"a checkpoint's stop reason reads {str(given)[:80]!r}, which this version did not write")


_STOP_REASONS = frozenset(get_args(StopReason))


@dataclass
class RunUsage:
    """What a run has spent so far; JSON in checkpoints (:meth:`as_json`)."""

    model_calls: int = 0
    """Model calls (a derived rung's nested calls included)."""
    input_tokens: int = 0
    """Prompt tokens, as the model reported them."""
    output_tokens: int = 0
    """Completion tokens."""
    cached_tokens: int = 0
    """Prompt tokens the server reported as served from its cache."""
    model_s: float = 0.0
    """Seconds spent waiting for the model."""

    def as_json(self) -> dict[str, Any]:
        """Every field by name."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def read(cls, value: Any) -> RunUsage:
        """Usage from its JSON (unknown keys, such as shape 1's ``finished_at``, ignored).

        Raises:
            CheckpointError: a count that is not a number.
        """
        if isinstance(value, RunUsage):
            return value
        if not isinstance(value, Mapping):
            raise CheckpointError(f"a checkpoint's usage reads {str(value)[:80]!r}, not a mapping of counts")
        names = {f.name for f in fields(cls)}
        try:
            counts: dict[str, Any] = {k: (float(v) if k == "model_s" else int(v)) for k, v in value.items() if k in names}
            return cls(**counts)
        except (TypeError, ValueError):
            raise CheckpointError(f"a checkpoint's usage reads {str(value)[:80]!r}, not counts") from None

    def add(self, calls: int, input_tokens: int, output_tokens: int, cached_tokens: int, model_s: float) -> RunUsage:
        """A new total with these added."""
        return RunUsage(self.model_calls + calls, self.input_tokens + input_tokens, self.output_tokens + output_tokens,
                        self.cached_tokens + cached_tokens, self.model_s + model_s)


@dataclass
class GuardState:
    """Everything the controller needs to resume a run, read by attribute as typed objects; every field has its default here.

    Checkpoints hold it as JSON, so every checkpointer (SQLite, Postgres, memory) stores it without
    registering types: numbers as exact text (``"-12"``, ``"7/2"``), the deviation as the dump of
    :class:`stepguard.verify.Deviation`, the stop reason and usage as :meth:`Stop.as_json` and
    :meth:`RunUsage.as_json`, events as dumps of :class:`stepguard.guard.DeviationEvent`. Nodes
    return partial updates as dicts of these fields (typed objects are written as their JSON by the
    graph); reading a state turns them back into typed objects (:meth:`__post_init__`).
    """

    shape: int = STATE_SHAPE
    """The checkpoint shape this state was written in (:data:`STATE_SHAPE`)."""
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
    restated: list[str] | None = None
    """``[var, line]``: a step of the last reply's streamed window, verified and reported, that the
    model wrote again with another value; the reply ends before that line (:class:`~stepguard.guard._window.StreamWatch`),
    and ``verify`` notes it. ``None`` otherwise."""
    verified: list[list[str]] = field(default_factory=list)
    """``[[var, value text], ...]``: the verified prefix of the last reply."""
    deviation: Deviation | None = None
    """The first deviation of the last reply."""
    model_value: str | None = None
    """What the model wrote for the deviating step."""
    kept_value: list[str] | None = None
    """``[var, value text]``: the last value the model wrote for a deviating step on any try, so a
    ``flag`` after a try that gave none (a derived rung that stopped at a wrong sub-step) still
    keeps the model's value rather than ending the run."""
    events: Annotated[list[DeviationEvent], operator.add] = field(default_factory=list)
    """Every deviation seen and what was done, appended by every node that reports one."""
    usage: RunUsage = field(default_factory=RunUsage)
    """Model calls, tokens, model seconds."""
    finished_at: float | None = None
    """When the run finished (Unix time), ``None`` while it has not."""
    reprompts: int = 0
    """Re-prompts in the whole run."""
    stop: Stop | None = None
    """Why the run stopped early, or ``None``."""
    spent: str | None = None
    """The budget found spent (``tokens``, ``wall_time``, ``reprompts_per_step``, ...), else ``None``."""
    identity: dict[str, Any] = field(default_factory=dict)
    """What decides the result (:func:`stepguard.guard.run_identity`); checked on resume."""
    actions: dict[str, dict[str, Any]] = field(default_factory=dict)
    """var -> the record of the step's action (a tool call): its ``intent``
    (:meth:`stepguard.kinds.Kind.intent`), checkpointed before the action runs, then its
    ``result`` (value text) or ``error``; read on resume (:meth:`stepguard.kinds.Kind.resume_refusal`).
    Absent from older checkpoints, which read as no actions recorded."""

    def __post_init__(self) -> None:
        """Read the JSON fields as typed objects (a checkpoint's channels hold their JSON).

        Raises:
            CheckpointError: a field that does not read as what this version writes.
        """
        _check_fields(self)
        try:
            written: object = self.deviation  # a checkpoint's channel holds the deviation's JSON
            if isinstance(written, Mapping):
                self.deviation = Deviation.model_validate(dict(written))
            self.events = [e if isinstance(e, DeviationEvent) else _event_of(e) for e in self.events]
        except (ValueError, TypeError) as exc:  # pydantic's ValidationError, an event that is no mapping
            raise CheckpointError(f"a checkpoint's deviation or events do not read as this version writes them: "
                                  f"{str(exc).splitlines()[0]}") from None
        self.stop = Stop.read(self.stop)
        self.usage = RunUsage.read(self.usage)

    @property
    def deviation_model(self) -> Deviation | None:
        """The pending deviation (kept for callers of the shape-1 state: :attr:`deviation` is typed now)."""
        return self.deviation

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> GuardState:
        """A state from a checkpoint's or a finished run's channel values (unknown keys ignored).

        A shape-1 checkpoint (no ``shape``) is read by moving ``usage.finished_at`` to
        :attr:`finished_at` and its stop text to a :class:`Stop`.

        Raises:
            CheckpointError: a shape newer than :data:`STATE_SHAPE`, or a field that does not read.
        """
        shape = values.get("shape", 1)
        if not isinstance(shape, int) or isinstance(shape, bool) or not 1 <= shape <= STATE_SHAPE:
            raise CheckpointError(f"the checkpoint's state has shape {shape!r}; this version of stepguard reads shapes 1 to {STATE_SHAPE}")
        names = {f.name for f in fields(cls)}
        kept = {k: v for k, v in values.items() if k in names}
        if shape == 1:
            usage = dict(kept.get("usage") or {})
            if "finished_at" in usage:
                kept["finished_at"] = usage.pop("finished_at")
            kept["usage"], kept["shape"] = usage, STATE_SHAPE
        return cls(**kept)

    def channels(self) -> dict[str, Any]:
        """The state as a checkpoint holds it (JSON-friendly), ``events`` left out (they accumulate in their channel)."""
        out = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "events"}
        return json_update(out)


def _count(v: Any) -> bool:
    return type(v) is int and v >= 0


def _text_map(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and isinstance(x, str) for k, x in v.items())


def _count_map(v: Any) -> bool:
    return isinstance(v, dict) and all(isinstance(k, str) and _count(x) for k, x in v.items())


def _pair(v: Any) -> bool:
    return isinstance(v, (list, tuple)) and len(v) == 2 and all(isinstance(x, str) for x in v)


_FIELD_RULES: dict[str, tuple[Any, str]] = {
    **{n: (_count, "a whole number, 0 or more") for n in
       ("shape", "cursor", "chunk_no", "chunk_size", "chunk_start", "chunk_end", "attempt", "reprompts")},
    **{n: (lambda v: v is None or isinstance(v, str), "text or null") for n in
       ("rung", "note", "derived_spent", "derived_note", "model_value", "spent")},
    "reply": (lambda v: isinstance(v, str), "text"),
    "finish_reason": (lambda v: isinstance(v, str), "text"),
    "pending_call": (lambda v: type(v) is bool, "true or false"),
    "values": (_text_map, "a mapping of variable to value text"),
    "provenance": (_text_map, "a mapping of variable to provenance"),
    "step_reprompts": (_count_map, "a mapping of variable to a count"),
    "step_chunk": (_count_map, "a mapping of variable to a chunk number"),
    "tool_calls": (lambda v: isinstance(v, list) and all(isinstance(c, dict) for c in v), "a list of calls"),
    "verified": (lambda v: isinstance(v, list) and all(_pair(p) for p in v), "a list of [variable, value text]"),
    "kept_value": (lambda v: v is None or _pair(v), "null or [variable, value text]"),
    "restated": (lambda v: v is None or _pair(v), "null or [variable, line]"),
    "events": (lambda v: isinstance(v, list), "a list of events"),
    "identity": (lambda v: isinstance(v, dict), "a mapping"),
    "actions": (lambda v: isinstance(v, dict), "a mapping of step to action"),
    "deviation": (lambda v: v is None or isinstance(v, (Deviation, Mapping)), "null or a deviation"),
    "finished_at": (lambda v: v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)), "null or a time"),
}
"""What each checkpointed field must hold; anything else is a checkpoint this version did not write."""


def _check_fields(state: GuardState) -> None:
    """Refuse a field that does not hold what this version writes, naming it.

    Raises:
        CheckpointError: the field and what it holds.
    """
    for name, (ok, what) in _FIELD_RULES.items():
        value = getattr(state, name, None)
        if not ok(value):
            raise CheckpointError(f"a checkpoint's {name} reads {str(value)[:80]!r}, not {what}: "
                                  "not a state this version of stepguard wrote")


def check_against(state: GuardState, procedure: Any) -> None:
    """Refuse a checkpointed state that does not fit ``procedure``: a cursor past its steps, values
    of variables it does not have, a provenance or rung this version does not know.

    Raises:
        CheckpointError: what does not fit, named.
    """
    from typing import get_args as _args

    from stepguard.guard._result import Provenance
    from stepguard.guard.rungs import rung_names

    problems = []
    if state.cursor > len(procedure.steps):
        problems.append(f"cursor {state.cursor} is past the procedure's {len(procedure.steps)} steps")
    unknown = sorted(set(state.values) - set(procedure.variables))
    if unknown:
        problems.append(f"values of variables the procedure does not have: {', '.join(unknown[:5])}")
    if len(state.values) != state.cursor and not unknown:
        problems.append(f"{len(state.values)} committed values for a cursor at step {state.cursor}")
    known = set(_args(Provenance))
    odd = sorted({p for p in state.provenance.values() if p not in known})
    if odd:
        problems.append(f"provenance {', '.join(map(repr, odd[:3]))} (this version knows {', '.join(sorted(known))})")
    if state.rung is not None and state.rung not in rung_names():
        problems.append(f"rung {state.rung!r} is not registered")
    if problems:
        raise CheckpointError("the checkpoint does not fit the procedure: " + "; ".join(problems))


def _event_of(data: Any) -> DeviationEvent:
    return DeviationEvent(**{k: v for k, v in dict(data).items() if k in DeviationEvent.model_fields})


def json_update(update: Mapping[str, Any]) -> dict[str, Any]:
    """A node's update with its typed values as their checkpoint JSON (a pydantic model's dump,
    :class:`Stop` and :class:`RunUsage` as their ``as_json``)."""
    out: dict[str, Any] = {}
    for key, value in update.items():
        if isinstance(value, BaseModel):
            value = value.model_dump()
        elif isinstance(value, (Stop, RunUsage)):
            value = value.as_json()
        elif key == "events":
            value = [e.model_dump() if isinstance(e, BaseModel) else e for e in value]
        out[key] = value
    return out


@dataclass
class RunContext:
    """Objects a run needs that are not state: the graph's run-scoped context (LangGraph's
    ``context_schema``, reached by nodes as ``runtime.context``)."""

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
    places: dict[str, int] = field(default_factory=dict)
    """Input name -> the decimal places the caller wrote it with (:func:`stepguard.tools.input_places`),
    so a tool receives ``amount=25.00`` as ``Decimal("25.00")``."""
    thread_id: str = ""
    """The run's checkpoint thread (a fresh id without one); part of each action's idempotency key."""
    carried: RunUsage = field(default_factory=RunUsage)
    """What this call recorded that earlier calls of the thread spent: a derived rung's nested run
    resumed from its own checkpoint reports its thread's calls, some made before this call began
    (a run's ``spent`` leaves them out)."""
    started: float = field(default_factory=time.monotonic)  # for ``GuardConfig.max_wall_s``
    closed: threading.Event = field(default_factory=RunStop, repr=False)
    """Set when the caller stops reading the run (closes :meth:`Guard.stream`): a streamed window in
    flight is closed (at once for a :class:`RunStop`, else at its next event), so the model's server
    stops generating; no model call, nested run or tool starts after it."""
    _parsed: dict[str, tuple[str, Any]] = field(default_factory=dict, repr=False)

    def env(self, state: GuardState) -> Env:
        """Inputs plus committed values, each as its kind reads it (:meth:`stepguard.kinds.Kind.value_of`:
        a list step's value is a tuple of its items), each value text parsed once per run; a
        ``dict`` that also carries the inputs' written places (:class:`stepguard.tools.Env`)."""
        env = Env(self.inputs, self.places)
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
