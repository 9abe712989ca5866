"""The controller's state (checkpointed by LangGraph) and the per-run context (not checkpointed).

The state is two typed parts and the run's events, one checkpoint channel each:

* :class:`Progress`: what the run has done and goes on from (committed values, provenance,
  usage, recorded actions, the pending ask's rung and note, the stop reason), versioned by
  :data:`STATE_SHAPE`;
* :class:`Attempt`: the ask in flight (the chunk asked, the reply, its verified prefix, its
  first deviation), replaced by each node that handles it;
* ``events``: every :class:`~stepguard.guard.DeviationEvent`, appended.

Checkpoints hold each part as JSON (numbers as exact text, ``"-12"``, ``"7/2"``), so every
checkpointer (memory, SQLite, Postgres) stores it without registering types. Reading a checkpoint
validates it once, declaratively (each field's type below, through pydantic), and migrates shapes
1 and 2 (one flat channel per field) to the current one (:meth:`GuardState.of`). Nodes return an
:class:`Update`: the new progress and attempt (whole, built with :func:`dataclasses.replace`) and
the events they report.
"""

from __future__ import annotations

import operator
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError

from stepguard.errors import CheckpointError
from stepguard.evaluator import Number
from stepguard.guard._config import GuardConfig
from stepguard.guard._observer import NullObserver, SafeObserver
from stepguard.guard._prompts import PromptSet
from stepguard.guard._result import DeviationEvent
from stepguard.guard._stop import RunStop
from stepguard.kinds import kind_of
from stepguard.model import ChatMessage, ChatModel, Usage
from stepguard.procedure import Procedure
from stepguard.tools import Env, ToolSet
from stepguard.verify import Deviation

__all__ = ["MAX_COUNT", "STATE_SHAPE", "Attempt", "BudgetName", "GuardState", "Progress", "RunContext", "RunUsage", "Stop",
           "StopReason", "Update", "check_against"]


STATE_SHAPE = 3
"""The shape of the checkpointed state. 1 (no ``shape`` key): one channel per field, the stop reason
as text (``"budget:tokens"``) and ``finished_at`` inside ``usage``. 2: one channel per field.
3: the channels ``progress`` (:class:`Progress`, whose ``shape`` says 3), ``attempt``
(:class:`Attempt`) and ``events``; shape 2's ``attempt`` count is :attr:`Progress.tries`."""

StopReason = Literal["raise", "budget", "unrepairable", "tool_error"]
"""Why a run stopped before its last step:

* ``raise``: the ``raise`` policy, at a deviation;
* ``budget``: a budget was spent (:attr:`Stop.budget` names it) and nothing of the model's was left to keep;
* ``unrepairable``: the ``repair`` policy had no expected value to supply;
* ``tool_error``: a tool failed or its result failed its check.
"""


BudgetName = Literal["tokens", "wall_time", "reprompts_per_step", "reprompts_per_run", "spent", "run"]
"""A budget a checkpoint names as spent (``spent`` and ``run``: one not named, as every version wrote it)."""


_ONLY_ITS_FIELDS = ConfigDict(extra="forbid")
"""A checkpoint part's JSON holds its fields and no others (a key no version wrote is refused, not dropped)."""


@dataclass(frozen=True)
class Stop:
    """Why and where a run stopped early; ``{"reason": ..., "budget": ...}`` in checkpoints."""

    __pydantic_config__: ClassVar[ConfigDict] = _ONLY_ITS_FIELDS

    reason: StopReason
    """What stopped it."""
    budget: BudgetName | None = None
    """For ``budget``: which one (``tokens``, ``wall_time``, ``reprompts_per_step``, ``reprompts_per_run``)."""

    @staticmethod
    def from_shape_1(value: Any) -> Any:
        """Shape 1's text (``raise``, ``budget:<name>``, ``unrepairable``) as a stop's JSON; anything else
        as it is. Read in the migration of shapes 1 and 2 only: shape 3's progress holds the JSON."""
        if isinstance(value, str):
            reason, _, budget = value.partition(":")
            return {"reason": reason, "budget": budget or None}
        return value


RunUsage = Usage
"""What a run has spent so far (:class:`stepguard.model.Usage`, the one usage type); JSON in checkpoints."""


MAX_COUNT = 2**53 - 1
"""The largest count a checkpoint holds: the largest integer every JSON reader keeps exact, far from
the 64-bit bound the checkpointers store (a count one past it still writes)."""
Count = Annotated[int, Field(strict=True, ge=0, le=MAX_COUNT)]
"""A whole number, 0 to :data:`MAX_COUNT` (``True``, ``2.0`` and ``"2"`` are not)."""
Text = Annotated[str, Field(strict=True)]
Pair = Annotated[list[Text], Field(min_length=2, max_length=2)]
"""``[variable, text]``."""
Time = Annotated[float, Field(strict=True, allow_inf_nan=False)]
"""A finite number of seconds (NaN and infinities are not)."""
Seconds = Annotated[float, Field(strict=True, ge=0, allow_inf_nan=False)]
Tally = Annotated[list[Count], Field(min_length=2, max_length=2)]
"""``[right, wrong]``."""


class _UsageJSON(BaseModel):
    """A checkpoint's usage as this version (and every earlier one) writes it: counts, never text,
    ``True``, a negative or non-finite number, or a key of its own."""

    model_config = ConfigDict(extra="forbid")

    model_calls: Count = 0
    input_tokens: Count = 0
    output_tokens: Count = 0
    cached_tokens: Count = 0
    wall_s: Seconds = 0.0
    model_s: Seconds = 0.0


def _read_usage(value: Any) -> Any:
    """A checkpoint's usage JSON checked as :class:`_UsageJSON` (a :class:`Usage` as it is).

    Raises:
        ValueError: the first count that does not read, named (the state's reader names ``usage``).
    """
    if isinstance(value, Usage):
        return value
    try:
        return _UsageJSON.model_validate(value).model_dump()
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"]) or "usage"
        raise ValueError(f"usage.{where} reads {str(err.get('input'))[:40]!r}: {err['msg']}") from None


CheckpointUsage = Annotated[Usage, BeforeValidator(_read_usage)]
""":class:`Usage` as a checkpoint holds it (:func:`_read_usage`)."""


@dataclass(frozen=True)
class Progress:
    """What a run has done and goes on from: committed values and how each was got, what it spent,
    where the ladder of the step at ``cursor`` stands, and why it stopped (checkpointed, versioned by :data:`STATE_SHAPE`)."""

    __pydantic_config__: ClassVar[ConfigDict] = _ONLY_ITS_FIELDS

    shape: Count = STATE_SHAPE
    """The checkpoint shape this progress was written in (:data:`STATE_SHAPE`)."""
    cursor: Count = 0
    """0-based index of the next uncommitted step."""
    values: dict[Text, Text] = field(default_factory=dict)
    """Committed step values, exact text."""
    provenance: dict[Text, Text] = field(default_factory=dict)
    """var -> :data:`stepguard.guard.Provenance`."""
    step_reprompts: dict[Text, Count] = field(default_factory=dict)
    """var -> re-prompts spent on that step."""
    step_chunk: dict[Text, Count] = field(default_factory=dict)
    """var -> 0-based chunk that committed it."""
    chunk_no: Count = 0
    """Model-call groups started so far."""
    chunk_size: Count = 0
    """Current chunk size (adaptive); 0 until the run sets it from the config."""
    tries: Count = 0
    """Re-prompts so far for the step at ``cursor`` (shape 2's ``attempt``)."""
    rung: Text | None = None
    """Rung of the pending ask; ``None`` on a first try."""
    note: Text | None = None
    """Correction note of the pending ask."""
    kept_value: Pair | None = None
    """``[var, value text]``: the last value the model wrote for a deviating step on any try, so a
    ``flag`` after a try that gave none (a derived rung that stopped at a wrong sub-step) still
    keeps the model's value rather than ending the run."""
    usage: CheckpointUsage = field(default_factory=Usage)
    """Model calls, tokens, model seconds."""
    reprompts: Count = 0
    """Re-prompts in the whole run."""
    spent: BudgetName | None = None
    """The budget found spent (``tokens``, ``wall_time``, ``reprompts_per_step``, ...), else ``None``."""
    stop: Stop | None = None
    """Why the run stopped early, or ``None``."""
    finished_at: Time | None = None
    """When the run finished (Unix time), ``None`` while it has not."""
    identity: dict[Text, Any] = field(default_factory=dict)
    """What decides the result (:func:`stepguard.guard.run_identity`); checked on resume."""
    window_tally: list[Tally] = field(default_factory=list)
    """``[[right, wrong], ...]`` by 0-based position in a streamed window: the steps first asked
    there that verified and that deviated (``follow`` only; :func:`stepguard.guard._window.tally_window`).
    Absent from older checkpoints, which read as nothing measured."""
    actions: dict[Text, dict[Text, Any]] = field(default_factory=dict)
    """var -> the record of the step's action (a tool call): its ``intent``
    (:meth:`stepguard.kinds.Kind.intent`), checkpointed before the action runs, then its
    ``result`` (value text) or ``error``; read on resume (:meth:`stepguard.kinds.Kind.resume_refusal`).
    Absent from older checkpoints, which read as no actions recorded."""


@dataclass(frozen=True)
class Attempt:
    """The ask in flight: the chunk asked, the model's reply and what checking it found (checkpointed
    with the progress so a run resumes mid-ladder, replaced as the ask goes through the nodes)."""

    __pydantic_config__: ClassVar[ConfigDict] = _ONLY_ITS_FIELDS

    chunk_start: Count = 0
    """Start of the chunk being asked (a step index)."""
    chunk_end: Count = 0
    """End (exclusive) of the chunk being asked."""
    reply: Text = ""
    """The last reply's text."""
    tool_calls: list[dict[Text, Any]] = field(default_factory=list)
    """The last reply's native tool calls, ``[{"name": ..., "arguments": "<JSON>"}]`` (empty for a text reply)."""
    pending_call: Annotated[bool, Field(strict=True)] = False
    """True when the last reply's tool call passed every check and is to be executed (the ``act`` node)."""
    finish_reason: Text = ""
    """The last reply's finish reason (``length``: cut at max tokens)."""
    derived_spent: Text | None = None
    """The run budget (``tokens``, ``wall_time``) that stopped the last reply's nested run, if one did."""
    derived_note: Text | None = None
    """Where the last reply came from a derived rung's nested run that did not verify: the sub-step
    it ended on (``sub-step t2 = t1 / 4 never verified; the model wrote `t2 = 326.5 / 4 = 81.6```),
    added to the deviation's detail; ``None`` otherwise."""
    restated: Pair | None = None
    """``[var, line]``: a step of the last reply's streamed window, verified and reported, that the
    model wrote again with another value; the reply ends before that line (:class:`~stepguard.guard._window.StreamWatch`),
    and ``verify`` notes it. ``None`` otherwise."""
    verified: list[Pair] = field(default_factory=list)
    """``[[var, value text], ...]``: the verified prefix of the last reply."""
    deviation: Deviation | None = None
    """The first deviation of the last reply."""
    model_value: Text | None = None
    """What the model wrote for the deviating step."""


_ATTEMPT_FIELDS = frozenset(f.name for f in fields(Attempt))
_PROGRESS_FIELDS = frozenset(f.name for f in fields(Progress))
_EVENTS: TypeAdapter[list[DeviationEvent]] = TypeAdapter(list[DeviationEvent])


_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}


def _adapter(cls: type[Any]) -> TypeAdapter[Any]:
    """The (cached) validator and serializer of ``cls``."""
    if cls not in _ADAPTERS:
        _ADAPTERS[cls] = TypeAdapter(cls)
    return _ADAPTERS[cls]


def _read(cls: type[Any], value: Any, channel: str) -> Any:
    """``value`` (a checkpoint channel's JSON, or already ``cls``) as ``cls``.

    Raises:
        CheckpointError: the first field that does not read, named, with what it holds.
    """
    if isinstance(value, cls):
        return value
    try:
        return _adapter(cls).validate_python(value)
    except ValidationError as exc:
        raise _refusal(exc, channel) from None


def _refusal(exc: ValidationError, channel: str) -> CheckpointError:
    """The first error of ``exc`` as a :class:`CheckpointError` naming the field and what it holds."""
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"]]
    name = loc[0] if loc and channel in ("progress", "attempt") else channel
    label = {"stop": "stop reason"}.get(name, name)
    given = err.get("input")
    return CheckpointError(f"a checkpoint's {label} reads {str(given)[:80]!r}, not as this version writes it "
                           f"({'.'.join(loc) or channel}: {err['msg']}): not a state this version of stepguard wrote")


def _read_events(value: Any) -> list[DeviationEvent]:
    """A checkpoint's events (their JSON, or already typed) as :class:`DeviationEvent` objects.

    Raises:
        CheckpointError: a value that is no list of events.
    """
    if isinstance(value, list) and all(isinstance(e, DeviationEvent) for e in value):
        return value
    try:
        return _EVENTS.validate_python(value)
    except ValidationError as exc:
        raise _refusal(exc, "events") from None


def _dump(value: Any) -> Any:
    """A state part (or a list of events) as its checkpoint JSON."""
    return _adapter(type(value)).dump_python(value, mode="json") if not isinstance(value, list) else _EVENTS.dump_python(value, mode="json")


@dataclass(frozen=True)
class Update:
    """What a node changes: the whole new :class:`Progress` and :class:`Attempt` where it changes
    them (built from the node's input with :func:`dataclasses.replace`), and the events it reports."""

    progress: Progress | None = None
    attempt: Attempt | None = None
    events: list[DeviationEvent] = field(default_factory=list)

    def channels(self) -> dict[str, Any]:
        """The update as the graph's channels take it: each part that changed as its JSON."""
        out: dict[str, Any] = {}
        if self.progress is not None:
            out["progress"] = _dump(self.progress)
        if self.attempt is not None:
            out["attempt"] = _dump(self.attempt)
        if self.events:
            out["events"] = _dump(list(self.events))
        return out


@dataclass
class GuardState:
    """The controller graph's state: the run's :class:`Progress`, the :class:`Attempt` in flight and
    every event, read by attribute as typed objects (a checkpoint's channels hold their JSON; reading
    the state validates them, :meth:`__post_init__`)."""

    progress: Progress = field(default_factory=Progress)
    attempt: Attempt = field(default_factory=Attempt)
    events: Annotated[list[DeviationEvent], operator.add] = field(default_factory=list)
    """Every deviation seen and what was done, appended by every node that reports one."""

    def __post_init__(self) -> None:
        """Read the channels' JSON as typed objects.

        Raises:
            CheckpointError: a field that does not read as what this version writes, named.
        """
        self.progress = _read(Progress, self.progress, "progress")
        self.attempt = _read(Attempt, self.attempt, "attempt")
        self.events = _read_events(self.events)

    def then(self, update: Update) -> GuardState:
        """This state with ``update`` applied (its events appended)."""
        return GuardState(update.progress or self.progress, update.attempt or self.attempt, [*self.events, *update.events])

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> GuardState:
        """A state from a checkpoint's or a finished run's channel values (unknown keys ignored).

        Shapes 1 and 2 (one channel per field) are migrated: each field goes to its part, shape 2's
        ``attempt`` count to :attr:`Progress.tries`; shape 1's ``usage.finished_at`` to
        :attr:`Progress.finished_at` and its stop text to a :class:`Stop`.

        Raises:
            CheckpointError: a shape newer than :data:`STATE_SHAPE`, or a field that does not read.
        """
        if "progress" in values:
            progress = values["progress"]
            shape = progress.get("shape") if isinstance(progress, Mapping) else STATE_SHAPE
            _check_shape(shape)
            if shape != STATE_SHAPE:  # shapes 1 and 2 had no progress channel
                raise CheckpointError(f"the checkpoint's progress has shape {shape!r}; "
                                      f"shape {STATE_SHAPE} wrote the first progress channel")
            return cls(_read(Progress, progress, "progress"), _read(Attempt, values.get("attempt") or {}, "attempt"),
                       _read_events(values.get("events") or []))
        shape = values.get("shape", 1)
        _check_shape(shape)
        if shape >= STATE_SHAPE:  # shape 3 onward keeps its fields under progress
            raise CheckpointError(f"the checkpoint's state has shape {shape!r} with no progress channel; "
                                  f"shapes 1 and 2 hold one channel per field, shape {STATE_SHAPE} a progress channel")
        flat = dict(values)
        flat["stop"] = Stop.from_shape_1(flat.get("stop"))  # shapes 1 and 2 were read with it, so either may hold it
        if shape == 1 and isinstance(flat.get("usage"), Mapping):
            usage = dict(flat["usage"])
            if "finished_at" in usage:
                flat["finished_at"] = usage.pop("finished_at")
            flat["usage"] = usage
        if "attempt" in flat:
            flat["tries"] = flat.pop("attempt")
        flat["shape"] = STATE_SHAPE
        events = flat.get("events", [])
        return cls(_read(Progress, {k: v for k, v in flat.items() if k in _PROGRESS_FIELDS}, "progress"),
                   _read(Attempt, {k: v for k, v in flat.items() if k in _ATTEMPT_FIELDS}, "attempt"), _read_events(events))

    def channels(self) -> dict[str, Any]:
        """The state as a checkpoint holds it (JSON), ``events`` left out (they accumulate in their channel)."""
        return Update(self.progress, self.attempt).channels()


def _check_shape(shape: Any) -> None:
    """Refuse a shape this version does not read.

    Raises:
        CheckpointError: naming the shape and the ones read.
    """
    if not isinstance(shape, int) or isinstance(shape, bool) or not 1 <= shape <= STATE_SHAPE:
        raise CheckpointError(f"the checkpoint's state has shape {shape!r}; this version of stepguard reads shapes 1 to {STATE_SHAPE}")


def check_against(state: GuardState, procedure: Any) -> None:
    """Refuse a checkpointed state that does not fit ``procedure``: a cursor past its steps, values
    of variables it does not have, a provenance or rung this version does not know.

    Raises:
        CheckpointError: what does not fit, named.
    """
    from stepguard.guard._result import Provenance
    from stepguard.guard.rungs import rung_names

    p = state.progress
    problems = []
    if p.cursor > len(procedure.steps):
        problems.append(f"cursor {p.cursor} is past the procedure's {len(procedure.steps)} steps")
    unknown = sorted(set(p.values) - set(procedure.variables))
    if unknown:
        problems.append(f"values of variables the procedure does not have: {', '.join(unknown[:5])}")
    if len(p.values) != p.cursor and not unknown:
        problems.append(f"{len(p.values)} committed values for a cursor at step {p.cursor}")
    known = set(get_args(Provenance))
    odd = sorted({v for v in p.provenance.values() if v not in known})
    if odd:
        problems.append(f"provenance {', '.join(map(repr, odd[:3]))} (this version knows {', '.join(sorted(known))})")
    if p.rung is not None and p.rung not in rung_names():
        problems.append(f"rung {p.rung!r} is not registered")
    problems += _unread_values(p, procedure) + _strangers(state, procedure) + _attempt_problems(state, procedure)
    if problems:
        raise CheckpointError("the checkpoint does not fit the procedure: " + "; ".join(problems))


def _unread_values(p: Progress, procedure: Any) -> list[str]:
    """Each committed value its step's kind does not read (``"banana"`` for a number), named."""
    out = []
    for var, text in p.values.items():
        if var not in procedure.index_of:
            continue
        step = procedure.steps[procedure.index_of[var]]
        try:
            kind_of(step).value_of(step, text)
        except Exception as exc:  # noqa: BLE001 - any kind's refusal of the text is the same finding
            out.append(f"the committed value of {var} reads {text[:40]!r}, not a {kind_of(step).name} step's value ({exc})")
    return out[:3]


def _strangers(state: GuardState, procedure: Any) -> list[str]:
    """Each field keyed by variable (provenance, re-prompts, chunks, actions, the kept value, the
    attempt's verified prefix and deviation) that names a variable the procedure does not have."""
    p, a = state.progress, state.attempt
    named = {"provenance": list(p.provenance), "step_reprompts": list(p.step_reprompts), "step_chunk": list(p.step_chunk),
             "actions": list(p.actions), "kept_value": [p.kept_value[0]] if p.kept_value else [],
             "verified": [v for v, _ in a.verified], "restated": [a.restated[0]] if a.restated else [],
             "deviation": [a.deviation.step] if a.deviation and a.deviation.step else []}
    known = set(procedure.variables)
    return [f"{name} names {', '.join(sorted(set(vs) - known)[:3])}, not a variable of the procedure"
            for name, vs in named.items() if set(vs) - known]


def _attempt_problems(state: GuardState, procedure: Any) -> list[str]:
    """An attempt's chunk outside the procedure's steps, or a pending call at a step whose kind does not act."""
    from stepguard.kinds import Acting

    a, n, out = state.attempt, len(procedure.steps), []
    if not a.chunk_start <= a.chunk_end <= n:
        out.append(f"the attempt's chunk [{a.chunk_start}, {a.chunk_end}) is not within the procedure's {n} steps")
    cursor = state.progress.cursor
    if a.pending_call and (cursor >= n or type(kind_of(procedure.steps[cursor])).execute is Acting.execute):
        out.append(f"a call is pending at step {cursor}, whose kind carries out no call")
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
    carried: Usage = field(default_factory=Usage)
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
        for var, text in state.progress.values.items():
            hit = cache.get(var)
            if hit is None or hit[0] != text:
                step = steps[index[var]]
                hit = cache[var] = (text, kind_of(step).value_of(step, text))
            env[var] = hit[1]
        return env
