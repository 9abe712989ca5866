"""What the digit rungs share: a sheet of digit-level sub-steps, and reading a number from them by position.

A digit rung (:mod:`~stepguard.guard.rungs.arith.columns`, :mod:`~stepguard.guard.rungs.arith.multiply`,
:mod:`~stepguard.guard.rungs.arith.longdiv`) writes a failing step as the sub-steps done on paper, each one
operation on a few digits over literals (``d3 = 5 + 8 + 1``), each checked by the evaluator. The
step's value is then *read*: the last digit of each verified column value, in place order, the
leading digits of the most significant one, the point placed, the sign taken from a sign sub-step
(:class:`Reading`). Reading a written number is not arithmetic: the guard places the model's digits
and computes none.

The sub-procedure is derived before it runs, so a later sub-step's literals (a carry, a borrow, a
digit of a partial product, a remainder) are written from the evaluator's values of the earlier
sub-steps; a sub-step is asked only after every earlier one verified (one a call by default; with
``GuardConfig.substeps_together``, in one call with earlier ones it was not written from:
:meth:`Sheet.ask`'s ``of``, ``chunk_by="independent"``), so those are the digits the model wrote
(docs/concepts.md, "Values read by position").
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Literal

from stepguard.errors import StepguardError
from stepguard.evaluator import Number, format_number
from stepguard.guard.rungs import Read, Rung
from stepguard.guard.rungs.arith._arith import _NAME, decimal_places, leaf_values
from stepguard.procedure import Procedure

if TYPE_CHECKING:
    from stepguard.guard import GuardConfig

__all__ = ["DIGIT_CHUNK", "DIGIT_LADDER", "MAX_SUB_STEPS", "DigitRung", "Place", "Reading", "Sheet", "binary_operands", "column_difference",
           "column_sum", "digits_of", "finite", "larger_at_first_difference", "multiply_row", "scaled"]


def digits_of(n: int) -> list[int]:
    """The digits of ``n >= 0``, least significant first: ``347 -> [7, 4, 3]``; ``0 -> [0]``."""
    return [int(c) for c in reversed(str(n))]


def finite(value: Number) -> bool:
    """Whether ``value`` is a number with a finite decimal form (``1/3`` is not)."""
    return not isinstance(value, bool) and isinstance(value, (int, Fraction)) and decimal_places(value) is not None


def scaled(values: list[Fraction], places: int) -> list[int]:
    """Each of ``values`` times ``10 ** places``, as a whole number (the caller chose ``places`` so it is one)."""
    return [int(abs(v) * 10**places) for v in values]


@dataclass(frozen=True)
class Place:
    """Where digits of the result are read from: the verified value of sub-step ``var``.

    ``part``: ``last``, its last digit (a column's digit; the rest is the carry); ``all``, every digit
    it wrote (the most significant column, whose carry is the result's leading digits); ``lead``, every
    digit but the last (a product's tens, where its units went into a column of their own);
    ``count``, one digit: ``base`` plus how many of the choice sub-steps ``of`` have as verified value
    their first number (a quotient digit: the multiples of the divisor read as not larger than the
    remainder without a sub-step, from their lengths or as the same number, and those the model
    chose the remainder's digit over, :func:`larger_at_first_difference`; ``var`` is then the
    remainder as written, not a sub-step); ``zero``, a place with no sub-step (the zero a partial
    product is shifted by, or the trailing zero of a power of ten), read as ``0``.
    """

    var: str
    part: Literal["last", "all", "lead", "count", "zero"] = "last"
    of: tuple[str, ...] = ()
    base: int = 0


@dataclass
class Reading:
    """How the step's value is read from the sub-steps' verified values.

    Attributes:
        places: where each digit (group) comes from, most significant first.
        point: digits after the point (``77.9``: 1); negative appends zeros.
        sign: the sub-step whose value carries the sign (``None``: not negative).
        negative_if: how its value is read: ``minus``, negative where it is written with a minus
            (``(-1) * 1 = -1``); ``zero``, negative where it is ``0`` (``max(-472, 0) = 0``).
        then: a sub-step after the reading (the rounding of a quotient to the step's scale) whose value
            is the step's value; ``None``: the number read is the value.
    """

    places: list[Place] = field(default_factory=list)
    point: int = 0
    sign: str | None = None
    negative_if: Literal["minus", "zero"] = "minus"
    then: str | None = None

    def read(self, steps: list[dict[str, object]], texts: Mapping[str, str | None]) -> Read | None:
        """The value and its record from the verified value texts of the sub-steps; ``None`` where a
        place's sub-step has no value (the nested run did not verify it), or where the texts do not
        spell one value: a choice (a quotient digit's, the sign's ``max``) not one of the numbers it
        chooses between, a sign product not ``1`` or ``-1``, or a rounding sub-step over another number
        than the one the digits read (its literal is the guard's, so the value read must be it)."""
        parts: list[str] = []
        for place in self.places:
            digits = _place_digits(place, steps, texts)
            if digits is None:
                return None
            parts.append(digits)
        number, point = self._placed(parts)
        negative = self._negative(number, steps, texts)
        if negative is None:
            return None
        value = f"-{number}" if negative else number
        lines = "; ".join(f"{s['var']} = {s['expr']} = {texts.get(str(s['var']))}" for s in steps)
        where = " ".join(_where(p) for p in self.places)
        how = f"digits {'|'.join(parts)} from {where}, point {point} places" + (f", sign from {self.sign}" if self.sign else "")
        if self.then is not None:
            rounded = texts.get(self.then)
            if rounded is None or _number(_expr(steps, self.then).strip("()")) != Fraction(value):
                return None
            return Read(rounded, f"{how}: {value}, then {self.then} = {rounded} (the model's rounding); sub-steps: {lines}")
        return Read(value, f"{how}: {value}; sub-steps: {lines}")

    def _placed(self, parts: list[str]) -> tuple[str, int]:
        """The digits read (most significant first) as a number's text with the point placed
        (``whole.frac``, no leading or trailing zeros beyond one ``0``), and the places after the point."""
        written = "".join(parts) or "0"
        if self.point < 0:
            written += "0" * -self.point
        point = max(self.point, 0)
        written = written.rjust(point + 1, "0")  # 0.01 read from the digit 1 two places in: the zeros placed before it
        whole, frac = written[: len(written) - point], written[len(written) - point:]
        whole = whole.lstrip("0") or "0"
        frac = frac.rstrip("0")
        return (f"{whole}.{frac}" if frac else whole), point

    def _negative(self, number: str, steps: list[dict[str, object]], texts: Mapping[str, str | None]) -> bool | None:
        """Whether the value read is negative (never ``0``), from the sign sub-step as :attr:`negative_if`
        reads it; ``None`` where that sub-step's value is none of those it may take."""
        if self.sign is None:
            return False
        signed = _number(texts.get(self.sign))
        if signed is None or signed not in (_choices(steps, self.sign) if self.negative_if == "zero" else {1, -1}):
            return None
        return number != "0" and (signed == 0 if self.negative_if == "zero" else signed < 0)


def _place_digits(place: Place, steps: list[dict[str, object]], texts: Mapping[str, str | None]) -> str | None:
    """The digits ``place`` gives (see :class:`Place`), or ``None`` where its sub-step has no value or,
    for a count, a choice's value is not one of the numbers it chooses between."""
    if place.part == "zero":
        return "0"
    if place.part == "count":
        choices = [(_number(texts.get(v)), _arguments(steps, v)) for v in place.of]
        if any(c is None or c not in between for c, between in choices):
            return None
        return str(place.base + sum(c == between[0] for c, between in choices))  # the remainder's digit is first
    text = (texts.get(place.var) or "").lstrip("-")
    if not text.isdigit():
        return None
    return {"last": text[-1], "lead": text[:-1]}.get(place.part, text)


def _number(text: str | None) -> Fraction | None:
    """A verified value text as a number (``62658``, ``-3``), or ``None`` where there is none."""
    try:
        return None if text is None else Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def _expr(steps: list[dict[str, object]], var: str) -> str:
    """The expression of sub-step ``var`` (``""`` where there is none)."""
    return next((str(s["expr"]) for s in steps if s["var"] == var), "")


def _arguments(steps: list[dict[str, object]], var: str) -> list[Fraction]:
    """The numbers the choice sub-step ``var`` chooses between, in the order written (``max(5, 3)``:
    5 and 3); empty where it is not a ``max`` of literals."""
    expr = _expr(steps, var)
    if not (expr.startswith("max(") and expr.endswith(")")):
        return []
    return [n for n in (_number(x.strip().strip("()")) for x in expr[4:-1].split(",")) if n is not None]


def _choices(steps: list[dict[str, object]], var: str) -> set[Fraction]:
    """The numbers the choice sub-step ``var`` chooses between (:func:`_arguments`), as a set."""
    return set(_arguments(steps, var))


def _where(place: Place) -> str:
    """Where a place's digits come from, for the ``read`` event: ``d4[last]``, ``0``, ``#(1 read; d7 d9 of 120)``."""
    if place.part == "zero":
        return "0"
    if place.part == "count":
        return f"#({place.base} read; {' '.join(place.of) or 'none asked'} of {place.var})"
    return place.var + {"all": "", "last": "[last]", "lead": "[lead]"}[place.part]


class Sheet:
    """The sub-steps a digit rung writes, named ``d1 .. dn`` in order, with their values (the evaluator's)."""

    def __init__(self) -> None:
        self.steps: list[dict[str, object]] = []
        self.reading = Reading()
        self.after: dict[str, tuple[str, ...]] = {}
        """``{var: earlier sub-steps}``: those whose values a sub-step's literals were written from."""

    def ask(self, expr: str, of: int | None = None, **extra: object) -> str:
        """Write a sub-step (``extra``: its ``scale``, ``rounding``, ``type``); returns its name.

        ``of``: how many of the sub-steps before it its literals were written from, the first ``of``
        (``0``: the step's operands alone, as a product of two of their digits); ``None`` (the safe
        default): every one before it. A chunk never asks it with those
        (:meth:`~stepguard.procedure.Procedure.after`, ``GuardConfig.chunk_by``)."""
        var = f"d{len(self.steps) + 1}"
        self.after[var] = tuple(str(s["var"]) for s in self.steps[: len(self.steps) if of is None else of])
        self.steps.append({"var": var, "expr": expr, **extra})
        return var

    def read(self, texts: Mapping[str, str | None]) -> Read | None:
        """The value read from the verified value texts of this sheet's sub-steps (:meth:`Reading.read`)."""
        return self.reading.read(self.steps, texts)

    def sign_of_sum(self, larger: Fraction, of: int | None = 0) -> None:
        """The sign as a choice sub-step: ``max(L, 0)``, the larger of ``0`` and the operand ``L`` of
        larger magnitude; the result is negative where the model's value is ``0``. ``of``: the sub-steps
        which operand is ``L`` was written from (:meth:`ask`; ``0``, the default: the operands alone; a
        comparison of the magnitudes where one was asked, :func:`larger_at_first_difference`).

        After the column sub-steps the embedded model answered ``min(-280, 0)`` with 0 on every
        try, the value the ``max`` form asks for (figures: docs/lab/production-suite-history.md, "Digit rungs").
        """
        self.reading.sign = self.ask(f"max({_literal(larger)}, 0)", of=of)
        self.reading.negative_if = "zero"

    def sign_of_product(self, a: Fraction, b: Fraction) -> None:
        """The sign of a product or quotient as a single-digit product of the operands' signs: ``(-1) * 1``."""
        sa, sb = (-1 if v < 0 else 1 for v in (a, b))
        self.reading.sign = self.ask(f"{_literal(sa)} * {_literal(sb)}", of=0)

    def procedure(self, parent: Procedure, index: int, rung: str) -> Procedure | None:
        """The sheet as a procedure with no inputs, or ``None`` where it has no sub-step, more than
        :data:`MAX_SUB_STEPS`, or our own limits refuse it."""
        if not self.steps or len(self.steps) > MAX_SUB_STEPS:
            return None
        name = f"{parent.name[:_NAME]}:{parent.steps[index].var}:{rung}"
        try:
            sub = Procedure.model_validate({"name": name, "steps": self.steps}).written_from(self.after)
            sub.expected_values({}, writable=False)
        except (ValueError, StepguardError):  # our own limits refuse it (too many sub-steps): the rung does not apply
            return None
        return sub


def _literal(value: Number) -> str:
    text = format_number(value)
    return f"({text})" if text.startswith("-") else text


def _carried(sheet: Sheet, var: str, v: int, carry: int, top: bool, places: list[Place]) -> int:
    """Add ``carry`` to a column whose value ``v`` the model wrote as sub-step ``var``, as columns of
    their own: the units and the carry (``d = 7 + 1``), and where that carries, the tens and one
    (``d = 1 + 1``). Appends the column's places (least significant first; the leading ones only for
    the ``top`` column) and returns the carry on, read from the model's values."""
    if not carry:
        places.append(Place(var, "all" if top else "last"))
        return v // 10
    units, tens = v % 10, v // 10
    column = sheet.ask(f"{units} + {carry}")
    s = units + carry
    if not tens:
        places.append(Place(column, "all" if top else "last"))
        return s // 10
    places.append(Place(column, "last"))
    if s >= 10:
        lead, on = Place(sheet.ask(f"{tens} + 1"), "all"), tens + 1
    else:
        lead, on = Place(var, "lead"), tens
    if top:
        places.append(lead)
    return on


def larger_at_first_difference(sheet: Sheet, a: int, b: int, of: int | None = None) -> str | None:
    """Ask which of two whole numbers ``a, b >= 0`` is larger as it is done on paper, by position: where
    they have as many digits, the choice of the larger of their two digits at the first place from the
    left where those differ, ``a``'s first (``472`` and ``426``: ``max(7, 2)``). Returns the choice
    sub-step, or ``None`` where nothing is asked: numbers of different lengths (the longer is larger,
    read from the lengths) or the same number. Which place is first to differ is read from the digits
    as written, not computed.

    The embedded model named the larger of two numbers of different lengths as text
    (``max(289, 31) = 31``) and of two of as many digits not always right (``max(60, 12) = 12`` at
    temperature 0 and on three resamples; figures: docs/lab/production-suite-history.md, "Digit rungs").
    ``of``: the sub-steps ``a`` and ``b`` were written from (:meth:`Sheet.ask`; ``0``: the step's operands).
    """
    ta, tb = str(a), str(b)
    if len(ta) != len(tb) or ta == tb:
        return None
    at = next(i for i, (x, y) in enumerate(zip(ta, tb, strict=True)) if x != y)
    return sheet.ask(f"max({ta[at]}, {tb[at]})", of=of)


def column_sum(sheet: Sheet, a: int, b: int, of: int | None = None) -> tuple[list[Place], int]:
    """``a + b`` (both ``>= 0``) by columns: each column's two digits (a missing one written 0),
    ``d = 9 + 8``, then the carry from the column before added to its units as a column of its own
    (:func:`_carried`). Returns the places the sum is read from (most significant first) and the sum.
    ``of``: the sub-steps ``a`` and ``b`` were written from (:meth:`Sheet.ask`; ``0``: the step's
    operands; ``None``: every sub-step before the columns).

    The embedded model wrote a column's two digits and carry in one sub-step wrong 9 times in 30 where
    they sum to 10 or more (``9 + 8 + 1 = 26``, on every resample too) and two digits or a digit and
    its carry right (docs/lab/production-suite-history.md, "Digit rungs").
    """
    da, db = digits_of(a), digits_of(b)
    n = max(len(da), len(db))
    start = len(sheet.steps) if of is None else of
    places: list[Place] = []  # least significant first
    carry = 0
    for i in range(n):
        x, y = (da[i] if i < len(da) else 0), (db[i] if i < len(db) else 0)
        carry = _carried(sheet, sheet.ask(f"{x} + {y}", of=start), x + y, carry, i == n - 1, places)
    return places[::-1], a + b


def column_difference(sheet: Sheet, a: int, b: int, of: int | None = None) -> tuple[list[Place], int]:
    """``a - b`` (``a >= b >= 0``) by columns with a borrowed ten, one subtraction a sub-step: every
    column but the most significant is written with a ten borrowed (``d = 14 - 8``: the ten as the
    digit 1 placed before the top digit), and the borrow from the column before is taken off as a
    sub-step of its own (``d = 6 - 1``); where the model's value has two digits the ten was not
    needed and no borrow is passed on, else it is. Returns the places (most significant first) and
    the difference.

    The embedded model wrote a column with its borrow in one sub-step (``13 - 6 - 1``) wrong where
    resampling fixed nothing, and one subtraction a sub-step right (figures: docs/lab/production-suite-history.md,
    "Digit rungs"). ``of`` as :func:`column_sum`'s.
    """
    da, db = digits_of(a), digits_of(b)
    n = len(da)
    start = len(sheet.steps) if of is None else of
    places: list[Place] = []
    borrow = 0
    for i in range(n):
        top_column = i == n - 1
        x, y = da[i], (db[i] if i < len(db) else 0)
        top = x if top_column else 10 + x
        var = sheet.ask(f"{top} - {y}", of=start)
        v = top - y
        if borrow:
            var = sheet.ask(f"{v} - {borrow}")
            v -= borrow
        places.append(Place(var, "last"))
        borrow = 0 if top_column or v >= 10 else 1
    return places[::-1], a - b


def multiply_row(sheet: Sheet, a: int, d: int, of: int | None = 0) -> tuple[list[Place], int]:
    """``a * d`` (``a >= 0``, ``d`` one digit) as a row: each digit of ``a`` times ``d``
    (``d = 7 * 8``), the carry from the digit before added to the product's units as a column of its
    own (:func:`_carried`: ``d = 6 + 3``, and where that carries, ``d = 5 + 1``). ``of``: the sub-steps
    ``a`` and ``d`` were written from (:meth:`Sheet.ask`; ``0``, the default: the step's operands). The row's digit is
    the last digit of the column's value; the carry on is read from the model's values. Returns the
    places (most significant first) and the product.

    The embedded model wrote a product and its carry in one sub-step (``63 + 6 = 70``, the form first
    built) wrong at temperature 0 and on three resamples, and ``3 + 6`` right every time
    (docs/lab/production-suite-history.md, "Digit rungs").
    """
    places: list[Place] = []  # least significant first
    carry = 0
    da = digits_of(a)
    for i, x in enumerate(da):
        carry = _carried(sheet, sheet.ask(f"{x} * {d}", of=of), x * d, carry, i == len(da) - 1, places)
    return places[::-1], a * d


MAX_SUB_STEPS = 200
"""Most sub-steps a digit rung writes (up to a call each, :data:`DIGIT_CHUNK`); a longer sheet (a product of two
ten-digit numbers) is not asked: the rung does not apply, and the ladder says so."""

DIGIT_CHUNK = 10
"""Most sub-steps a call in a digit rung's nested run with ``GuardConfig.substeps_together``, which
asks them ``chunk_by="independent"`` (without it, the default: one a call). A sheet is derived before
it runs, so a later sub-step's literals (a carry, a partial product, a remainder: ``d3 = 8 + 5`` after
``d1 = 9 * 6`` and ``d2 = 8 * 6``) are the evaluator's values of earlier sub-steps; asked in one call
with those, they would show the model the values it is about to write. So a chunk ends before a
sub-step written from one of the same chunk (:meth:`Sheet.ask`'s ``of``): consecutive sub-steps none
written from another of them (a carry column and the next single-digit product, ``d4 = 4 + 1`` and
``d5 = 7 * 6``) go in one call; each carry, borrow and remainder is shown only after the sub-steps it
was written from verified, so its literals are the model's own digits (docs/concepts.md, "Values read
by position")."""

DIGIT_LADDER: tuple[str, ...] = ("resample", "resample", "resample")
"""A digit sub-step that fails is asked alone, sampled anew, up to three times: it is one operation
on a few digits, which no rung splits further."""


class DigitRung(Rung):
    """A rung that asks a step as digit-level sub-steps and reads its value from them by position.

    Subclasses write :meth:`sheet`; :meth:`derive` and :meth:`read` follow from it (the sheet is
    derived again from the same committed values, so both see the same layout).
    """

    derives = True
    nested_ladder = DIGIT_LADDER
    nested_tries = len(DIGIT_LADDER)

    def sheet(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Sheet | None:
        """The sub-steps and their reading for step ``index``, or ``None`` where the rung does not apply."""
        raise NotImplementedError

    def derive(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
        """The sheet's sub-steps as a procedure with no inputs (see :meth:`sheet`)."""
        sheet = self.sheet(procedure, index, env)
        return None if sheet is None else sheet.procedure(procedure, index, self.name)

    def read(self, procedure: Procedure, index: int, env: Mapping[str, Number | str], texts: Mapping[str, str | None]) -> Read | None:
        """The step's value read from the model's verified sub-step values (:meth:`Reading.read`)."""
        sheet = self.sheet(procedure, index, env)
        return None if sheet is None else sheet.read(texts)

    def nested_config(self, parent: GuardConfig, attempt: int, tokens_left: int | None, wall_left: float | None,
                      sub: Procedure | None = None) -> GuardConfig:
        """As :meth:`Rung.nested_config`, one sub-step a call; with ``parent.substeps_together``, up to
        :data:`DIGIT_CHUNK` a call, a chunk ending before a sub-step written from one of it (``chunk_by="independent"``)."""
        nested = replace(super().nested_config(parent, attempt, tokens_left, wall_left, sub), inline_known=False)
        if parent.substeps_together:
            return replace(nested, chunk_size=DIGIT_CHUNK, chunk_by="independent")
        return replace(nested, chunk_size=1, chunk_by="size")


def binary_operands(procedure: Procedure, index: int, env: Mapping[str, Number | str],
                    *ops: type[ast.operator]) -> tuple[ast.operator, Fraction, Fraction] | None:
    """``(operator, a, b)`` of step ``index`` where it is one of ``ops`` over two finite decimals, else ``None``."""
    found = leaf_values(procedure, index, env)
    if found is None or not isinstance(found[0], ast.BinOp) or not isinstance(found[0].op, ops):
        return None
    a, b = found[1]
    if not (finite(a) and finite(b)):
        return None
    return found[0].op, Fraction(a), Fraction(b)
