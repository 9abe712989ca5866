"""The checks of one record of a chunk's reply, each a small function, in the order :data:`RECORD_CHECKS` gives.

:func:`stepguard.verify.verify_chunk` walks a reply's records in generation order. Each record
meets the walk in one of three places (:data:`Where`): it is the record of the step the walk
expects next (``"step"``), a record of another variable while the chunk's steps are still to come
(``"other"``), or a record after the chunk's last step (``"after"``). The record then goes through
that place's checks in order; the first that does not answer :data:`PASS` decides (:data:`Outcome`):

* :data:`PASS` from every check: the expected step's value is verified and taken; any other record
  is passed over (an input restated, a step beyond the chunk);
* ``"restated"``: a committed step written again with its own value, passed over;
* ``"invented"``: a step the procedure does not have, written after the chunk's steps; noted;
* a :class:`~stepguard.verify.Deviation`: the first deviation, which ends the walk;
* :class:`Withdrawn`: the first deviation, and a step of this chunk is not taken after all;
* :class:`Noted`: a deviation noted beside the verdict, not refused.

A check is a function of the record and a :class:`RecordContext` (the step expected, the values
committed, the chunk's steps taken so far, the reply's records, and for the expected step's record
its value as read and the evaluator's). Adding or moving one is a change to :data:`RECORD_CHECKS`
and to ``tests/verify/test_record_checks.py``, which pins the order.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final, Literal, NamedTuple

from stepguard.errors import EvaluationError
from stepguard.evaluator import Number, format_number
from stepguard.procedure import Procedure, Step, format_value
from stepguard.trace import Record
from stepguard.verify._deviation import Deviation
from stepguard.verify._values import (
    NON_NUMERIC,
    link_values,
    operand_leaves,
    restated_value,
    same_at_places,
    same_value,
    shown,
    step_value,
    type_ok,
)

__all__ = [
    "PASS",
    "RECORD_CHECKS",
    "Noted",
    "Outcome",
    "RecordCheck",
    "RecordContext",
    "Where",
    "Withdrawn",
    "check_record",
    "record_context",
]

Where = Literal["step", "other", "after"]
"""Where a record meets the walk:

* ``"step"``: it is the record of the step the walk expects next;
* ``"other"``: a record of another variable, while steps of the chunk are still to come;
* ``"after"``: a record after the chunk's last step was verified (every record, for an empty chunk).
"""

PASS: Final = "pass"
"""A check's answer when it has nothing to say about the record."""


@dataclass(frozen=True, slots=True)
class Withdrawn:
    """A deviation that also takes back a step of this chunk already verified: which of its two
    values the model meant is not written, so neither is taken and the walk goes back to it.

    Attributes:
        deviation: the deviation (its ``step`` is the variable taken back).
    """

    deviation: Deviation


@dataclass(frozen=True, slots=True)
class Noted:
    """A deviation noted in the verdict's ``others``, not refused: nothing verified rests on the record.

    Attributes:
        deviation: the deviation noted.
    """

    deviation: Deviation


Outcome = Literal["pass", "restated", "invented"] | Deviation | Withdrawn | Noted
"""What a check says of a record (the module's docstring lists each)."""


class RecordContext(NamedTuple):
    """What the walk knows when it meets one record (build it with :func:`record_context`).

    Immutable and cheap to build (one a record). The mappings are the walk's own: the checks read
    them and never change them, and they hold while the record is checked.

    Attributes:
        procedure: the procedure being executed.
        pos: 0-based index of the step the walk expects next (``end`` once the chunk's steps are verified).
        end: 0-based index one past the chunk's last step.
        committed: the committed values: the inputs, every earlier step's and this chunk's verified so far, exact.
        taken: the variables of this chunk's steps verified so far.
        records: every record of the reply, in generation order.
        where: where the record meets the walk (:data:`Where`).
        value: for the expected step's record, its value as the step's type reads it and rounded by
            its rule; ``None`` when it gives none, and for every other record.
        want: the evaluator's value of the expected step on ``committed`` (``None``: the step states
            none, or its record gives no value, or the step cannot be evaluated).
        unevaluable: why the expected step cannot be evaluated on ``committed`` (the evaluator's
            error), else ``None``.
    """

    procedure: Procedure
    pos: int
    end: int
    committed: Mapping[str, Number | str]
    taken: Collection[str]
    records: Sequence[Record]
    where: Where
    value: Number | str | None = None
    want: Number | str | None = None
    unevaluable: str | None = None

    @property
    def step(self) -> Step:
        """The step the walk expects next (only while ``where`` is not ``"after"``)."""
        return self.procedure.steps[self.pos]


RecordCheck = Callable[[Record, RecordContext], Outcome]
"""One check: ``(record, context) -> outcome``; pure (it changes neither)."""


def record_context(
    procedure: Procedure,
    pos: int,
    end: int,
    committed: Mapping[str, Number | str],
    taken: Collection[str],
    records: Sequence[Record],
    record: Record,
) -> RecordContext:
    """The context of ``record`` (arguments: :class:`RecordContext`'s fields). For the expected
    step's record, its value is read here, and the evaluator's value computed when it gave one."""
    if pos >= end:
        return RecordContext(procedure, pos, end, committed, taken, records, "after")
    step = procedure.steps[pos]
    if record.var != step.var:
        return RecordContext(procedure, pos, end, committed, taken, records, "other")
    value = step_value(record, step)
    want: Number | str | None = None
    unevaluable: str | None = None
    if value is not None:
        try:
            want = procedure.expected_value(pos, committed)
        except EvaluationError as exc:
            unevaluable = str(exc)
    return RecordContext(procedure, pos, end, committed, taken, records, "step", value, want, unevaluable)


# ---- "other": a record of another variable while the chunk's steps are still to come ------------

def _committed_step(rec: Record, ctx: RecordContext) -> Step | None:
    """The step ``rec`` writes, when that step has a committed value."""
    index = ctx.procedure.index_of.get(rec.var)
    return ctx.procedure.steps[index] if index is not None and rec.var in ctx.committed else None


def _predicate_only(procedure: Procedure, var: str) -> bool:
    """A step with no expected value: no ``expr``, and a ``check`` (if any) that is a predicate."""
    index = procedure.index_of[var]
    return procedure.compiled[index] is None and not procedure.check_is_expected[index]


def written_again(rec: Record, ctx: RecordContext) -> Outcome:
    """A step with a committed value (verified in this chunk, or before it) written again: a harmless
    restatement of its value (``5.005`` after ``5.01``, rounded as the step rounds) is ``"restated"``;
    another value, or none, is ``extra_steps``. A step of this chunk with no expected value (a
    predicate only) written again so is :class:`Withdrawn` as well: nothing checked the first value
    but a range, so neither is taken. A step the evaluator checked keeps its value."""
    step = _committed_step(rec, ctx)
    if step is None:
        return PASS
    again = restated_value(rec, step)
    if again is not None and same_value(again, ctx.committed[rec.var]):
        return "restated"
    how = "with a different value" if again is not None else "without a value"
    dev = Deviation(kind="extra_steps", step=rec.var, detail=f"{rec.var} was written again {how}", got=rec.text)
    return Withdrawn(dev) if rec.var in ctx.taken and _predicate_only(ctx.procedure, rec.var) else dev


def step_ahead(rec: Record, ctx: RecordContext) -> Outcome:
    """A later step of the chunk written before the expected one: ``out_of_order`` when the expected
    step's record comes on a later line of the reply, else ``under_executed`` (it was skipped)."""
    if rec.var not in (s.var for s in ctx.procedure.steps[ctx.pos + 1 : ctx.end]):
        return PASS
    want = ctx.step.var
    later = any(r.var == want for r in ctx.records if r.line > rec.line)
    kind = "out_of_order" if later else "under_executed"
    detail = f"{rec.var} was written before {want}" if later else f"step {want} was skipped"
    return Deviation(kind=kind, step=want, detail=detail, got=rec.text)


def not_a_step(rec: Record, ctx: RecordContext) -> Outcome:
    """A variable the procedure has no step for, written inside the chunk: ``extra_steps``."""
    if rec.var in ctx.procedure.index_of:
        return PASS
    return Deviation(kind="extra_steps", step=rec.var, detail=f"{rec.var} is not a step of this procedure", got=rec.text)


# ---- "step": the expected step's record -----------------------------------------------------------

def readable(rec: Record, ctx: RecordContext) -> Outcome:
    """A value the step's type can read: else ``type_error`` (a word not of the step's type),
    ``under_executed`` (no number: nothing computed, as when a caller's "reply with the final price"
    is obeyed) or ``arithmetic_error`` (a number that cannot be read exactly: ``12,5``)."""
    if ctx.value is not None:
        return PASS
    step, var = ctx.step, ctx.step.var
    if step.type in NON_NUMERIC:
        among = f" (one of {', '.join(step.choices)})" if step.choices else ""
        return Deviation(kind="type_error", step=var, detail=f"{var} must be of type {step.type}{among}", got=rec.text)
    if rec.error in (None, "no number"):
        return Deviation(kind="under_executed", step=var, detail=f"no value for {var}: the line holds no number", got=rec.text)
    return Deviation(kind="arithmetic_error", step=var, detail=f"no readable value for {var} ({rec.error})", got=rec.text)


def evaluable(rec: Record, ctx: RecordContext) -> Outcome:
    """The step can be evaluated on the committed values: else ``check_failed`` (a flag policy may
    have kept a wrong value it reads; division by zero)."""
    if ctx.unevaluable is None:
        return PASS
    read = ", ".join(f"{n} = {format_value(ctx.committed[n])}" for n in ctx.procedure.reads(ctx.pos) if n in ctx.committed)
    var = ctx.step.var
    return Deviation(kind="check_failed", step=var, detail=f"{var} cannot be evaluated on the values it reads ({read}): {ctx.unevaluable}")


def _wrong_operand(rec: Record, ctx: RecordContext) -> Deviation | None:
    """``lookback_confusion`` when the record's substituted operands (as many as the expression's
    leaves) give a name another value than its committed one."""
    leaves, ops = operand_leaves(ctx.procedure, ctx.pos), rec.operands
    if not ops or len(ops) != len(leaves):
        return None
    step = ctx.step
    for (name, _const), got in zip(leaves, ops, strict=True):  # lengths checked equal above
        want = ctx.committed.get(name) if name is not None else None
        if want is None or isinstance(want, str) or got == want:
            continue
        return Deviation(kind="lookback_confusion", step=step.var, got=rec.text,
                         detail=f"in {step.var} = {step.expression}, {name} is {format_number(want)}, not {format_number(got)}")
    return None


def matches_expected(rec: Record, ctx: RecordContext) -> Outcome:
    """The evaluator's value, where the step states one: a right value passes whatever form its
    working took (``-517 - (-168) = -517 + 168 = -349``); a wrong one is a ``lookback_confusion``
    when a substituted operand is wrong, else an ``arithmetic_error``."""
    value, want = ctx.value, ctx.want
    if value is None or want is None or same_value(value, want):
        return PASS
    operand = _wrong_operand(rec, ctx)
    if operand is not None:
        return operand
    step = ctx.step
    expr = f" = {step.expression}" if step.expression else ""
    return Deviation(kind="arithmetic_error", step=step.var, got=rec.text,
                     detail=f"{step.var}{expr} was computed as {shown(value, rec, step)}, which is wrong")


def declared_type(rec: Record, ctx: RecordContext) -> Outcome:
    """A step with no expected value: its value must be of the declared type (``type_error``)."""
    step = ctx.step
    if ctx.want is not None or ctx.value is None or type_ok(ctx.value, step.type, step.choices):
        return PASS
    return Deviation(kind="type_error", step=step.var, detail=f"{step.var} must be of type {step.type}", got=rec.text)


def working_agrees(rec: Record, ctx: RecordContext) -> Outcome:
    """A step with no expected value whose line shows working: every link the evaluator can read on
    the committed values must give the value written (``arithmetic_error``). ``discount = 20 / total
    = 5`` with total 5 gives 4: the line's 5 is another step's, not this one's working."""
    value = ctx.value
    if ctx.want is not None or value is None or isinstance(value, (str, bool)):
        return PASS
    for link, got in link_values(rec, ctx.committed):
        if not same_at_places(got, value, ctx.step):
            var = ctx.step.var
            return Deviation(kind="arithmetic_error", step=var, got=rec.text,
                             detail=f"{var} = {shown(value, rec, ctx.step)}, but its working {link} gives {format_number(got)}: "
                                    "one value for the step, written once")
    return PASS


def predicate_holds(rec: Record, ctx: RecordContext) -> Outcome:
    """The step's ``check`` predicate (one that is not an expected value) holds on the value, with
    the committed values: else ``check_failed`` (false, or it cannot be evaluated)."""
    check, value = ctx.procedure.compiled_checks[ctx.pos], ctx.value
    if check is None or ctx.procedure.check_is_expected[ctx.pos] or value is None:
        return PASS
    step = ctx.step
    try:
        ok = check.evaluate({**ctx.committed, "value": value})
    except EvaluationError as exc:
        ok, why = False, str(exc)
    else:
        why = f"check {step.check!r} is false"
    if ok is True:
        return PASS
    return Deviation(kind="check_failed", step=step.var, detail=f"{step.var} = {shown(value, rec, step)}: {why}", got=rec.text)


# ---- "after": a record after the chunk's last step ---------------------------------------------

def invented_after(rec: Record, ctx: RecordContext) -> Outcome:
    """A variable that is neither a step nor an input (``S96`` past a 95-step procedure's end):
    ``"invented"``, gathered into one ``extra_steps`` note naming them all."""
    if rec.var in ctx.procedure.index_of or rec.var in ctx.committed:
        return PASS
    return "invented"


def _contradicted(rec: Record, ctx: RecordContext) -> bool:
    """Does ``rec`` write a committed step again with another value? Not the same value, nor no
    value, nor a record of no committed step (an input restated)."""
    step = _committed_step(rec, ctx)
    if step is None:
        return False
    again = restated_value(rec, step)
    return again is not None and not same_value(again, ctx.committed[rec.var])


def chunk_step_contradicted(rec: Record, ctx: RecordContext) -> Outcome:
    """A step of this chunk written again with another value after the chunk's steps: which value is
    meant is not written, so neither is taken (:class:`Withdrawn`, ``extra_steps``)."""
    if rec.var not in ctx.taken or not _contradicted(rec, ctx):
        return PASS
    return Withdrawn(Deviation(kind="extra_steps", step=rec.var, detail=f"{rec.var} was written again with a different value",
                               got=rec.text))


def earlier_step_contradicted(rec: Record, ctx: RecordContext) -> Outcome:
    """A step committed before this chunk written again with another value after the chunk's steps:
    :class:`Noted` (``extra_steps``); this chunk's values were checked against the committed one, which stands."""
    if rec.var in ctx.taken or not _contradicted(rec, ctx):
        return PASS
    return Noted(Deviation(kind="extra_steps", step=rec.var, got=rec.text,
                           detail=f"{rec.var} was written again with a different value after this chunk's steps; "
                                  f"its committed value stands"))


RECORD_CHECKS: Mapping[Where, tuple[RecordCheck, ...]] = MappingProxyType({
    "other": (written_again, step_ahead, not_a_step),
    "step": (readable, evaluable, matches_expected, declared_type, working_agrees, predicate_holds),
    "after": (invented_after, chunk_step_contradicted, earlier_step_contradicted),
})
"""Each place's checks, in the order a record goes through them; the first answer other than
:data:`PASS` decides. Why each comes where it does:

``"other"`` (a record of another variable inside the chunk):

1. :func:`written_again` first: a step with a committed value is written *again*, even when it is
   also a later step of the chunk (a re-asked chunk whose later steps were committed) or would
   otherwise be passed over; its harmless restatement must pass before anything could refuse it.
2. :func:`step_ahead`: a later step of the chunk; disjoint from :func:`not_a_step` (it is a step).
3. :func:`not_a_step`: a name the procedure does not have. A record no check refuses (a step beyond
   the chunk, an input restated) is passed over.

``"step"`` (the expected step's record):

1. :func:`readable` first: no other check can look at a value the record does not give, and a line
   with none is refused for that whatever else is wrong.
2. :func:`evaluable`: the evaluator's value is needed by every check after it.
3. :func:`matches_expected`: where the step states an expected value it decides alone; the checks
   after it look only at steps that state none.
4. :func:`declared_type`: a value of another type is refused before its working or its range is read.
5. :func:`working_agrees` before :func:`predicate_holds`: a value whose own working gives another
   number is an arithmetic error even when it falls in the predicate's range.
6. :func:`predicate_holds` last: a range is the weakest statement, asked of a value that passed the rest.

``"after"`` (a record after the chunk's last step):

1. :func:`invented_after`: a name neither step nor input, noted.
2. :func:`chunk_step_contradicted` and 3. :func:`earlier_step_contradicted`: a committed step
   written again with another value, refused when it is this chunk's step, noted when an earlier
   chunk's. The two are disjoint; the refusal comes first as the stronger answer.
"""


def check_record(rec: Record, ctx: RecordContext) -> Outcome:
    """The first answer other than :data:`PASS` of ``ctx.where``'s checks in :data:`RECORD_CHECKS`, else :data:`PASS`."""
    for check in RECORD_CHECKS[ctx.where]:
        outcome = check(rec, ctx)
        if outcome != PASS:
            return outcome
    return PASS
