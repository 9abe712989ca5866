"""Value types of steps and inputs: coercion to exact numbers and decimal rounding."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal
from fractions import Fraction
from typing import Any

from stepguard.errors import EvaluationError, ProcedureError
from stepguard.evaluator import Number, normalize, parse_number

__all__ = ["as_written", "check_input_names", "coerce_value", "did_you_mean", "round_to_scale", "unknown_procedure"]

_ROUNDING = {"ROUND_HALF_EVEN": ROUND_HALF_EVEN, "ROUND_HALF_UP": ROUND_HALF_UP}


def as_written(value: Any) -> str:
    """``value`` as the user wrote it, for an error message: the same from every way in.

    A number as its text (``2.5``, ``19.90``: a JSON number, a YAML number and the CLI's ``-i n=2.5``
    all show ``2.5``, never ``Decimal('2.5')``); ``true``/``false``; other text quoted (``'abc'``).
    At most 60 characters.
    """
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, (int, Decimal)):
        text = str(value)
    elif isinstance(value, float):
        text = repr(value)
    elif isinstance(value, Fraction):
        text = f"{value.numerator}/{value.denominator}"
    elif isinstance(value, str):
        try:
            parse_number(value)
            text = value.strip()
        except EvaluationError:
            text = repr(value)
    else:
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def did_you_mean(name: str, known: Any, *, prefix: str = "") -> str:
    """`` (did you mean 'subtotal'?)`` for a misspelt ``name`` among ``known`` names, else ``""``.

    The closest names by :func:`difflib.get_close_matches` (ratio at least 0.6, at most 3), each
    written after ``prefix`` (``'stepguard/invoice'``: what the caller sends; matched without it).
    """
    import difflib

    close = difflib.get_close_matches(name, [str(k) for k in known], n=3, cutoff=0.6)
    if not close:
        return ""
    return f" (did you mean {' or '.join(repr(prefix + c) for c in close)}?)"


def unknown_procedure(name: str, known: Any, *, prefix: str = "") -> str:
    """The message for a procedure ``name`` not among ``known``: ``unknown procedure 'invoic' (did you
    mean 'invoice'?); known: invoice, payroll``, the same from every way in.

    Args:
        name: the name asked for.
        known: the names served.
        prefix: what the caller writes before a name (``"stepguard/"`` in the proxy's model name), so
            the suggestion is what to send.
    """
    names = sorted(str(k) for k in known)
    hint = did_you_mean(name, names, prefix=prefix)
    return f"unknown procedure {name!r}{hint}; known: {', '.join(names) or '(none)'}"


def check_input_names(declared: Any, given: Any, where: str) -> None:
    """Refuse inputs that miss a declared name or give an undeclared one, suggesting the name meant.

    The message is :meth:`Procedure.bind_inputs`'s, with each undeclared name's closest declared
    name: ``inputs: missing ['subtotal'], undeclared ['subtotl'] (declared: ['rate', 'subtotal']);
    'subtotl': did you mean 'subtotal'?``. Every way in runs it before binding (the CLI, the
    drop-in client, the proxy, the LangGraph node).

    Args:
        declared: the procedure's input names.
        given: the names given.
        where: the location (``procedure 'invoice'``).

    Raises:
        ProcedureError: a name missing or undeclared.
    """
    names, gave = list(declared), list(given)
    missing = [n for n in names if n not in gave]
    extra = [n for n in gave if n not in names]
    if not missing and not extra:
        return
    hints = [f"{n!r}: {hint.removesuffix(')').removeprefix(' (')}" for n in extra
             if (hint := did_you_mean(str(n), missing or names))]
    raise ProcedureError(f"inputs: missing {missing or 'none'}, undeclared {extra or 'none'} (declared: {sorted(names)})"
                         + (f"; {'; '.join(hints)}" if hints else ""), where)


def coerce_value(value: Any, type_: str, where: str) -> Number | str:
    """Convert a user-given input value to the evaluator's exact form.

    Args:
        value: an int, a decimal string (``"12.50"``), a Decimal, a bool, or a string for string types.
        type_: the declared :data:`stepguard.procedure.ValueType`.
        where: location for errors, e.g. ``"inputs.x"``.

    Raises:
        ProcedureError: the value does not fit the type (floats are refused as inexact unless integral).
    """
    try:
        if value is None:
            raise ProcedureError("no value (null): give the input a value", where)
        if type_ in ("string", "one_of"):
            if not isinstance(value, str):
                written = ("true" if value else "false") if isinstance(value, bool) else str(value)
                numeric = isinstance(value, (int, float, Decimal, Fraction))
                kind = "a boolean" if isinstance(value, bool) else "a number" if numeric else type(value).__name__
                raise ProcedureError(f"expected text, got {kind} {written[:40]}: in an inputs file, "
                                     f"quote it (\"{written[:40]}\") to give text", where)
            return value
        if type_ == "boolean":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("true", "false"):
                return value.lower() == "true"
            raise ProcedureError(f"expected true or false, got {as_written(value)}", where)
        if isinstance(value, bool):
            raise ProcedureError("expected a number, got a boolean", where)
        if isinstance(value, float):
            value = Decimal(repr(value))  # the shortest text that round-trips, e.g. 0.1 -> Decimal("0.1")
        number = parse_number(value) if isinstance(value, str) else normalize(value)
        if type_ == "integer" and type(number) is not int:
            raise ProcedureError(f"expected an integer, got {as_written(value)}", where)
        return number
    except EvaluationError as exc:
        raise ProcedureError(str(exc), where) from None


def round_to_scale(value: Number, scale: int, rounding: str = "ROUND_HALF_EVEN") -> Number:
    """Round an exact number to ``scale`` decimal places with ``rounding`` (HALF_EVEN or HALF_UP).

    Exact for a number of any length: the rounding is done in integers (``value * 10**scale``
    split into a quotient and a remainder), never through a ``Decimal`` context, whose precision
    would round a long number once before the rounding asked for (a 450-digit ``0.005...01`` at
    400 digits became ``0.005``, then ``0.00``). ``ROUND_HALF_UP`` rounds a half away from zero
    (``-2.5`` -> ``-3``), as :mod:`decimal` does; ``ROUND_HALF_EVEN`` to the even neighbour.

    Args:
        value: an ``int`` or ``Fraction`` (a ``Decimal`` is taken exactly too).
        scale: the places to keep, at least 0 (a step's ``scale``).
        rounding: ``"ROUND_HALF_EVEN"`` or ``"ROUND_HALF_UP"``.

    Returns:
        An ``int`` or an exact ``Fraction`` (``Fraction(1234, 100)`` for 12.34).

    Raises:
        ValueError: ``rounding`` is neither rule, or ``scale`` is negative.
    """
    if rounding not in _ROUNDING:
        raise ValueError(f"rounding must be one of {sorted(_ROUNDING)}, got {rounding!r}")
    if type(scale) is not int or scale < 0:
        raise ValueError(f"scale must be a whole number of places, at least 0, got {scale!r}")
    frac = Fraction(value)
    unit = 10**scale
    num, den = abs(frac.numerator) * unit, frac.denominator
    whole, rest = divmod(num, den)
    twice = 2 * rest
    if twice > den or twice == den and (rounding == "ROUND_HALF_UP" or whole % 2 == 1):
        whole += 1
    return normalize(Fraction(-whole if frac < 0 else whole, unit))
