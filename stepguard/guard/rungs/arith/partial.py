"""The ``partial`` rung: a product asked by partial products, the way it is done on paper.

``72.5 x 15`` (a dose: weight times mg per kg) becomes ``72.5 * 10``, ``72.5 * 5``, then their sum
(summed two at a time, a running total plus the next, when there are more than two);
the factor split is the one with fewer non-zero digits, by its place values (a decimal factor's
too: ``0.25`` is ``0.2 + 0.05``). A factor of one non-zero digit (``99365.7 x 0.05``) is not split
here: the other factor's six parts made eleven sub-steps, sums of mixed sizes among them, that the
embedded model got wrong (``4950 + 15 = 5065``); ``scale`` asks ``993657 * 5`` (8 of 8 such
products right in probes) and places the point. Every sub-step is checked. Integer products of two operands are
``decompose``'s; this rung applies where a factor has decimal places.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from fractions import Fraction

from stepguard.evaluator import Number
from stepguard.guard.rungs import Rung, register
from stepguard.guard.rungs.arith._arith import decimal_places, derived, leaf_values, text
from stepguard.guard.rungs.arith._ladders import SUB_STEP_LADDER
from stepguard.procedure import Procedure

__all__ = ["Partial", "partial_products"]


def _parts(value: Number) -> list[Fraction]:
    """Non-zero place values of ``|value|``, largest first: ``72.5`` -> ``[70, 2, 0.5]``."""
    places_ = decimal_places(value) or 0
    digits = str(abs(Fraction(value)) * 10**places_)
    digits = digits.split("/")[0]
    out = [Fraction(int(d) * 10**i, 10**places_) for i, d in enumerate(reversed(digits)) if d != "0"]
    return list(reversed(out))


def partial_products(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
    """A sub-procedure computing the product of step ``index`` as partial products and their sum.

    Returns:
        The derived procedure (last step: the step's variable, type, scale and rounding), or
        ``None`` when the step is not one product of two numbers with a decimal factor, or a
        factor has a single non-zero digit (``scale``'s).
    """
    found = leaf_values(procedure, index, env)
    if found is None or not isinstance(found[0], ast.BinOp) or not isinstance(found[0].op, ast.Mult):
        return None
    a, b = found[1]
    if decimal_places(a) in (0, None) and decimal_places(b) in (0, None):
        return None  # whole numbers: decompose's
    split, other = sorted((a, b), key=lambda v: (len(_parts(v)), abs(v)))
    parts = _parts(split)
    if len(parts) < 2:  # one digit (0.05): the product over whole numbers and the point is scale's
        return None
    sign = "-" if (split < 0) != (other < 0) and split != 0 and other != 0 else ""
    steps: list[dict[str, object]] = [{"var": f"t{i}", "expr": f"{text(abs(Fraction(other)))} * {text(p)}"} for i, p in enumerate(parts, 1)]
    n = len(steps)
    total = "t1"
    for i in range(2, n + 1):  # summed two at a time: a running total plus the next partial product
        steps.append({"var": f"t{len(steps) + 1}", "expr": f"{total} + t{i}"})
        total = f"t{len(steps)}"
    if sign:  # the magnitudes first, then the sign as a sub-step of its own
        steps.append({"var": f"t{len(steps) + 1}", "expr": f"-{total}"})
    return derived(procedure, index, steps, "partial")


@register
class Partial(Rung):
    """``partial``: a product with a decimal factor as partial products and their sum (:func:`partial_products`)."""

    name = "partial"
    applies_to = "a product of two operands, one with decimal places and two or more non-zero digits"
    derives = True
    nested_ladder = SUB_STEP_LADDER  # a failing sub-step through the rung for its operation, then resampled
    nested_tries = len(SUB_STEP_LADDER)

    def derive(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
        """See :func:`partial_products`."""
        return partial_products(procedure, index, env)
