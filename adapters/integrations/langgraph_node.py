"""A LangGraph node that runs a guarded procedure inside a user's own graph.

::

    from langgraph.graph import StateGraph
    from stepguard.adapters import guarded_node, load_model

    node = guarded_node(load_model("local"), load_procedure("examples/invoice.yaml"),
                        inputs={"subtotal": "order_subtotal", "rate": "tax_rate"},
                        output_key="invoice", answer_key="invoice_total", checkpointer=saver)
    graph = StateGraph(MyState)
    graph.add_node("invoice", node)          # works with graph.invoke and graph.ainvoke

The node reads the procedure's inputs from the user's state keys and writes back the
:class:`~stepguard.guard.GuardResult` as a JSON-able dict (``output_key``), optionally the answer
text (``answer_key``) and ``{var: value}`` (``values_key``); a flagged run's unchecked answer and
values are ``None`` there unless ``deliver_flagged=True``. A failed run is reported there too
(``status`` ``"failed"`` and ``error``), not raised, unless ``on_failure="raise"``; a graph state
with no such key is refused (a ``ValueError`` when built with ``state_schema``, else at the first
run), since LangGraph drops an update for a key its state lacks. With a ``checkpointer`` (pass the
same one the user's graph compiles with), the guard checkpoints under the thread
``"<parent thread id>/stepguard/<procedure name>/<run identity digest>"``: a resumed parent run
resumes the procedure from its last committed chunk, and a later turn with other inputs (or
another model or settings) runs the procedure afresh rather than returning an earlier answer.

The guard's own steps show in the user's stream: with ``graph.stream(..., subgraphs=True)``
(``updates`` mode, sync or async), every node of the controller (``plan``, ``ask``, ``verify``,
``commit``, ``reprompt``...) is forwarded as it finishes, under the node's namespace
(``("invoice:<task id>",)``), as LangGraph reports a subgraph's updates. The guard graph keeps its
own checkpoint thread (above) rather than the parent's namespace, which is what lets a new turn
with new inputs start afresh; so its updates are forwarded, not inherited. With ``stream_mode``
holding ``"custom"``, each committed step and each deviation comes as it happens, as
``{"stepguard": {"node": ..., "procedure": ..., "step": {...}}}`` (or ``"deviation"``): in streamed
mode a step comes as soon as its line verifies, while the model is still writing the rest.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, get_type_hints

from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.config import get_stream_writer

from stepguard.errors import BudgetExhausted, StepDeviation
from stepguard.guard import DeviationEvent, Guard, GuardConfig, GuardResult, StepOutcome, identity_digest
from stepguard.model import ChatModel
from stepguard.procedure import Procedure, check_input_names
from stepguard.wire import WITHHELD_STATUSES

__all__ = ["guarded_node"]


def _thread(config: RunnableConfig | None, guard: Guard, procedure: Procedure, inputs: Mapping[str, Any]) -> str | None:
    """The nested thread: the parent's, the procedure's name and the run identity's digest.

    Keyed by what decides the result, so a new turn with new inputs on the same conversation
    thread starts a new guard run, and a resumed parent resumes only the same work.
    """
    parent = ((config or {}).get("configurable") or {}).get("thread_id")
    if parent is None:
        return None
    return f"{parent}/stepguard/{procedure.name}/{identity_digest(guard.run_identity(procedure, inputs))}"


_STREAM_KEY = "__pregel_stream"
"""Where LangGraph puts the parent's stream in a task's config when it streams with ``subgraphs=True``
(``langgraph._internal._constants.CONFIG_KEY_STREAM``); tests/adapters/integrations/test_wrappers.py checks the
forwarding end to end, so a LangGraph that moves it fails a test rather than going quiet."""


def _forwarder(config: RunnableConfig | None) -> Callable[[str, Any], None] | None:
    """A function sending one controller node's update to the parent's stream, or None when the
    parent is not streaming subgraphs in ``updates`` mode."""
    conf = (config or {}).get("configurable") or {}
    stream = conf.get(_STREAM_KEY)
    if stream is None or not callable(stream) or "updates" not in getattr(stream, "modes", ()):
        return None
    ns = conf.get("checkpoint_ns") or ""
    namespace = tuple(ns.split("|")) if ns else ()

    def forward(node: str, update: Any) -> None:
        stream((namespace, "updates", {node: update}))

    return forward


class _Teller:
    """Tells the user's stream what the guard's stream yields: each controller node's update (see
    :func:`_forwarder`), and each committed step and deviation as a ``custom`` item
    ``{"stepguard": {"node", "procedure", "step" | "deviation": {...}}}`` (LangGraph's
    ``get_stream_writer``; nothing when the user's graph does not stream ``custom``). Called with
    one item of :meth:`Guard.stream`; returns the :class:`GuardResult` when that is the item."""

    def __init__(self, config: RunnableConfig | None, procedure: str) -> None:
        self.forward = _forwarder(config)
        try:
            self.write: Callable[[Any], None] | None = get_stream_writer()
        except RuntimeError:  # the node called outside a running graph
            self.write = None
        node = ((config or {}).get("metadata") or {}).get("langgraph_node")
        self.where = {"node": node, "procedure": procedure}

    def __call__(self, item: Any) -> GuardResult | None:
        if isinstance(item, GuardResult):
            return item
        if isinstance(item, tuple):
            if self.forward is not None:
                self.forward(*item)
        elif self.write is not None and isinstance(item, (StepOutcome, DeviationEvent)):
            key = "step" if isinstance(item, StepOutcome) else "deviation"
            self.write({"stepguard": {**self.where, key: item.model_dump(mode="json")}})
        return None


_READ_KEY = "__pregel_read"
"""Where LangGraph puts a task's state reader, a ``functools.partial`` whose second argument is the
graph's channels by state key (``langgraph._internal._constants.CONFIG_KEY_READ``); read once, at
the node's first run, to refuse a state that cannot hold the output. tests/adapters/integrations/test_langgraph_node_state.py
checks it end to end, so a LangGraph that moves it fails a test rather than dropping results again."""


def _schema_keys(schema: Any) -> set[str] | None:
    """The keys a state schema holds (a TypedDict, a dataclass, a pydantic model), or None if unknown."""
    if isinstance(schema, type) and dataclasses.is_dataclass(schema):
        return {f.name for f in dataclasses.fields(schema)}
    fields = getattr(schema, "model_fields", None)
    if isinstance(fields, Mapping):
        return set(fields)
    if isinstance(schema, type) and hasattr(schema, "__annotations__"):
        try:
            return set(get_type_hints(schema))
        except Exception:  # noqa: BLE001 - a forward reference it cannot resolve: its own annotations
            return set(schema.__annotations__)
    return None


def _graph_keys(state: Any, config: RunnableConfig | None) -> set[str] | None:
    """The keys the running graph's state holds: its channels, else the state object's fields; None if unknown."""
    read = ((config or {}).get("configurable") or {}).get(_READ_KEY)
    args: tuple[Any, ...] = tuple(getattr(read, "args", None) or ())
    if len(args) > 1 and isinstance(args[1], Mapping):
        return {k for k in args[1] if isinstance(k, str) and not k.startswith(("__", "branch:"))}
    return None if isinstance(state, Mapping) else _schema_keys(type(state))


def _check_keys(name: str, keys: set[str] | None, wanted: dict[str, str]) -> None:
    """Refuse a state without a key the node writes (LangGraph drops such an update without a word)."""
    if keys is None:
        return
    lacking = [(arg, key) for arg, key in wanted.items() if key not in keys]
    if lacking:
        said = ", ".join(f"{arg}={key!r}" for arg, key in lacking)
        raise ValueError(f"guarded_node({name!r}): the graph's state has no key for {said}, so the result would be "
                         f"dropped; add it to the state schema (e.g. `{lacking[0][1]}: dict`) or pass a key it has "
                         f"(state keys: {sorted(keys)})")


def guarded_node(
    model: ChatModel | Guard,
    procedure: Procedure,
    *,
    inputs: Mapping[str, str] | Sequence[str] | None = None,
    output_key: str = "stepguard_result",
    answer_key: str | None = None,
    values_key: str | None = None,
    config: GuardConfig | None = None,
    checkpointer: Any | None = None,
    tools: Any | None = None,
    on_failure: Literal["report", "raise"] = "report",
    deliver_flagged: bool = False,
    state_schema: Any | None = None,
) -> RunnableLambda[Mapping[str, Any], dict[str, Any]]:
    """Build a LangGraph node (sync and async) that runs ``procedure`` under the guard.

    Args:
        model: a :class:`~stepguard.model.ChatModel`, or a ready :class:`Guard` (then ``config``
            and ``checkpointer`` must be left out).
        procedure: the procedure to run.
        inputs: where each procedure input comes from: ``{input name: state key}``, or a list of
            names read from state keys of the same name; default: every declared input by its name.
        output_key: state key for the result, ``GuardResult.model_dump(mode="json")`` (a dict; a list
            step's value a list, a JSON step's the JSON value with exact ``Decimal`` numbers, so
            ``GuardResult.model_validate`` reads it back as the same result).
        answer_key: state key for the answer text (``None``: not written).
        values_key: state key for ``{var: value text}`` (``None``: not written).
        config: guard configuration (default :class:`GuardConfig`).
        checkpointer: a LangGraph checkpointer, typically the one the user's graph uses.
        tools: the tools the procedure's tool steps call: LangChain tools (``@tool`` functions,
            ``BaseTool`` objects: called with one dict of arguments, named by ``.name``), plain
            callables or :class:`stepguard.tools.Tool` s, or a mapping of name to any of these.
        on_failure: ``"report"`` (default): a run that ends in a raised deviation or a spent budget
            writes its partial result (``status`` ``"failed"``, with ``error``: the message) to
            ``output_key``, so a graph branches on ``status``; ``"raise"``: the error propagates.
        deliver_flagged: ``False`` (default): a run whose status is ``flagged``, ``failed`` or
            ``bounded`` (a value passed a predicate only) writes ``None`` to ``answer_key``, and
            ``None`` for each flagged (or unverifiable) value in ``values_key``, so a graph that reads
            those keys never takes an unchecked value for a checked one (the values stay in
            ``output_key``, each with its provenance); ``True``: write them as a verified run's.
        state_schema: the graph's state type, to refuse here a state with no ``output_key``
            (``answer_key``, ``values_key``); without it the node checks the running graph's
            state at its first run.

    Returns:
        A ``RunnableLambda`` for ``StateGraph.add_node``: state in, a partial state update out.

    Raises:
        ValueError: (when built) ``state_schema`` has no key the node writes; (at its first run) the
            graph's state has none, where LangGraph would drop the update without a word.
        KeyError: (when the node runs) a state key named in ``inputs`` is absent.
        ProcedureError, ModelError: as :meth:`Guard.run`; StepDeviation, BudgetExhausted with
            ``on_failure="raise"``.
    """
    if on_failure not in ("report", "raise"):
        raise ValueError(f"on_failure must be 'report' or 'raise', not {on_failure!r}")
    written = {k: v for k, v in (("output_key", output_key), ("answer_key", answer_key), ("values_key", values_key))
               if v is not None}
    if state_schema is not None:
        _check_keys(procedure.name, _schema_keys(state_schema), written)
    checked: list[bool] = []
    if isinstance(model, Guard):
        if config is not None or checkpointer is not None or tools is not None:
            raise ValueError("pass config, checkpointer and tools to the Guard, not to guarded_node")
        guard = model
    else:
        guard = Guard(model, config, checkpointer, tools=tools)
    if inputs is None:
        mapping = {i.name: i.name for i in procedure.inputs}
    elif isinstance(inputs, Mapping):
        mapping = dict(inputs)
    else:
        mapping = {n: n for n in inputs}

    def read(state: Any) -> dict[str, Any]:
        """The inputs from a TypedDict/dict state, or by attribute from a dataclass or pydantic state."""
        def get(k: str) -> Any:
            return state[k] if isinstance(state, Mapping) else getattr(state, k)

        def has(k: str) -> bool:
            return k in state if isinstance(state, Mapping) else getattr(state, k, None) is not None

        missing = [k for k in mapping.values() if not has(k)]
        if missing:
            raise KeyError(f"guarded_node({procedure.name!r}): state has no value for key(s) {missing}")
        values = {name: get(key) for name, key in mapping.items()}
        check_input_names([i.name for i in procedure.inputs], values, f"procedure {procedure.name!r}")
        return values

    def start(state: Any, config: RunnableConfig | None) -> dict[str, Any]:
        if not checked:  # once: the graph does not change between runs
            _check_keys(procedure.name, _graph_keys(state, config), written)
            checked.append(True)
        return read(state)

    def failed(exc: StepDeviation | BudgetExhausted) -> dict[str, Any]:
        if on_failure == "raise" or not isinstance(exc.result, GuardResult):
            raise exc
        out = write(exc.result)
        out[output_key]["error"] = str(exc)
        return out

    def write(result: GuardResult) -> dict[str, Any]:
        out: dict[str, Any] = {output_key: result.model_dump(mode="json")}
        hold = not deliver_flagged and result.status in WITHHELD_STATUSES
        if answer_key is not None:
            out[answer_key] = None if hold else result.answer_text
        if values_key is not None:
            out[values_key] = {s.var: None if hold and s.provenance in ("flagged", "unverifiable") else s.text
                               for s in result.steps}
        return out

    def run(state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
        inputs = start(state, config)
        thread = _thread(config, guard, procedure, inputs)
        tell = _Teller(config, procedure.name)
        result = None
        try:
            for item in guard.stream(procedure, inputs, thread_id=thread, graph_updates=tell.forward is not None):
                result = tell(item) or result
        except (StepDeviation, BudgetExhausted) as exc:
            return failed(exc)
        assert result is not None
        return write(result)

    async def arun(state: Mapping[str, Any], config: RunnableConfig) -> dict[str, Any]:
        inputs = start(state, config)
        thread = _thread(config, guard, procedure, inputs)
        tell = _Teller(config, procedure.name)
        result = None
        try:
            async for item in guard.astream(procedure, inputs, thread_id=thread, graph_updates=tell.forward is not None):
                result = tell(item) or result
        except (StepDeviation, BudgetExhausted) as exc:
            return failed(exc)
        assert result is not None
        return write(result)

    return RunnableLambda(run, afunc=arun, name=f"stepguard:{procedure.name}")
