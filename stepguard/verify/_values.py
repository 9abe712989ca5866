"""A record's value as a step reads it: the reading shared by stepwise verification and raw scoring.

Nothing here evaluates model text as code. :func:`read_raw_value` reads a boolean, string or
one_of step's word; :func:`step_value` reads any step's value (rounded by its rule);
:func:`restated_value` reads a step written again; :func:`link_values` gives the links of a
record's chain that the safe evaluator can check on committed values (a check of the working,
never a value for the step); :func:`shown` prints the model's value in a message.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any, cast

from stepguard.errors import EvaluationError
from stepguard.evaluator import Number, compile_expression, decimal_places, format_number, parse_number
from stepguard.procedure import Procedure, Step, apply_scale, round_to_scale
from stepguard.trace import NOT_ONE_VALUE, Record, parse_trace

__all__ = [
    "NON_NUMERIC",
    "link_values",
    "operand_leaves",
    "read_raw_value",
    "restated_value",
    "same_at_places",
    "same_value",
    "shown",
    "step_value",
    "type_ok",
]

NON_NUMERIC = frozenset({"boolean", "string", "one_of"})
"""The step types whose value is a word, read by :func:`read_raw_value` (the reader reads only numbers)."""

_MARKS = " \t\r*_`$\"'."
_BOOLS = {"true": True, "false": False, "yes": True, "no": False}
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
_MAX_LINKS = 64
_MAX_WORD = 64


def read_raw_value(record: Record, type_: str, choices: Sequence[str] | None = None) -> bool | str | None:
    """The value of a boolean, string or one_of step, read from the record's own clause.

    The trace parser reads only numbers, so ``tier = gold`` or ``eligible = total >= 100 = true``
    arrive with ``value=None``; this takes the text after the last ``=`` of the record's own
    right-hand side (:attr:`Record.rhs`: up to the next clause that assigns a variable, so in
    ``a = small, b = large`` the record for ``a`` reads ``small``), strips markdown marks, quotes
    and a trailing period, and reads it as ``type_``. Never evaluates it. A record built by hand
    (``rhs`` None) is read from its ``text`` as the parser would split that line.

    Args:
        record: the parsed record.
        type_: ``"boolean"`` (``true``/``false``/``yes``/``no``, any case), ``"one_of"`` (a choice,
            matched exactly, else case-insensitively and returned as the choice is spelled), or
            ``"string"`` (the stripped text, at least one character).
        choices: the allowed values for ``one_of``.

    Returns:
        ``True``/``False`` for booleans, a string otherwise, or ``None`` when nothing fits or
        the record's chain holds more than its own value (``ok1 = false | ok2 = true``: its
        ``error`` says which; ``ok1 = false = true``: a link that is another value of the step; the
        guard then reports a deviation).
    """
    if record.error in NOT_ONE_VALUE:
        return None  # "ok1 = false | ok2 = true": the record's chain holds more than its own value
    rhs = record.rhs if record.rhs is not None else _own_rhs(record)
    raw = rhs[rhs.rfind("=") + 1 :].strip(_MARKS) if rhs else ""
    if not raw:
        return None
    value = _word_value(raw, type_, choices)
    if value is not None and type_ in ("boolean", "one_of") and rhs is not None and "=" in rhs:
        # ok = false = true, a = small = large: a link that is itself another value of the step is a second answer
        for link in rhs.split("=", _MAX_LINKS)[:-1]:
            other = _word_value(link.strip(_MARKS), type_, choices) if len(link) <= _MAX_WORD else None
            if other is not None and other != value:
                return None
    return value


def _word_value(raw: str, type_: str, choices: Sequence[str] | None) -> bool | str | None:
    """``raw`` read as a value of ``type_`` (see :func:`read_raw_value`), or ``None``."""
    if not raw:
        return None
    if type_ == "boolean":
        return _BOOLS.get(raw.lower())
    if type_ == "one_of":
        options = tuple(choices or ())
        if raw in options:
            return raw
        folded = [c for c in options if c.lower() == raw.lower()]
        return folded[0] if len(folded) == 1 else None
    return raw


def _own_rhs(record: Record) -> str | None:
    """The right-hand side of ``record.var``'s clause in ``record.text``, split as the parser splits
    lines (every name on the line taken for a variable); for a hand-built record whose ``var`` the
    line does not name (``Record(var="v", text="tier = gold")``), that of the line's first clause."""
    text = record.text
    names = tuple(dict.fromkeys([record.var, *_NAME.findall(text)[:64]]))
    records = parse_trace(text, var_names=names).records
    for rec in (*[r for r in records if r.var == record.var], *records[:1]):
        if rec.rhs is not None:
            return rec.rhs
    return None


def step_value(record: Record, step: Step) -> Number | str | None:
    """The record's value as ``step``'s type reads it, rounded by the step's rule (``5.005`` ->
    ``5.01`` at scale 2, HALF_UP: the procedure's rule applied exactly), or ``None`` where the
    record gives none: a word that is not of the step's type, no number, or one not read exactly."""
    value: Number | str | None = read_raw_value(record, step.type, step.choices) if step.type in NON_NUMERIC else record.value
    if value is None or step.scale is None:
        return value
    return apply_scale(value, step)


def restated_value(record: Record, step: Step) -> Number | bool | str | None:
    """The value a line writing ``step`` again gives, read as the step's own line is and rounded by
    the step's rule (``5.005`` -> ``5.01``; ``true`` for a boolean; ``"2"`` for a choice named
    ``2``), or ``None`` where the line gives none."""
    if step.type in NON_NUMERIC:
        return read_raw_value(record, step.type, step.choices)
    if record.value is None:
        return None
    return record.value if step.scale is None else apply_scale(record.value, step)


def same_value(a: object, b: object) -> bool:
    """Equal values of the same kind: ``True`` is not ``1``."""
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def type_ok(value: Number | str | None, type_: str, choices: Sequence[str] | None) -> bool:
    """Whether ``value`` is of the declared step type ``type_`` (``integer``: an int, not a bool;
    ``number``/``decimal``: exact and not a bool; ``boolean``; ``one_of``: one of ``choices``;
    else a string). ``None`` is of no type."""
    if value is None:
        return False
    if type_ == "integer":
        return type(value) is int
    if type_ in ("number", "decimal"):
        return isinstance(value, (int, Fraction)) and not isinstance(value, bool)
    if type_ == "boolean":
        return isinstance(value, bool)
    if type_ == "one_of":
        return isinstance(value, str) and value in (choices or ())
    return isinstance(value, str)


def operand_leaves(procedure: Procedure, index: int) -> tuple[tuple[str | None, Number | str | None], ...]:
    """The leaves of step ``index``'s expression in source order: ``(name, None)`` or ``(None, constant)``."""
    compiled = procedure.compiled[index]
    if compiled is None:
        return ()
    leaves = [n for n in ast.walk(compiled.tree) if isinstance(n, (ast.Name, ast.Constant))]
    called = {id(n.func) for n in ast.walk(compiled.tree) if isinstance(n, ast.Call)}
    leaves = [n for n in leaves if id(n) not in called]
    leaves.sort(key=lambda n: (n.lineno, n.col_offset))
    # a constant as the parser gives it (an int, a float, a string): the callers compare it as such
    return tuple((n.id, None) if isinstance(n, ast.Name) else (None, cast(Any, n).value) for n in leaves)


_LINK_MARKS = str.maketrans({"×": "*", "÷": "/", "−": "-", "–": "-", "·": "*", "⋅": "*", "`": None, "$": None})
_EMPHASIS = re.compile(r"\*\*([^*]{1,200})\*\*")  # **S6** + **S2**: markup, not a power


def link_values(rec: Record, env: Mapping[str, Number | str]) -> list[tuple[str, Number]]:
    """``(link, its value)`` for each link of the record's chain (the parts before its value) that the
    safe evaluator compiles and can evaluate on the committed values ``env``; other links (prose,
    LaTeX, a name not committed) are left out. Never a value for the step: only a check of its working."""
    rhs = rec.rhs or ""
    if "=" not in rhs or len(rhs) > 1_000:
        return []
    out: list[tuple[str, Number]] = []
    for link in rhs.split("=")[:-1]:
        text = _EMPHASIS.sub(r"\1", link).translate(_LINK_MARKS).strip()
        if not text or text.endswith(("<", ">", "!")):
            continue  # a comparison's half ("a <" of "a <= b"): not a link of its own
        try:
            value = compile_expression(text).evaluate(env)
        except (EvaluationError, ValueError, TypeError, ZeroDivisionError):
            continue
        if isinstance(value, (int, Fraction)) and not isinstance(value, bool):
            out.append((text, value))
    return out


def same_at_places(exact: Number, value: Number, step: Step) -> bool:
    """Does the working's exact value give the written ``value``: equal, or equal once rounded by the
    step's rule, or (no scale) to the places ``value`` is written with, either way of a half?"""
    if exact == value:
        return True
    if step.scale is not None:
        return apply_scale(exact, step) == value
    places = decimal_places(Fraction(value))
    if places is None:
        return False
    return any(round_to_scale(exact, places, mode) == value for mode in ("ROUND_HALF_EVEN", "ROUND_HALF_UP"))


def shown(value: Number | str, rec: Record, step: Step) -> str:
    """The model's value in a message, with its places: at the step's ``scale`` (``19.90``), else as
    the model wrote it when that reads as the same number (``format_number`` alone prints ``19.9``)."""
    if isinstance(value, str) or isinstance(value, bool):
        return str(value)
    if step.scale is not None:
        return _at_scale(value, step.scale)
    rhs = rec.rhs if rec.rhs is not None else rec.text
    found = re.findall(r"-?\d+(?:\.\d+)?", rhs or "")
    if found:
        try:
            if parse_number(found[-1]) == value:
                return str(found[-1])
        except EvaluationError:
            pass
    return format_number(value)


def _at_scale(value: Number, scale: int) -> str:
    """``value`` printed with ``scale`` places (``19.90``) when it has no more, else as :func:`format_number` prints it."""
    scaled = Fraction(value) * 10**scale
    if scaled.denominator != 1:
        return format_number(value)
    digits = str(abs(int(scaled))).rjust(scale + 1, "0")
    sign = "-" if scaled < 0 else ""
    return sign + (f"{digits[:-scale]}.{digits[-scale:]}" if scale else digits)
