"""Decimal places for tool arguments: a number reaches a tool at the scale it was written or declared.

The evaluator's numbers are exact ``int``/``Fraction`` values, so ``25.00`` and ``25`` are one value
to it. A tool is another matter (a payment API may read ``25.00`` as "two places", a ledger may
store the scale), so the guard keeps the places of a number where they are known and gives the
tool a ``Decimal`` of exactly that scale:

* an expression argument that is a bare name of a decimal step with ``scale``: that scale;
* a bare name of a decimal input: the places the caller wrote (``"25.00"``: 2;
  ``Decimal("25.00")``: 2; ``100``: 0; a float by its shortest text, ``0.1``: 1); a ``number``
  input likewise where it was written with a decimal point;
* a free argument: the places the model wrote (``amount=25.00`` or native JSON ``25.00``: 2);
* any other number (a computed expression, an integer): its shortest exact form (``12.5``, ``7``);
  a value with no finite decimal form (``1/3``) is refused before the call (nothing rounds it
  silently): round it in a step with ``scale`` and pass the step.

See docs/agent-workflows.md, "Numbers a tool receives".
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any

from stepguard.evaluator import Number, decimal_places

__all__ = ["Env", "as_decimal", "input_places", "written_places"]

_PLAIN = re.compile(r"^\s*[+\-\u2212]?[0-9][0-9,\u2009\u202f]*(?:\.([0-9]*))?\s*$|^\s*[+\-\u2212]?\.([0-9]+)\s*$")


class Env(dict[str, Any]):
    """The values a step is checked against, plus the places each decimal input was written with.

    A plain ``dict`` to everything that reads values; :attr:`places` is read only by the tool kind.
    """

    places: Mapping[str, int]
    """Input name -> decimal places the caller wrote (``{"amount": 2}`` for ``amount=25.00``)."""

    def __init__(self, values: Mapping[str, Any] | None = None, places: Mapping[str, int] | None = None) -> None:
        super().__init__(values or {})
        self.places = dict(places or {})


def written_places(value: Any) -> int | None:
    """The decimal places ``value`` was written with, or ``None`` where it says none.

    ``"25.00"`` -> 2, ``"100"`` -> 0, ``"1,176.50"`` -> 2, ``Decimal("25.00")`` -> 2, ``Decimal("2.5E+1")``
    -> 0, ``25`` -> 0, ``0.1`` (a float) -> 1 (its shortest text), a ``Fraction`` or anything else -> ``None``.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return 0
    if isinstance(value, float):
        value = Decimal(repr(value)) if value == value and abs(value) != float("inf") else None
    if isinstance(value, Decimal):
        if not value.is_finite():
            return None
        exponent = int(value.as_tuple().exponent)
        return -exponent if exponent < 0 else 0
    if isinstance(value, str):
        m = _PLAIN.match(value)
        if m is None:
            return None
        frac = m.group(1) if m.group(1) is not None else m.group(2)
        return len(frac) if frac else 0
    return None


def input_places(procedure: Any, inputs: Mapping[str, Any]) -> dict[str, int]:
    """``{name: places}`` for each decimal input of ``procedure`` given in ``inputs`` whose written
    places are known (:func:`written_places`), and each ``number`` input written with a decimal point."""
    out: dict[str, int] = {}
    for spec in procedure.inputs:
        if spec.type in ("decimal", "number") and spec.name in inputs:
            places = written_places(inputs[spec.name])
            if places is not None and (places > 0 or spec.type == "decimal"):
                out[spec.name] = places
    return out


def as_decimal(value: Number, places: int | None = None) -> Decimal | None:
    """``value`` as an exact ``Decimal`` with ``places`` places (``None``: its shortest exact form).

    Built from text, so no ``Decimal`` context rounds it. ``None`` when no such exact decimal exists:
    ``1/3`` at any scale, ``12.345`` at 2 places (never rounded here).
    """
    frac = Fraction(value)
    if places is None:
        places = decimal_places(frac)
        if places is None:
            return None
    scaled = frac * 10**places
    if scaled.denominator != 1:
        return None
    n = scaled.numerator
    digits = str(abs(n)).rjust(places + 1, "0")
    text = ("-" if n < 0 else "") + (f"{digits[:-places]}.{digits[-places:]}" if places else digits)
    return Decimal(text)
