"""The step models of the built-in step kinds: what a procedure file may write for a ``compute``,
``tool``, ``extract`` or ``text`` step, validated with pydantic v2.

A step model is the shape of a procedure file's step, so it lives with the procedure; how a kind's
steps are prompted, read, checked and committed lives with the kind (:mod:`stepguard.kinds`), which
imports these models. A kind registered from outside brings its own model
(:func:`stepguard.kinds.register_kind`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cached_property
from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from stepguard.evaluator import CompiledExpression, compile_expression
from stepguard.procedure._model import Step, ValueType, field_error

__all__ = ["BUILT_IN_STEP_MODELS", "ComputeStep", "ExtractStep", "Occurrence", "Percent", "TextFormat", "TextStep", "ToolArg", "ToolStep"]

Percent = Literal["fraction", "points"]
"""How a number written as a percent reads:

* ``fraction``: ``15%`` is 0.15 (a rate to multiply by);
* ``points``: ``15%`` is 15 (the number as written, in percentage points).
"""

TextFormat = Literal["text", "list", "json"]
"""``text`` (one line), ``list`` (a JSON list of strings) or ``json`` (a JSON value)."""

_TOOL_NAME = r"^[A-Za-z_][A-Za-z0-9_.-]{0,63}$"
_ArgName = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")]


class ComputeStep(Step):
    """A computed step: ``expr`` is the expected-value expression over inputs and earlier variables
    (``S3 - S1``, ``subtotal * rate``); the guard computes it with the safe evaluator and shows it to
    the model. A step with neither ``expr`` nor ``check`` is **unverifiable**: the guard checks only
    that the model wrote it, in order, with its type, and marks its value ``unverifiable``; a run with
    such a step is ``flagged``, never ``verified`` (``stepguard check`` names each one)."""

    computes: ClassVar[bool] = True

    kind: Literal["compute"] = Field("compute", description="compute: the model computes the value (the default).")
    expr: str | None = Field(None, max_length=2000, description="Expected-value expression over earlier variables and inputs.")

    @property
    def expression(self) -> str | None:
        """``expr``."""
        return self.expr

    def expressions(self) -> list[tuple[str, str | None]]:
        """``expr`` and ``check``."""
        return [("expr", self.expr), ("check", self.check)]


class ToolArg(BaseModel):
    """A free argument of a tool step: the model chooses its value, which must pass ``check``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: ValueType = Field("string", description="Value type of the argument.")
    check: str | None = Field(
        None, max_length=2000,
        description="A predicate over `value` and earlier variables the argument must satisfy (`len(value) <= 80`).",
    )
    description: str | None = Field(None, max_length=2000, description="What the argument means (shown to the model).")


class ToolStep(Step):
    """A tool step: ``tool`` is called with ``args``, each an expression over earlier values
    (checked exactly) or a free argument the model chooses (:class:`ToolArg`)."""

    value_from: ClassVar[str] = "tool"

    kind: Literal["tool"] = Field(description="tool: a named tool is called with checked arguments; its result is the value.")
    tool: Annotated[str, StringConstraints(pattern=_TOOL_NAME)] = Field(
        description="The name of the tool to call (given to the guard, never imported by the file)."
    )
    args: dict[_ArgName, str | ToolArg] | None = Field(
        None, max_length=64,
        description="Each argument as an expression over earlier values (checked exactly) "
        "or as a free argument {type, check} the model chooses.",
    )

    def expressions(self) -> list[tuple[str, str | None]]:
        """``check``, each expression argument (``args.sku``) and each free argument's predicate (``args.note.check``)."""
        out: list[tuple[str, str | None]] = [("check", self.check)]
        for name, arg in (self.args or {}).items():
            out.append((f"args.{name}", arg) if isinstance(arg, str) else (f"args.{name}.check", arg.check))
        return out

    def tools_needed(self) -> frozenset[str]:
        """The step's tool."""
        return frozenset({self.tool})

    @cached_property
    def compiled_args(self) -> dict[str, CompiledExpression | ToolArg]:
        """Each argument compiled (an expression) or as its :class:`ToolArg` (free)."""
        return {k: compile_expression(v) if isinstance(v, str) else v for k, v in (self.args or {}).items()}


Occurrence = Literal["first", "last"] | Annotated[int, Field(ge=1, strict=True)]
"""Which copy of an extract step's ``label`` its value is read at, when the label occurs more than once:

* ``first``, ``last``: the first or last copy that gives a value;
* a whole number ``n`` (1 or more): the n-th copy that gives a value.
"""


class ExtractStep(Step):
    """An extract step: its value is read from the string input ``source``, after ``label`` when given."""

    value_from: ClassVar[str] = "source text"

    kind: Literal["extract"] = Field(description="extract: the model reads the value from a text input, source.")
    source: str = Field(description="The string input the value is read from; the value must occur in it.")
    label: str | None = Field(
        None, max_length=200, description="The value must follow this label on a line of the source (`Total`)."
    )
    percent: Percent | None = Field(
        None,
        description="How a number the source writes as a percent reads: `fraction` (15% is 0.15) or `points` "
        "(15% is 15). Without it such a number gives no value.",
    )
    occurrence: Occurrence | None = Field(
        None,
        description="Which copy of `label` the value is read at when the label occurs more than once: `first`, "
        "`last` or a count from 1 (copies that give a value). Without it, copies with different values make "
        "the source ambiguous and no value passes.",
    )

    @model_validator(mode="after")
    def _reads_a_value(self) -> ExtractStep:
        if self.type == "boolean":
            raise field_error("type", "an extract step reads a number or a string, not a boolean")
        if self.percent is not None and self.type in ("string", "one_of"):
            raise field_error("percent", f"percent applies only to a number, and this step is of type {self.type}")
        if self.percent == "fraction" and self.type == "integer":
            raise field_error("percent", "percent: fraction reads 15% as 0.15, which an integer cannot hold; use points or type decimal")
        if self.occurrence is not None and not self.label:
            raise field_error("occurrence", "occurrence says which copy of the label to read, and this step has no label")
        return self

    def text_inputs(self) -> tuple[str, ...]:
        """``source``."""
        return (self.source,)


class TextStep(Step):
    """A text step: free text, a list or JSON the model writes, checked by its rules and predicate."""

    value_from: ClassVar[str] = "model's text"

    choices_per_item: ClassVar[bool] = True

    kind: Literal["text"] = Field(description="text: free text, a list or JSON the model writes, checked by rules.")
    type: ValueType = Field("string", description="A text step's value is a string.")
    source: str | None = Field(None, description="The string input the text is written from, if any.")
    format: TextFormat = Field("text", description="`text` (one line), `list` (a JSON list of strings) or `json` (a JSON value).")
    min_length: Annotated[int, Field(ge=0, le=100_000)] | None = Field(None, description="Fewest characters (text, json) or items (list).")
    max_length: Annotated[int, Field(ge=0, le=100_000)] | None = Field(None, description="Most characters (text, json) or items (list).")
    pattern: str | None = Field(None, max_length=500, description="A regular expression each text (or list item) must match in full.")
    json_schema: dict[str, Any] | None = Field(
        None, alias="schema", description="format json: a JSON Schema the value must satisfy (needs the jsonschema package)."
    )

    @model_validator(mode="after")
    def _rules(self) -> TextStep:
        if self.type != "string":
            raise field_error("type", f"a text step's value is a string, not {self.type}")
        if self.scale is not None:
            raise field_error("scale", "scale does not apply to a text step")
        if self.json_schema is not None and self.format != "json":
            raise field_error("schema", "schema applies only to format json")
        if self.format == "json":  # every rule a file states is enforced, or the file is refused
            for name in ("pattern", "choices"):
                if getattr(self, name) is not None:
                    raise field_error(name, f"{name} applies only to format text or list (a JSON value is checked by schema)")
        if self.pattern is not None:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise field_error("pattern", f"not a valid regular expression: {exc}") from None
        if self.json_schema is not None:
            problem = _schema_problem(self.json_schema)
            if problem:
                raise field_error("schema", f"not a valid JSON Schema: {problem}")
        return self

    def text_inputs(self) -> tuple[str, ...]:
        """``source``, where given."""
        return (self.source,) if self.source else ()


def _schema_problem(schema: Mapping[str, Any]) -> str | None:
    """Why ``schema`` is not a valid draft 2020-12 schema, or ``None`` (also ``None`` without jsonschema:
    the check then fails when a run reaches the step, naming the missing package)."""
    try:
        import jsonschema
    except ImportError:
        return None
    try:
        jsonschema.Draft202012Validator.check_schema(dict(schema))
    except jsonschema.SchemaError as exc:
        where = "/".join(map(str, exc.absolute_path)) or "the schema"
        return f"{where}: {exc.message[:200]}"
    return None


BUILT_IN_STEP_MODELS: dict[str, type[Step]] = {"compute": ComputeStep, "extract": ExtractStep, "text": TextStep, "tool": ToolStep}
"""The built-in step kinds' models, by kind name (what a procedure validates against until kinds are registered)."""
