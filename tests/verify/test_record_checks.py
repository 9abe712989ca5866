"""Each check of :data:`stepguard.verify._checks.RECORD_CHECKS` alone, and the order they run in.

``verify_chunk`` sends every record of a reply through the checks of the place it stands (the
expected step's record, another variable's inside the chunk, one after the chunk's steps). Each
check here gets its pass case, its refusal (or decision), and one neighbour; the last tests pin the
order, so that moving a check is a change a reviewer sees.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import pytest

from stepguard.evaluator import Number
from stepguard.procedure import Procedure
from stepguard.trace import Record, parse_trace
from stepguard.verify import Deviation, verify_chunk
from stepguard.verify._checks import (
    PASS,
    RECORD_CHECKS,
    Noted,
    Outcome,
    RecordCheck,
    RecordContext,
    Withdrawn,
    check_record,
    chunk_step_contradicted,
    declared_type,
    earlier_step_contradicted,
    evaluable,
    invented_after,
    matches_expected,
    not_a_step,
    predicate_holds,
    readable,
    record_context,
    step_ahead,
    working_agrees,
    written_again,
)

PROC = Procedure.model_validate({"inputs": ["a", "b"], "steps": [
    {"var": "S1", "expr": "a + b"},                                        # 0
    {"var": "S2", "expr": "S1 * 2"},                                       # 1
    {"var": "discount", "check": "0 <= value <= S1"},                      # 2: a predicate only
    {"var": "tier", "type": "one_of", "choices": ["small", "large"]},     # 3: no expected value
    {"var": "n", "type": "integer"},                                       # 4: no expr, no check
    {"var": "q", "expr": "a / b"},                                         # 5
    {"var": "S7", "check": "S1 + 1"},                                      # 6: a check that is an expected value
]})
INPUTS: dict[str, Number | str] = {"a": 2, "b": 3}
NAMES = ("a", "b", *(s.var for s in PROC.steps))


def _at(text: str, pos: int, end: int, committed: Mapping[str, Number | str] | None = None,
        taken: Collection[str] = ()) -> tuple[Record, RecordContext]:
    """The first record of ``text`` and its context, the walk expecting step ``pos`` of the chunk ``..end``."""
    records = parse_trace(text, var_names=NAMES).records
    values = {**INPUTS, **(committed or {})}
    return records[0], record_context(PROC, pos, end, values, set(taken), records, records[0])


def _check(check: RecordCheck, text: str, pos: int, end: int, committed: Mapping[str, Number | str] | None = None,
           taken: Collection[str] = ()) -> Outcome:
    """``check`` alone on the first record of ``text`` (arguments as :func:`_at`'s)."""
    rec, ctx = _at(text, pos, end, committed, taken)
    return check(rec, ctx)


def _dev(outcome: Outcome) -> Deviation:
    assert isinstance(outcome, Deviation), outcome
    return outcome


# ---- where a record stands ------------------------------------------------------------------------

def test_a_record_stands_at_the_step_at_another_variable_or_after_the_chunk() -> None:
    assert _at("S1 = 5", 0, 2)[1].where == "step"
    assert _at("S2 = 10", 0, 2)[1].where == "other"
    assert _at("S1 = 5", 2, 2, {"S1": 5})[1].where == "after"


def test_the_expected_steps_value_is_read_and_evaluated_once_in_its_context() -> None:
    _, ctx = _at("S1 = 2 + 3 = 5", 0, 1)
    assert (ctx.value, ctx.want, ctx.unevaluable) == (5, 5, None)
    _, other = _at("S2 = 10", 0, 2)
    assert (other.value, other.want) == (None, None)  # another variable's record is not read as the step's


# ---- "other": a record of another variable inside the chunk ----------------------------------------

def test_written_again_passes_a_step_with_no_committed_value() -> None:
    assert _check(written_again, "S2 = 10", 0, 2) == PASS


def test_written_again_refuses_a_committed_step_with_another_value() -> None:
    dev = _dev(_check(written_again, "S1 = 6", 1, 3, {"S1": 5}, taken={"S1"}))
    assert (dev.kind, dev.step, dev.detail) == ("extra_steps", "S1", "S1 was written again with a different value")


def test_written_again_calls_the_same_value_restated_and_no_value_a_deviation() -> None:
    assert _check(written_again, "S1 = 5", 1, 3, {"S1": 5}, taken={"S1"}) == "restated"
    assert _dev(_check(written_again, "S1 = the sum", 1, 3, {"S1": 5})).detail == "S1 was written again without a value"


def test_written_again_withdraws_this_chunks_predicate_only_step_but_not_an_earlier_chunks() -> None:
    outcome = _check(written_again, "discount = 3", 3, 4, {"S1": 5, "S2": 10, "discount": 2}, taken={"discount"})
    assert isinstance(outcome, Withdrawn) and outcome.deviation.kind == "extra_steps"
    earlier = _check(written_again, "discount = 3", 3, 4, {"S1": 5, "S2": 10, "discount": 2}, taken=())
    assert _dev(earlier).step == "discount"


def test_step_ahead_passes_a_step_beyond_the_chunk() -> None:
    assert _check(step_ahead, "discount = 1", 0, 2) == PASS


def test_step_ahead_refuses_a_later_step_written_first_as_out_of_order() -> None:
    dev = _dev(_check(step_ahead, "S2 = 10\nS1 = 5", 0, 2))
    assert (dev.kind, dev.step, dev.detail) == ("out_of_order", "S1", "S2 was written before S1")


def test_step_ahead_calls_a_step_never_written_skipped() -> None:
    dev = _dev(_check(step_ahead, "S2 = 10", 0, 2))
    assert (dev.kind, dev.detail) == ("under_executed", "step S1 was skipped")


def test_not_a_step_passes_a_step_of_the_procedure() -> None:
    assert _check(not_a_step, "discount = 1", 0, 2) == PASS


def test_not_a_step_refuses_a_name_the_procedure_does_not_have() -> None:
    dev = _dev(_check(not_a_step, "S9 = 4", 0, 2))
    assert (dev.kind, dev.step, dev.detail) == ("extra_steps", "S9", "S9 is not a step of this procedure")


def test_not_a_step_refuses_an_input_written_inside_the_chunk() -> None:
    assert _dev(_check(not_a_step, "a = 2", 0, 2)).kind == "extra_steps"


# ---- "step": the expected step's record ------------------------------------------------------------

def test_readable_passes_a_number() -> None:
    assert _check(readable, "S1 = 5", 0, 1) == PASS


def test_readable_refuses_a_number_not_read_exactly() -> None:
    dev = _dev(_check(readable, "S1 = 12,5", 0, 1))
    assert dev.kind == "arithmetic_error" and dev.detail.startswith("no readable value for S1 (")


def test_readable_calls_a_line_with_no_number_under_executed_and_a_wrong_word_a_type_error() -> None:
    assert _dev(_check(readable, "S1 = the sum", 0, 1)).detail == "no value for S1: the line holds no number"
    dev = _dev(_check(readable, "tier = medium", 3, 4, {"S1": 5, "S2": 10, "discount": 2}))
    assert (dev.kind, dev.detail) == ("type_error", "tier must be of type one_of (one of small, large)")


def test_evaluable_passes_a_step_the_evaluator_can_evaluate() -> None:
    assert _check(evaluable, "q = 1", 5, 6) == PASS


def test_evaluable_refuses_a_step_that_cannot_be_evaluated_on_the_committed_values() -> None:
    dev = _dev(_check(evaluable, "q = 1", 5, 6, {"b": 0}))
    assert dev.kind == "check_failed" and dev.detail.startswith("q cannot be evaluated on the values it reads (a = 2, b = 0): ")


def test_evaluable_leaves_a_record_with_no_value_to_readable() -> None:
    rec, ctx = _at("q = nothing", 5, 6, {"b": 0})
    assert ctx.unevaluable is None and evaluable(rec, ctx) == PASS and _dev(readable(rec, ctx)).kind == "under_executed"


def test_matches_expected_passes_the_right_value_whatever_its_working() -> None:
    assert _check(matches_expected, "S1 = a + b = 2 + 3 = 1 + 4 = 5", 0, 1) == PASS


def test_matches_expected_refuses_a_wrong_value_with_right_operands_as_arithmetic() -> None:
    dev = _dev(_check(matches_expected, "S1 = a + b = 2 + 3 = 6", 0, 1))
    assert (dev.kind, dev.detail) == ("arithmetic_error", "S1 = a + b was computed as 6, which is wrong")


def test_matches_expected_calls_a_wrong_operand_a_lookback_confusion() -> None:
    dev = _dev(_check(matches_expected, "S1 = a + b = 2 + 4 = 6", 0, 1))
    assert (dev.kind, dev.detail) == ("lookback_confusion", "in S1 = a + b, b is 3, not 4")


def test_matches_expected_enforces_a_check_that_is_an_expected_value() -> None:
    assert _dev(_check(matches_expected, "S7 = 7", 6, 7, {"S1": 5})).kind == "arithmetic_error"
    assert _check(matches_expected, "S7 = 6", 6, 7, {"S1": 5}) == PASS


def test_declared_type_passes_a_value_of_the_steps_type() -> None:
    assert _check(declared_type, "n = 4", 4, 5) == PASS


def test_declared_type_refuses_a_value_of_another_type() -> None:
    dev = _dev(_check(declared_type, "n = 2.5", 4, 5))
    assert (dev.kind, dev.detail) == ("type_error", "n must be of type integer")


def test_declared_type_leaves_a_step_with_an_expected_value_to_matches_expected() -> None:
    assert _check(declared_type, "S1 = 2.5", 0, 1) == PASS


def test_working_agrees_passes_working_that_gives_the_value() -> None:
    assert _check(working_agrees, "discount = 0.4 * S1 = 2", 2, 3, {"S1": 5}) == PASS


def test_working_agrees_refuses_working_that_gives_another_value() -> None:
    dev = _dev(_check(working_agrees, "discount = 20 / S1 = 5", 2, 3, {"S1": 5}))
    assert dev.kind == "arithmetic_error"
    assert dev.detail == "discount = 5, but its working 20 / S1 gives 4: one value for the step, written once"


def test_working_agrees_leaves_prose_links_and_steps_with_an_expected_value_alone() -> None:
    assert _check(working_agrees, "discount = a fifth of S1 = 5", 2, 3, {"S1": 5}) == PASS
    assert _check(working_agrees, "S1 = 20 / 4 = 6", 0, 1) == PASS  # matches_expected's to judge


def test_predicate_holds_passes_a_value_in_range() -> None:
    assert _check(predicate_holds, "discount = 2", 2, 3, {"S1": 5}) == PASS


def test_predicate_holds_refuses_a_value_out_of_range() -> None:
    dev = _dev(_check(predicate_holds, "discount = 7", 2, 3, {"S1": 5}))
    assert (dev.kind, dev.detail) == ("check_failed", "discount = 7: check '0 <= value <= S1' is false")


def test_predicate_holds_leaves_a_check_that_is_an_expected_value_to_matches_expected() -> None:
    assert _check(predicate_holds, "S7 = 99", 6, 7, {"S1": 5}) == PASS


# ---- "after": a record after the chunk's last step ------------------------------------------------

def test_invented_after_passes_a_step_of_the_procedure() -> None:
    assert _check(invented_after, "S2 = 10", 1, 1, {"S1": 5}) == PASS


def test_invented_after_names_a_step_the_procedure_does_not_have() -> None:
    assert _check(invented_after, "S9 = 10", 1, 1, {"S1": 5}) == "invented"


def test_invented_after_passes_an_input_restated() -> None:
    assert _check(invented_after, "a = 2", 1, 1, {"S1": 5}) == PASS


def test_chunk_step_contradicted_passes_the_same_value() -> None:
    assert _check(chunk_step_contradicted, "S1 = 5", 1, 1, {"S1": 5}, taken={"S1"}) == PASS


def test_chunk_step_contradicted_withdraws_this_chunks_step_written_with_another_value() -> None:
    outcome = _check(chunk_step_contradicted, "S1 = 6", 1, 1, {"S1": 5}, taken={"S1"})
    assert outcome == Withdrawn(Deviation(kind="extra_steps", step="S1", detail="S1 was written again with a different value",
                                          got="S1 = 6"))


def test_chunk_step_contradicted_leaves_an_earlier_chunks_step_and_a_line_with_no_value() -> None:
    assert _check(chunk_step_contradicted, "S1 = 6", 2, 2, {"S1": 5, "S2": 10}, taken={"S2"}) == PASS
    assert _check(chunk_step_contradicted, "S1 = the sum", 1, 1, {"S1": 5}, taken={"S1"}) == PASS


def test_earlier_step_contradicted_passes_the_same_value() -> None:
    assert _check(earlier_step_contradicted, "S1 = 5", 2, 2, {"S1": 5, "S2": 10}, taken={"S2"}) == PASS


def test_earlier_step_contradicted_notes_an_earlier_chunks_step_written_with_another_value() -> None:
    outcome = _check(earlier_step_contradicted, "S1 = 6", 2, 2, {"S1": 5, "S2": 10}, taken={"S2"})
    assert isinstance(outcome, Noted) and outcome.deviation.kind == "extra_steps"
    assert outcome.deviation.detail == "S1 was written again with a different value after this chunk's steps; its committed value stands"


def test_earlier_step_contradicted_leaves_this_chunks_step_to_chunk_step_contradicted() -> None:
    assert _check(earlier_step_contradicted, "S1 = 6", 1, 1, {"S1": 5}, taken={"S1"}) == PASS


# ---- the order -------------------------------------------------------------------------------------

def test_the_order_of_the_checks_is_pinned() -> None:
    """Moving, adding or removing a check changes what a reply means: change this test with it."""
    assert {where: [c.__name__ for c in checks] for where, checks in RECORD_CHECKS.items()} == {
        "other": ["written_again", "step_ahead", "not_a_step"],
        "step": ["readable", "evaluable", "matches_expected", "declared_type", "working_agrees", "predicate_holds"],
        "after": ["invented_after", "chunk_step_contradicted", "earlier_step_contradicted"],
    }


@pytest.mark.parametrize("text,pos,end,committed,taken,kind", [
    # a committed step that is also a later step of the chunk: written again, not ahead
    ("S2 = 11\nS1 = 5", 0, 2, {"S2": 10}, (), "extra_steps"),
    # a value of another type whose working gives another number: the type is named first
    ("n = 10 / 2 = 2.5", 4, 5, {}, (), "type_error"),
    # an out-of-range value whose working gives another number: the working is named, not the range
    ("discount = 20 / S1 = 7", 2, 3, {"S1": 5}, (), "arithmetic_error"),
])
def test_the_first_check_that_answers_decides(text: str, pos: int, end: int, committed: dict[str, Number],
                                              taken: tuple[str, ...], kind: str) -> None:
    rec, ctx = _at(text, pos, end, committed, taken)
    assert _dev(check_record(rec, ctx)).kind == kind


def test_a_record_no_check_answers_is_taken_at_the_step_and_passed_over_elsewhere() -> None:
    rec, ctx = _at("S1 = 5", 0, 1)
    assert check_record(rec, ctx) == PASS
    verdict = verify_chunk(PROC, 0, 1, INPUTS, parse_trace("S2 = 10\nS1 = 5", var_names=NAMES))
    assert verdict.deviation is None and verdict.verified == [("S1", 5)]  # S2, beyond the chunk, passed over
