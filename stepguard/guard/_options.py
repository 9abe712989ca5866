"""One options model: what a caller may set for one guarded run, read the same way from every way in.

The CLI's flags, ``GuardedOpenAI``'s ``extra_body["stepguard"]``, the proxy's ``stepguard`` object and
``run_benchmark`` all build a :class:`GuardOptions` and :meth:`~GuardOptions.resolve` it into the run's
:class:`~stepguard.guard.GuardConfig`::

    raw values (flags, JSON, keywords) ──> GuardOptions.parse ──> GuardOptions (each field set or UNSET)
        ──> resolve(procedures, base, defaults) ──> GuardConfig

Resolution, in one place, lowest first:

1. :class:`GuardConfig`'s own defaults;
2. the defaults by procedure (:func:`~stepguard.guard._config.defaults_for`: :data:`PRODUCTION_SETTINGS` where a
   procedure of the run is beyond integer sums);
3. the way in's own defaults (the benchmark's ``on_exhausted="flag"``);
4. a ``base`` configuration a caller gave (``GuardedOpenAI(config=...)``, ``create_app(config=...)``),
   which replaces 1-3 whole;
5. the fields these options set.

As httpx's ``UNSET`` does, :data:`UNSET` tells "not given: use the default" apart from ``None``
(``max_total_tokens=None`` asks for no token budget). Every value is checked here, by the checks
:class:`GuardConfig` itself runs, so an error's message is the same from every way in and names the
field (:class:`OptionError`).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final

from stepguard.guard._config import PRODUCTION_SETTINGS, GuardConfig, check_field, defaults_for, mode_asked
from stepguard.guard._fields import fields_of

if TYPE_CHECKING:
    from stepguard.procedure import Procedure

__all__ = ["BY_PROCEDURE", "OPTION_NAMES", "UNSET", "GuardOptions", "OptionError", "Unset", "check_thread_id",
           "thread_needs_checkpointer"]


class Unset:
    """The type of :data:`UNSET`: an option not given (falsy; its repr is ``UNSET``)."""

    _instance: Unset | None = None

    def __new__(cls) -> Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Final = Unset()
"""An option not given: the run takes its default (see the module docstring for which)."""


class OptionError(ValueError):
    """An option's value is refused (or an option is unknown).

    Attributes:
        field: the option's name as :class:`GuardOptions` spells it (``chunk_size``, ``ladder``).
    """

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


BY_PROCEDURE: tuple[str, ...] = tuple(PRODUCTION_SETTINGS)
"""The fields whose default depends on the procedure (:func:`~stepguard.guard._config.defaults_for`)."""

_FLOATS = tuple(spec.name for spec in fields_of(GuardConfig) if spec.base is float)
"""The fields that hold a number with a fraction (a JSON integer or decimal is read as a float)."""


def check_thread_id(thread_id: object, where: str = "thread_id") -> str | None:
    """``thread_id`` when it can name a checkpoint thread: ``None`` (no thread) or text with a
    character other than white space.

    Raises:
        OptionError: text that is empty or only white space (it would name no thread: every call
            would run anew, its model calls and tools again), or not text; ``where`` names the field.
    """
    if thread_id is None:
        return None
    if not isinstance(thread_id, str):
        raise OptionError("thread_id", f"{where} must be text, not {thread_id!r}")
    if not thread_id.strip():
        raise OptionError("thread_id", f"{where} must not be empty or white space ({thread_id!r}): it names the checkpoint "
                                       "thread a retry resumes; give an id of your own, or none to checkpoint nothing")
    return thread_id


def thread_needs_checkpointer(how: str) -> OptionError:
    """The error for a ``thread_id`` where nothing keeps checkpoints; ``how`` says how to give one
    (``"--checkpoint FILE"``, ``"GuardedOpenAI(checkpointer=...)"``)."""
    return OptionError("thread_id", f"thread_id needs a checkpointer ({how}): without one the thread could never resume")


OPTION_NAMES: tuple[str, ...] = tuple("labels" if spec.name == "extra" else spec.name
                                     for spec in fields_of(GuardConfig) if spec.option.per_run)
"""Every option's name, in :class:`GuardConfig`'s order: its fields a caller may set per run, ``extra``
given as ``labels``."""


class GuardOptions:
    """The fields a caller may set for one guarded run (:data:`OPTION_NAMES`); each :data:`UNSET` unless given.

    Not declared again: the options are :class:`GuardConfig`'s fields whose
    :class:`~stepguard.guard._fields.Option` says ``per_run`` (all but ``prompt_dir``: a request must not
    pick a folder on the machine that serves it), each checked by the field's own declaration;
    ``labels`` adds to ``GuardConfig.extra``. Read one as an attribute (``options.chunk_size``);
    immutable and hashable, equal when the same options are set to the same values.

    Raises:
        OptionError: an unknown option, a value :class:`GuardConfig` refuses, a non-finite number, or a
            ladder that is neither a list of rung names nor comma-separated names (names the field).
    """

    __slots__ = ("_given",)
    _given: dict[str, Any]

    def __init__(self, **options: Any) -> None:
        for key in options:
            if key not in OPTION_NAMES:
                raise OptionError(str(key), f"unknown option {key!r}; the options are: {', '.join(OPTION_NAMES)}")
        object.__setattr__(self, "_given", {name: _checked(name, value) for name, value in options.items() if value is not UNSET})

    def __getattr__(self, name: str) -> Any:
        if name in OPTION_NAMES:
            return self._given.get(name, UNSET)
        raise AttributeError(f"GuardOptions has no option {name!r}; the options are: {', '.join(OPTION_NAMES)}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to option {name!r}: GuardOptions is immutable")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GuardOptions) and self._given == other._given

    def __hash__(self) -> int:
        return hash(frozenset((k, frozenset(v.items()) if isinstance(v, dict) else v) for k, v in self._given.items()))

    def __repr__(self) -> str:
        return f"GuardOptions({', '.join(f'{k}={v!r}' for k, v in self._given.items())})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (_options_from, (self._given,))  # copy and pickle rebuild through the checks, never by setattr

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> GuardOptions:
        """Options from a mapping of names to values (a JSON object, keyword arguments, CLI flags).

        ``None`` and :data:`UNSET` values are not given (JSON ``null`` keeps the default).

        Raises:
            OptionError: an unknown name (the message lists the options), or a value refused (as the class).
        """
        return cls(**{str(k): v for k, v in raw.items() if v is not None and v is not UNSET})

    def given(self) -> dict[str, Any]:
        """The options set, by name (``labels`` as given)."""
        return dict(self._given)

    def over(self, other: GuardOptions) -> GuardOptions:
        """These options, with ``other``'s where these are unset (``labels`` merged, these winning)."""
        merged = {**other.given(), **self.given()}
        if "labels" in self._given and "labels" in other._given:
            merged["labels"] = {**other.labels, **self.labels}
        return GuardOptions(**merged)

    def apply(self, base: GuardConfig) -> GuardConfig:
        """``base`` with the fields these options set (``labels`` added to ``base.extra``); a mode's setting
        given without ``follow`` (``streamed``, ``chunk_size``) turns following off (:func:`mode_asked`)."""
        changes = mode_asked(self.given())
        labels = changes.pop("labels", None)
        if labels is not None:
            changes["extra"] = {**base.extra, **labels}
        return dataclasses.replace(base, **changes)

    def resolve(self, procedures: Procedure | Iterable[Procedure] | None = None, *, base: GuardConfig | None = None,
                defaults: Mapping[str, Any] | None = None, benchmark: bool = False) -> GuardConfig:
        """The run's :class:`GuardConfig` (the order is in the module docstring).

        Args:
            procedures: the run's procedure(s), for the defaults by procedure; ``None``: none to read.
            base: a caller's whole configuration; given, it replaces the defaults below these options.
            defaults: the way in's own GuardConfig fields, over the defaults by procedure.
            benchmark: the benchmark's run: :func:`~stepguard.guard._config.defaults_for`'s ``benchmark``
                settings (``on_exhausted="flag"``) under ``defaults``.

        Raises:
            OptionError: never for these options' values (checked when built); ``ValueError`` from
                GuardConfig for a bad ``defaults``.
        """
        if base is None:
            base = GuardConfig(**{**defaults_for(procedures, benchmark=benchmark), **(defaults or {})})
        return self.apply(base)


def _options_from(given: Mapping[str, Any]) -> GuardOptions:
    """:class:`GuardOptions` with ``given`` set (what a copy or an unpickling rebuilds)."""
    return GuardOptions(**given)


def _number(name: str, value: Any) -> Any:
    """A JSON or Python number as a float field holds it; a non-finite one is refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
        return value  # GuardConfig says what it wants
    try:
        number = float(value)
    except OverflowError:  # an integer beyond any float
        number = math.inf
    if not math.isfinite(number):
        raise OptionError(name, f"{name} must be a finite number, not {value}")
    return number


def _ladder(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return tuple(r.strip() for r in value.split(",") if r.strip())
    if isinstance(value, (list, tuple)) and all(isinstance(r, str) for r in value):
        return tuple(r.strip() for r in value)
    raise OptionError("ladder", f"ladder must be rung names, a list or one comma-separated text such as "
                                f"'split,resample', not {value!r}")


def _checked(name: str, value: Any) -> Any:
    """``value`` normalised (a ladder as a tuple, a JSON decimal as a float) and checked by its
    :class:`GuardConfig` field's declaration (:func:`~stepguard.guard._config.check_field`).

    Raises:
        OptionError: the value refused, with GuardConfig's message.
    """
    if name == "labels":
        try:
            return dict(check_field("extra", value))
        except ValueError:
            raise OptionError(name, f"labels must map text to text (recorded with the result), not {value!r}") from None
    if name == "ladder":
        value = _ladder(value)
    elif name in _FLOATS and value is not None:
        value = _number(name, value)
    elif isinstance(value, Decimal):  # 5.0 in JSON: not a whole number, and shown as written
        value = float(value)  # 1E+400: inf, as a Python caller's float("inf") is shown
    try:
        return check_field(name, value)
    except ValueError as exc:
        raise OptionError(name, str(exc)) from None
