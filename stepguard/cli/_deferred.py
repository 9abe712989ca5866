"""Option defaults read when a command is used, not when ``stepguard`` starts.

Typer reads a command's defaults from its function's signature, at import. Some defaults live in
modules that are slow to import (``GuardConfig`` brings LangGraph; the benchmark's grid brings
pydantic), and ``stepguard --help`` imports every command module. So such an option is declared
with ``None`` as its signature default, and the command's class (:func:`deferred_defaults`) fills in
the real default, and any help text that names registered things, the first time click asks for
the command's parameters: to parse its arguments or to print its help. A Python caller of the
function gets ``None``, which the command passes on as "the library's default".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from typer.core import TyperCommand, TyperOption

__all__ = ["Deferred", "deferred_defaults"]


class Deferred(NamedTuple):
    """What a provider returns: defaults and help additions, both keyed by parameter name."""

    defaults: Mapping[str, Any]
    """The default of each parameter named (a value click can convert: ``5``, ``"a,b"``, ``False``)."""
    notes: Mapping[str, str] = {}
    """Text appended to a parameter's help, e.g. the registered rung names."""


def deferred_defaults(provider: Callable[[], Deferred]) -> type[TyperCommand]:
    """A command class whose parameters get their defaults and help notes from ``provider()``.

    ``provider`` is called once per command object, the first time click asks for its parameters;
    it may import what it needs.

    Args:
        provider: returns a :class:`Deferred`; a name it gives that the command lacks is an error.

    Returns:
        A :class:`typer.core.TyperCommand` subclass to pass as ``cls=`` to ``Typer.command``.
    """

    class DeferredDefaultsCommand(TyperCommand):
        _resolved = False

        # Any: click's Context and Parameter, which typer may vendor (typer._click), so no one
        # import names them for every typer version.
        def get_params(self, ctx: Any) -> list[Any]:
            if not self._resolved:
                self._resolved = True
                _apply(self, provider())
            return super().get_params(ctx)

    return DeferredDefaultsCommand


def _apply(command: TyperCommand, deferred: Deferred) -> None:
    params = {p.name: p for p in command.params}
    unknown = (set(deferred.defaults) | set(deferred.notes)) - set(params)
    if unknown:
        raise LookupError(f"command {command.name!r} has no parameters {sorted(unknown)}")
    for name, value in deferred.defaults.items():
        params[name].default = value
    for name, note in deferred.notes.items():
        param = params[name]
        if isinstance(param, TyperOption):
            param.help = f"{param.help.rstrip()} {note}" if param.help else note
