"""What a guarded run returns: values, per-step provenance, deviations, usage. Serializable to JSON.

Values keep the type the procedure declares for their step (:data:`StepValue`): ``int`` for
``integer``, :class:`~decimal.Decimal` at the step's ``scale`` for ``decimal`` (``1221.00``, never
``1221``), ``bool`` for ``boolean``, ``str`` for ``string`` and ``one_of``; a ``number`` step gives
an ``int`` or an exact ``Decimal``. In JSON a Decimal is text that keeps its places (``"1221.00"``),
and :meth:`GuardResult.model_validate_json` reads it back as the same Decimal.

A step whose kind commits a list or a JSON value (a text step's ``format: list`` or ``json``, by the
kind's :meth:`~stepguard.kinds.Kind.result_shape`) holds it as what it is: a ``list`` of strings, or
the JSON value (an object as a ``dict``, an array as a ``list``, a whole number as ``int``, any
other number as the exact ``Decimal`` the model wrote, never a ``float``). In the result's JSON it is
that array or JSON value, a non-integer number written as a JSON number with the model's digits
(``2.50`` stays ``2.50``, ``1E+2`` stays ``1E+2``): :meth:`GuardResult.model_dump_json` writes it so and
:meth:`GuardResult.model_validate_json` reads it back as the same ``Decimal`` (pydantic's own JSON
writer and reader would hold it as text or as a binary float). In ``model_dump(mode="json")`` such a
number is that ``Decimal``, so the data reads back exactly through ``model_validate``; a writer for
it must write a ``Decimal`` as a number (:func:`stepguard.procedure.json_text` does).
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any, Literal, Self, TypeAlias, cast, get_args

from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, field_serializer, model_serializer, model_validator

from stepguard.errors import EvaluationError
from stepguard.evaluator import format_number, parse_number
from stepguard.kinds import ACCEPTABLE_GRADES, StepContext, bounded_steps, kind_of
from stepguard.model import Usage
from stepguard.procedure import Procedure, Step, ValueShape, ValueType, json_text
from stepguard.verify import Deviation, DeviationKind

__all__ = [
    "DeviationEvent", "Grade", "GuardResult", "Provenance", "StepOutcome", "StepValue", "UsageTotals",
    "bounded_steps", "committed_value", "grade_of", "outcome", "provenance_grade", "run_status", "typed_value", "value_text",
]

StepValue: TypeAlias = Decimal | int | bool | str | Fraction | list[Any] | dict[str, Any]
"""A step's value in Python, by the step's declared ``type`` (and its :data:`~stepguard.procedure.ValueShape`):

- ``integer``: ``int``; ``decimal``: ``Decimal`` with exactly ``scale`` places (``Decimal('1221.00')``);
- ``number``: ``int`` when whole, else an exact ``Decimal`` (``Decimal('12.5')``);
- ``boolean``: ``bool``; ``string`` and ``one_of``: ``str``;
- shape ``list``: a ``list`` of ``str``; shape ``json``: the JSON value (``dict``, ``list``, ``str``,
  ``int``, an exact ``Decimal`` for any other number, ``bool`` or ``None``).

Values are never rounded here. A value the guard did not verify (``flagged``) that does not fit its
type keeps its exact form: more places than ``scale`` stay (``Decimal('5.005')``), a non-number stays
``str``, and a number with no finite decimal form (``1/3``, only possible for ``number`` steps) is a
``Fraction``.
"""

_NUMERIC = ("integer", "decimal", "number")
_FRACTION = re.compile(r"(-?[0-9]{1,400})/([0-9]{1,400})")


def committed_value(text: str | None, shape: ValueShape = "scalar") -> Any:
    """A committed value's text as the result holds it before typing: the text itself for a
    ``scalar`` (:func:`typed_value` types it), the JSON it writes for a ``list`` or ``json`` shape,
    its numbers exact (``2.50`` as ``Decimal('2.50')``). Text that does not read as JSON (a flagged
    reply) stays the text."""
    if text is None or shape == "scalar":
        return text
    try:
        return json.loads(text, parse_float=Decimal)
    except ValueError:
        return text


def _json_exact(value: Any) -> Any:
    """A JSON value with every number exact: a ``float`` (given by a caller) as the ``Decimal`` of its
    shortest text, a tuple as a list.

    Raises:
        ValueError: a number that is not finite, a key that is not a string, a value that is not JSON.
    """
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        value = Decimal(repr(value))
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise ValueError(f"{value} is not a JSON number")
        return value
    if isinstance(value, (list, tuple)):
        return [_json_exact(v) for v in value]
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return {k: _json_exact(v) for k, v in value.items()}
    raise ValueError(f"a {type(value).__name__} is not a JSON value")


def shaped_value(value: Any, shape: ValueShape, type_: str = "number", scale: int | None = None) -> StepValue | None:
    """A step's value as :data:`StepValue`: a ``scalar`` typed by :func:`typed_value`; a ``list`` or
    ``json`` value (as :func:`committed_value` reads it) with its numbers exact (:func:`_json_exact`).
    A list-shaped value that is not a list of strings (a flagged reply's text) is kept as its text.

    Raises:
        ValueError: a ``json`` value that is not JSON (a non-finite number, a key that is not a string).
    """
    if shape == "scalar":
        return typed_value(value, type_, scale)
    if shape == "list" and not (isinstance(value, (list, tuple)) and all(isinstance(x, str) for x in value)):
        return value if value is None or isinstance(value, str) else json_text(value)
    out: StepValue | None = _json_exact(value)
    return out


def _exact_decimal(value: int | Fraction) -> Decimal | None:
    """``value`` as a Decimal with no rounding, or None when it has no finite decimal form."""
    frac = Fraction(value)
    text = format_number(frac)
    return None if "/" in text else Decimal(text)


def typed_value(value: Any, type_: str = "number", scale: int | None = None) -> StepValue | None:
    """Give a committed value (text as the guard stores it, or a Python value) its declared type.

    Args:
        value: ``None``, value text (``"1221"``, ``"12.5"``, ``"true"``, ``"gold"``, ``"1/3"``) or a
            value already typed (``int``, ``Decimal``, ``Fraction``, ``bool``, ``str``).
        type_: the step's declared :data:`stepguard.procedure.ValueType`.
        scale: the step's ``scale`` (decimal places), or None.

    Returns:
        The value as :data:`StepValue` (see there), or None for None. Never rounded: a number is read
        exactly or, when it is not a number at all, kept as the text the model wrote.
    """
    if value is None:
        return None
    if type_ in ("string", "one_of"):
        return value if isinstance(value, str) else value_text(value)
    if type_ == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
        return value if isinstance(value, str) else value_text(value)
    if isinstance(value, bool):
        return value  # a flagged boolean for a numeric step: kept as written
    try:
        if isinstance(value, str):
            fraction = _FRACTION.fullmatch(value.strip())  # "1/3": how the guard writes a non-decimal exact value
            number: int | Fraction = Fraction(int(fraction[1]), int(fraction[2])) if fraction else parse_number(value)
        else:
            number = Fraction(value)
    except (EvaluationError, ValueError, TypeError, ZeroDivisionError):
        return value if isinstance(value, str) else str(value)
    if type(number) is not int and Fraction(number).denominator == 1:
        number = int(Fraction(number))
    if type_ == "decimal" or (type(number) is not int and type_ in _NUMERIC):
        dec = _exact_decimal(number)
        if dec is None:
            return Fraction(number)
        exponent = dec.as_tuple().exponent  # an int: _exact_decimal gives finite decimals only
        if scale is not None and isinstance(exponent, int) and -exponent < scale:
            dec = dec.quantize(Decimal(1).scaleb(-scale))  # adds zeros only: fewer places than scale
        return dec
    return int(number)


def value_text(value: StepValue | None) -> str | None:
    """A value as the CLI and prompts show it: ``1221.00``, ``-3``, ``true``, ``1/3``, a string as is,
    a list or JSON object as compact JSON (``["red", "blue"]``, numbers as written)."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (list, dict)):
        return json_text(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, Decimal):
        return format(value, "f")
    return format_number(value)


def input_text(value: Any, places: int | None = None) -> str | bool:
    """An input as the caller wrote it, for results: a boolean stays a boolean (JSON ``true``), a
    number keeps the places it was written with (``places``, from
    :func:`stepguard.tools.input_places`: ``50.00``, not ``50``), a string is as given."""
    if isinstance(value, bool) or isinstance(value, str):
        return value
    if places is not None and not isinstance(value, (list, tuple, dict)):
        from stepguard.tools import as_decimal

        fixed = as_decimal(value, places)
        if fixed is not None:
            return format(fixed, "f")
    if isinstance(value, Decimal):
        return format(value, "f")
    return format_number(value) if isinstance(value, (int, Fraction)) else str(value)


Provenance = Literal["model_verified", "repaired", "flagged", "unverifiable", "missing", "tool", "computed"]
"""Where a step's value came from.

- ``model_verified``: the model wrote it and its check passed (``reprompts`` says after how many re-prompts); how
  strong that check was is the step's :data:`Grade` (``exact``: the evaluator computed the same value;
  ``bounded``: only a predicate held).
- ``repaired``: the guard supplied the evaluator's value (``repair`` policy or ``on_exhausted``): never the model's.
- ``flagged``: the model's value, kept unverified in shadow mode or after a spent budget with ``flag``.
- ``unverifiable``: the model's value for a step with neither ``expr`` nor ``check``, checked for presence, order and
  type only; the run's status is then ``flagged``, never ``verified``.
- ``missing``: no value (the run stopped before this step).
- ``tool``: a tool step's value: the result of its tool, called once with arguments that every check passed.
- ``computed``: the evaluator computed it itself (``execute: evaluator``); the model was never asked, and the
  value is never counted as the model's.
"""


Grade = Literal["exact", "computed", "bounded", "matched", "tool", "free_text", "unchecked", "repaired", "flagged"]
"""How strong the check of a committed value was (docs/concepts.md, "Grades").

- ``exact``: the model wrote it and the evaluator computed the same value (a compute step's ``expr``, or a
  ``check`` that names no ``value``: an expected-value expression).
- ``computed``: the evaluator computed it itself, the model's value unused (``execute: evaluator``, provenance ``computed``).
- ``bounded``: only a predicate held (a ``check`` over ``value``, ``0 <= value <= subtotal``): any value in
  range passes, so the run is ``verified`` only when the procedure names the step in ``accept_bounded``.
- ``matched``: an extract step's value, found whole in its source (after its label).
- ``tool``: a tool step's value, its tool's result for arguments that every check passed.
- ``free_text``: a text step's value, checked for its format only (length, pattern, choices, schema, predicate);
  accepted like ``bounded`` only when named in ``accept_bounded``.
- ``unchecked``: the model's value for a step with neither ``expr`` nor ``check`` (provenance ``unverifiable``):
  presence, order and type only; the run is ``flagged``.
- ``repaired``: the guard supplied the evaluator's value; the run is ``repaired``.
- ``flagged``: the model's value, kept unverified; the run is ``flagged``.

A step with no value (provenance ``missing``) has no grade (``None``).
"""

_GRADES: tuple[str, ...] = get_args(Grade)

RunStatus = Literal["verified", "bounded", "repaired", "flagged", "failed"]
"""A run's status (:attr:`GuardResult.status`; :func:`run_status` decides it)."""

STRONG_GRADES: frozenset[str] = frozenset({"exact", "computed", "matched", "tool"})
"""The grades a ``verified`` run may hold without an opt-in: the value is the one the guard knows is right."""


_GRADE_OF_PROVENANCE: dict[str, Grade | None] = {
    "repaired": "repaired", "flagged": "flagged", "unverifiable": "unchecked", "missing": None, "tool": "tool",
    "model_verified": "exact", "computed": "computed",
}
"""A grade read from provenance alone: for a result written before grades existed. Such a result's
``model_verified`` is read as ``exact``, what it then claimed (every store written before grades holds
compute steps with an ``expr``: benchmarks/stores)."""


def provenance_grade(provenance: str) -> Grade | None:
    """The grade a value written before grades is read with, from its provenance alone: ``model_verified``
    as ``exact`` (what it claimed then), ``tool``, ``repaired`` and ``flagged`` as themselves,
    ``unverifiable`` as ``unchecked``, ``missing`` (or anything unknown) as None."""
    return _GRADE_OF_PROVENANCE.get(provenance)


def grade_of(procedure: Procedure, index: int, provenance: str) -> Grade | None:
    """The grade of step ``index``'s value committed with ``provenance``: the policy's (``repaired``,
    ``flagged``), ``unchecked`` for ``unverifiable``, ``None`` for ``missing``, else the step's kind's
    (:meth:`stepguard.kinds.Kind.grade`: the strength of the check that its verified values pass).

    Raises:
        ValueError: the kind gives a grade that is not a :data:`Grade`.
    """
    if provenance in ("model_verified", "tool"):
        grade = kind_of(procedure.steps[index]).grade(StepContext(procedure, index))
        if grade not in _GRADES:
            raise ValueError(f"step kind {procedure.steps[index].kind!r} gives grade {grade!r}, not one of {', '.join(_GRADES)}")
        return cast(Grade, grade)  # one of the Literal's values: checked above
    return provenance_grade(provenance)


def run_status(steps: Sequence[StepOutcome], accept_bounded: Collection[str] = ()) -> RunStatus:
    """A run's status from its steps' provenance and grades (see :attr:`GuardResult.status`):
    ``failed`` with a step missing, else ``flagged`` with a flagged or unchecked value, else ``repaired``
    with a repaired one, else ``bounded`` with a ``bounded`` or ``free_text`` value of a step not named in
    ``accept_bounded`` (the procedure's opt-in), else ``verified``."""
    provenance = {s.provenance for s in steps}
    if "missing" in provenance:
        return "failed"
    if "flagged" in provenance or "unverifiable" in provenance:
        return "flagged"
    if "repaired" in provenance:
        return "repaired"
    if any(s.grade not in STRONG_GRADES and not (s.grade in ACCEPTABLE_GRADES and s.var in accept_bounded) for s in steps):
        return "bounded"
    return "verified"


def _scalar_json(value: StepValue | None) -> Any:
    """A scalar value in JSON: a Decimal keeps its places as text (``"1221.00"``), a Fraction is ``"1/3"``."""
    return value_text(value) if isinstance(value, (Decimal, Fraction)) else value


class _ExactJson(BaseModel):
    """A model whose JSON keeps a list or JSON value's numbers exact (see the module's docstring):
    ``model_dump(mode="json")`` holds them as ``Decimal``, ``model_dump_json`` writes them as the model
    wrote them, ``model_validate_json`` reads them back as ``Decimal``. Everything else is as pydantic
    writes it (a scalar's Decimal is already text by its field serializer)."""

    def model_dump(self, *, mode: Literal["json", "python"] | str = "python", **kwargs: Any) -> dict[str, Any]:
        """Pydantic's ``model_dump``; ``mode="json"`` is the Python dump, which holds JSON types only
        but for the exact ``Decimal`` numbers of a list or JSON value."""
        return super().model_dump(mode="python", **kwargs)

    def model_dump_json(self, *, indent: int | None = None, **kwargs: Any) -> str:
        """The JSON text (:func:`stepguard.procedure.json_text`: numbers exact); ``indent`` as pydantic's;
        other keyword arguments as :meth:`model_dump`'s."""
        kwargs.pop("ensure_ascii", None)
        return json_text(self.model_dump(mode="json", **kwargs), indent)

    @classmethod
    def model_validate_json(cls, json_data: str | bytes | bytearray, **kwargs: Any) -> Self:
        """Read JSON text as :meth:`model_dump_json` writes it: a non-integer number as its exact
        ``Decimal``; keyword arguments as ``model_validate``'s.

        Raises:
            pydantic.ValidationError: not JSON, or not a valid model.
        """
        try:
            data = json.loads(json_data, parse_float=Decimal)
        except ValueError:  # not JSON: pydantic's own reading names where
            return super().model_validate_json(json_data, **kwargs)
        return cls.model_validate(data, **kwargs)


class StepOutcome(_ExactJson):
    """One step's final state: its value, typed as the step declares (:data:`StepValue`), and where it came from."""

    var: str
    value: StepValue | None = Field(
        None, description="The committed value, typed by `type`/`scale` (Decimal('1221.00'), 42, True, 'gold'), or None."
    )
    type: ValueType = Field("number", description="The step's declared value type (procedure `type`).")
    scale: int | None = Field(None, description="The step's declared decimal places, or None.")
    shape: ValueShape = Field("scalar", description="scalar (typed by `type`), list (of strings) or json (a JSON value).")
    provenance: Provenance = "missing"
    grade: Grade | None = Field(
        None, description="How strong the check of the value was (exact, bounded, matched, tool, free_text, ...); "
                          "None for no value. A result written before grades: read from its provenance.")
    reprompts: int = Field(0, description="Re-prompts this step needed before it verified.")
    chunk: int | None = Field(None, description="0-based chunk (model call group) that committed it.")
    index: int | None = Field(None, description="0-based position of the step in the procedure.")

    @model_validator(mode="before")
    @classmethod
    def _grade_of_old_results(cls, data: Any) -> Any:
        """No ``grade`` given (a result written before grades, or built from provenance alone): the grade
        its provenance gives (``model_verified`` as ``exact``, what it claimed then; ``_GRADE_OF_PROVENANCE``)."""
        if isinstance(data, dict) and "grade" not in data:
            return {**data, "grade": provenance_grade(str(data.get("provenance", "missing")))}
        return data

    @model_validator(mode="after")
    def _typed(self) -> StepOutcome:
        self.value = shaped_value(self.value, self.shape, self.type, self.scale)
        return self

    @field_serializer("value")
    def _value_json(self, value: StepValue | None) -> Any:
        """JSON keeps a Decimal's places as text (``"1221.00"``) and a Fraction as ``"1/3"``; a list or
        JSON value is itself (its numbers exact: see the module's docstring)."""
        return _scalar_json(value) if self.shape == "scalar" else value

    @property
    def text(self) -> str | None:
        """The value as text with its places (``"1221.00"``, ``"true"``), a list or JSON value as compact
        JSON text (``["red", "blue"]``, ``"a JSON string"``), or None."""
        if self.shape == "json" and self.provenance != "missing":
            return json_text(self.value)
        return value_text(self.value)


def outcome(step: Step, text: str | None, **fields: Any) -> StepOutcome:
    """``step``'s :class:`StepOutcome` from its committed value ``text`` (``None``: no value), held as
    its kind says (:meth:`stepguard.kinds.Kind.result_shape`); ``fields``: its provenance, reprompts, chunk."""
    shape = kind_of(step).result_shape(step)
    return StepOutcome(var=step.var, value=committed_value(text, shape), type=step.type, scale=step.scale, shape=shape, **fields)


class DeviationEvent(BaseModel):
    """One deviation seen during the run (the :class:`~stepguard.verify.Deviation` the check found,
    carried as it is) and what the policy did about it.

    Its JSON is flat, the deviation's fields first: ``{"kind", "step", "detail", "got", "attempt",
    "chunk", "action", "rung"}``; it reads that form (or ``deviation=`` a :class:`Deviation`, or the
    deviation's fields as keywords). ``kind``, ``step``, ``detail`` and ``got`` read the deviation's.
    """

    model_config = ConfigDict(frozen=True)

    deviation: Deviation
    """The deviation, as the check found it (a derived rung's note added to its detail)."""
    attempt: int = Field(0, strict=True, ge=0, description="0 = first try of the chunk; n = n-th re-prompt for this step.")
    chunk: int = Field(0, strict=True)
    action: Literal["reprompt", "repair", "raise", "flag", "note", "stop", "read"] = "reprompt"
    """What the policy did; ``read``: the step's value was read by position from the model's verified
    sub-steps by a digit rung (``detail`` lists every sub-step and digit; docs/concepts.md)."""
    rung: str | None = Field(None, description="The ladder rung used for the re-prompt, if one was sent.")

    @model_validator(mode="before")
    @classmethod
    def _nested(cls, data: Any) -> Any:
        """The flat form (the deviation's fields beside the event's) read with its deviation apart."""
        if isinstance(data, dict) and "deviation" not in data:
            own = {k: v for k, v in data.items() if k in ("attempt", "chunk", "action", "rung")}
            return {**own, "deviation": {k: v for k, v in data.items() if k in Deviation.model_fields}}
        return data

    @model_serializer(mode="wrap")
    def _flat(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {**data.pop("deviation"), **data}

    @property
    def kind(self) -> DeviationKind:
        """The deviation's kind."""
        return self.deviation.kind

    @property
    def step(self) -> str | None:
        """The step it concerns."""
        return self.deviation.step

    @property
    def detail(self) -> str:
        """What was wrong, in words."""
        return self.deviation.detail

    @property
    def got(self) -> str | None:
        """What the model wrote for the step, if anything."""
        return self.deviation.got


UsageTotals = Usage
"""Totals over the run (:class:`stepguard.model.Usage`, the one usage type): tokens as the server
counts them, seconds of wall time and of waiting on the model."""


class GuardResult(_ExactJson):
    """The result of :meth:`stepguard.guard.Guard.run`.

    ``status`` is ``verified`` only when every value's :data:`Grade` is ``exact``, ``matched`` or
    ``tool`` (or ``bounded``/``free_text`` for a step the procedure names in ``accept_bounded``);
    ``bounded`` when every value passed its check but some only a predicate or a format
    (``bounded``/``free_text``, not accepted by the procedure); ``repaired`` when the run completed
    with guard-supplied values; ``flagged`` when deviations were recorded but not corrected, or a
    step's value could not be checked (``unverifiable``: no ``expr`` and no ``check``); ``failed``
    when the run stopped early (``first_unverified`` names the first step whose value is not
    verified). No value is returned without its provenance and its grade.

    ``answer`` and :attr:`values` are typed as the procedure declares (:data:`StepValue`);
    ``answer_text`` and :attr:`texts` give the same values as text with their places (``"1221.00"``).

    A run given a checkpoint thread that already held one is ``resumed``: ``usage`` (and ``chunks``,
    ``reprompts``, ``deviations``) are the thread's, over every call that ran it; ``spent`` is what
    this call alone cost (nothing, for a finished run given back from its checkpoint).
    """

    model_config = ConfigDict(extra="forbid")

    procedure: str
    model: str
    simulated: bool = False
    inputs: dict[str, str | bool] = Field(description="The inputs as written: numbers as text with their places, booleans as booleans.")
    status: RunStatus
    answer: StepValue | None = Field(None, description="The answer step's value, typed like its StepOutcome.value.")
    answer_var: str
    first_unverified: str | None = Field(None, description="First step that is not model-verified (in a bounded run: the "
                                         "first value a predicate or a format only bounded), or None.")
    steps: list[StepOutcome]
    deviations: list[DeviationEvent] = Field(default_factory=list)
    chunks: int = 0
    reprompts: int = 0
    repaired: int = 0
    usage: UsageTotals = Field(
        default_factory=UsageTotals,
        description="The thread's model calls and tokens over every call that ran it (a resumed run's earlier "
                    "calls included); wall_s is this call's.")
    resumed: Literal["finished", "unfinished"] | None = Field(
        None, description="None: a new run; finished: the thread held a finished run, given back as it was (nothing "
                          "asked again); unfinished: the thread's run went on from its last commit.")
    spent: UsageTotals = Field(
        default_factory=UsageTotals,
        description="What this call alone spent (a finished thread given back: no calls, no tokens); "
                    "the same as usage for a new run (and where it is not given).")
    thread_id: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """True when every step has a value."""
        return all(s.provenance != "missing" for s in self.steps)

    def _answer_step(self) -> StepOutcome | None:
        return next((s for s in self.steps if s.var == self.answer_var), None)

    @model_validator(mode="before")
    @classmethod
    def _spent_of_a_new_run(cls, data: Any) -> Any:
        """``spent`` not given (a new run, or a result written before it was recorded): ``usage``."""
        if isinstance(data, dict) and data.get("spent") is None and data.get("usage") is not None:
            return {**data, "spent": data["usage"]}
        return data

    @model_validator(mode="after")
    def _typed_answer(self) -> GuardResult:
        step = self._answer_step()
        if step is not None and step.shape != "scalar":
            self.answer = step.value  # a list or JSON value: the step's own (its text would be ambiguous)
        elif step is not None:
            self.answer = typed_value(self.answer, step.type, step.scale)
        return self

    @field_serializer("answer")
    def _answer_json(self, value: StepValue | None) -> Any:
        """Like :attr:`StepOutcome.value`: a Decimal keeps its places as text in JSON, a list or JSON value is itself."""
        step = self._answer_step()
        return value if step is not None and step.shape != "scalar" else _scalar_json(value)

    @property
    def answer_text(self) -> str | None:
        """The answer as text with its places (``"1221.00"``; a list or JSON value as compact JSON), or None."""
        step = self._answer_step()
        return step.text if step is not None and step.shape != "scalar" else value_text(self.answer)

    @property
    def values(self) -> dict[str, StepValue | None]:
        """``{var: value}`` for every step, typed as declared (``Decimal('1221.00')``, ``42``, ``True``)."""
        return {s.var: s.value for s in self.steps}

    @property
    def grades(self) -> dict[str, Grade | None]:
        """``{var: grade}`` for every step (``{"subtotal": "exact", "discount": "bounded"}``; None: no value)."""
        return {s.var: s.grade for s in self.steps}

    @property
    def texts(self) -> dict[str, str | None]:
        """``{var: value text}`` for every step (``"1221.00"``), as the CLI prints them."""
        return {s.var: s.text for s in self.steps}

    def rung_fixes(self) -> dict[str, int]:
        """How many deviations each ladder rung fixed (a re-prompt whose step then verified)."""
        fixed: dict[str, int] = {}
        reprompted = {s.var for s in self.steps if s.provenance == "model_verified" and s.reprompts}
        last: dict[str, str] = {}
        for d in self.deviations:
            if d.rung and d.step:
                last[d.step] = d.rung
        for step, rung in last.items():
            if step in reprompted:
                fixed[rung] = fixed.get(rung, 0) + 1
        return fixed
