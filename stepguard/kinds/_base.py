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

        def check(self, ctx, env, reply, tool_calls=()): ...

Every method is given the step as a :class:`StepContext` (the procedure, the step's index, the
step); the parts a kind inherits (:mod:`stepguard.kinds._parts`) hold the defaults.
"""

from __future__ import annotations

from typing import Any, ClassVar, TypeVar, get_args

from stepguard.errors import ProcedureError
from stepguard.kinds._context import StepContext
from stepguard.kinds._parts import Acting, Checking, Prompting, Value, parse_committed
from stepguard.procedure import BUILT_IN_STEP_MODELS, Procedure, Step, use_step_models

__all__ = ["ACCEPTABLE_GRADES", "Kind", "StepContext", "Value", "bounded_steps", "get_kind", "kind_of", "parse_committed", "register_kind",
           "step_kinds", "unregister_kind"]


class Kind(Prompting, Checking, Acting):
    """A step kind: the base of every registered kind, its three parts (:class:`Prompting`,
    :class:`Checking`, :class:`Acting`) with their defaults; a kind overrides only what differs.

    Attributes:
        name: the ``kind`` a procedure file writes (``compute``, ``tool``, ...).
        step_model: the pydantic model of its steps, a :class:`stepguard.procedure.Step` subclass
            whose ``kind`` field is ``Literal[name]``.
    """

    name: ClassVar[str]
    step_model: ClassVar[type[Step]]


_KINDS: dict[str, Kind] = {}
_K = TypeVar("_K", bound=type[Kind])


def register_kind(cls: _K) -> _K:
    """Register a step kind (a class decorator); procedure files may then use ``kind: <name>``.

    Raises:
        ProcedureError: the class has no ``name`` or ``step_model``, the name is not an ASCII
            identifier (``ｕpper`` would be another kind that reads as ``upper``), is taken by another
            class, or the model's ``kind`` field does not default to or accept the name.
    """
    name = getattr(cls, "name", None)
    model = getattr(cls, "step_model", None)
    if not isinstance(name, str) or not name.isidentifier() or not name.isascii():
        # ASCII only: Python folds 'ｕpper' to 'upper' as a name, so two kinds would read as one
        raise ProcedureError(f"step kind {cls.__name__}: 'name' must be an ASCII identifier, not {name!r}")
    old = _KINDS.get(name)
    same = old is not None and (type(old).__module__, type(old).__qualname__) == (cls.__module__, cls.__qualname__)
    if old is not None and (not same or name in _BUILT_IN):  # a reload of a module re-registers its own class
        raise ProcedureError(f"step kind {name!r} is already registered by {type(old).__module__}.{type(old).__qualname__}")
    if not (isinstance(model, type) and issubclass(model, Step)) or "kind" not in model.model_fields:
        raise ProcedureError(f"step kind {name!r}: step_model must subclass stepguard.procedure.Step")
    if get_args(model.model_fields["kind"].annotation) != (name,):
        raise ProcedureError(f"step kind {name!r}: its step model's kind must be Literal[{name!r}], "
                             f"not {model.model_fields['kind'].annotation}")
    _KINDS[name] = cls() if name in _BUILT_IN else _answering(cls)()
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

_ANSWERED = ("notes", "line", "example", "chunk_example", "count_line", "offered_tools", "describe", "check", "correction_note",
             "check_result", "provenance", "grade", "result_shape", "value_of", "intent", "execute", "aexecute", "resume_refusal")
"""The methods of a kind of one's own whose errors :func:`_answering` names."""

_SIGNALS: dict[str, tuple[type[Exception], ...]] = {"value_of": (ValueError, TypeError)}
"""Errors a method raises as its protocol says (``value_of``'s: the text is no value of the step's
type, which its callers read), passed on as they are."""


def _steps_of(args: tuple[Any, ...]) -> str:
    """The step a kind's method was called for: its first argument's ``var`` (a context or a step),
    or the chunk's, comma-separated."""
    first = args[0] if args else None
    if isinstance(first, (list, tuple)):
        return ", ".join(str(getattr(c, "var", "?")) for c in first)
    return str(getattr(first, "var", "?"))


def _answering(cls: type[Kind]) -> type[Kind]:
    """``cls`` with each method of :data:`_ANSWERED` it overrides made to raise a :class:`KindError`
    naming the kind, the method and the step for any error not a :class:`StepguardError` (a tool's
    :class:`ToolError` passes as it is); the method is looked up on ``cls`` at each call, so a
    method changed after registration is the one called. Same module and name as ``cls``."""
    import functools
    import inspect

    from stepguard.errors import KindError, StepguardError

    def refusal(method: str, args: tuple[Any, ...], exc: Exception) -> KindError:
        step = _steps_of(args)
        return KindError(f"step kind {cls.name!r} ({cls.__module__}.{cls.__qualname__}) raised in {method} at step {step}: "
                         f"{type(exc).__name__}: {exc}", cls.name, method, step)

    def wrap(method: str) -> Any:
        passed: tuple[type[Exception], ...] = (StepguardError, *_SIGNALS.get(method, ()))
        if inspect.iscoroutinefunction(getattr(cls, method)):
            async def acall(self: Kind, *args: Any, **kwargs: Any) -> Any:
                try:
                    return await getattr(cls, method)(self, *args, **kwargs)
                except passed:
                    raise
                except Exception as exc:
                    raise refusal(method, args, exc) from exc
            return functools.wraps(getattr(cls, method))(acall)

        def call(self: Kind, *args: Any, **kwargs: Any) -> Any:
            try:
                return getattr(cls, method)(self, *args, **kwargs)
            except passed:
                raise
            except Exception as exc:
                raise refusal(method, args, exc) from exc
        return functools.wraps(getattr(cls, method))(call)

    own = [m for m in _ANSWERED if getattr(cls, m, None) is not getattr(Kind, m, None)]
    return type(cls.__name__, (cls,), {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                                       "__doc__": cls.__doc__, **{m: wrap(m) for m in own}})


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


ACCEPTABLE_GRADES: frozenset[str] = frozenset({"bounded", "free_text"})
"""Grades a procedure may accept by name (``accept_bounded``): a check that held, but one that proves no one value."""


def bounded_steps(procedure: Procedure) -> tuple[str, ...]:
    """The steps of ``procedure`` whose verified value is graded ``bounded`` or ``free_text`` and that its
    ``accept_bounded`` does not name, in order: a run with a value of one ends ``bounded``, not ``verified``."""
    return tuple(s.var for i, s in enumerate(procedure.steps)
                 if s.var not in procedure.accept_bounded and kind_of(s).grade(StepContext(procedure, i)) in ACCEPTABLE_GRADES)
