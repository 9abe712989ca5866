"""The public face of the controller: ``Guard(model, config).run(procedure, inputs) -> GuardResult``."""

from __future__ import annotations

import contextlib
import threading
import time
import uuid
import warnings
from collections.abc import AsyncGenerator, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, cast

from langgraph.checkpoint.base import BaseCheckpointSaver

from stepguard.errors import BudgetExhausted, CheckpointError, ProcedureError, StepDeviation, StepguardError
from stepguard.guard._checkpoint import async_capable, sqlite_checkpointer
from stepguard.guard._config import GuardConfig, LadderWarning, ladder_mismatch, settings_resume_hint
from stepguard.guard._forms_resume import TEMPLATES_CHANGED, forms_change, forms_refusal
from stepguard.guard._graph import build_graph
from stepguard.guard._identity import identity_diff, run_identity
from stepguard.guard._observer import GlobalTelemetry, GuardObserver, ModelCallOnly, SafeObserver
from stepguard.guard._open_streams import track, untrack
from stepguard.guard._options import check_thread_id
from stepguard.guard._prompts import PromptSet
from stepguard.guard._result import DeviationEvent, GuardResult, StepOutcome, grade_of, input_text, outcome, run_status
from stepguard.guard._state import GuardState, Progress, RunContext, check_against
from stepguard.guard._thread_lock import hold_thread
from stepguard.kinds import StepContext, bounded_steps, kind_of
from stepguard.model import ChatMessage, ChatModel, Usage
from stepguard.procedure import Procedure
from stepguard.tools import ToolSet, as_toolset, input_places, missing_tools

if TYPE_CHECKING:
    from langchain_core.runnables import RunnableConfig

__all__ = ["Guard", "GuardUpdate", "sqlite_checkpointer"]


_SHARED_GRAPHS: dict[bool, Any] = {}


def compiled_graph(use_async: bool, checkpointer: BaseCheckpointSaver[Any] | None = None) -> Any:
    """The controller graph compiled with ``checkpointer``. Without one the compiled graph holds no
    state of its own (a run's services arrive as its context), so one per mode is shared by every
    guard: a derived rung's nested run or a proxy's per-request guard compiles nothing."""
    if checkpointer is not None:
        return build_graph(use_async=use_async).compile(checkpointer=checkpointer)
    graph = _SHARED_GRAPHS.get(use_async)
    if graph is None:
        graph = _SHARED_GRAPHS[use_async] = build_graph(use_async=use_async).compile()
    return graph


class Guard:
    """Executes procedures stepwise under the controller graph, checking every value.

    Args:
        model: any :class:`stepguard.model.ChatModel`.
        config: chunking, policy, ladder and budgets (:class:`GuardConfig`). Without one, each run
            uses the measured defaults for its procedure (:meth:`config_for`): the class defaults for
            integer sums, one step a call and the ``split`` ladder for decimals, products, quotients,
            ``min``/``max`` and conditionals (docs/production.md).
        checkpointer: a LangGraph checkpointer (``sqlite_checkpointer(path)``, Postgres, memory),
            or ``None`` for no checkpoints. With one, a run killed mid-procedure resumes from its
            last committed chunk when :meth:`run` is called again with the same ``thread_id``,
            and only for the same work: a thread that holds a run of another procedure, other
            inputs, settings, prompts or model raises :class:`CheckpointError` naming the difference.
        observer: hooks for tracing and metrics (``stepguard.telemetry.OtelObserver``); default
            :class:`~stepguard.guard.GlobalTelemetry`: traced through OpenTelemetry's global
            providers when the application has set a tracer provider, else nothing.
        tools: the tools tool steps call: callables (named by ``__name__``), :class:`stepguard.tools.Tool`
            objects, LangChain tools, or a mapping of name to any of these. A procedure file names a
            tool; only these are ever called, each after its arguments pass their checks. Their names
            (and versions, where given) are part of the run's identity.

    Example:
        >>> guard = Guard(load_model("sim:perfect"))            # doctest: +SKIP
        >>> guard.run(procedure, {"x": 7, "y": 3}).answer        # doctest: +SKIP
    """

    def __init__(
        self,
        model: ChatModel,
        config: GuardConfig | None = None,
        checkpointer: BaseCheckpointSaver[Any] | None = None,
        observer: GuardObserver | None = None,
        tools: ToolSet | Mapping[str, Any] | Iterable[Any] | None = None,
    ) -> None:
        self.model = model
        self.tools = as_toolset(tools)
        self.observer = SafeObserver(observer or GlobalTelemetry())
        self.config = config or GuardConfig()
        self._config_given = config is not None
        self.checkpointer = checkpointer = async_capable(checkpointer)
        self._prompts = PromptSet(self.config.prompt_dir)
        self._depth = 0  # derived rungs this guard's runs are nested in
        # With a checkpointer, each step's checkpoint is written before the next step starts, so a
        # SIGKILL loses at most the model call in flight.
        self._durability = "sync" if checkpointer is not None else None
        self._graphs: dict[bool, Any] = {}

    @property
    def _graph(self) -> Any:
        """The compiled controller graph (sync model calls), compiled on first use."""
        return self._compiled(False)

    @property
    def _agraph(self) -> Any:
        """The compiled controller graph (async model calls), compiled on first use."""
        return self._compiled(True)

    def _compiled(self, use_async: bool) -> Any:
        graph = self._graphs.get(use_async)
        if graph is None:
            graph = self._graphs[use_async] = compiled_graph(use_async, self.checkpointer)
        return graph

    def _nested(self, cfg: GuardConfig) -> Guard:
        """The guard that runs a derived rung's sub-procedure, one level deeper than this one.

        It checkpoints to this guard's checkpointer (its run is given a thread of its own, named
        from the parent's: :func:`stepguard.guard._graph.nested_thread`), so a run killed or failed
        inside a rung resumes at the sub-step in flight: the sub-steps verified before it are not
        asked again, and the thread's usage keeps their calls. It shares this guard's compiled graphs.
        """
        nested = Guard(self.model, cfg, checkpointer=self.checkpointer, observer=ModelCallOnly(self.observer.inner))
        nested._depth = self._depth + 1
        nested._graphs = self._graphs
        return nested

    def config_for(self, procedure: Procedure) -> GuardConfig:
        """The configuration a run of ``procedure`` uses: the one this guard was given, else the measured
        defaults for the procedure's kind of steps (:meth:`GuardConfig.for_procedure`: one step a call
        and the ``split`` ladder beyond integer sums)."""
        if not self._config_given:
            return GuardConfig.for_procedure(procedure)
        if self._depth == 0 and (why := ladder_mismatch(procedure, self.config)) is not None:
            warnings.warn(LadderWarning(why), stacklevel=3)
        return self.config

    def _setup(
        self, procedure: Procedure, inputs: Mapping[str, Any], thread_id: str | None, context: Sequence[ChatMessage] = (),
        stop: threading.Event | None = None,
    ) -> tuple[RunContext, dict[str, Any], str]:
        check_thread_id(thread_id)  # "" names no thread: a retry would run every call and tool again
        config = self.config_for(procedure)
        ctx = RunContext(procedure, _reading(self.model, procedure), config, procedure.bind_inputs(inputs), self._prompts,
                         self.observer, tools=self.tools, context=_context(context), places=input_places(procedure, inputs))
        if stop is not None:
            ctx.closed = stop
        self._check_tools(procedure)
        # a step that fails or contradicts itself on these inputs, or that no model can write: before any call
        procedure.expected_values(ctx.inputs, writable=not self._depth)
        # a nested run's budgets are what its parent had left when it began (the wall time differs on
        # every resume): its parent's identity keys the budgets, and its thread is named from the parent's
        keyed = replace(config, max_total_tokens=None, max_wall_s=None) if self._depth else config
        ctx.identity = run_identity(procedure, ctx.inputs, keyed, self.model, self._prompts, self.tools.identity(),
                                    ctx.context, places=ctx.places)
        ctx.depth = self._depth
        ctx.nested_guard = self._nested
        tid = ctx.thread_id = thread_id or uuid.uuid4().hex
        self.observer.run_started(procedure, self.model, config, tid)
        limit = 12 * len(procedure.steps) + 8 * config.max_reprompts_per_run + 50
        cfg = {"configurable": {"thread_id": tid}, "recursion_limit": limit}
        return ctx, cfg, tid

    def _check_tools(self, procedure: Procedure) -> None:
        """Refuse, before any model call, a tool step whose tool was not given to this guard."""
        missing = missing_tools(procedure, self.tools)
        if missing:
            given = ", ".join(self.tools) or "none"
            raise ProcedureError(
                (f"tool {missing[0]} is not" if len(missing) == 1 else f"tools {', '.join(missing)} are not")
                + f" among the tools given to the guard (given: {given}); "
                "pass it as Guard(model, tools=[...]) or, on the command line, --tools module:attr",
                f"procedure {procedure.name!r}",
            )

    def run_identity(
        self, procedure: Procedure, inputs: Mapping[str, Any], context: Sequence[ChatMessage] = ()
    ) -> dict[str, Any]:
        """What decides the result of running ``procedure`` on ``inputs`` (with ``context``) with this guard.

        Returns:
            ``{procedure, inputs, settings, prompts, model, tools[, context]}`` (see
            :func:`stepguard.guard._identity.run_identity`); a checkpoint thread resumes only a run
            whose identity is equal.

        Raises:
            ProcedureError: bad inputs.
        """
        return run_identity(procedure, procedure.bind_inputs(inputs), self.config_for(procedure), self.model, self._prompts,
                            self.tools.identity(), _context(context), places=input_places(procedure, inputs))

    def _resume_from(self, ctx: RunContext, values: dict[str, Any], tid: str) -> tuple[dict[str, Any], bool]:
        """``(input, finished)`` for a thread that holds state, after checking it holds this work.

        Raises:
            CheckpointError: the thread holds a run of other work (procedure, inputs, settings,
                prompts or model differ); the message names each difference. Or an unfinished run
                whose recorded actions forbid going on (:func:`_refuse_unsafe_actions`).
        """
        state = GuardState.of(values)  # a shape-1 or shape-2 checkpoint is read in the current shape, or refused
        forms_changed = self._check_work(tid, state, ctx.identity, ctx.procedure)
        check_against(state, ctx.procedure)
        finished = state.progress.finished_at is not None
        if forms_changed and not finished:  # what it commits from here on is asked under today's forms
            state.progress = replace(state.progress, identity=ctx.identity)
        if not finished:
            _refuse_unsafe_actions(tid, ctx, state)
        return self._plan_start(state), finished

    def check_thread(
        self, procedure: Procedure, inputs: Mapping[str, Any], thread_id: str | None, *, context: Sequence[ChatMessage] = ()
    ) -> None:
        """Raise now what :meth:`run` would raise first for ``thread_id``: for a caller that must
        answer before the run starts (the proxy's status line, before a stream's first event).

        Raises:
            ProcedureError: bad inputs.
            OptionError: ``thread_id`` is empty or white space.
            ThreadInFlight: a run of ``thread_id`` is in flight (a later one may still start first).
            CheckpointError: ``thread_id`` holds a run of other work (see :meth:`run_identity`).
        """
        check_thread_id(thread_id)
        identity = self.run_identity(procedure, inputs, context)
        if thread_id is None or self.checkpointer is None:
            return
        with hold_thread(self.checkpointer, thread_id):  # a run of it in flight: refused now, before the stream
            pass
        stored = self._stored({"configurable": {"thread_id": thread_id}})
        if stored:
            self._check_work(thread_id, GuardState.of(stored), identity, procedure)

    def _stored(self, cfg: dict[str, Any]) -> dict[str, Any]:
        """The channels of the thread's last checkpoint as stored (``{}``: none), every shape's: the
        graph's own state view shows only the current shape's channels."""
        saved = self.checkpointer.get_tuple(cast("RunnableConfig", cfg)) if self.checkpointer is not None else None
        return dict(saved.checkpoint["channel_values"]) if saved is not None else {}

    async def _astored(self, cfg: dict[str, Any]) -> dict[str, Any]:
        """Async twin of :meth:`_stored`."""
        saved = await self.checkpointer.aget_tuple(cast("RunnableConfig", cfg)) if self.checkpointer is not None else None
        return dict(saved.checkpoint["channel_values"]) if saved is not None else {}

    def _check_work(self, tid: str, state: GuardState, identity: Mapping[str, Any], procedure: Procedure) -> bool:
        """Refuse a thread that holds other work (:func:`_refuse_other_work`); ``True`` where it holds
        this work written under other prompt forms and may resume under today's
        (:mod:`stepguard.guard._forms_resume`).

        Raises:
            CheckpointError: other work, or a forms change its committed values do not allow (the
                message names both forms versions and the step).
        """
        stored = state.progress.identity
        diff = identity_diff(stored, identity)
        change = forms_change(stored, identity, self._prompts) if TEMPLATES_CHANGED in diff else None
        if change is not None:
            said = f"prompt forms: stored {change[0]}, now {change[1]}"
            diff = [said if d == TEMPLATES_CHANGED else d for d in diff]
            if diff == [said]:
                why = forms_refusal(state, procedure, *change)
                if why is not None:
                    raise CheckpointError(f"checkpoint thread {tid!r} was {why}; use a new thread id to run it under "
                                          f"prompt forms {change[1]}")
                return True
        _refuse_other_work(tid, diff, settings_resume_hint((stored or {}).get("settings"), identity.get("settings")))
        return False

    @staticmethod
    def _plan_start(state: GuardState) -> dict[str, Any]:
        """The graph's input for a thread whose last checkpoint holds ``state``.

        A finished run (its ``finish`` node ran) is returned as it is. An unfinished one starts a
        new pass from ``plan`` with its committed state as input: the chunk in flight when the
        process died is asked again; nothing committed is. (Replaying LangGraph's own pending
        writes is not used: a process killed between a node's saved writes and the next
        checkpoint left the thread with no next task, and the run stalled.)
        """
        return state.channels()  # events accumulate in their channel

    def run(
        self,
        procedure: Procedure,
        inputs: Mapping[str, Any],
        thread_id: str | None = None,
        *,
        context: Sequence[ChatMessage] = (),
        stop: threading.Event | None = None,
    ) -> GuardResult:
        """Execute ``procedure`` on ``inputs`` under the guard.

        Args:
            procedure: the procedure.
            inputs: input values (ints, decimal strings, Decimals).
            thread_id: checkpoint thread; reuse it to resume a killed run (needs a checkpointer),
                with the same procedure, inputs, settings, model and context. One run of a thread
                executes at a time: the run holds the thread's lock (:mod:`stepguard.guard._thread_lock`;
                across processes for the SQLite and Postgres checkpointers stepguard makes).
            context: the caller's messages (``{"role", "content"}`` with text content), shown to
                the model as a block at the top of every chunk prompt and keyed in the run identity;
                a derived rung's sub-steps (numbers only) are asked without it.
            stop: an event another thread sets to stop the run: no model call, nested run or tool
                starts after it (a derived rung's nested calls included), a streamed window in flight
                is cut (closed at once from the stopping side with a :class:`~stepguard.guard.RunStop`,
                else at its next event), and the run raises :class:`~stepguard.errors.RunClosed`;
                the thread resumes where it stopped. Closing :meth:`stream`'s iterator sets it.

        Returns:
            A :class:`GuardResult` (``status`` verified / repaired / flagged / failed).

        Raises:
            ProcedureError: bad inputs, or a step that fails to evaluate or contradicts itself
                on them (its ``expr`` and expected-value ``check`` disagree), before any model call.
            OptionError: ``thread_id`` is empty or white space (a ``ValueError``; it would name no thread).
            ThreadInFlight: a run of ``thread_id`` is in flight (this process or another on the
                same checkpoint database); nothing was read or run.
            CheckpointError: ``thread_id`` holds a run of other work (see :meth:`run_identity`).
            StepDeviation: ``policy='raise'`` and a step deviated (``.result`` holds the partial result).
            BudgetExhausted: a budget was spent with ``on_exhausted='raise'`` (``.result`` likewise).
            RunClosed: ``stop`` was set before the run finished (``.result`` likewise).
            ModelError: the model failed (unreachable, timeout); ``.result`` holds the partial result
                where a chunk had begun; committed chunks stay checkpointed.

        A tool that raises or times out does not raise here: the result records it (a ``tool_error``
        deviation of its step, status ``failed``).
        """
        result = None
        for item in self.stream(procedure, inputs, thread_id, context=context, stop=stop):
            result = item
        assert isinstance(result, GuardResult)
        return result

    async def arun(
        self,
        procedure: Procedure,
        inputs: Mapping[str, Any],
        thread_id: str | None = None,
        *,
        context: Sequence[ChatMessage] = (),
        stop: threading.Event | None = None,
    ) -> GuardResult:
        """Async twin of :meth:`run` (model calls through ``acomplete``). Same errors."""
        result = None
        async for item in self.astream(procedure, inputs, thread_id, context=context, stop=stop):
            result = item
        assert isinstance(result, GuardResult)
        return result

    def stream(
        self,
        procedure: Procedure,
        inputs: Mapping[str, Any],
        thread_id: str | None = None,
        *,
        context: Sequence[ChatMessage] = (),
        graph_updates: bool = False,
        stop: threading.Event | None = None,
    ) -> Generator[GuardUpdate, None, None]:
        """:meth:`run`, yielding progress as the run goes.

        Yields, in order: a :class:`StepOutcome` for each step as it is committed (verified,
        repaired or flagged; steps a resumed thread had committed come first), a
        :class:`DeviationEvent` for each deviation as the policy acts on it, and the
        :class:`GuardResult` last. In streamed mode (``GuardConfig(streamed=True)``) a step is
        yielded as soon as its line is verified, while the model is still writing the rest of the
        window; the window commits exactly these values (and checkpoints them) at the cut or at
        the stream's end, so a run that fails mid-window (a model error) or is killed there asks
        that window again when resumed. Each step is yielded once. With ``graph_updates``, also ``(node, update)`` for every node
        of the controller graph as it finishes (what LangGraph's ``updates`` stream mode gives).

        Arguments and errors as :meth:`run`; an error is raised from the iteration, after the
        progress that preceded it. Closing the iterator early stops the run (committed chunks
        stay checkpointed); a streamed window in flight is cut at its next delta, so the model's
        server stops generating.
        """
        ctx, cfg, tid = self._setup(procedure, inputs, thread_id, context, stop)
        with self._holding(tid if thread_id is not None else None):
            yield from self._stream(ctx, cfg, tid, graph_updates)

    def _holding(self, thread_id: str | None) -> contextlib.AbstractContextManager[None]:
        """The lock of the caller's ``thread_id`` for the run (:func:`hold_thread`); nothing for a run with
        no thread or no checkpointer, or a derived rung's nested run (its parent's lock covers it)."""
        if thread_id is None or self.checkpointer is None or self._depth:
            return contextlib.nullcontext()
        return hold_thread(self.checkpointer, thread_id)

    def _stream(self, ctx: RunContext, cfg: dict[str, Any], tid: str, graph_updates: bool) -> Generator[GuardUpdate, None, None]:
        t0 = time.perf_counter()
        progress = _Progress(ctx)
        parts: Generator[Any, None, None] | None = None
        try:
            stored = progress.stored = self._stored(cfg)
            start, done = self._begin(ctx, stored, tid)
            if done:
                yield from progress.take("values", done)
            else:
                # held by name: an exception here (the reader's GeneratorExit) reaches the handler below,
                # which cuts a window in flight, before the graph's stream is closed (that waits
                # for the node in flight)
                parts = self._graph.stream(start, cfg, context=ctx, durability=self._durability, stream_mode=_modes(graph_updates))
                track(parts, ctx.closed)  # closed at exit if the caller drops this run half-read
                for mode, data in parts:
                    yield from progress.take(mode, data)
        except BaseException as exc:
            ctx.closed.set()  # a window in flight stops at its next delta (the reader went: GeneratorExit)
            self.observer.run_finished(None, exc)
            _attach_partial(exc, ctx, progress.last, tid, time.perf_counter() - t0, progress.stored)
            raise
        finally:
            # Closed here, not left to the garbage collector: a graph stream left open keeps LangGraph's
            # waiter thread blocked, and a process exits only once its threads end (a raised error's
            # traceback holds this frame, and with it the stream, as long as the error is kept).
            if parts is not None:
                untrack(parts)
                parts.close()
        yield self._finish(ctx, progress.last, tid, time.perf_counter() - t0, progress.stored)

    async def astream(
        self,
        procedure: Procedure,
        inputs: Mapping[str, Any],
        thread_id: str | None = None,
        *,
        context: Sequence[ChatMessage] = (),
        graph_updates: bool = False,
        stop: threading.Event | None = None,
    ) -> AsyncGenerator[GuardUpdate, None]:
        """Async twin of :meth:`stream`."""
        ctx, cfg, tid = self._setup(procedure, inputs, thread_id, context, stop)
        with self._holding(tid if thread_id is not None else None):
            async with contextlib.aclosing(self._astream(ctx, cfg, tid, graph_updates)) as items:  # a close reaches its handler
                async for item in items:
                    yield item

    async def _astream(self, ctx: RunContext, cfg: dict[str, Any], tid: str, graph_updates: bool) -> AsyncGenerator[GuardUpdate, None]:
        t0 = time.perf_counter()
        progress = _Progress(ctx)
        aparts: AsyncGenerator[Any, None] | None = None
        try:
            stored = progress.stored = await self._astored(cfg)
            start, done = self._begin(ctx, stored, tid)
            if done:
                for item in progress.take("values", done):
                    yield item
            else:
                aparts = self._agraph.astream(start, cfg, context=ctx, durability=self._durability, stream_mode=_modes(graph_updates))
                async for mode, data in aparts:  # held by name, as in stream
                    for item in progress.take(mode, data):
                        yield item
        except BaseException as exc:
            ctx.closed.set()  # a window in flight stops at its next delta (the reader went: GeneratorExit)
            self.observer.run_finished(None, exc)
            _attach_partial(exc, ctx, progress.last, tid, time.perf_counter() - t0, progress.stored)
            raise
        finally:
            if aparts is not None:  # closed here, as in stream
                await aparts.aclose()
        yield self._finish(ctx, progress.last, tid, time.perf_counter() - t0, progress.stored)

    def _begin(self, ctx: RunContext, stored: dict[str, Any], tid: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """``(graph input, finished values)`` for a run whose thread holds ``stored`` (``{}``: nothing):
        a fresh input, or the thread's committed state to go on from; the finished values are the
        thread's when its run had finished (nothing to run), else ``{}``.

        Raises:
            CheckpointError: the thread holds a run of other work (see :meth:`_resume_from`).
        """
        if not stored:
            return self._fresh(ctx), {}
        start, finished = self._resume_from(ctx, stored, tid)
        return start, (stored if finished else {})

    def _fresh(self, ctx: RunContext) -> dict[str, Any]:
        """The input of a new run: a partial :class:`GuardState` (every other field at its default)."""
        size = ctx.config.window if ctx.config.streams else ctx.config.chunk_size  # streamed: the first window's width
        return {**GuardState(Progress(chunk_size=size, identity=ctx.identity)).channels(), "events": []}

    def _finish(self, ctx: RunContext, values: dict[str, Any], tid: str, wall_s: float, stored: Mapping[str, Any]) -> GuardResult:
        """The run's result from its last state ``values`` (``stored``: the thread's state before this
        call, ``{}`` for none), raising what its stop reason says."""
        state = GuardState.of(values)
        result = build_result(ctx, state, tid, wall_s, GuardState.of(stored) if stored else None)
        self.observer.run_finished(result, None)
        why, dev = state.progress.stop, state.attempt.deviation
        if why is not None and why.reason == "raise" and dev is not None:
            raise StepDeviation(f"step {dev.step} deviated ({dev.kind}): {dev.detail}", dev, result)
        if why is not None and why.reason == "budget" and ctx.config.on_exhausted == "raise":
            budget = why.budget or "spent"
            raise BudgetExhausted(f"{budget} budget spent at step {result.first_unverified}", budget, result)
        return result


GuardUpdate = StepOutcome | DeviationEvent | GuardResult | tuple[str, Any]
"""What :meth:`Guard.stream` yields: a committed step, a deviation, the result (last), or, with
``graph_updates``, a controller node's ``(name, update)``."""


def _reading(model: ChatModel, procedure: Procedure) -> ChatModel:
    """``model`` given the procedure where it is a simulator that reads one (``for_procedure``) and
    was given none: the seeded simulator stands in for a model that reads a step's instruction, so
    a run from Python executes instruction steps as the CLI, the proxy and the benchmark do."""
    for_procedure = getattr(model, "for_procedure", None)
    if getattr(model, "simulated", False) and callable(for_procedure) and getattr(model, "procedure", None) is None:
        given: ChatModel = for_procedure(procedure)
        return given
    return model


def _context(messages: Sequence[ChatMessage]) -> tuple[ChatMessage, ...]:
    """The caller's messages as plain ``{"role", "content"}`` text messages.

    Raises:
        ProcedureError: a message that is not a mapping with a role and text content.
    """
    out: list[ChatMessage] = []
    for i, m in enumerate(messages):
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise ProcedureError("a context message must be {'role': str, 'content': str}", f"context[{i}]")
        out.append({"role": m["role"], "content": m["content"]})
    return tuple(out)


def _modes(graph_updates: bool) -> list[str]:
    """The LangGraph stream modes a run reads: its state after each step, the steps verified while a
    streamed window is written (``custom``), and each node's update if asked."""
    return ["updates", "custom", "values"] if graph_updates else ["custom", "values"]


class _Progress:
    """What a run has reported so far, to yield only what is new in each state the graph streams;
    ``last`` is the latest state (the run's result is built from it)."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.steps: set[str] = set()
        self.events = 0
        self.last: dict[str, Any] = {}
        self.stored: dict[str, Any] = {}  # the thread's state before this call (a resumed run's), {} for none

    def take(self, mode: str, data: Any) -> Iterator[GuardUpdate]:
        """The items for one streamed part: a state (``values``), a step verified while the model
        writes its window (``custom``: streamed mode), or the nodes' updates (``updates``)."""
        if mode == "values":
            self.last = data
            yield from self.new(data)
        elif mode == "custom":
            if isinstance(data, StepOutcome) and data.var not in self.steps:
                self.steps.add(data.var)
                yield data
        else:
            yield from data.items()

    def new(self, values: Mapping[str, Any]) -> Iterator[StepOutcome | DeviationEvent]:
        """The deviations and committed steps in ``values`` not reported yet (deviations first:
        the policy acted before the step it names was committed)."""
        state = GuardState.of(values)
        yield from state.events[self.events:]
        self.events = max(self.events, len(state.events))
        p = state.progress
        committed, prov, rep, chunk = p.values, p.provenance, p.step_reprompts, p.step_chunk
        for i, s in enumerate(self.ctx.procedure.steps):
            if s.var in committed and s.var not in self.steps:
                self.steps.add(s.var)
                how = prov.get(s.var, "missing")
                yield outcome(s, committed[s.var], provenance=how, grade=grade_of(self.ctx.procedure, i, how),
                              reprompts=rep.get(s.var, 0), chunk=chunk.get(s.var), index=i)


def _attach_partial(exc: BaseException, ctx: RunContext, last: Mapping[str, Any], tid: str, wall_s: float,
                    stored: Mapping[str, Any]) -> None:
    """Give a stepguard error raised inside a run (a model's failure) this run's partial result, where
    it has none or has a derived rung's nested run's (a model failure inside a sub-procedure): then
    its usage and spending add the nested run's, whose calls this run's state has not recorded yet."""
    held = getattr(exc, "result", None)
    if isinstance(exc, StepguardError) and getattr(held, "procedure", None) != ctx.procedure.name and last:
        try:
            result = build_result(ctx, GuardState.of(last), tid, wall_s, GuardState.of(stored) if stored else None)
            if isinstance(held, GuardResult):  # the nested run's calls, made inside the step in flight
                result.usage, result.spent = _plus(result.usage, held.usage), _plus(result.spent, held.spent)
            exc.result = result
        except Exception:  # noqa: BLE001 - the original error matters more than its partial result
            pass


def _plus(a: Usage, b: Usage) -> Usage:
    """``a``'s calls, tokens and model seconds with ``b``'s added; ``a``'s wall time (the outer call's)."""
    return Usage(model_calls=a.model_calls + b.model_calls, input_tokens=a.input_tokens + b.input_tokens,
                       output_tokens=a.output_tokens + b.output_tokens, cached_tokens=a.cached_tokens + b.cached_tokens,
                       wall_s=a.wall_s, model_s=round(a.model_s + b.model_s, 6))


def build_result(ctx: RunContext, state: GuardState, thread_id: str | None, wall_s: float,
                 before: GuardState | None = None) -> GuardResult:
    """Turn the controller's final state into a :class:`GuardResult` (every value with its provenance).

    ``before`` is the thread's state when this call began (a resumed run), or None: the result's
    ``usage`` is the thread's over every call, ``spent`` this call's alone (``wall_s`` its seconds).

    Values come out of the state as exact text (``"1221"``) and go into the result typed as each step
    declares, at its ``scale`` (``Decimal('1221.00')``; see :func:`stepguard.guard._result.typed_value`).
    """
    proc = ctx.procedure
    p = state.progress
    values, prov, reprompts, chunks = p.values, p.provenance, p.step_reprompts, p.step_chunk
    steps = [
        outcome(s, values.get(s.var), provenance=prov.get(s.var, "missing"), grade=grade_of(proc, i, prov.get(s.var, "missing")),
                reprompts=reprompts.get(s.var, 0), chunk=chunks.get(s.var), index=i)
        for i, s in enumerate(proc.steps)
    ]
    # an unverifiable value (a step with neither expr nor check) is the model's, unchecked: the run is
    # flagged, not verified, so a status or exit code 0 never stands for a value nothing checked; a value
    # only a predicate bounded makes it bounded unless the procedure accepts that step (run_status)
    first_bad = next((s.var for s in steps if s.provenance not in ("model_verified", "tool", "computed")), None)
    status = run_status(steps, proc.accept_bounded)
    if first_bad is None and status == "bounded":  # the first value only a predicate or a format bounded, not accepted
        first_bad = next((s.var for s in steps if s.var in bounded_steps(proc)), None)
    usage = p.usage
    events = list(state.events)
    return GuardResult(
        procedure=proc.name,
        model=ctx.model.spec,
        simulated=bool(getattr(ctx.model, "simulated", False)),
        inputs={k: input_text(v, ctx.places.get(k)) for k, v in ctx.inputs.items()},
        status=status,
        answer=values.get(proc.answer_var),
        answer_var=proc.answer_var,
        first_unverified=first_bad,
        steps=steps,
        deviations=events,
        chunks=p.chunk_no,
        reprompts=p.reprompts,
        repaired=sum(1 for s in steps if s.provenance == "repaired"),
        usage=Usage(
            model_calls=usage.model_calls, input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens, cached_tokens=usage.cached_tokens,
            wall_s=round(wall_s, 6), model_s=round(usage.model_s, 6),
        ),
        resumed=None if before is None else "finished" if before.progress.finished_at is not None else "unfinished",
        spent=None if before is None else _spent(usage, before.progress.usage + ctx.carried, wall_s),
        thread_id=thread_id,
        labels=dict(ctx.config.extra),
    )


def _spent(total: Usage, before: Usage, wall_s: float) -> Usage:
    """What one call added to a thread's usage: ``total`` less what the thread held ``before`` it."""
    return Usage(
        model_calls=total.model_calls - before.model_calls, input_tokens=total.input_tokens - before.input_tokens,
        output_tokens=total.output_tokens - before.output_tokens, cached_tokens=total.cached_tokens - before.cached_tokens,
        wall_s=round(wall_s, 6), model_s=round(max(0.0, total.model_s - before.model_s), 6),
    )


def _refuse_unsafe_actions(tid: str, ctx: RunContext, state: GuardState) -> None:
    """Refuse to resume a thread whose recorded actions its steps' kinds say cannot be gone on from
    (:meth:`stepguard.kinds.Kind.resume_refusal`: a tool call cut off by a crash, results from data
    that changed since), naming each step, before any model call.

    Raises:
        CheckpointError: one phrase per such step.
    """
    steps, index = ctx.procedure.steps, ctx.procedure.index_of
    why = [reason for var, record in sorted(state.progress.actions.items()) if var in index
           for reason in [kind_of(steps[index[var]]).resume_refusal(StepContext(ctx.procedure, index[var]), record, ctx.tools)] if reason]
    if why:
        raise CheckpointError(f"checkpoint thread {tid!r} is not resumed: {'; '.join(why)}")


def _refuse_other_work(tid: str, diff: list[str], hint: str = "") -> None:
    """Raise :class:`CheckpointError` naming each difference, when ``diff`` has any; ``hint``: how to resume
    a thread made before the run's default settings changed (:func:`~stepguard.guard._config.settings_resume_hint`)."""
    if diff:
        raise CheckpointError(
            f"checkpoint thread {tid!r} holds a run of other work ({'; '.join(diff)}); "
            "use a new thread id for this run, or the same procedure, inputs, settings and model to resume it" + hint
        )
