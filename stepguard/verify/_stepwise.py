"""Stepwise verification: the guard's check of one chunk of model output against the procedure.

In generation order, each record goes through the checks of :data:`RECORD_CHECKS
<stepguard.verify._checks.RECORD_CHECKS>` for where it stands (the expected step's record, another
variable's, or one after the chunk's steps): presence, order, its substituted operands (against the
committed values) and its value (against the safe evaluator). The first deviation ends the check;
everything before it is the verified prefix. After the walk: a missing tail, steps invented after
the chunk's, and early answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from stepguard.evaluator import Number
from stepguard.procedure import Procedure
from stepguard.trace import Record, Trace
from stepguard.verify._checks import PASS, Noted, Outcome, RecordContext, Withdrawn, check_record, record_context
from stepguard.verify._deviation import Deviation

__all__ = ["ChunkVerdict", "expected_value", "verify_chunk"]


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


@dataclass
class _Walk:
    """One chunk's check in progress: the values committed so far and where the walk stands."""

    procedure: Procedure
    end: int
    trace: Trace
    local: dict[str, Number | str]
    pos: int
    verdict: ChunkVerdict = field(default_factory=ChunkVerdict)
    taken: set[str] = field(default_factory=set)
    """The chunk's steps verified so far, by variable."""
    last_line: int = -1
    """The line of the last verified record."""
    invented: list[Record] = field(default_factory=list)
    """Records after the chunk's steps of variables the procedure does not have."""

    def context(self, rec: Record) -> RecordContext:
        """What the checks of ``rec`` may read."""
        return record_context(self.procedure, self.pos, self.end, self.local, self.taken, self.trace.records, rec)

    def take(self, rec: Record, value: Number | str) -> None:
        """Commit the expected step's verified ``value`` and expect the next step."""
        self.local[rec.var] = value
        self.taken.add(rec.var)
        self.verdict.verified.append((rec.var, value))
        self.last_line = rec.line
        self.pos += 1

    def withdraw(self, var: str) -> None:
        """Take back this chunk's verified step ``var`` (and those after it): the walk goes back to it."""
        verified = self.verdict.verified
        self.verdict.verified = verified[:next(i for i, (v, _) in enumerate(verified) if v == var)]
        self.pos = self.procedure.index_of[var]

    def fail(self, dev: Deviation, value: Number | str | None = None) -> ChunkVerdict:
        """End the walk at ``dev``, the model's value (if it wrote one) beside it."""
        self.verdict.deviation, self.verdict.step_index, self.verdict.model_value = dev, self.pos, value
        return self.verdict

    def apply(self, rec: Record, ctx: RecordContext, outcome: Outcome) -> ChunkVerdict | None:
        """Act on the checks' ``outcome`` for ``rec``: the verdict when it ends the walk, else ``None``."""
        if outcome == PASS:
            if ctx.where == "step":
                assert ctx.value is not None  # readable passed
                self.take(rec, ctx.value)
        elif outcome == "invented":
            self.invented.append(rec)
        elif isinstance(outcome, Noted):
            self.verdict.others.append(outcome.deviation)
        elif isinstance(outcome, Withdrawn):
            self.withdraw(rec.var)
            return self.fail(outcome.deviation)
        elif isinstance(outcome, Deviation):
            return self.fail(outcome, ctx.value)
        return None


# ---- after the walk: a missing tail, steps invented after the chunk's, early answers --------------

def _missing(w: _Walk, truncated: bool) -> Deviation:
    """Why the reply ends before the chunk's steps do: code instead of steps, the token limit, or a missing step."""
    var = w.procedure.steps[w.pos].var
    if w.trace.has_code and not w.verdict.verified:
        return Deviation(kind="code_instead_of_steps", step=var, detail="the reply holds code or program output instead of step lines")
    if truncated:
        return Deviation(kind="truncated", step=var, detail="the reply was cut at the token limit")
    tail = w.trace.records[-1].text if w.trace.records else ""
    return Deviation(kind="under_executed", step=var, detail=f"step {var} is missing", got=tail or None)


def _invented_note(w: _Walk) -> None:
    """Steps the procedure does not have, written after the chunk's steps: one ``extra_steps`` in ``others`` naming them."""
    if not w.invented:
        return
    names = list(dict.fromkeys(r.var for r in w.invented))
    past = "past the procedure's last step" if w.end == len(w.procedure.steps) else "after this chunk's steps"
    first = w.invented[0]
    w.verdict.others.append(Deviation(kind="extra_steps", step=first.var, got=first.text,
                                      detail=f"{', '.join(names)} {'is not a step' if len(names) == 1 else 'are not steps'} "
                                             f"of this procedure, written {past}; not taken"))


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

    The walk takes the reply's records in generation order; each goes through the checks
    :data:`RECORD_CHECKS <stepguard.verify._checks.RECORD_CHECKS>` lists for where it stands (the
    expected step's record, another variable's inside the chunk, or one after the chunk's steps),
    in that order, each one small function; the first that answers decides. After the walk, a
    missing tail, the steps invented after the chunk's and early answers are looked at.

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
        with no expected value (a predicate only) is not taken either. Noted
        in ``others``, not refused: a premature final answer, an earlier chunk's step written again
        with another value after this chunk (its committed value stands; nothing here rests on the line),
        and steps the procedure does not have written after the chunk's steps (``S96 = ...`` past a
        95-step procedure's end: one ``extra_steps`` naming them; an input restated is not one).
    """
    w = _Walk(procedure, end, trace, dict(env), start)
    for rec in trace.records:
        ctx = w.context(rec)
        done = w.apply(rec, ctx, check_record(rec, ctx))
        if done is not None:
            return done
    if w.pos < end:
        return w.fail(_missing(w, truncated))
    _invented_note(w)
    _early_answer(w)
    return w.verdict
