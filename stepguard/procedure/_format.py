"""A value as the prompts, committed state and results write it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any

from stepguard.evaluator import format_number

__all__ = ["format_value", "json_text"]


def format_value(value: Any) -> str:
    """A value as it appears in prompts and committed state: ``-12``, ``3.5``, ``True``, a string as
    written, a list or mapping (a text step's value) as one line of JSON (:func:`json_text`).

    Booleans are written as the expressions write them (``0.05 if t2 else 0`` reads ``t2 = False``):
    with ``false`` beside Python's ``True``/``False`` the embedded model answered a conditional
    ``= false = 0.05`` (docs/lab/production-suite-history.md).
    """
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (tuple, list, Mapping)):
        return json_text(value)
    return value if isinstance(value, str) else format_number(value)


def json_text(data: Any, indent: int | None = None, *, separators: tuple[str, str] = (", ", ": ")) -> str:
    """``data`` as JSON, every number exact: a ``Decimal`` as written (``2.50``; one whose text would
    read back as an integer, ``Decimal("0.50E+2")``, with ``E+0``: ``50E+0``), a ``Fraction`` in
    its shortest exact form, a ``float`` as ``json`` writes it. On one line, ``separators`` (between
    items, after a key; ``(",", ":")`` for a wire format) between items, unless ``indent`` (spaces a
    level) asks for one item a line.

    Raises:
        EvaluationError: a number with no finite decimal form (``1/3``), via :func:`format_number`.
    """
    return _json_text(data, indent, 0, separators)


def _json_text(data: Any, indent: int | None, depth: int, seps: tuple[str, str]) -> str:
    if isinstance(data, (Mapping, list, tuple)):
        items = ([f"{json.dumps(str(k), ensure_ascii=False)}{seps[1]}{_json_text(v, indent, depth + 1, seps)}" for k, v in data.items()]
                 if isinstance(data, Mapping) else [_json_text(v, indent, depth + 1, seps) for v in data])
        ends = "{}" if isinstance(data, Mapping) else "[]"
        if indent is None or not items:
            return ends[0] + seps[0].join(items) + ends[1]
        inner, outer = "\n" + " " * (indent * (depth + 1)), "\n" + " " * (indent * depth)
        return ends[0] + inner + ("," + inner).join(items) + outer + ends[1]
    if isinstance(data, Decimal):
        text = str(data)  # as read: 2.50 stays 2.50
        # exponent 0 with no point prints as an integer (0.50E+2 is 50), which JSON reads back as one
        return text if any(c in text for c in ".eEIN") else f"{text}E+0"
    if isinstance(data, (bool, str, float)) or data is None:
        return json.dumps(data, ensure_ascii=False)
    if isinstance(data, (int, Fraction)):
        return format_number(data)
    return json.dumps(str(data), ensure_ascii=False)  # anything else as its text, as json.dumps(default=str) wrote it
