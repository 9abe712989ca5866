"""Model output as untrusted input: every hostile reply is parsed or labelled, never evaluated,
never a crash, and the guard never returns a wrong value as ``model_verified``."""

from __future__ import annotations

from fractions import Fraction

import pytest

from stepguard import BudgetExhausted, Guard, GuardConfig, Procedure
from stepguard.trace import parse_trace
from stepguard.verify import score_generation
from benchmarks.hostile_cases import REPLIES
from tests._fakes import SameReply

PROC = Procedure.model_validate({"name": "h", "inputs": ["x"], "steps": [{"var": "S1", "expr": "x"}, {"var": "S2", "expr": "S1 + 3"}]})
INPUTS = {"x": 7}
EXPECTED = PROC.expected_values(INPUTS)  # S1 = 7, S2 = 10: no hostile reply holds the right values


def _exact(value: object) -> bool:
    """An exact number (int or Fraction, never a float or a string) or None."""
    return value is None or type(value) in (int, Fraction)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REPLIES))
def test_parse_trace_reads_or_labels_and_never_evaluates(name: str) -> None:
    text = REPLIES[name]
    trace = parse_trace(text, var_names=PROC.variables)
    # Bounded work, not wall time (speed is benchmarks/bench_hostile.py's, under 1 s a case):
    # only the first max_chars are read, at most max_records records, and every item comes
    # from at least 9 characters of that head ("S1 = 1" plus a newline, or "\\boxed{1}").
    head = min(len(text), 1_000_000)
    assert trace.capped == (len(text) > 1_000_000)
    assert len(trace.records) <= 20_000
    assert 6 * len(trace.records) + 9 * len(trace.answers) <= head + 9
    for item in (*trace.records, *trace.answers):
        assert _exact(item.value), item
        assert item.value is None or abs(item.value) < 10**401, "past max_digits"  # type: ignore[operator]
        assert len(item.text) <= 200
    if name in ("empty", "whitespace", "json_reply"):
        assert trace.records == () and trace.answers == ()


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REPLIES))
def test_score_generation_labels_every_hostile_reply(name: str) -> None:
    score = score_generation((PROC, EXPECTED), REPLIES[name])
    assert not score.exact and not score.correct
    assert score.labels and "exact" not in score.labels


@pytest.mark.slow
def test_work_follows_the_head_read_not_the_reply() -> None:
    """A reply far past ``max_chars`` is read only up to it: the answers found are those in the head."""
    line = "Final answer: 1\n"
    for max_chars in (len(line) * 10, len(line) * 1000, 1_000_000):  # the last: the default cap
        trace = parse_trace(REPLIES["many_answers"], max_chars=max_chars)
        assert trace.capped and len(trace.answers) == max_chars // len(line)
    lines = parse_trace("S1 = 1\n" * 50_000, max_records=300)
    assert lines.capped and len(lines.records) == 300


def test_specific_readings_are_the_documented_ones() -> None:
    """The decisions docs/hostile-input.md records."""
    t = parse_trace(REPLIES["hundred_thousand_digits"])
    assert t.records[0].value is None and t.records[0].error == "too many digits"
    assert t.answers[0].value is None and t.answers[0].error == "too many digits"
    # Unicode decimal digits (full-width, Arabic-Indic, Devanagari...) are parsed as their values,
    # exactly as Python's int() reads them; a value is still only ever compared, never evaluated
    for name in ("fullwidth_digits", "arabic_indic_digits"):
        t = parse_trace(REPLIES[name])
        assert [r.value for r in t.records] == [12] and t.answers[0].value == 42, name
    assert parse_trace("S1 = \u0967\u0968").records[0].value == 12
    t = parse_trace(REPLIES["scientific"])  # "1e3": unreadable, never the mantissa 1 (a prefix)
    assert [(r.value, r.error) for r in t.records] == [(None, "unreadable number")] * 2
    assert t.answers[0].value is None
    t = parse_trace(REPLIES["thousands"])  # "12,34" is ambiguous (decimal comma?), never 12
    assert [r.value for r in t.records] == [1234, Fraction(123456750, 100)]
    assert (t.answers[0].value, t.answers[0].error) == (None, "ambiguous number")
    t = parse_trace(REPLIES["injection_code"])
    assert [r.value for r in t.records] == [None, None] and t.answers[0].value is None
    t = parse_trace(REPLIES["expression_value"])
    assert [(r.value, r.error) for r in t.records] == [(None, "unevaluated expression")] * 2
    assert parse_trace(REPLIES["ten_megabytes"]).capped
    assert parse_trace(REPLIES["injection"]).answers[0].value == 42  # read, not obeyed: scored wrong


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(REPLIES))
def test_guard_never_verifies_a_hostile_reply(name: str) -> None:
    model = SameReply(REPLIES[name])
    config = GuardConfig(chunk_size=2, max_reprompts_per_step=2, on_exhausted="flag")
    result = Guard(model, config).run(PROC, INPUTS)
    assert result.status != "verified"
    for step in result.steps:
        if step.provenance == "model_verified":
            assert step.value == EXPECTED[step.var], step
    assert result.first_unverified is not None
    # bounded: the first try, re-prompts 1 and 2 (bridge, decompose: the first sub-step + two
    # retries each), and the next step's first try
    assert model.calls <= 1 + (1 + 2) + (1 + 2) + 1
    assert result.deviations and all(d.kind for d in result.deviations)


def test_guard_raise_on_exhausted_surfaces_budget_error_with_partial_result() -> None:
    model = SameReply(REPLIES["injection"])
    with pytest.raises(BudgetExhausted) as info:
        Guard(model, GuardConfig(chunk_size=2, max_reprompts_per_step=1, on_exhausted="raise")).run(PROC, INPUTS)
    assert info.value.result.status == "failed" and info.value.result.answer is None


def test_guard_repair_never_counts_a_hostile_reply_as_the_model_s() -> None:
    model = SameReply(REPLIES["nonexistent_vars"])
    result = Guard(model, GuardConfig(chunk_size=2, policy="repair")).run(PROC, INPUTS)
    assert result.status == "repaired" and result.answer == 10
    assert all(s.provenance == "repaired" for s in result.steps)
