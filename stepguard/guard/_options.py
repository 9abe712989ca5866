"""One options model: what a caller may set for one guarded run, read the same way from every way in.

The CLI's flags, ``GuardedOpenAI``'s ``extra_body["stepguard"]``, the proxy's ``stepguard`` object and
``run_benchmark`` all build a :class:`GuardOptions` and :meth:`~GuardOptions.resolve` it into the run's
:class:`~stepguard.guard.GuardConfig`::

    raw values (flags, JSON, keywords) ──> GuardOptions.parse ──> GuardOptions (each field set or UNSET)
        ──> resolve(procedures, base, defaults) ──> GuardConfig

Resolution, in one place, lowest first:

1. :class:`GuardConfig`'s own defaults;
2. the defaults by procedure (:func:`~stepguard.guard._config.procedure_defaults`: :data:`PRODUCTION_SETTINGS` where a
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
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Final, Union

from stepguard.guard._config import PRODUCTION_SETTINGS, GuardConfig, procedure_defaults

if TYPE_CHECKING:
    from stepguard.procedure import Procedure

__all__ = ["BY_PROCEDURE", "OPTION_NAMES", "UNSET", "GuardOptions", "OptionError", "Unset", "thread_needs_checkpointer"]


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
"""The fields whose default depends on the procedure (:func:`~stepguard.guard._config.procedure_defaults`)."""

_FLOATS = ("max_wall_s", "temperature", "resample_temperature")


def thread_needs_checkpointer(how: str) -> OptionError:
    """The error for a ``thread_id`` where nothing keeps checkpoints; ``how`` says how to give one
    (``"--checkpoint FILE"``, ``"GuardedOpenAI(checkpointer=...)"``)."""
    return OptionError("thread_id", f"thread_id needs a checkpointer ({how}): without one the thread could never resume")


@dataclass(frozen=True, kw_only=True)
class GuardOptions:
    """The fields a caller may set for one guarded run; each :data:`UNSET` unless given.

    Every field but ``labels`` is the :class:`GuardConfig` field of the same name (its docstring says
    what it does); ``labels`` adds to ``GuardConfig.extra``. ``prompt_dir`` is not an option: a
    request must not pick a folder on the machine that serves it.

    Raises:
        OptionError: a value :class:`GuardConfig` refuses, a non-finite number, or a ladder that is
            neither a list of rung names nor comma-separated names (names the field).
    """

    chunk_size: int | Unset = UNSET
    """Steps per model call."""
    adaptive: bool | Unset = UNSET
    """Shrink the chunk after a deviation, grow it after a clean chunk."""
    policy: str | Unset = UNSET
    """What the guard does at a deviation: reprompt, repair, raise or flag."""
    ladder: Union[tuple[str, ...], list[str], str, Unset] = UNSET  # noqa: UP007 - read at run time by dataclasses only
    """Re-prompt rungs in order: a list of names, or one comma-separated text (kept as a tuple)."""
    max_reprompts_per_step: int | Unset = UNSET
    """Re-prompts for one step before ``on_exhausted``."""
    max_reprompts_per_run: int | Unset = UNSET
    """Re-prompts for the whole run before ``on_exhausted``."""
    max_total_tokens: int | None | Unset = UNSET
    """Tokens for the whole run; ``None``: unbounded."""
    max_wall_s: float | None | Unset = UNSET
    """Wall-clock seconds for the run; ``None``: unbounded."""
    on_exhausted: str | Unset = UNSET
    """What happens when a budget is spent: raise, repair or flag."""
    temperature: float | Unset = UNSET
    """Sampling temperature of first tries."""
    seed: int | Unset = UNSET
    """Sampling seed of first tries."""
    resample_temperature: float | Unset = UNSET
    """Temperature of the ``resample`` rung."""
    inline_known: bool | Unset = UNSET
    """Write the values a step reads into its line."""
    max_tokens_per_step: int | Unset = UNSET
    """Token allowance per step in a chunk."""
    streamed: bool | Unset = UNSET
    """Ask a window of steps in one streamed call, cut at the first deviation."""
    window: int | Unset = UNSET
    """Most steps one streamed call covers."""
    labels: Mapping[str, str] | Unset = UNSET
    """Free labels recorded with the result (added to ``GuardConfig.extra``)."""

    def __post_init__(self) -> None:
        for name in OPTION_NAMES:
            value = getattr(self, name)
            if value is not UNSET:
                object.__setattr__(self, name, _checked(name, value))

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> GuardOptions:
        """Options from a mapping of names to values (a JSON object, keyword arguments, CLI flags).

        ``None`` and :data:`UNSET` values are not given (JSON ``null`` keeps the default).

        Raises:
            OptionError: an unknown name (the message lists the options), or a value refused (as the class).
        """
        for key in raw:
            if key not in OPTION_NAMES:
                raise OptionError(str(key), f"unknown option {key!r}; the options are: {', '.join(OPTION_NAMES)}")
        return cls(**{k: v for k, v in raw.items() if v is not None and v is not UNSET})

    def given(self) -> dict[str, Any]:
        """The options set, by name (``labels`` as given)."""
        return {name: getattr(self, name) for name in OPTION_NAMES if getattr(self, name) is not UNSET}

    def over(self, other: GuardOptions) -> GuardOptions:
        """These options, with ``other``'s where these are unset (``labels`` merged, these winning)."""
        merged = {**other.given(), **self.given()}
        if isinstance(self.labels, Mapping) and isinstance(other.labels, Mapping):
            merged["labels"] = {**other.labels, **self.labels}
        return GuardOptions(**merged)

    def apply(self, base: GuardConfig) -> GuardConfig:
        """``base`` with the fields these options set (``labels`` added to ``base.extra``)."""
        changes = self.given()
        labels = changes.pop("labels", None)
        if labels is not None:
            changes["extra"] = {**base.extra, **labels}
        return dataclasses.replace(base, **changes)

    def resolve(self, procedures: Procedure | Iterable[Procedure] | None = None, *, base: GuardConfig | None = None,
                defaults: Mapping[str, Any] | None = None) -> GuardConfig:
        """The run's :class:`GuardConfig` (the order is in the module docstring).

        Args:
            procedures: the run's procedure(s), for the defaults by procedure; ``None``: none to read.
            base: a caller's whole configuration; given, it replaces the defaults below these options.
            defaults: the way in's own GuardConfig fields (the benchmark's ``{"on_exhausted": "flag"}``).

        Raises:
            OptionError: never for these options' values (checked when built); ``ValueError`` from
                GuardConfig for a bad ``defaults``.
        """
        if base is None:
            base = GuardConfig(**{**procedure_defaults(procedures), **(defaults or {})})
        return self.apply(base)


OPTION_NAMES: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(GuardOptions))
"""Every option's name, in declaration order."""


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
    """``value`` normalised (a ladder as a tuple, a JSON decimal as a float) and checked as GuardConfig checks it.

    Raises:
        OptionError: the value refused, with GuardConfig's message.
    """
    if name == "labels":
        if not isinstance(value, Mapping) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise OptionError(name, f"labels must map text to text (recorded with the result), not {value!r}")
        return dict(value)
    if name == "ladder":
        value = _ladder(value)
    elif name in _FLOATS and value is not None:
        value = _number(name, value)
    elif isinstance(value, Decimal):  # 5.0 in JSON: not a whole number, and shown as written
        value = float(value)  # 1E+400: inf, as a Python caller's float("inf") is shown
    try:
        GuardConfig(**{name: value})  # the one set of checks, on this field alone
    except (ValueError, TypeError) as exc:
        raise OptionError(name, str(exc)) from None
    return value
