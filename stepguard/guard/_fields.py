"""The configuration model's fields read back: each one's type, constraint, description and spelling.

:class:`~stepguard.guard.GuardConfig` declares every field once, as
``Annotated[type, pydantic.Field(constraint..., description=...), Option(flag=...)]``. This module
reads those declarations (:func:`fields_of`) for everything built from them: the check of one value
(:meth:`FieldSpec.check`, by pydantic, with a message that names the field and the value), the
per-run options (:class:`~stepguard.guard.GuardOptions`), the command line's flags
(:mod:`stepguard.cli._guard_options`), the proxy's keys and the docs' options table
(:func:`stepguard.guard._options_table.options_table`).
"""

from __future__ import annotations

import functools
import re
import types
from dataclasses import dataclass, fields as dataclass_fields
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

__all__ = ["FieldSpec", "Option", "fields_of"]


@dataclass(frozen=True)
class Option:
    """What a configuration field declares beyond its type, constraint and description (those are
    pydantic's ``Field``): how the command line spells it and what a refusal says it expects."""

    flag: str | None = None
    """The command line's flag (``"--max-reprompts"``; ``"--streamed/--chunked"`` for a switch); ``None``: no flag."""
    metavar: str | None = None
    """The flag's value in the help (``N``, ``SECONDS``)."""
    expects: str | None = None
    """What a value must be, from the verb on (``"be a folder path (or None)"``), where the type says it poorly."""
    none: str | None = None
    """What ``None`` means (``"unbounded"``), for the help and the docs table."""
    per_run: bool = True
    """Whether a caller may set it for one run (``prompt_dir`` may not: a request must not pick a folder on the server)."""


@dataclass(frozen=True)
class FieldSpec:
    """One configuration field as declared: its name, annotation, default and what the annotation holds."""

    name: str
    hint: Any
    """The whole annotation, ``Annotated[...]`` with its metadata: what pydantic checks a value against."""
    default: Any
    """The default (``dataclasses.MISSING`` where a factory makes it)."""

    @functools.cached_property
    def _parts(self) -> tuple[Any, bool, list[Any]]:
        inner, *metadata = get_args(self.hint) if get_origin(self.hint) is Annotated else (self.hint,)
        args = get_args(inner)
        optional = (get_origin(inner) in (Union, types.UnionType)) and type(None) in args
        if optional:
            rest = [a for a in args if a is not type(None)]
            inner = rest[0] if len(rest) == 1 else Union[tuple(rest)]  # noqa: UP007 - a type built at run time
        return inner, optional, metadata

    @property
    def base(self) -> Any:
        """The type without ``None`` and metadata (``int``, ``Literal['raise', ...]``, ``tuple[str, ...]``)."""
        return self._parts[0]

    @property
    def optional(self) -> bool:
        """Whether ``None`` is a value."""
        return self._parts[1]

    @property
    def option(self) -> Option:
        """The field's :class:`Option` (an empty one where it declares none)."""
        return next((m for m in self._parts[2] if isinstance(m, Option)), Option())

    @property
    def description(self) -> str:
        """The field's description, as its ``Field`` gives it."""
        return next((m.description for m in self._parts[2] if getattr(m, "description", None)), "") or ""

    @property
    def constraints(self) -> dict[str, Any]:
        """The numeric bounds declared (``{"ge": 1, "le": 2147483647}``), by name."""
        found: dict[str, Any] = {}
        for meta in self._parts[2]:
            for bound in getattr(meta, "metadata", ()):
                for key in ("ge", "le", "gt", "lt"):
                    if getattr(bound, key, None) is not None:
                        found[key] = getattr(bound, key)
        return found

    @property
    def choices(self) -> tuple[Any, ...]:
        """The values a ``Literal`` field allows; ``()`` for other fields."""
        return get_args(self.base) if get_origin(self.base) is Literal else ()

    @property
    def help(self) -> str:
        """The description's first sentence, without reST markup: a flag's help."""
        first = re.split(r"(?<=\.)\s", self.description.strip(), maxsplit=1)[0].rstrip(".") + "."
        return re.sub(r":\w+:`~?([^`]+)`", r"\1", first).replace("``", "")

    @property
    def expects(self) -> str:
        """What a value must be, from the verb on: the :class:`Option`'s words, else said from the type and bounds."""
        if self.option.expects:
            return self.option.expects
        if self.base is bool:
            return "be true or false"
        if self.choices:
            names = [str(c) for c in self.choices]
            return "be " + ", ".join(names[:-1]) + " or " + names[-1]
        low, high = self.constraints.get("ge"), self.constraints.get("le")
        if self.base is int:
            return f"be a whole number from {low} to {high}"
        if self.base is float and low is not None and high is not None:
            return f"be a number from {low} to {high}"
        return f"be {getattr(self.base, '__name__', self.base)}"

    @functools.cached_property
    def _adapter(self) -> Any:
        from pydantic import TypeAdapter

        return TypeAdapter(self.hint)

    def check(self, value: Any) -> Any:
        """``value`` as the field holds it (a list ladder as a tuple, a text path as a ``Path``, ``-0.0`` as
        ``0.0``: the two are one setting, and a run's identity and a store's settings are written as JSON,
        where they differ).

        Raises:
            ValueError: the value refused: ``"<name> must <expects>, not <value>"``, or a validator's own message.
        """
        from pydantic import ValidationError

        try:
            held = self._adapter.validate_python(value)
        except ValidationError as exc:
            error = exc.errors()[0]
            if error["type"] == "value_error":  # a validator's own words (an unknown rung)
                raise ValueError(str(error["ctx"]["error"])) from None
            raise ValueError(f"{self.name} must {self.expects}, not {value!r}") from None
        return 0.0 if isinstance(held, float) and held == 0 else held


@functools.cache
def fields_of(cls: type) -> tuple[FieldSpec, ...]:
    """The fields of a configuration dataclass, in declaration order, read from their annotations."""
    hints = get_type_hints(cls, include_extras=True)
    return tuple(FieldSpec(f.name, hints[f.name], f.default) for f in dataclass_fields(cls))
