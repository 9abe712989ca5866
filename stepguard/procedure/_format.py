"""A value as the prompts, committed state and results write it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from stepguard.evaluator import format_number

__all__ = ["format_value", "json_text"]


def format_value(value: Any) -> str:
    """A value as it appears in prompts and committed state: ``-12``, ``3.5``, ``True``, a string as
    written, a list or mapping (a text step's value) as one line of JSON (:func:`json_text`).

    Booleans are written as the expressions write them (``0.05 if t2 else 0`` reads ``t2 = False``):
    with ``false`` beside Python's ``True``/``False`` the embedded model answered a conditional
    ``= false = 0.05`` (docs/production.md).
    """
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (tuple, list, Mapping)):
        return json_text(value)
    return value if isinstance(value, str) else format_number(value)


def json_text(data: Any) -> str:
    """``data`` as compact one-line JSON (``", "`` and ``": "`` between items), every number exact:
    a ``Decimal`` as written (``2.50``), a ``Fraction`` in its shortest exact form.

    Raises:
        EvaluationError: a number with no finite decimal form (``1/3``), via :func:`format_number`.
    """
    if isinstance(data, Mapping):
        return "{" + ", ".join(f"{json.dumps(str(k), ensure_ascii=False)}: {json_text(v)}" for k, v in data.items()) + "}"
    if isinstance(data, (list, tuple)):
        return "[" + ", ".join(json_text(v) for v in data) + "]"
    if isinstance(data, Decimal):
        return str(data)
    if isinstance(data, (bool, str)) or data is None:
        return json.dumps(data, ensure_ascii=False)
    return format_number(data)
