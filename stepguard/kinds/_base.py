"""The step-kind protocol: what the controller asks of a kind, and the registry that holds them.

A step kind decides how one kind of step gets its value: how its steps are written into a prompt,
how a reply is read and checked, what a re-prompt says about a deviation, the provenance and grade of
its committed values, whether its steps are asked alone, and, for a kind that acts, how its action is
executed. The controller (:mod:`stepguard.guard`) calls the kind of the step at hand and never
compares a kind's name; a procedure file's step is validated by the kind's own step model.

Adding a kind is one module and one registration::

    @register_kind
    class Upper(Kind):
        name = "upper"

        class step_model(Step):
            kind: Literal["upper"]
            source: str

        def check(self, procedure, index, env, reply, tool_calls=()): ...
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, get_args

from stepguard.errors import ProcedureError
from stepguard.evaluator import Number, parse_number
from stepguard.procedure import BUILT_IN_STEP_MODELS, Procedure, Step, ValueShape, use_step_models

if TYPE_CHECKING:
    from stepguard.kinds._reading import KindVerdict
    from stepguard.tools import ToolCall, ToolSet
    from stepguard.verify import Deviation

__all__ = ["Kind", "Value", "get_kind", "kind_of", "parse_committed", "register_kind", "step_kinds", "unregister_kind"]

Value = Any
"""A committed value as the evaluator reads it: a number (``int``, ``Fraction``), a ``bool``, a
``str``, or for a structured text value a ``tuple`` (a list) or a mapping (JSON)."""


class Kind:
    """A step kind (the base of every registered kind; its defaults fit a kind asked alone).

    Attributes:
        name: the ``kind`` a procedure file writes (``compute``, ``tool``, ...).
        step_model: the pydantic model of its steps, a :class:`stepguard.procedure.Step` subclass
            whose ``kind`` field is ``Literal[name]``.
        asked_alone: whether its steps are asked one to a model call (``False``: several steps of
            this kind go into one chunk).
        names_type: whether its prompt line says the value's type (``a boolean``, ``a whole number``).
    """

    name: ClassVar[str]
    step_model: ClassVar[type[Step]]
    asked_alone: ClassVar[bool] = True
    names_type: ClassVar[bool] = False
    """Whether the step's line names a boolean, string or integer type (``a whole number``)."""

    # --- prompting -------------------------------------------------------------------------
    def notes(self, procedure: Procedure, index: int) -> list[str]:
        """What the step's prompt line says about its value beyond its instruction (source, format, rules)."""
        return []

    def line(self, procedure: Procedure, index: int, values: Mapping[str, Value], note: str) -> str:
        """The step's line in a prompt (``total = ?    (read it from receipt)``); ``note`` is the
        parenthesised notes already joined (``""`` for none); ``values``: names to write as values."""
        return f"{procedure.steps[index].var} = ?{note or '    (as the procedure says)'}"

    def example(self, procedure: Procedure, index: int, values: Mapping[str, Value]) -> str:
        """The shape of the answer line, for a chunk that starts with this step."""
        return f"{procedure.steps[index].var} = <result>"

    def chunk_example(self, procedure: Procedure, indices: Sequence[int], values: Mapping[str, Value]) -> str:
        """The answer-line shape shown for a chunk that starts with this step (``indices``, in order):
        by default :meth:`example` of the first step."""
        return self.example(procedure, indices[0], values)

    def count_line(self, procedure: Procedure, indices: Sequence[int]) -> str | None:
        """What to write, for a chunk that starts with this step; ``None``: the default count line."""
        return None

    def offered_tools(self, step: Step, tools: ToolSet) -> tuple[dict[str, Any], ...]:
        """The tool schemas offered with the model call (OpenAI ``tools``); ``()`` for none."""
        return ()

    # --- reading and checking ---------------------------------------------------------------
    def check(
        self, procedure: Procedure, index: int, env: Mapping[str, Value], reply: str, tool_calls: Sequence[ToolCall] = ()
    ) -> KindVerdict:
        """Read and check the reply for step ``index``, asked alone (never evaluating the reply).

        Returns:
            A :class:`stepguard.kinds.KindVerdict`: the value text to commit, or the first deviation.
        """
        raise NotImplementedError(f"step kind {self.name!r} does not check replies")

    def correction_note(self, procedure: Procedure, index: int, deviation: Deviation, env: Mapping[str, Value]) -> str:
        """The note that opens a re-prompt for step ``index`` after ``deviation`` (names no expected value)."""
        got = (deviation.got or "").strip()[:120]
        detail = deviation.detail.split(" [", 1)[0]
        yours = f"Your reply `{got}` was not accepted" if got else "Your reply was not accepted"
        return f"{yours}: {detail}. Write {procedure.steps[index].var} again, following every rule on its line."

    def provenance(self, procedure: Procedure, index: int) -> str:
        """The provenance of a verified value of step ``index`` (:data:`stepguard.guard.Provenance`)."""
        return "model_verified"

    def grade(self, procedure: Procedure, index: int) -> str:
        """The grade of a verified value of step ``index`` (:data:`stepguard.guard.Grade`): how strong the
        check it passed is. By default ``bounded``: a kind's own check held, which proves no one value
        (a kind whose check does give one says so: ``exact``, ``matched``, ``tool``)."""
        return "bounded"

    def value_of(self, step: Step, text: str) -> Value:
        """The committed value text of ``step`` as the evaluator reads it (``"7/2"`` -> ``Fraction(7, 2)``).

        Raises:
            ValueError: the text is not a value of the step's type (a checkpoint that does not fit).
        """
        return parse_committed(text, step.type)

    def result_shape(self, step: Step) -> ValueShape:
        """How a run's result holds ``step``'s committed value (:data:`stepguard.procedure.ValueShape`):
        ``scalar`` (typed by the step's ``type``) unless the kind commits a list or a JSON value."""
        return "scalar"

    # --- acting ----------------------------------------------------------------------------
    def execute(self, procedure: Procedure, index: int, verdict: KindVerdict, tools: ToolSet, observer: Any, key: str = "") -> str:
        """Carry out the checked action of ``verdict`` (a tool call) and return the value text to commit.

        Args:
            key: the action's idempotency key (the step's identity in the run: the same on every
                resume of its thread), for an action that can be deduplicated by it.

        Raises:
            ToolError: the action failed; the run stops at this step.
        """
        raise NotImplementedError(f"step kind {self.name!r} has nothing to execute")

    async def aexecute(self, procedure: Procedure, index: int, verdict: KindVerdict, tools: ToolSet, observer: Any, key: str = "") -> str:
        """Async twin of :meth:`execute`."""
        return self.execute(procedure, index, verdict, tools, observer, key)

    def intent(self, procedure: Procedure, index: int, verdict: KindVerdict, tools: ToolSet, key: str) -> dict[str, Any] | None:
        """The JSON record of the action ``verdict`` is about to carry out, made durable (checkpointed)
        before :meth:`execute` runs; ``None``: nothing to record. An action whose step already holds a
        recorded result for an equal intent is not carried out again: that result is committed.

        Raises:
            ToolError: the action cannot be carried out; the run stops at this step.
        """
        return None

    def resume_refusal(self, procedure: Procedure, index: int, record: Mapping[str, Any], tools: ToolSet) -> str | None:
        """Why a thread whose step ``index`` holds the action ``record`` (``{"intent"[, "result"][, "error"]}``)
        cannot be resumed (the phrase names the step), or ``None`` when it can."""
        return None

    def check_result(self, procedure: Procedure, index: int, env: Mapping[str, Value], value: str) -> Deviation | None:
        """Check an executed action's value text by the step's predicate; ``None`` when it passes."""
        return None

    # --- authoring and simulation ----------------------------------------------------------
    def describe(self, procedure: Procedure, index: int) -> list[str]:
        """Lines ``stepguard check`` prints about what the step verifies beyond its type and predicate."""
        return [f"{self.name}: a step of a registered kind"]

    def perfect_reply(self, step: Step, env: Mapping[str, Value], procedure: Procedure | None = None) -> str | None:
        """The reply a model that follows the step writes (the seeded simulator's answer); ``None`` when unknown."""
        return None

    def parse_line(self, var: str, rhs: str, notes: str) -> Step | None:
        """The step a prompt line of this kind describes (the inverse of :meth:`line`), for a simulator
        given no procedure; ``None`` when the line is not of this kind."""
        return None


def parse_committed(text: str, type_: str | None) -> Value:
    """A committed value text read back by its declared type (``True``, ``-12``, ``7/2``, a string).

    Raises:
        ValueError: a boolean that reads other than True or False.
    """
    if type_ in ("string", "one_of"):
        return text
    if type_ == "boolean":  # committed as the prompts write it (``True``); ``true`` in older state
        if text.lower() not in ("true", "false"):
            raise ValueError(f"a committed boolean reads {text!r}, not True or False")
        return text.lower() == "true"
    if "/" in text:
        from fractions import Fraction

        num, den = text.split("/", 1)
        return Fraction(int(num), int(den))
    value: Number = parse_number(text)
    return value


_KINDS: dict[str, Kind] = {}
_K = TypeVar("_K", bound=type[Kind])


def register_kind(cls: _K) -> _K:
    """Register a step kind (a class decorator); procedure files may then use ``kind: <name>``.

    Raises:
        ProcedureError: the class has no ``name`` or ``step_model``, the name is taken by another
            class, or the model's ``kind`` field does not default to or accept the name.
    """
    name = getattr(cls, "name", None)
    model = getattr(cls, "step_model", None)
    if not isinstance(name, str) or not name.isidentifier():
        raise ProcedureError(f"step kind {cls.__name__}: 'name' must be an identifier, not {name!r}")
    old = _KINDS.get(name)
    same = old is not None and (type(old).__module__, type(old).__qualname__) == (cls.__module__, cls.__qualname__)
    if old is not None and (not same or name in _BUILT_IN):  # a reload of a module re-registers its own class
        raise ProcedureError(f"step kind {name!r} is already registered by {type(old).__module__}.{type(old).__qualname__}")
    if not (isinstance(model, type) and issubclass(model, Step)) or "kind" not in model.model_fields:
        raise ProcedureError(f"step kind {name!r}: step_model must subclass stepguard.procedure.Step")
    if get_args(model.model_fields["kind"].annotation) != (name,):
        raise ProcedureError(f"step kind {name!r}: its step model's kind must be Literal[{name!r}], "
                             f"not {model.model_fields['kind'].annotation}")
    _KINDS[name] = cls()
    use_step_models({**BUILT_IN_STEP_MODELS, **{k: type(v).step_model for k, v in _KINDS.items()}})
    return cls


def unregister_kind(name: str) -> None:
    """Remove the kind called ``name`` (a test's or a reloaded plugin's); procedures validated after
    this refuse ``kind: <name>``. The built-in kinds cannot be removed.

    Raises:
        KeyError: no kind of that name, or a built-in one.
    """
    if name in _BUILT_IN or name not in _KINDS:
        raise KeyError(f"{name!r} is {'a built-in step kind' if name in _BUILT_IN else 'not a registered step kind'}")
    del _KINDS[name]
    use_step_models({**BUILT_IN_STEP_MODELS, **{k: type(v).step_model for k, v in _KINDS.items()}})


_BUILT_IN = frozenset({"compute", "tool", "extract", "text"})


def get_kind(name: str) -> Kind:
    """The registered kind called ``name``.

    Raises:
        KeyError: no kind of that name (the message lists the kinds).
    """
    try:
        return _KINDS[name]
    except KeyError:
        raise KeyError(f"no step kind {name!r} (kinds: {', '.join(sorted(_KINDS))})") from None


def kind_of(step: Step) -> Kind:
    """The kind of ``step`` (by its ``kind``)."""
    return _KINDS[step.kind]


def step_kinds() -> tuple[Kind, ...]:
    """Every registered kind, in registration order."""
    return tuple(_KINDS.values())
