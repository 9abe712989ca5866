"""Option defaults read when a command is used, not when ``stepguard`` starts.

Typer reads a command's defaults from its function's signature, at import. Some defaults live in
modules that are slow to import (``GuardConfig`` brings LangGraph; the benchmark's grid brings
pydantic), and ``stepguard --help`` imports every command module. So such an option is declared
with ``None`` as its signature default, and the command's class (:func:`deferred_defaults`) fills in
the real default, and any help text that names registered things, the first time click asks for
the command's parameters: to parse its arguments or to print its help. A Python caller of the
function gets ``None``, which the command passes on as "the library's default".

The same class can add whole options then (``added``): options generated from a model that is slow
to import (the guard's flags, from ``GuardConfig``). Their values do not reach the command's
function as arguments; it reads them with :func:`added_values`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar
from typing import Any, NamedTuple

from typer.core import TyperCommand, TyperOption

__all__ = ["Deferred", "added_values", "deferred_defaults"]

_ADDED: ContextVar[Mapping[str, Any] | None] = ContextVar("stepguard_added_options", default=None)
"""The added options' values of the command being invoked (set for the length of its call)."""


def added_values() -> dict[str, Any]:
    """The values of the options ``deferred_defaults(..., added=...)`` added to the command now running,
    by parameter name (``None``: not given); empty outside such a command."""
    return dict(_ADDED.get() or {})


class Deferred(NamedTuple):
    """What a provider returns: defaults and help additions, both keyed by parameter name."""

    defaults: Mapping[str, Any]
    """The default of each parameter named (a value click can convert: ``5``, ``"a,b"``, ``False``)."""
    notes: Mapping[str, str] = {}
    """Text appended to a parameter's help, e.g. the registered rung names."""


def deferred_defaults(provider: Callable[[], Deferred], added: Callable[[], list[Any]] | None = None,
                      after: str | None = None) -> type[TyperCommand]:
    """A command class whose parameters get their defaults and help notes from ``provider()``.

    ``provider`` (and ``added``) are called once per command object, the first time click asks for
    its parameters; they may import what they need.

    Args:
        provider: returns a :class:`Deferred`; a name it gives that the command lacks is an error.
        added: returns click options to add to the command (typer's, built by it); their values are
            read with :func:`added_values`, not passed to the command's function.
        after: the parameter the added options follow in the help (``None``: at the end).

    Returns:
        A :class:`typer.core.TyperCommand` subclass to pass as ``cls=`` to ``Typer.command``.
    """

    class DeferredDefaultsCommand(TyperCommand):
        _resolved = False
        _added: tuple[str, ...] = ()

        # Any: click's Context and Parameter, which typer may vendor (typer._click), so no one
        # import names them for every typer version.
        def get_params(self, ctx: Any) -> list[Any]:
            if not self._resolved:
                self._resolved = True
                if added is not None:
                    options = added()
                    self._added = tuple(p.name for p in options)
                    at = next((i + 1 for i, p in enumerate(self.params) if p.name == after), len(self.params))
                    self.params[at:at] = options
                _apply(self, provider())
            return super().get_params(ctx)

        def invoke(self, ctx: Any) -> Any:
            token = _ADDED.set({name: ctx.params.pop(name) for name in self._added if name in ctx.params})
            try:
                return super().invoke(ctx)
            finally:
                _ADDED.reset(token)

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
