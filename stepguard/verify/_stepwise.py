"""Stepwise verification: the guard's check of one chunk of model output against the procedure.

In generation order, each record is checked for presence, order, its substituted operands
(against the committed values) and its value (against the safe evaluator). The first deviation
ends the check; everything before it is the verified prefix.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, cast

from stepguard.errors import EvaluationError
from stepguard.evaluator import Number, compile_expression, decimal_places, format_number, parse_number
from stepguard.procedure import Procedure, Step, apply_scale, format_value, round_to_scale
from stepguard.trace import NOT_ONE_VALUE, Record, Trace, parse_trace
from stepguard.verify._deviation import Deviation

__all__ = ["ChunkVerdict", "expected_value", "operand_leaves", "read_raw_value", "verify_chunk"]

_NON_NUMERIC = frozenset({"boolean", "string", "one_of"})
_MARKS = " \t\r*_`$\"'."
_BOOLS = {"true": True, "false": False, "yes": True, "no": False}
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")


@dataclass
class ChunkVerdict:
    """The outcome of checking one reply for steps ``start..end-1`` (0-based, end exclusive).

    Attributes:
        verified: ``(var, value)`` for each step verified, in order (a prefix of the chunk).
        deviation: the first deviation, or ``None`` when the whole chunk verified.
        step_index: 0-based index of the step the deviation concerns (``start + len(verified)``).
        model_value: what the model wrote for that step, when it wrote a value.
        others: further deviations seen after the first (for reporting only).
    """

    verified: list[tuple[str, Number | str]] = field(default_factory=list)
    deviation: Deviation | None = None
    step_index: int | None = None
    model_value: Number | str | None = None
    others: list[Deviation] = field(default_factory=list)


def expected_value(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Number | str | None:
    """The evaluator's value of step ``index`` given ``env``: :meth:`Procedure.expected_value`.

    Every expected value the step states is enforced (``expr`` and an expected-value ``check``);
    ``None`` when it states neither.

    Raises:
        EvaluationError: an expression fails on these values (e.g. division by zero), or the
            step's ``expr`` and expected-value ``check`` disagree.
    """
    return procedure.expected_value(index, env)


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


_MAX_LINKS = 64
_MAX_WORD = 64


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


def _check_operands(
    procedure: Procedure, index: int, record: Record, env: Mapping[str, Number | str]
) -> Deviation | None:
    leaves = operand_leaves(procedure, index)
    ops = record.operands
    if not ops or len(ops) != len(leaves):
        return None
    var = procedure.steps[index].var
    for (name, _const), got in zip(leaves, ops, strict=True):  # lengths checked equal above
        if name is None:
            continue
        want = env.get(name)
        if want is None or isinstance(want, str) or got == want:
            continue
        return Deviation(
            kind="lookback_confusion",
            step=var,
            detail=f"in {var} = {procedure.steps[index].expression}, {name} is {format_number(want)}, not {format_number(got)}",
            got=record.text,
        )
    return None


def _type_ok(value: Number | str | None, type_: str, choices: Sequence[str] | None) -> bool:
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


@dataclass
class _Walk:
    """One chunk's check in progress: the values committed so far and where the walk stands."""

    procedure: Procedure
    start: int
    end: int
    trace: Trace
    local: dict[str, Number | str]
    pos: int
    verdict: ChunkVerdict = field(default_factory=ChunkVerdict)
    seen_lines: dict[str, Record] = field(default_factory=dict)
    """The chunk's steps whose record the walk has taken, by variable."""
    last_line: int = -1
    """The line of the last verified record."""
    last_record: int = -1
    """The index of the last verified record (records, not lines: ``u = t * 2 = 22, t = 12`` is two)."""

    @property
    def step(self) -> Step:
        """The step the walk expects next."""
        return self.procedure.steps[self.pos]

    def fail(self, dev: Deviation, value: Number | str | None = None) -> ChunkVerdict:
        """End the walk at ``dev``, the model's value (if it wrote one) beside it."""
        self.verdict.deviation, self.verdict.step_index, self.verdict.model_value = dev, self.pos, value
        return self.verdict


# ---- a record of another variable than the step the walk expects ----------------------------------

def _written_again(w: _Walk, rec: Record) -> Deviation | None:
    """A step already verified (or committed before the chunk) written again: a harmless restatement
    of its value passes; another value, or none, is ``extra_steps``."""
    steps, index = w.procedure.steps, w.procedure.index_of
    again = _restated(rec, steps[index[rec.var]])
    if again is not None and _same(again, w.local.get(rec.var)):
        return None  # 5.005 after 5.01, rounded as the step rounds
    how = "with a different value" if again is not None else "without a value"
    return Deviation(kind="extra_steps", step=rec.var, detail=f"{rec.var} was written again {how}", got=rec.text)


def _withdrawn(w: _Walk, var: str) -> None:
    """A step of this chunk with no expected value (a predicate only), written again with another value
    before the chunk ends: which value is meant is not written, and nothing checked the first but a
    range, so neither is taken (the walk goes back to it). A step the evaluator checked keeps its value."""
    index = w.procedure.index_of.get(var)
    if var not in w.seen_lines or index is None or w.procedure.compiled[index] is not None or w.procedure.check_is_expected[index]:
        return
    verified = w.verdict.verified
    w.verdict.verified = verified[:next(i for i, (v, _) in enumerate(verified) if v == var)]
    w.pos = index


def _ahead(w: _Walk, rec: Record) -> Deviation:
    """A later step of the chunk written before the expected one: ``out_of_order`` when the expected
    step comes later in the reply, else ``under_executed`` (it was skipped)."""
    want = w.step.var
    later = any(r.var == want for r in w.trace.records if r.line > rec.line)
    kind = "out_of_order" if later else "under_executed"
    detail = f"{rec.var} was written before {want}" if later else f"step {want} was skipped"
    return Deviation(kind=kind, step=want, detail=detail, got=rec.text)


def _other_record(w: _Walk, rec: Record) -> Deviation | None:
    """The deviation a record of another variable makes, or None to pass over it (an input restated,
    a step beyond the chunk)."""
    index = w.procedure.index_of
    if rec.var in w.seen_lines or (rec.var in w.local and rec.var in index):
        return _written_again(w, rec)
    if rec.var in (s.var for s in w.procedure.steps[w.pos + 1 : w.end]):
        return _ahead(w, rec)
    if rec.var not in index:
        return Deviation(kind="extra_steps", step=rec.var, detail=f"{rec.var} is not a step of this procedure", got=rec.text)
    return None


# ---- the expected step's record: its value read, then checked in order ----------------------------

def _read_value(w: _Walk, rec: Record) -> tuple[Number | str | None, Deviation | None]:
    """The record's value as the step's type reads it (rounded by the step's rule), or the deviation
    of a line that gives none: ``type_error`` (not a word of the step's type), ``under_executed``
    (no number: nothing computed), ``arithmetic_error`` (a number that cannot be read exactly)."""
    step, var = w.step, w.step.var
    value: Number | str | None = rec.value
    if step.type in _NON_NUMERIC:
        value = read_raw_value(rec, step.type, step.choices)
        if value is None:
            among = f" (one of {', '.join(step.choices)})" if step.choices else ""
            return None, Deviation(kind="type_error", step=var, detail=f"{var} must be of type {step.type}{among}", got=rec.text)
    if value is None and rec.error in (None, "no number"):
        return None, Deviation(kind="under_executed", step=var, detail=f"no value for {var}: the line holds no number", got=rec.text)
    if value is None:  # 12,5; 12 thousand; S1 = 5 | S2 = 8
        return None, Deviation(kind="arithmetic_error", step=var, detail=f"no readable value for {var} ({rec.error})", got=rec.text)
    if step.scale is not None:
        value = apply_scale(value, step)  # the procedure's rounding rule, applied exactly: 5.005 -> 5.01 (HALF_UP)
    return value, None


def _against_expected(w: _Walk, rec: Record, value: Number | str, want: Number | str | None) -> Deviation | None:
    """A value other than the evaluator's, classified by its substitution: a wrong operand is a
    ``lookback_confusion``, right operands an ``arithmetic_error``. A right value passes whatever
    form its working took (``-517 - (-168) = -517 + 168 = -349``)."""
    if want is None or (value == want and isinstance(value, bool) == isinstance(want, bool)):
        return None
    operand = _check_operands(w.procedure, w.pos, rec, w.local)
    if operand is not None:
        return operand
    step = w.step
    expr = f" = {step.expression}" if step.expression else ""
    return Deviation(kind="arithmetic_error", step=step.var, got=rec.text,
                     detail=f"{step.var}{expr} was computed as {_shown(value, rec, step)}, which is wrong")


def _declared_type(w: _Walk, rec: Record, value: Number | str, want: Number | str | None) -> Deviation | None:
    """A step with no expected value: its value must be of the declared type."""
    step = w.step
    if want is not None or _type_ok(value, step.type, step.choices):
        return None
    return Deviation(kind="type_error", step=step.var, detail=f"{step.var} must be of type {step.type}", got=rec.text)


def _predicate(w: _Walk, rec: Record, value: Number | str, want: Number | str | None) -> Deviation | None:
    """The step's ``check`` predicate (one that is not an expected value), on the value."""
    check = w.procedure.compiled_checks[w.pos]
    if check is None or w.procedure.check_is_expected[w.pos]:
        return None
    step = w.step
    try:
        ok = check.evaluate({**w.local, "value": value})
    except EvaluationError as exc:
        ok, why = False, str(exc)
    else:
        why = f"check {step.check!r} is false"
    if ok is True:
        return None
    return Deviation(kind="check_failed", step=step.var, detail=f"{step.var} = {_shown(value, rec, step)}: {why}", got=rec.text)


_LINK_MARKS = str.maketrans({"×": "*", "÷": "/", "−": "-", "–": "-", "·": "*", "⋅": "*", "`": None, "$": None})
_EMPHASIS = re.compile(r"\*\*([^*]{1,200})\*\*")  # **S6** + **S2**: markup, not a power


def _link_values(rec: Record, env: Mapping[str, Number | str]) -> list[tuple[str, Number]]:
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


def _same_at_places(exact: Number, value: Number, step: Step) -> bool:
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


def _working_agrees(w: _Walk, rec: Record, value: Number | str, want: Number | str | None) -> Deviation | None:
    """A step with no expected value (its check a predicate only) whose line shows working: every
    link the evaluator can read on the committed values must give the value written. ``discount = 20 /
    total = 5`` with total 5 gives 4: the line's 5 is another step's, not this one's working."""
    if want is not None or isinstance(value, (str, bool)):
        return None
    for link, got in _link_values(rec, w.local):
        if not _same_at_places(got, value, w.step):
            var = w.step.var
            return Deviation(kind="arithmetic_error", step=var, got=rec.text,
                             detail=f"{var} = {_shown(value, rec, w.step)}, but its working {link} gives {format_number(got)}: "
                                    "one value for the step, written once")
    return None


_VALUE_CHECKS = (_against_expected, _declared_type, _working_agrees, _predicate)
"""The checks of a read value, in order; the first deviation ends the walk."""


def _expected(w: _Walk) -> tuple[Number | str | None, Deviation | None]:
    """The evaluator's value of the expected step on the committed values, or the ``check_failed``
    deviation of a step that cannot be evaluated on them (a flag policy may have kept one wrong)."""
    try:
        return expected_value(w.procedure, w.pos, w.local), None
    except EvaluationError as exc:
        read = ", ".join(f"{n} = {format_value(w.local[n])}" for n in w.procedure.reads(w.pos) if n in w.local)
        var = w.step.var
        return None, Deviation(kind="check_failed", step=var, detail=f"{var} cannot be evaluated on the values it reads ({read}): {exc}")


def _take(w: _Walk, rec: Record) -> tuple[Number | str | None, Deviation | None]:
    """Read and check the expected step's record: its value and None, or the first deviation."""
    value, dev = _read_value(w, rec)
    if dev is not None or value is None:
        return None, dev
    want, dev = _expected(w)
    if dev is not None:
        return value, dev
    for check in _VALUE_CHECKS:
        dev = check(w, rec, value, want)
        if dev is not None:
            return value, dev
    return value, None


# ---- after the walk: a missing tail, what follows the chunk's steps, early answers -----------------

def _missing(w: _Walk, truncated: bool) -> Deviation:
    """Why the reply ends before the chunk's steps do: code instead of steps, the token limit, or a missing step."""
    var = w.step.var
    if w.trace.has_code and not w.verdict.verified:
        return Deviation(kind="code_instead_of_steps", step=var, detail="the reply holds code or program output instead of step lines")
    if truncated:
        return Deviation(kind="truncated", step=var, detail="the reply was cut at the token limit")
    tail = w.trace.records[-1].text if w.trace.records else ""
    return Deviation(kind="under_executed", step=var, detail=f"step {var} is missing", got=tail or None)


def _after_chunk(w: _Walk) -> ChunkVerdict | None:
    """Records after the chunk's last verified one: a step of this chunk written again with another
    value refuses it (which value is meant?); an earlier chunk's step written again, or steps the
    procedure does not have, are noted in ``others``, not taken."""
    steps, index, verdict = w.procedure.steps, w.procedure.index_of, w.verdict
    invented: list[Record] = []
    for rec in w.trace.records[w.last_record + 1:]:
        if rec.var not in index and rec.var not in w.local:  # neither a step nor an input: a step the model made up
            invented.append(rec)
            continue
        if rec.var not in index or rec.var not in w.local:
            continue
        again = _restated(rec, steps[index[rec.var]])
        if again is None or _same(again, w.local.get(rec.var)):
            continue
        if rec.var in w.seen_lines:  # this chunk's step: neither value is taken
            verdict.verified = verdict.verified[:next(i for i, (var, _) in enumerate(verdict.verified) if var == rec.var)]
            w.pos = index[rec.var]
            return w.fail(Deviation(kind="extra_steps", step=rec.var, detail=f"{rec.var} was written again with a different value",
                                    got=rec.text))
        # a step committed before this chunk: this chunk's values were checked against the committed one
        verdict.others.append(Deviation(kind="extra_steps", step=rec.var, got=rec.text,
                                        detail=f"{rec.var} was written again with a different value after this chunk's steps; "
                                               f"its committed value stands"))
    if invented:
        names = list(dict.fromkeys(r.var for r in invented))
        past = "past the procedure's last step" if w.end == len(steps) else "after this chunk's steps"
        verdict.others.append(Deviation(kind="extra_steps", step=invented[0].var, got=invented[0].text,
                                        detail=f"{', '.join(names)} {'is not a step' if len(names) == 1 else 'are not steps'} "
                                               f"of this procedure, written {past}; not taken"))
    return None


def _early_answer(w: _Walk) -> None:
    """A final answer before the chunk's last step: noted in ``others`` (the chunk's steps decide)."""
    final_step_in_chunk = w.end == len(w.procedure.steps)
    for ans in w.trace.answers:
        if ans.line <= w.last_line and not (final_step_in_chunk and ans.line == w.last_line):
            w.verdict.others.append(Deviation(kind="premature_answer", detail="a final answer came before the last step of the chunk"))
            return


def verify_chunk(
    procedure: Procedure,
    start: int,
    end: int,
    env: Mapping[str, Number | str],
    trace: Trace,
    *,
    truncated: bool = False,
) -> ChunkVerdict:
    """Check a parsed reply that should hold steps ``start..end-1`` of ``procedure``.

    The walk takes the reply's records in generation order. A record of another variable is passed
    over or ends the walk (:func:`_other_record`); the expected step's record is read and its value
    checked by :data:`_VALUE_CHECKS` in order (each one small function); after the walk, a missing
    tail, the records after the chunk's steps and early answers are looked at.

    Args:
        procedure: the procedure being executed.
        start: 0-based index of the chunk's first step.
        end: 0-based index one past its last step.
        env: committed values (inputs and every verified earlier variable), exact.
        trace: the parsed reply (:func:`stepguard.trace.parse_trace`).
        truncated: True when the reply hit max tokens (a missing tail is then ``truncated``).

    Returns:
        A :class:`ChunkVerdict`: the verified prefix and the first deviation, in the order
        missing step or a step line with no number (``under_executed``: nothing was computed, as when
        a caller's "reply with the final price" is obeyed), out-of-order step, extra (invented or repeated-with-a-
        different-value) step, wrong operand (``lookback_confusion``), wrong value
        (``arithmetic_error``, ``type_error``, ``check_failed``), premature final answer. A step of
        this chunk written again with another value after the chunk is refused (neither value is
        taken); before the chunk's end any verified step written again with another value is, and one
        with no expected value (a predicate only) is not taken either (:func:`_withdrawn`). Noted
        in ``others``, not refused: a premature final answer, an earlier chunk's step written again
        with another value after this chunk (its committed value stands; nothing here rests on the line),
        and steps the procedure does not have written after the chunk's steps (``S96 = ...`` past a
        95-step procedure's end: one ``extra_steps`` naming them; an input restated is not one).
    """
    w = _Walk(procedure, start, end, trace, dict(env), start)
    for rec_no, rec in enumerate(trace.records):
        if w.pos >= end:
            break
        if rec.var != w.step.var:
            dev = _other_record(w, rec)
            if dev is not None:
                _withdrawn(w, rec.var)
                return w.fail(dev)
            continue
        w.seen_lines[rec.var] = rec
        value, dev = _take(w, rec)
        if dev is not None:
            return w.fail(dev, value)
        assert value is not None  # _take gives a value or a deviation
        w.local[rec.var] = value
        w.verdict.verified.append((rec.var, value))
        w.last_line, w.last_record = rec.line, rec_no
        w.pos += 1
    if w.pos < end:
        return w.fail(_missing(w, truncated))
    cut = _after_chunk(w)
    if cut is not None:
        return cut
    _early_answer(w)
    return w.verdict


def _shown(value: Number | str, rec: Record, step: Step) -> str:
    """The model's value in a message, with its places: at the step's ``scale`` (``19.90``), else as
    the model wrote it when that reads as the same number (``format_number`` alone prints ``19.9``)."""
    if isinstance(value, str) or isinstance(value, bool):
        return str(value)
    if step.scale is not None:
        scaled = Fraction(value) * 10**step.scale
        if scaled.denominator == 1:
            digits = str(abs(int(scaled))).rjust(step.scale + 1, "0")
            sign = "-" if scaled < 0 else ""
            return sign + (f"{digits[:-step.scale]}.{digits[-step.scale:]}" if step.scale else digits)
        return format_number(value)
    rhs = rec.rhs if rec.rhs is not None else rec.text
    found = re.findall(r"-?\d+(?:\.\d+)?", rhs or "")
    if found:
        try:
            if parse_number(found[-1]) == value:
                return str(found[-1])
        except EvaluationError:
            pass
    return format_number(value)


def _restated(rec: Record, step: Step) -> Number | bool | str | None:
    """The value a line writing ``step`` again gives, read as the step's own line is and rounded by
    the step's rule (``5.005`` -> ``5.01``; ``true`` for a boolean; ``"2"`` for a choice named
    ``2``), or ``None`` where the line gives none."""
    if step.type in _NON_NUMERIC:
        return read_raw_value(rec, step.type, step.choices)
    if rec.value is None:
        return None
    return rec.value if step.scale is None else apply_scale(rec.value, step)


def _same(a: object, b: object) -> bool:
    """Equal values of the same kind: ``True`` is not ``1``."""
    return a == b and isinstance(a, bool) == isinstance(b, bool)
