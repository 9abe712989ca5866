"""The procedure model: declared inputs and ordered steps, validated with pydantic v2."""

from __future__ import annotations

import ast
import re
import types
from collections.abc import Mapping, Sequence
from fractions import Fraction
from functools import cached_property
from typing import Annotated, Any, ClassVar, Literal, Union

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, StringConstraints, field_validator, model_validator, with_config
from pydantic_core import PydanticCustomError
from typing_extensions import TypedDict

from stepguard.errors import EvaluationError, ProcedureError
from stepguard.evaluator import CompiledExpression, Number, compile_expression, format_number, normalize
from stepguard.procedure._values import round_to_scale

__all__ = ["InputSpec", "Procedure", "Step", "StepKind", "ValueType", "apply_scale", "field_error", "step_models", "use_step_models"]

_IDENT = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,63}$")
_RESERVED = frozenset({"value", "abs", "min", "max", "round", "len", "words", "and", "or", "not", "if", "else", "in", "True", "False"})
ValueType = Literal["integer", "decimal", "boolean", "string", "one_of", "number"]
"""What a step's value is: ``number`` (int or exact decimal, the default), ``integer``, ``decimal``
(with ``scale`` places), ``boolean``, ``string``, or ``one_of`` a fixed set of ``choices``."""

ValueShape = Literal["scalar", "list", "json"]
"""How a step's value is held, as its kind says (:meth:`stepguard.kinds.Kind.result_shape`):

- ``scalar``: one value, typed by the step's ``type`` and ``scale``;
- ``list``: a list of strings (committed as a JSON array);
- ``json``: a JSON value, its numbers exact (committed as JSON text).
"""

Rounding = Literal["ROUND_HALF_EVEN", "ROUND_HALF_UP"]

StepKind = str
"""The name of a registered step kind (:func:`stepguard.kinds.step_kinds`): the built-in ones are
``compute`` (the model computes it; the default), ``tool`` (a named tool is called with checked
arguments; its result is the value), ``extract`` (the model reads it from a text input, ``source``)
and ``text`` (free text, a list or JSON the model writes, checked by predicates or a schema).
docs/agent-workflows.md shows each."""


def _check_name(name: str, where: str) -> str:
    if not isinstance(name, str) or not _IDENT.match(name) or name in _RESERVED:
        why = "is a reserved word" if name in _RESERVED else "must be a letter, then letters, digits or _ (64 at most)"
        raise ValueError(f"{where} name {name!r} {why}")
    return name


def field_error(field: str, message: str) -> PydanticCustomError:
    """A validation error of a whole model that belongs to one of its fields, for a step model's
    ``model_validator`` to raise (a step kind's own rules).

    Args:
        field: the field the error is about (``"type"``); it travels in the error's ``ctx``, and
            the procedure loader adds it to the location (``steps[2].type``).
        message: the sentence a procedure file's author reads; no ``{placeholders}``.

    Returns:
        A ``PydanticCustomError`` of type ``procedure_field``, to raise.
    """
    return PydanticCustomError("procedure_field", message, {"field": field})  # message: no {placeholders}


class _Problems(ProcedureError):
    """A :class:`ProcedureError` that keeps its ``(location, message)`` list, so that a loader can
    name the file on every line."""

    def __init__(self, message: str, location: str | None, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__(message, location)
        # the first problem's place, after the file's: what `except ProcedureError as e: e.location` reads
        self.location = ": ".join(p for p in (location, problems[0][0] if problems else None) if p) or None


def procedure_error(problems: list[tuple[str, str]], where: str | None = None) -> ProcedureError:
    """One :class:`ProcedureError` listing every ``(location, message)`` problem, one a line.

    Each line reads ``where: location: message`` (``payroll.yaml: steps[2].type (gross): 'decimal'
    needs 'scale' (the number of places)``), so that every line names the file and the place.
    The error's ``problems`` attribute holds the list.
    """
    lines = [f"{loc}: {msg}" if loc else msg for loc, msg in problems]
    tail = "".join(f"\n{where}: {line}" if where else f"\n{line}" for line in lines[1:])
    return _Problems(lines[0] + tail, where, problems)


_COMPUTING = (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call)


def _fold_constants(compiled: CompiledExpression) -> None:
    """Evaluate every maximal subexpression that reads no variable (``2**1000000``, ``'a' * 10**9``,
    ``1/0``), so that it is refused when the file is loaded rather than when a run reaches the step.

    Raises:
        EvaluationError: such a subexpression fails (too large, a type misuse, division by zero).
    """
    has_name: dict[int, bool] = {}
    called = {id(n.func) for n in ast.walk(compiled.tree) if isinstance(n, ast.Call)}

    def visit(node: ast.AST) -> bool:
        own = isinstance(node, ast.Name) and id(node) not in called
        kids = [visit(child) for child in ast.iter_child_nodes(node)]
        has_name[id(node)] = own or any(kids)
        return has_name[id(node)]

    visit(compiled.tree)
    todo: list[ast.AST] = [compiled.tree.body]
    while todo:
        node = todo.pop()
        if not has_name[id(node)]:
            if isinstance(node, _COMPUTING):
                CompiledExpression(compiled.source, (), ast.Expression(body=node), compiled.limits).evaluate({})
            continue
        todo.extend(ast.iter_child_nodes(node))


class InputSpec(BaseModel):
    """One declared input of a procedure (``x``, ``subtotal``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(description="Input name, used in expressions.")
    type: ValueType = Field("number", description="Value type of the input.")
    description: str | None = Field(None, max_length=2000, description="What the input means.")
    choices: tuple[str, ...] | None = Field(None, max_length=1000, description="type one_of: the values the input may take.")

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        return _check_name(v, "input")

    @model_validator(mode="after")
    def _choices(self) -> InputSpec:
        # a one_of input without its choices would take any text, and an expression's `else` branch with it
        if self.type == "one_of" and not self.choices:
            raise field_error("type", "'one_of' needs 'choices' (the values the input may take)")
        if self.choices is not None and self.type != "one_of":
            raise field_error("choices", f"choices apply only to type one_of, and this input is of type {self.type}")
        return self


@with_config(ConfigDict(extra="forbid"))
class InputFields(TypedDict, total=False):
    """An input's fields in the mapping form of ``inputs`` (``subtotal: {type: decimal, description: ...}``);
    the mapping key is the input's name. Used for the JSON Schema only: the loader builds an :class:`InputSpec`."""

    type: ValueType
    description: Annotated[str, Field(max_length=2000)] | None
    choices: list[str]


_Name = Annotated[str, StringConstraints(pattern=_IDENT.pattern)]
_InputsForms = list[InputSpec | _Name] | Annotated[
    dict[_Name, ValueType | InputFields], Field(json_schema_extra={"additionalProperties": False})
]
"""The forms ``inputs`` accepts: a list of specs or names, or a mapping of name to type or fields."""


Execute = Literal["model", "evaluator"]
"""Who computes a step's value.

- ``model``: the model writes it and the guard checks it (the default).
- ``evaluator``: the guard computes the step's ``expr`` with the safe evaluator and commits it with
  provenance ``computed``, never asking the model (a step the user says needs no model: docs/policies.md,
  "Steps computed, not asked"). Only a step with an ``expr`` (a compute step) can be.
"""

DEFAULT_KIND = "compute"
"""The kind of a step that names none (``kind`` left out of a procedure file)."""


class Step(BaseModel):
    """One step: the variable it produces and how its value is verified; the base of every step kind's model.

    A step's ``kind`` names a registered step kind (:mod:`stepguard.kinds`), and a procedure file's
    step is validated by that kind's own model (``compute``: :class:`stepguard.procedure.ComputeStep`,
    the default; ``tool``, ``extract``, ``text``), so a file's errors name that kind's fields.
    The fields here are common to every kind.

    ``check`` comes in two forms, told apart by whether it mentions ``value``:

    * a **predicate** over ``value`` (``0 <= value <= subtotal``): the model's value must make it true;
    * an **expected-value expression** (``subtotal * rate``, no ``value``): the model's value must
      equal it (after ``scale``/``rounding``); never shown to the model. Only a kind whose value is
      computed (:attr:`computes`) takes one.

    ``scale`` and ``rounding`` round every expected value of the step, and the guard applies the
    same rule to the model's value before comparing and committing it (``12.3`` equals ``12.30``;
    ``5.005`` becomes ``5.01`` under ``ROUND_HALF_UP``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, serialize_by_alias=True)

    computes: ClassVar[bool] = False
    """Whether the kind's value is computed by an expression (so it can be derived, re-derived by
    rungs and have an expected-value ``check``)."""
    value_from: ClassVar[str] = "step's kind"
    """Where a value of the kind comes from, for messages (``tool``, ``source text``)."""
    choices_per_item: ClassVar[bool] = False
    """Whether ``choices`` may restrict a value of any type (each item of a text step), not only ``one_of``."""

    var: str = Field(description="The variable this step produces.", json_schema_extra={"pattern": _IDENT.pattern})
    kind: str = Field(DEFAULT_KIND, description="The step kind: compute (the default), tool, extract, text, or a registered kind.")
    instruction: str | None = Field(None, max_length=4000, description="Natural-language instruction shown to the model.")
    type: ValueType = Field("number", description="Value type of the variable.")
    scale: Annotated[int, Field(ge=0, le=30)] | None = Field(None, description="Decimal places for type decimal.")
    rounding: Rounding = Field("ROUND_HALF_EVEN", description="Rounding applied to the expected value at `scale` places.")
    choices: tuple[str, ...] | None = Field(None, max_length=1000, description="Allowed values for type one_of.")
    check: str | None = Field(
        None,
        max_length=2000,
        description="A predicate over `value` and earlier variables (`0 <= value <= subtotal`), or, when it "
        "does not mention `value`, a hidden expected-value expression the model's value must equal (`subtotal * rate`).",
    )
    execute: Execute = Field("model", description="Who computes the value: model (the default), or evaluator (the guard computes "
                             "`expr` itself and commits it graded computed, never the model's; a step with an expr only).")

    @field_validator("var")
    @classmethod
    def _var(cls, v: str) -> str:
        return _check_name(v, "variable")

    @model_validator(mode="before")
    @classmethod
    def _foreign_fields(cls, data: Any) -> Any:
        """Refuse a field of another kind by name: ``source applies only to kind extract or text``."""
        if isinstance(data, Mapping) and cls is not Step:
            mine = {n for n, f in cls.model_fields.items()} | {f.alias for f in cls.model_fields.values() if f.alias}
            for key in data:
                if key in mine or not isinstance(key, str):
                    continue
                owners = {name: model for name, model in _STEP_MODELS.items() if key in _field_names(model)}
                kind = data.get("kind", DEFAULT_KIND)
                if owners and all(model.computes for model in owners.values()):
                    raise field_error(key, f"a {kind} step has no {key}: its value comes from the {cls.value_from}")
                if owners:
                    which = " or ".join(sorted(owners))
                    raise field_error(key, f"{key} applies only to kind {which}, and this step is of kind {kind}")
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Step:
        if self.type == "one_of" and not self.choices:
            raise field_error("type", "'one_of' needs 'choices' (the allowed values)")
        if self.type == "decimal" and self.scale is None:
            raise field_error("type", "'decimal' needs 'scale' (the number of places)")
        # every rule a file states is enforced, or the file is refused: these would be ignored
        if self.choices is not None and self.type != "one_of" and not self.choices_per_item:
            raise field_error("choices", f"choices apply only to type one_of, and this step is of type {self.type}")
        if "rounding" in self.model_fields_set and self.scale is None:
            raise field_error("rounding", "rounding applies only with scale (the decimal places to round to)")
        if self.scale is not None and self.type not in ("decimal", "number"):
            raise field_error("scale", f"scale applies only to type decimal or number, and this step is of type {self.type}")
        return self

    @property
    def expression(self) -> str | None:
        """The step's expected-value expression shown to the model (a computed kind's ``expr``), else ``None``."""
        return None

    def expressions(self) -> list[tuple[str, str | None]]:
        """``(field, source)`` of every expression the step states (``check``; ``expr``, ``args.sku`` where the kind has them)."""
        return [("check", self.check)]

    def text_inputs(self) -> tuple[str, ...]:
        """The string inputs the step reads as whole texts (an extract's ``source``); ``()`` for none."""
        return ()

    def tools_needed(self) -> frozenset[str]:
        """The names of the tools the step calls (checked before any request); none here."""
        return frozenset()

    def problems(self, inputs: Sequence[InputSpec]) -> list[tuple[str, str]]:
        """What this step states that a procedure with these ``inputs`` cannot satisfy, as ``(field, message)``."""
        out: list[tuple[str, str]] = []
        for name in self.text_inputs():
            spec = next((x for x in inputs if x.name == name), None)
            if spec is None:
                out.append(("source", f"source {name!r} is not an input of this procedure"))
            elif spec.type != "string":
                out.append(("source", f"source {name!r} must be an input of type string, not {spec.type}"))
        if not self.computes and self.check is not None and _is_expected_check(self.check):
            out.append(("check", f"a {self.kind} step's check must be a predicate over value "
                        "(its value is not computed by an expression)"))
        return out


def _field_names(model: type[BaseModel]) -> set[str]:
    return set(model.model_fields) | {f.alias for f in model.model_fields.values() if f.alias}


def _is_expected_check(check: str) -> bool:
    try:
        return "value" not in compile_expression(check).names
    except EvaluationError:
        return False


def _choice_problems(tree: ast.AST, choices_of: Mapping[str, tuple[str, ...]]) -> list[str]:
    """Comparisons of a ``one_of`` name with text that is none of its choices (``zone == 'eu'`` where
    the choices are ``EU, US``): such a comparison is never true, so its branch is dead and every run
    takes the other one, verified. ``==``, ``!=``, ``in`` and ``not in`` (a tuple, list or set of texts)."""
    out: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for op, a, b in zip(node.ops, sides[:-1], sides[1:], strict=True):
            for name, other in ((a, b), (b, a)):
                if not isinstance(name, ast.Name) or name.id not in choices_of:
                    continue
                if isinstance(op, (ast.Eq, ast.NotEq)):
                    texts = [other]
                elif isinstance(op, (ast.In, ast.NotIn)) and other is b and isinstance(other, (ast.Tuple, ast.List, ast.Set)):
                    texts = list(other.elts)
                else:
                    continue
                choices = choices_of[name.id]
                for t in texts:
                    if isinstance(t, ast.Constant) and isinstance(t.value, str) and t.value not in choices:
                        from stepguard.procedure._values import did_you_mean

                        hint = did_you_mean(t.value, choices) or next(
                            (f" (did you mean {c!r}?)" for c in choices if c.lower() == t.value.lower()), "")
                        out.append(f"compares {name.id!r} with {t.value!r}, which is none of its choices ({', '.join(choices)}): "
                                   f"that comparison is never true{hint}")
    return out


class Procedure(BaseModel):
    """A multi-step procedure: a name, declared inputs, ordered steps.

    Validation (errors name the step and field, e.g. ``steps[4].expr``): at least one step;
    no duplicate variable; no variable shadowing an input; every expression is accepted by the
    safe evaluator and reads only inputs and variables defined by earlier steps.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field("procedure", max_length=200, description="Procedure name (used in traces and reports).")
    description: str | None = Field(None, max_length=20_000, description="What the procedure computes.")
    inputs: tuple[InputSpec, ...] = Field(
        (), max_length=1000,
        description="Declared inputs: a mapping of name to type or to {type, description}, or a list of names or InputSpec objects.",
    )
    steps: tuple[Step, ...] = Field(description="Ordered steps.", max_length=100_000, json_schema_extra={"minItems": 1})
    answer: str | None = Field(None, description="Variable holding the final answer; default: the last step's.")
    accept_bounded: tuple[str, ...] = Field(
        (), max_length=100_000,
        description="Steps whose value counts as verified on a predicate or format check alone (grade bounded or "
                    "free_text); without it such a value makes the run's status bounded (docs/concepts.md, Grades).",
    )
    execute: Execute = Field("model", description="Who computes the steps that do not say: model (the default), or evaluator "
                             "(every step with an expr computed by the guard, graded computed; the others asked).")
    _written_from: dict[str, tuple[str, ...]] = PrivateAttr(default_factory=dict)
    """``{var: earlier variables}``: the steps whose values a derived sub-step's literals were written
    from (:meth:`written_from`); empty for a procedure from a file."""

    @field_validator("inputs", mode="before", json_schema_input_type=_InputsForms)
    @classmethod
    def _inputs(cls, v: Any) -> Any:
        if isinstance(v, Mapping):  # {"x": "integer"} or {"x": {...}}
            return [{"name": k, **(t if isinstance(t, Mapping) else {"type": t})} for k, t in v.items()]
        if isinstance(v, (list, tuple)):
            return [{"name": i} if isinstance(i, str) else i for i in v]
        return v

    @model_validator(mode="after")
    def _validate(self) -> Procedure:
        """Every problem of the procedure, in file order (inputs, then each step, then ``answer`` and
        ``accept_bounded``), raised together as one :class:`ProcedureError`."""
        if not self.steps:
            raise field_error("steps", "a procedure needs at least one step")
        problems: list[tuple[str, str]] = []  # (location, message): every problem, not only the first
        known: set[str] = set()
        choices_of: dict[str, tuple[str, ...]] = {}  # one_of names so far -> their choices
        problems.extend(self._input_problems(known, choices_of))
        inputs = frozenset(known)
        for i, step in enumerate(self.steps):
            if step.var in known:
                what = "an input" if step.var in inputs else "an earlier step"
                problems.append((f"steps[{i}].var", f"variable {step.var!r} is already defined by {what}"))
            problems.extend(self._kind_problems(i, step, inputs, known))
            if step.execute == "evaluator" and step.expression is None:
                problems.append((f"steps[{i}].execute ({step.var})", f"execute: evaluator computes a step's expr, and this {step.kind} "
                                 "step has none: the model must give its value"))
            problems.extend(self._expression_problems(i, step, known, choices_of))
            known.add(step.var)
            if step.type == "one_of" and step.choices is not None:
                choices_of[step.var] = step.choices
        problems.extend(self._answer_problems(known - inputs))
        problems.extend(self._accept_problems(known - inputs))
        if problems:
            raise procedure_error(problems)
        return self

    def _input_problems(self, known: set[str], choices_of: dict[str, tuple[str, ...]]) -> list[tuple[str, str]]:
        """Inputs named twice; adds each input's name to ``known`` and a one_of input's choices to ``choices_of``."""
        problems: list[tuple[str, str]] = []
        for i, inp in enumerate(self.inputs):
            if inp.name in known:
                problems.append((f"inputs[{i}].name", f"duplicate input {inp.name!r}"))
            known.add(inp.name)
            if inp.choices is not None:
                choices_of[inp.name] = inp.choices
        return problems

    def _expression_problems(self, i: int, step: Step, known: set[str],
                             choices_of: Mapping[str, tuple[str, ...]]) -> list[tuple[str, str]]:
        """Each expression of step ``i``, in the step's order: one that does not compile; a one_of name
        compared with no choice of its own; a name that is no input or earlier variable (``value``
        allowed in a check)."""
        problems: list[tuple[str, str]] = []
        for field, src in step.expressions():
            if src is None:
                continue
            try:
                compiled = compile_expression(src)
                _fold_constants(compiled)
            except EvaluationError as exc:
                problems.append((f"steps[{i}].{field} ({step.var})", str(exc)))
                continue
            is_check = field == "check" or field.endswith(".check")
            allowed = known | {"value"} if is_check else known
            own = {"value": step.choices} if is_check and step.choices is not None and step.type == "one_of" else {}
            problems.extend((f"steps[{i}].{field} ({step.var})", m) for m in _choice_problems(compiled.tree, {**choices_of, **own}))
            problems.extend((f"steps[{i}].{field} ({step.var})", m) for m in self._unknown_names(i, compiled.names, allowed, is_check))
        return problems

    def _unknown_names(self, i: int, names: Sequence[str], allowed: set[str], is_check: bool) -> list[str]:
        """What is wrong with each of ``names`` (read by step ``i``) not in ``allowed``: the step's own
        variable (outside a check), a later step's, or no variable."""
        out: list[str] = []
        own = self.steps[i].var
        for name in names:
            if name not in allowed:
                later = any(s.var == name for s in self.steps[i + 1:])
                why = ("is this step's own variable: a step cannot read its own value (to state a condition "
                       "on the model's value, write a check over value)" if name == own and not is_check
                       else "is defined by a later step" if later
                       else "is not an input or an earlier variable")
                out.append(f"reads {name!r}, which {why}")
        return out

    def _answer_problems(self, variables: set[str]) -> list[tuple[str, str]]:
        """An ``answer`` that is no step's variable (with the closest one)."""
        if self.answer is None or self.answer in variables:
            return []
        from stepguard.procedure._values import did_you_mean

        hint = did_you_mean(self.answer, [s.var for s in self.steps])
        return [("answer", f"answer {self.answer!r} is not a step variable{hint}")]

    def _accept_problems(self, variables: set[str]) -> list[tuple[str, str]]:
        """``accept_bounded`` names that are no step's variable, or named twice."""
        from stepguard.procedure._values import did_you_mean

        out: list[tuple[str, str]] = []
        seen: set[str] = set()
        for i, name in enumerate(self.accept_bounded):
            if name not in variables:
                hint = did_you_mean(name, [s.var for s in self.steps])
                out.append((f"accept_bounded[{i}]", f"{name!r} is not a step variable{hint}"))
            elif name in seen:
                out.append((f"accept_bounded[{i}]", f"{name!r} is named twice"))
            seen.add(name)
        return out

    def _kind_problems(self, i: int, step: Step, inputs: frozenset[str], known: set[str]) -> list[tuple[str, str]]:
        """What a step of a kind states that this procedure cannot satisfy (:meth:`Step.problems`)."""
        return [(f"steps[{i}].{field} ({step.var})", message) for field, message in step.problems(self.inputs)]

    @property
    def answer_var(self) -> str:
        """The variable holding the final answer (``answer`` or the last step's ``var``)."""
        return self.answer or self.steps[-1].var

    @cached_property
    def variables(self) -> tuple[str, ...]:
        """Step variables, in order."""
        return tuple(s.var for s in self.steps)

    @cached_property
    def index_of(self) -> dict[str, int]:
        """``{var: 0-based step index}``."""
        return {s.var: i for i, s in enumerate(self.steps)}

    @cached_property
    def evaluated(self) -> tuple[bool, ...]:
        """Per step: True when the guard computes its value instead of asking the model (``execute:
        evaluator`` on the step, or on the procedure for a step with an ``expr`` that does not say)."""
        return tuple(s.execute == "evaluator" if "execute" in s.model_fields_set or s.expression is None
                     else self.execute == "evaluator" for s in self.steps)

    @cached_property
    def compiled(self) -> tuple[CompiledExpression | None, ...]:
        """Each step's compiled ``expr`` (``None`` where the step has none), compiled once."""
        return tuple(compile_expression(s.expression) if s.expression is not None else None for s in self.steps)

    @cached_property
    def compiled_checks(self) -> tuple[CompiledExpression | None, ...]:
        """Each step's compiled ``check`` predicate (``None`` where absent)."""
        return tuple(compile_expression(s.check) if s.check is not None else None for s in self.steps)

    @cached_property
    def check_is_expected(self) -> tuple[bool, ...]:
        """Per step: True when its ``check`` is an expected-value expression (it does not mention ``value``)."""
        return tuple(c is not None and "value" not in c.names for c in self.compiled_checks)

    def reads(self, index: int) -> tuple[str, ...]:
        """Names (inputs and variables) step ``index`` (0-based) reads in ``expr`` and ``check``."""
        return self._reads[index]

    def after(self, index: int) -> tuple[str, ...]:
        """Earlier variables whose values step ``index`` (0-based) was written from without reading them
        by name: a derived sub-step's literals (a carry ``d3 = 8 + 5`` is written from ``d1`` and ``d2``).
        A chunk that shows the step never holds them (``GuardConfig.chunk_by``); empty for a procedure from a file."""
        return self._written_from.get(self.steps[index].var, ())

    def written_from(self, after: Mapping[str, Sequence[str]]) -> Procedure:
        """This procedure, its steps ``{var: earlier variables}`` marked as written from those values (:meth:`after`).

        Raises:
            ValueError: a name that is no step, or a step marked as written from itself or a later one.
        """
        for var, names in after.items():
            if var not in self.index_of or any(self.index_of.get(n, len(self.steps)) >= self.index_of[var] for n in names):
                raise ValueError(f"written_from: step {var!r} can be written only from earlier steps, not {list(names)}")
        out = self.model_copy()
        out._written_from = {var: tuple(names) for var, names in after.items() if names}
        return out

    def written_apart(self, start: int, most: int) -> int:
        """How many consecutive steps from ``start`` (0-based), at most ``most`` (at least 1), hold none
        written from another of them (:meth:`after`): a call that asks them shows no step a literal that is
        the value of another it asks. Reading by name is allowed (the model writes that value itself)."""
        return self._apart(start, most, by_name=False)

    def independent(self, start: int, most: int) -> int:
        """How many consecutive steps from ``start`` (0-based), at most ``most`` (at least 1), read no step
        among them, by name (:meth:`reads`) or by value (:meth:`after`): every value each reads is one
        committed before them."""
        return self._apart(start, most, by_name=True)

    def _apart(self, start: int, most: int, *, by_name: bool) -> int:
        inside: set[str] = set()
        for k in range(start, min(len(self.steps), start + max(1, most))):
            if k > start and inside & {*(self.reads(k) if by_name else ()), *self.after(k)}:
                return k - start
            inside.add(self.steps[k].var)
        return max(1, min(most, len(self.steps) - start))

    @cached_property
    def _reads(self) -> tuple[tuple[str, ...], ...]:
        out = []
        for step, expr, check in zip(self.steps, self.compiled, self.compiled_checks, strict=True):
            names: list[str] = []
            others = [compile_expression(src) for f, src in step.expressions() if f not in ("expr", "check") and src is not None]
            for c in (expr, check, *others):
                if c is not None:
                    names.extend(n for n in c.names if n != "value" and n not in names)
            names.extend(n for n in step.text_inputs() if n not in names)
            out.append(tuple(names))
        return tuple(out)

    def bind_inputs(self, inputs: Mapping[str, Any]) -> dict[str, Number | str]:
        """Check and convert input values to exact numbers.

        Raises:
            ProcedureError: a declared input is missing, or an undeclared one is given, or a value is not a number.
        """
        from stepguard.procedure._values import check_input_names, coerce_value

        declared = {i.name: i for i in self.inputs}
        check_input_names(declared, inputs, f"procedure {self.name!r}")  # with "did you mean" for a misspelt name

        bound = {n: coerce_value(v, declared[n].type, f"inputs.{n}") for n, v in inputs.items()}
        for n, value in bound.items():
            choices = declared[n].choices
            if choices is not None and value not in choices:
                raise ProcedureError(f"got {value!r}, not one of {', '.join(choices)}", f"inputs.{n}")
        return bound

    def expected_value(self, index: int, env: Mapping[str, Any]) -> Number | str | None:
        """The evaluator's value of step ``index`` (0-based) given ``env``, rounded per ``scale``/``rounding``.

        Every expected value the step states is enforced: its ``expr`` and its expected-value
        ``check`` (one that does not mention ``value``). Where it states both they must agree;
        ``None`` when it states neither (the model's value is then checked by type and predicate).

        Raises:
            EvaluationError: an expression fails on these values (division by zero, a missing
                name), or ``expr`` and the expected-value ``check`` give different values (the
                step contradicts itself: no value could pass both; the message gives both).
        """

        step = self.steps[index]
        found: list[tuple[str, Number | str]] = []
        check = self.compiled_checks[index] if self.check_is_expected[index] else None
        for field, c in (("expr", self.compiled[index]), ("check", check)):
            if c is not None:
                value = c.evaluate(env)
                found.append((field, value if isinstance(value, str) else apply_scale(normalize(value), step)))
        if not found:
            return None
        if len(found) == 2 and not _same(found[0][1], found[1][1]):
            raise EvaluationError(
                f"step {step.var} contradicts itself: its expr {step.expression!r} gives {_show(found[0][1])} "
                f"but its check {step.check!r} gives {_show(found[1][1])}, so no value can pass both"
            )
        value = found[0][1]
        _check_type(step, value, found[0][0])
        predicate = self.compiled_checks[index] if check is None else None
        if predicate is not None and predicate.evaluate({**env, "value": value}) is not True:
            raise CheckIsFalse(step, value, reads_values=any(n in env for n in self.reads(index)))
        return value

    def expected_values(self, inputs: Mapping[str, Any], *, writable: bool = True) -> dict[str, Number | str]:
        """Evaluate every step with an expected value (in order) and return ``{var: value}``.

        A step's expected value is its ``expr`` and its ``check`` when that does not mention
        ``value`` (both enforced: see :meth:`expected_value`); both are rounded per
        ``scale``/``rounding``. Other steps are left out (their value is the model's, checked by
        a predicate), and so is every later step that reads one.

        Returns:
            ``{var: value}``, numbers exact as the evaluator holds them: ``int`` or ``Fraction``
            (``Fraction(523, 5)`` for a 2-place ``104.60``: no trailing zeros), where a
            :class:`~stepguard.guard.GuardResult` gives ``Decimal("104.60")``; compare as numbers
            (``Fraction(decimal) == fraction`` is exact).

        Raises:
            ProcedureError: bad inputs (named ``inputs`` where a check is false for every value they
                allow a step), a step fails to evaluate or contradicts itself, or a step without a
                ``scale`` gets a value with no finite decimal form (``1/3``: no model can write it; names the
                step), unless ``writable`` is False: a rung's derived sub-procedure, whose endless intermediate
                values are carried exactly and never asked as written.
        """
        env: dict[str, Any] = self.bind_inputs(inputs)
        out: dict[str, Number | str] = {}
        for i, step in enumerate(self.steps):
            check = self.compiled_checks[i] if self.check_is_expected[i] else None
            stated = [c for c in (self.compiled[i], check) if c is not None]
            if not stated or any(n not in env for c in stated for n in c.names):
                continue
            try:
                value = self.expected_value(i, env)
            except CheckIsFalse as exc:
                given = ", ".join(f"{n} = {_show(env[n])}" for n in self._inputs_of(i) if n in env)
                if not given:  # it reads no input: the procedure itself is at fault
                    raise ProcedureError(str(exc), f"steps[{i}] ({step.var})") from None
                raise ProcedureError(
                    f"{given} give step {step.var} no value that passes its check: its expr {step.expression!r} "
                    f"gives {_show(exc.value)}, for which its check {step.check!r} is false; check the inputs",
                    "inputs") from None
            except EvaluationError as exc:
                raise ProcedureError(str(exc), f"steps[{i}] ({step.var})") from None
            if writable and isinstance(value, Fraction) and step.scale is None and not _finite_decimal(value):
                source = step.expression or step.check
                raise ProcedureError(
                    f"its {'expr' if step.expression else 'check'} {source!r} gives {_show(value)} on these inputs, "
                    "which has no finite decimal form, so no model can write it as a value: declare type: decimal "
                    f"with a scale (scale: 2: the guard rounds it) or round it in the expression (round({source}, 2))",
                    f"steps[{i}] ({step.var})")
            if value is not None:
                out[step.var] = env[step.var] = value
        return out

    def _inputs_of(self, index: int) -> list[str]:
        """The inputs step ``index`` reads, directly or through the steps it reads, in declaration order."""
        inputs = {i.name for i in self.inputs}
        found: set[str] = set()
        todo = [index]
        while todo:
            for name in self.reads(todo.pop()):
                if name in inputs:
                    found.add(name)
                elif name in self.index_of and name not in found:
                    found.add(name)
                    todo.append(self.index_of[name])
        return [i.name for i in self.inputs if i.name in found]


class CheckIsFalse(EvaluationError):
    """A step's check (a predicate on ``value``) is false for the value its ``expr`` gives.

    Where the step reads values (inputs, earlier steps), the cause is those values, not the step: the
    message says so; where it reads none, the step contradicts itself.

    Attributes:
        step: the step.
        value: the value its ``expr`` gives.
    """

    def __init__(self, step: Step, value: Number | str, *, reads_values: bool) -> None:
        self.step, self.value = step, value
        if reads_values:
            message = (f"step {step.var}: its check {step.check!r} is false for the value its expr {step.expression!r} "
                       f"gives ({_show(value)}) on the values it reads")
        else:
            message = (f"step {step.var} contradicts itself: its check {step.check!r} is false for the value its "
                       f"expr {step.expression!r} gives ({_show(value)}), so no value can pass both")
        super().__init__(message)


def _check_type(step: Step, value: Number | str, field: str = "expr") -> None:
    """Refuse an expected value that the step's declared type cannot hold (never round it silently).

    ``field`` is where the value came from: ``expr``, or ``check`` (an expected-value check, one
    that does not mention ``value``); the message names that field, never one the step lacks.

    Raises:
        EvaluationError: names the step, its type, the field and the value, and what to declare instead.
    """
    numeric = not isinstance(value, (bool, str))
    ok = {
        "integer": numeric and isinstance(value, int),
        "boolean": isinstance(value, bool),
        "string": isinstance(value, str),
        "one_of": isinstance(value, str) and value in (step.choices or ()),
    }.get(step.type, numeric)
    if not ok:
        where = "expression" if field == "expr" else "check"
        hint = {
            "integer": f"; round it in the {where} (round(...)) or declare type decimal with a scale",
            "one_of": f" (choices: {', '.join(step.choices or ())})",
        }.get(step.type, "")
        source = step.expression if field == "expr" else step.check
        if field == "check" and isinstance(value, bool) and step.type != "boolean":
            hint = ("; a check that does not mention value is the step's expected value (hidden from the model), "
                    "so this one asks for true or false: to state a condition the model's value must meet, "
                    "write it over value (such as value > 0)")
        raise EvaluationError(f"step {step.var} is declared {step.type}, but its {field} gives {_show(value)} "
                              f"on these inputs ({field}: {source!r}){hint}")


def _finite_decimal(value: Fraction) -> bool:
    """Whether a fraction has a finite decimal form (its reduced denominator has no prime factor but 2 and 5)."""
    d = value.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    return d == 1


def _same(a: Number | str, b: Number | str) -> bool:
    return a == b and isinstance(a, bool) == isinstance(b, bool) and isinstance(a, str) == isinstance(b, str)


def _show(value: Number | str) -> str:
    return value if isinstance(value, str) else format_number(value)


def apply_scale(value: Number | str, step: Step) -> Number | str:
    """Round ``value`` per the step's ``scale``/``rounding`` when the step has a scale.

    An integer step is never rounded here: a non-integer expected value for it is refused
    (:meth:`stepguard.procedure.Procedure.expected_value`), since no rule for it is stated.
    """
    if step.scale is not None and not isinstance(value, (str, bool)):
        return round_to_scale(value, step.scale, step.rounding)
    return value


_STEP_MODELS: dict[str, type[Step]] = {}
"""The step models procedures are validated against, by kind name (set by :func:`use_step_models`)."""


def step_models() -> Mapping[str, type[Step]]:
    """The step models procedures are validated against now, by kind name (``compute`` -> :class:`ComputeStep`)."""
    return types.MappingProxyType(_STEP_MODELS)


def use_step_models(models: Mapping[str, type[Step]]) -> None:
    """Validate every procedure's steps as the union of ``models`` (kind name -> step model),
    told apart by ``kind`` (default ``compute``): what :func:`stepguard.kinds.register_kind` calls.
    Until it is first called, a procedure's steps are validated as the built-in kinds' models.

    Raises:
        ProcedureError: a model is not a :class:`Step` subclass.
    """
    from pydantic import Discriminator, Tag

    for name, model in models.items():
        if not (isinstance(model, type) and issubclass(model, Step)):
            raise ProcedureError(f"step kind {name!r}: its step model must subclass stepguard.procedure.Step")
    if dict(models) == _STEP_MODELS:
        return  # the same models: nothing to rebuild
    _STEP_MODELS.clear()
    _STEP_MODELS.update(models)
    names = ", ".join(sorted(models))

    def kind_of(value: Any) -> str | None:
        kind = value.get("kind", DEFAULT_KIND) if isinstance(value, Mapping) else getattr(value, "kind", None)
        return kind if isinstance(kind, str) and kind in models else None

    # built at run time from the registry: typing's forms called as values, which type checkers do not read as types
    members = tuple(Annotated[model, Tag(name)] for name, model in models.items())
    either: Any = Union.__getitem__(members)
    discriminator = Discriminator(kind_of, custom_error_type="step_kind", custom_error_message=f"not a step kind (kinds: {names})")
    # a union needs two members; with one, the member and the tag check of its Literal kind
    union = Annotated[either, discriminator] if len(members) > 1 else next(iter(models.values()))
    steps_type: Any = types.GenericAlias(tuple, (union, ...))  # tuple[union, ...]
    Procedure.model_fields["steps"].annotation = steps_type
    Procedure.model_rebuild(force=True)
