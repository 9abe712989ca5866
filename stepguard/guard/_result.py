"""What a guarded run returns: values, per-step provenance, deviations, usage. Serializable to JSON.

Values keep the type the procedure declares for their step (:data:`StepValue`): ``int`` for
``integer``, :class:`~decimal.Decimal` at the step's ``scale`` for ``decimal`` (``1221.00``, never
``1221``), ``bool`` for ``boolean``, ``str`` for ``string`` and ``one_of``; a ``number`` step gives
an ``int`` or an exact ``Decimal``. In JSON a Decimal is text that keeps its places (``"1221.00"``),
and :meth:`GuardResult.model_validate_json` reads it back as the same Decimal.
"""

from __future__ import annotations

import re
from decimal import Decimal
from fractions import Fraction
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, field_serializer, model_validator

from stepguard.errors import EvaluationError
from stepguard.evaluator import format_number, parse_number
from stepguard.procedure import ValueType
from stepguard.verify import DeviationKind

__all__ = ["DeviationEvent", "GuardResult", "Provenance", "StepOutcome", "StepValue", "UsageTotals", "typed_value", "value_text"]

StepValue: TypeAlias = Decimal | int | bool | str | Fraction
"""A step's value in Python, by the step's declared ``type``:

- ``integer``: ``int``; ``decimal``: ``Decimal`` with exactly ``scale`` places (``Decimal('1221.00')``);
- ``number``: ``int`` when whole, else an exact ``Decimal`` (``Decimal('12.5')``);
- ``boolean``: ``bool``; ``string`` and ``one_of``: ``str``.

Values are never rounded here. A value the guard did not verify (``flagged``) that does not fit its
type keeps its exact form: more places than ``scale`` stay (``Decimal('5.005')``), a non-number stays
``str``, and a number with no finite decimal form (``1/3``, only possible for ``number`` steps) is a
``Fraction``.
"""

_NUMERIC = ("integer", "decimal", "number")
_FRACTION = re.compile(r"(-?[0-9]{1,400})/([0-9]{1,400})")


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
    """A value as the CLI and prompts show it: ``1221.00``, ``-3``, ``true``, ``1/3``, a string as is."""
    if value is None or isinstance(value, str):
        return value
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


Provenance = Literal["model_verified", "repaired", "flagged", "unverifiable", "missing", "tool"]
"""Where a step's value came from.

- ``model_verified``: the model wrote it and the evaluator agreed (``reprompts`` says after how many re-prompts).
- ``repaired``: the guard supplied the evaluator's value (``repair`` policy or ``on_exhausted``): never the model's.
- ``flagged``: the model's value, kept unverified in shadow mode or after a spent budget with ``flag``.
- ``unverifiable``: the model's value for a step with neither ``expr`` nor ``check``, checked for presence, order and
  type only; the run's status is then ``flagged``, never ``verified``.
- ``missing``: no value (the run stopped before this step).
- ``tool``: a tool step's value: the result of its tool, called once with arguments that every check passed.
"""


class StepOutcome(BaseModel):
    """One step's final state: its value, typed as the step declares (:data:`StepValue`), and where it came from."""

    var: str
    value: StepValue | None = Field(
        None, description="The committed value, typed by `type`/`scale` (Decimal('1221.00'), 42, True, 'gold'), or None."
    )
    type: ValueType = Field("number", description="The step's declared value type (procedure `type`).")
    scale: int | None = Field(None, description="The step's declared decimal places, or None.")
    provenance: Provenance = "missing"
    reprompts: int = Field(0, description="Re-prompts this step needed before it verified.")
    chunk: int | None = Field(None, description="0-based chunk (model call group) that committed it.")

    @model_validator(mode="after")
    def _typed(self) -> StepOutcome:
        self.value = typed_value(self.value, self.type, self.scale)
        return self

    @field_serializer("value")
    def _value_json(self, value: StepValue | None) -> Any:
        """JSON keeps a Decimal's places as text (``"1221.00"``) and a Fraction as ``"1/3"``."""
        return value_text(value) if isinstance(value, (Decimal, Fraction)) else value

    @property
    def text(self) -> str | None:
        """The value as text with its places (``"1221.00"``, ``"true"``), or None."""
        return value_text(self.value)


class DeviationEvent(BaseModel):
    """One deviation seen during the run and what the policy did about it."""

    kind: DeviationKind
    step: str | None
    detail: str
    got: str | None = None
    attempt: int = Field(0, description="0 = first try of the chunk; n = n-th re-prompt for this step.")
    chunk: int = 0
    action: Literal["reprompt", "repair", "raise", "flag", "note", "stop"] = "reprompt"
    rung: str | None = Field(None, description="The ladder rung used for the re-prompt, if one was sent.")


class UsageTotals(BaseModel):
    """Totals over the run (tokens as the server counts them; seconds of wall time)."""

    model_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    wall_s: float = 0.0
    model_s: float = Field(0.0, description="Seconds spent waiting on the model.")


class GuardResult(BaseModel):
    """The result of :meth:`stepguard.guard.Guard.run`.

    ``status`` is ``verified`` only when every step is ``model_verified`` (or ``tool``);
    ``repaired`` when the run completed with guard-supplied values; ``flagged`` when deviations
    were recorded but not corrected, or a step's value could not be checked (``unverifiable``: no
    ``expr`` and no ``check``); ``failed`` when the run stopped early (``first_unverified`` names
    the first step whose value is not verified). No value is returned without its provenance.

    ``answer`` and :attr:`values` are typed as the procedure declares (:data:`StepValue`);
    ``answer_text`` and :attr:`texts` give the same values as text with their places (``"1221.00"``).
    """

    model_config = ConfigDict(extra="forbid")

    procedure: str
    model: str
    simulated: bool = False
    inputs: dict[str, str | bool] = Field(description="The inputs as written: numbers as text with their places, booleans as booleans.")
    status: Literal["verified", "repaired", "flagged", "failed"]
    answer: StepValue | None = Field(None, description="The answer step's value, typed like its StepOutcome.value.")
    answer_var: str
    first_unverified: str | None = Field(None, description="First step that is not model-verified, or None.")
    steps: list[StepOutcome]
    deviations: list[DeviationEvent] = Field(default_factory=list)
    chunks: int = 0
    reprompts: int = 0
    repaired: int = 0
    usage: UsageTotals = Field(default_factory=UsageTotals)
    thread_id: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)

    @property
    def complete(self) -> bool:
        """True when every step has a value."""
        return all(s.provenance != "missing" for s in self.steps)

    @model_validator(mode="after")
    def _typed_answer(self) -> GuardResult:
        step = next((s for s in self.steps if s.var == self.answer_var), None)
        if step is not None:
            self.answer = typed_value(self.answer, step.type, step.scale)
        return self

    @field_serializer("answer")
    def _answer_json(self, value: StepValue | None) -> Any:
        """Like :attr:`StepOutcome.value`: a Decimal keeps its places as text in JSON."""
        return value_text(value) if isinstance(value, (Decimal, Fraction)) else value

    @property
    def answer_text(self) -> str | None:
        """The answer as text with its places (``"1221.00"``), or None."""
        return value_text(self.answer)

    @property
    def values(self) -> dict[str, StepValue | None]:
        """``{var: value}`` for every step, typed as declared (``Decimal('1221.00')``, ``42``, ``True``)."""
        return {s.var: s.value for s in self.steps}

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
