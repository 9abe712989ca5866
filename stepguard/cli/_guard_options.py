"""The guard's flags, generated from the one configuration model, and one builder.

``stepguard run``, ``stepguard bench run`` and ``stepguard bench demo`` take a flag for each
:class:`~stepguard.guard.GuardConfig` field that declares one (its ``Option(flag=...)``), with the
field's type, help (its description's first sentence) and default; a command declares none of them.
They are built when the command is used (:func:`guard_command`, :mod:`stepguard.cli._deferred`),
not when ``stepguard`` starts: building them reads ``GuardConfig``, which brings LangGraph and
pydantic. The one exception to GuardConfig's defaults is the benchmark's ``--on-exhausted``, whose
default is :func:`stepguard.guard.defaults_for`'s ``benchmark`` setting, the one ``run_benchmark`` uses.

A command reads the flags given with :func:`guard_options` (or :func:`build_guard_config`); the
values are read and checked by :class:`stepguard.guard.GuardOptions`, as the drop-in client's and
the proxy's are.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from stepguard.cli._deferred import Deferred, added_values, deferred_defaults
from stepguard.cli._exit import ExitCode, fail

if TYPE_CHECKING:
    from typer.core import TyperCommand

    from stepguard.guard import FieldSpec, GuardConfig, GuardOptions

__all__ = ["build_guard_config", "by_procedure_notes", "guard_command", "guard_flags", "guard_option_defaults",
           "guard_options"]


def _flagged() -> list[FieldSpec]:
    """GuardConfig's fields that declare a flag, in declaration order."""
    from stepguard.guard import GuardConfig, fields_of

    return [spec for spec in fields_of(GuardConfig) if spec.option.flag]


def _whole_number(text: str | int) -> int:
    """A whole-number flag's text as an int: digits with an optional sign (``2.0``, ``True`` and ``1_0``
    are not, as ``2.0`` and ``true`` are not a whole-number option's JSON).

    Raises:
        typer.BadParameter: any other text (click names the flag).
    """
    if isinstance(text, int):
        return text
    if not re.fullmatch(r"[+-]?[0-9]+", text.strip()):
        raise typer.BadParameter(f"{text!r} is not a whole number")
    return int(text)


def guard_flags() -> list[Any]:
    """typer's click options for the guard flags, one per flagged GuardConfig field, parameter named as the field.

    typer builds them (from a signature generated here), so they read as a declared option would: an
    ``int`` field takes ``N``, a ``bool`` field is a ``--x/--no-x`` switch, a ``Literal`` or a ladder
    takes text that :class:`~stepguard.guard.GuardOptions` checks. Every default is ``None`` (not given);
    :func:`guard_option_defaults` shows the real ones.
    """
    kinds: dict[Any, type] = {int: int, float: float, bool: bool}
    parameters, annotations = [], {}
    for spec in _flagged():
        help_text = spec.help if spec.option.none is None else f"{spec.help[:-1]} (default: {spec.option.none})."
        # a whole number as click reads one: "2.0" and "True" are refused naming the flag, as the
        # other ways in refuse 2.0 (typer's own int reading takes "2.0" as 2)
        decls = typer.Option(spec.option.flag, metavar=spec.option.metavar, help=help_text,
                             parser=_whole_number if spec.base is int else None)
        kind = kinds.get(spec.base, str)
        annotation: Any = Annotated[Optional[kind], decls]  # a type made at run time, for typer
        parameters.append(inspect.Parameter(spec.name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation))
        annotations[spec.name] = annotation

    def flags(**given: Any) -> None:
        """The guard flags (only their declarations are used)."""

    flags.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]  # read by inspect.signature
    flags.__annotations__ = annotations
    holder = typer.Typer(add_completion=False)
    holder.command()(flags)
    return list(typer.main.get_command(holder).params)


def guard_command(provider: Callable[[], Deferred], after: str = "model") -> type[TyperCommand]:
    """A command class with the guard flags (:func:`guard_flags`) after the parameter ``after``, their
    defaults and notes from ``provider()`` (:func:`guard_option_defaults`)."""
    return deferred_defaults(provider, added=guard_flags, after=after)


def guard_options(flags: Mapping[str, Any] | None = None) -> GuardOptions:
    """The :class:`~stepguard.guard.GuardOptions` the guard flags ask for (``None``: not given).

    Args:
        flags: the flags' values by field name; ``None``: those of the command now running.

    Raises:
        typer.Exit: a value the options refuse (an unknown policy or rung, a chunk size of 0): the
            message, naming the option, is printed and the exit code is 2, a usage error.
    """
    from stepguard.guard import GuardOptions, OptionError

    try:
        return GuardOptions.parse(added_values() if flags is None else flags)
    except OptionError as exc:  # an option's value: a usage error, like typer's own
        raise fail(exc, ExitCode.USAGE) from None


def build_guard_config(flags: Mapping[str, Any] | None = None, *, defaults: Mapping[str, Any] | None = None,
                       procedures: Any = None) -> GuardConfig:
    """The :class:`~stepguard.guard.GuardConfig` the guard flags ask for, resolved as every way in
    resolves options (:meth:`~stepguard.guard.GuardOptions.resolve`).

    Args:
        flags: the flags' values by field name (:func:`guard_options`); ``None``: the running command's.
        defaults: GuardConfig fields a command sets differently (the benchmark's ``on_exhausted``).
        procedures: the procedure(s) run, for the defaults by procedure (``None``: none).

    Raises:
        typer.Exit: a value refused: the message is printed and the exit code is 2, a usage error.
    """
    options = guard_options(flags)
    try:
        return options.resolve(procedures, defaults=defaults)
    except ValueError as exc:
        raise fail(exc, ExitCode.USAGE) from None


def guard_option_defaults(defaults: Mapping[str, Any] | None = None, by_procedure: bool = False) -> Deferred:
    """The guard flags' defaults, from GuardConfig (``defaults`` overriding), and their help notes.

    The notes list what the flags accept: a ``Literal`` field's values (the policies, the exhausted
    actions) and the registered rungs (:func:`stepguard.guard.rung_names`, so a rung registered by a
    plugin shows too). With ``by_procedure``, the fields whose default the procedure picks default
    to ``None`` (chosen when the procedure is read) and their help says how (:func:`by_procedure_notes`).
    """
    from stepguard.guard import MODE_SETTINGS, PRODUCTION_SETTINGS, RUN_SETTINGS, rung_names

    values, notes = {}, {}
    for spec in _flagged():
        value = (defaults or {}).get(spec.name, spec.default)
        values[spec.name] = ",".join(value) if isinstance(value, tuple) else value
        if spec.choices:
            notes[spec.name] = " | ".join(map(str, spec.choices)) + "."
    notes["ladder"] = f"Registered rungs: {', '.join(rung_names())}."
    # Every run follows the model unless a mode is asked (RUN_SETTINGS): not given, these are decided
    # when the options are resolved, where --streamed or --chunked alone also turns following off.
    chunk_default = values["chunk_size"]  # what --chunk-size alone asks, before it is left to resolution
    values.update(dict.fromkeys((*RUN_SETTINGS, *MODE_SETTINGS)))
    notes["follow"] = "Default: follow (every run's, unless --streamed, --chunked or --chunk-size is given)."
    notes["streamed"] = "Default: neither (the run follows the model); either one turns --follow off unless it is given too."
    notes["chunk_size"] = ("Given without --follow, asks chunks of N (following off); with it, N is the re-asks' size."
                           + ("" if by_procedure else f" Default: {chunk_default}."))
    notes["substeps_together"] = "Default: together (every run's)."
    if by_procedure:
        values.update(dict.fromkeys(PRODUCTION_SETTINGS))
    return Deferred(values, notes)


def by_procedure_notes(notes: Mapping[str, str], where: str = "") -> dict[str, str]:
    """``notes`` with the help of each flag whose default the procedure picks
    (:func:`stepguard.guard.defaults_for`) saying how (``where`` prefixes the sentence:
    ``"For procedure files: "``)."""
    from stepguard.guard import PRODUCTION_SETTINGS, GuardConfig, fields_of

    def shown(value: Any) -> str:
        return ",".join(value) if isinstance(value, tuple) else str(value)

    declared = {spec.name: spec.default for spec in fields_of(GuardConfig)}  # no GuardConfig(): no check to build for a help
    out = dict(notes)
    for option, beyond in PRODUCTION_SETTINGS.items():
        sums = shown(declared[option])
        out[option] = (f"{out.get(option, '')} {where}Default by procedure: {sums} for integer sums, {shown(beyond)} for "
                       "decimals, products, quotients, min/max and conditionals (docs/policies.md).").strip()
    return out
