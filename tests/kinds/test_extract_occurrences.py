"""Issue 41.4: an extract step whose ``label`` occurs more than once in its source with different
values is ambiguous: no value passes (before this the first copy's value passed, and any value after
any copy), and the deviation names the label and every value with its line, unless the step says
which occurrence it reads (``occurrence: first | last | <n>``, 1-based, checked when the file loads).

Neighbours: both copies on one line, a label inside a longer one (``Grand Total``), the same value
twice (one value: not ambiguous, also spelled differently), a copy that points at no value (``Total
due:``), an ambiguous number at one copy, strings, dates and choices, and an unlabelled step whose
value occurs under two labels (one value: accepted; see docs/agent-workflows.md)."""

from __future__ import annotations

from typing import Any

import pytest

from stepguard import Guard, GuardConfig, ProcedureError, parse_procedure
from stepguard.adapters import load_model
from stepguard.kinds import verify_extract
from tests._fakes import ReplyModel


def proc(step: str) -> Any:
    return parse_procedure(f"inputs: {{doc: string}}\nsteps:\n  - {step}\n")


def check(step: str, doc: str, reply: str) -> Any:
    return verify_extract(proc(step), 0, {"doc": doc}, reply)


def outcome(step: str, doc: str, reply: str) -> Any:
    v = check(step, doc, reply)
    return v.deviation.kind if v.deviation else ("ok", v.value)


def dec(label: str = "Total", more: str = "") -> str:
    return "{var: x, kind: extract, source: doc, label: " + label + ", type: decimal, scale: 2" + more + "}"


def string(label: str, more: str = "", type_: str = "string") -> str:
    return "{var: x, kind: extract, source: doc, label: " + label + ", type: " + type_ + more + "}"


TWO = "Total: 20.00\nPaid by card\nTotal: 18.86\n"


# --- a label twice with different values: no value passes, and the deviation names them ----------

@pytest.mark.parametrize("doc", [
    TWO,
    "Total: 20.00   Total: 18.86",  # both on one line
    "Total: 20.00\nGrand Total: 18.86",  # the label inside a longer one matches as before
    "TOTAL 20.00\ntotal: $18.86",  # any case
], ids=["two-lines", "one-line", "longer-label", "case"])
@pytest.mark.parametrize("reply", ["x = 20.00", "x = 18.86"])
def test_a_label_twice_with_different_values_refuses_every_value(doc: str, reply: str) -> None:
    v = check(dec(), doc, reply)
    assert v.deviation is not None and v.deviation.kind == "not_in_source"
    detail = v.deviation.detail
    assert "'Total'" in detail and "2 times" in detail and "ambiguous" in detail
    assert "20.00" in detail and "18.86" in detail and "occurrence" in detail


def test_the_deviation_says_where_each_copy_is() -> None:
    detail = check(dec(), TWO, "x = 18.86").deviation.detail
    assert "20.00 (line 1)" in detail and "18.86 (line 3)" in detail


@pytest.mark.parametrize("doc", [
    "Total: 18.86\nTotal: 18.86",
    "Total: 18.86\nTOTAL: $18.860",  # the same value spelled differently
    "Total due: 5.00\nTotal: 18.86",  # a copy that points at no value is not a value of the label
    "Total (3 items): 5\nTotal: 18.86",
    "Subtotal: 17.63\nTotal: 18.86",  # not the label at all
], ids=["same", "same-value-other-spelling", "word-after", "aside", "subtotal"])
def test_one_value_under_the_label_is_not_ambiguous(doc: str) -> None:
    assert check(dec(), doc, "x = 18.86").deviation is None


def test_one_value_is_committed_exactly() -> None:
    from decimal import Decimal

    assert check(dec(), "Total: 18.86\nTOTAL: $18.860", "x = 18.86").value == Decimal("18.86")


def test_an_ambiguous_number_at_one_copy_makes_the_label_ambiguous() -> None:
    v = check(dec(), "Total: (18.86)\nTotal: 18.86", "x = 18.86")
    assert v.deviation is not None and "(18.86)" in v.deviation.detail and "ambiguous" in v.deviation.detail


# --- occurrence: which copy the step reads -------------------------------------------------------

@pytest.mark.parametrize("occ,good,bad", [
    ("first", "20.00", "18.86"),
    ("last", "18.86", "20.00"),
    ("1", "20.00", "18.86"),
    ("2", "18.86", "20.00"),
])
def test_occurrence_picks_the_copy_and_only_it(occ: str, good: str, bad: str) -> None:
    step = dec(more=f", occurrence: {occ}")
    assert check(step, TWO, f"x = {good}").deviation is None
    assert outcome(step, TWO, f"x = {bad}") == "not_in_source"


def test_occurrence_counts_only_copies_that_point_at_a_value() -> None:
    step = dec(more=", occurrence: 2")
    assert check(step, "Total due: 5.00\nTotal: 20.00\nTotal: 18.86", "x = 18.86").deviation is None


def test_an_occurrence_past_the_copies_names_how_many_there_are() -> None:
    v = check(dec(more=", occurrence: 3"), TWO, "x = 18.86")
    assert v.deviation is not None and v.deviation.kind == "not_in_source"
    assert "2 times" in v.deviation.detail and "occurrence 3" in v.deviation.detail


def test_occurrence_with_a_single_copy() -> None:
    assert check(dec(more=", occurrence: last"), "Total: 18.86", "x = 18.86").deviation is None


@pytest.mark.parametrize("more,what", [
    (", occurrence: 0", "occurrence"),
    (", occurrence: -1", "occurrence"),
    (", occurrence: middle", "occurrence"),
    (", occurrence: '2'", "occurrence"),
    (", occurrence: true", "occurrence"),
])
def test_a_bad_occurrence_is_refused_when_the_file_loads(more: str, what: str) -> None:
    with pytest.raises(ProcedureError, match=what):
        proc(dec(more=more))


def test_occurrence_without_a_label_is_refused_when_the_file_loads() -> None:
    with pytest.raises(ProcedureError, match="occurrence.*label"):
        proc("{var: x, kind: extract, source: doc, type: decimal, scale: 2, occurrence: first}")


# --- strings, dates, choices ---------------------------------------------------------------------

def test_a_string_label_twice_with_different_fields_is_ambiguous() -> None:
    v = check(string("Status"), "Status: PAID\nStatus: UNPAID", "x = UNPAID")
    assert v.deviation is not None and v.deviation.kind == "not_in_source"
    assert "'PAID'" in v.deviation.detail and "'UNPAID'" in v.deviation.detail


def test_a_string_label_twice_with_the_same_field_is_not() -> None:
    assert outcome(string("Status"), "Status: PAID\nStatus - PAID.", "x = PAID") == ("ok", "PAID")


def test_string_occurrence_last() -> None:
    assert outcome(string("Status", ", occurrence: last"), "Status: PAID\nStatus: UNPAID", "x = UNPAID") == ("ok", "UNPAID")
    assert outcome(string("Status", ", occurrence: last"), "Status: PAID\nStatus: UNPAID", "x = PAID") == "not_in_source"


def test_the_same_date_spelled_twice_is_one_value() -> None:
    assert outcome(string("Due"), "Due: 2024-03-05\nDue: March 5, 2024", "x = 5 March 2024") == ("ok", "2024-03-05")


def test_two_dates_under_one_label_are_ambiguous_unless_one_is_chosen() -> None:
    doc = "Due: 2024-03-05\nDue: 2024-04-05"
    assert outcome(string("Due"), doc, "x = 2024-03-05") == "not_in_source"
    assert outcome(string("Due", ", occurrence: 2"), doc, "x = 2024-04-05") == ("ok", "2024-04-05")


def test_choices_twice_differing_only_in_case_are_one_value() -> None:
    step = "{var: x, kind: extract, source: doc, label: Status, type: one_of, choices: [paid, unpaid]}"
    assert outcome(step, "Status: paid\nSTATUS: PAID", "x = paid") == ("ok", "paid")
    assert outcome(step, "Status: paid\nStatus: unpaid", "x = paid") == "not_in_source"


# --- the value's side: without a label, one value under two labels is one value ------------------

def test_an_unlabelled_value_under_two_labels_is_one_value() -> None:
    step = "{var: x, kind: extract, source: doc, type: decimal, scale: 2}"
    assert check(step, "Subtotal: 18.86\nTotal: 18.86", "x = 18.86").deviation is None


# --- through the guard ---------------------------------------------------------------------------

def receipt(more: str = "") -> Any:
    return parse_procedure("name: receipt\ninputs: {doc: string}\nsteps:\n"
                           "  - {var: total, kind: extract, source: doc, label: Total, type: decimal, scale: 2" + more + "}\n")


def test_the_guard_never_verifies_a_value_of_an_ambiguous_label() -> None:
    model = ReplyModel(["total = 20.00", "total = 18.86", "total = 20.00"])
    result = Guard(model, config=GuardConfig(policy="flag")).run(receipt(), {"doc": TWO})
    assert result.status != "verified"
    assert result.deviations and all(d.kind == "not_in_source" for d in result.deviations)
    assert "ambiguous" in result.deviations[0].detail


def test_the_guard_verifies_the_chosen_occurrence() -> None:
    model = ReplyModel(["total = 20.00", "total = 18.86"])
    result = Guard(model).run(receipt(", occurrence: last"), {"doc": TWO})
    assert result.status == "verified", result.deviations
    assert str(result.values["total"]) == "18.86"
    assert [d.kind for d in result.deviations] == ["not_in_source"]


@pytest.mark.parametrize("occ,want", [("first", "20.00"), ("last", "18.86"), ("2", "18.86")])
def test_the_simulator_reads_the_chosen_occurrence(occ: str, want: str) -> None:
    p = receipt(f", occurrence: {occ}")
    result = Guard(load_model("sim:perfect", procedure=p)).run(p, {"doc": TWO})
    assert result.status == "verified" and str(result.values["total"]) == want


def test_a_steps_line_names_its_occurrence_and_reads_back() -> None:
    from stepguard.adapters.models.sim_kinds import sim_answers
    from stepguard.kinds import StepContext, get_kind

    p = receipt(", occurrence: last")
    (note, *_) = get_kind("extract").notes(StepContext(p, 0))
    assert "occurrence last" in note
    read_line = sim_answers()["extract"].read_line
    assert read_line is not None
    step = read_line("total", "?", note)
    assert step is not None and step.occurrence == "last" and step.label == "Total"
