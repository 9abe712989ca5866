"""Writing values into a step's line: what every kind's prompt lines share."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from stepguard.procedure import format_value

__all__ = ["NUMBER", "inline"]

NUMBER = re.compile(r"-?\d+(\.\d+)?")
"""A plain decimal number, as a line's expression may already be after its values were written in."""


def inline(expr: str, values: Mapping[str, Any]) -> str:
    """``expr`` with each name in ``values`` written as its value: a negative number in parentheses,
    a text quoted (``tier == 'gold'``); a name inside a longer one (``t1`` in ``t10``) is left alone."""

    def sub(m: re.Match[str]) -> str:
        value = values[m.group(0)]
        if isinstance(value, str):  # a text value as the expressions write one
            return repr(value)
        text = format_value(value)
        return f"({text})" if text.startswith("-") else text

    if not values:
        return expr
    pattern = r"(?<![\w.])(" + "|".join(re.escape(n) for n in sorted(values, key=len, reverse=True)) + r")(?![\w(])"
    return re.sub(pattern, sub, expr)
