"""Issue 41: one reader of what a model writes. A record ends where the grammar says; a value is
read from its own record only, or refused by name; a line is what ``str.splitlines`` makes it;
numbers are read by one set of rules in every way in (step lines, answers, ``last_number``)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from stepguard import Guard, GuardConfig, Procedure
from stepguard.bench.user_prompt import UserPrompt
from stepguard.trace import line_end, numbers_in, parse_trace
from tests._fakes import SameReply

# These tests give a whole GuardConfig on purpose (the ladder or chunking under test), so the
# warning that it replaces the procedure's defaults says nothing here.
pytestmark = pytest.mark.filterwarnings("ignore::stepguard.guard.LadderWarning")

S3 = tuple(f"S{k}" for k in range(1, 4))

# separators a model puts between two assignments on one line that are no clause boundary of the grammar
SEPARATORS = ["|", "<br>", "→", "—", "–", "•", "·", "&", ">", "=>", "#", ":", "/", "~", "✓", "->", "⇒", "§", "@"]


def _value(text: str, var: str, names: tuple[str, ...] = S3) -> tuple[object, str | None]:
    recs = [r for r in parse_trace(text, var_names=names).records if r.var == var]
    assert recs, f"no record of {var} in {text!r}"
    return recs[0].value, recs[0].error


@pytest.mark.parametrize("sep", SEPARATORS)
def test_a_value_is_never_taken_from_the_next_assignment_past_a_separator(sep: str) -> None:
    value, error = _value(f"S1 = 5 {sep} S2 = 8", "S1")
    assert value is None and error in ("more than one value", "correction or hedge"), (value, error)


@pytest.mark.parametrize("sep", SEPARATORS)
def test_a_named_step_is_never_given_a_later_step_s_value(sep: str) -> None:
    names = ("discount", "total")
    value, error = _value(f"discount = 3 {sep} total = 7", "discount", names)
    assert value != 7 and error is not None, (value, error)


@pytest.mark.parametrize("sep", [",", ";", " ", " and", ", then"])
def test_the_grammar_s_own_clause_boundaries_still_read_both_values(sep: str) -> None:
    recs = {r.var: r.value for r in parse_trace(f"S1 = 5{sep} S2 = 8", var_names=S3).records}
    assert recs == {"S1": 5, "S2": 8}


@pytest.mark.parametrize("text", [
    "S3 = 12 → S3 = 13",
    "S3 = 12 -> S3 = 13",
    "S3 = ... = 12 (wait, 5 + 8 = 13)",
    "S3 = S1 + S2 = 12 (wait, 5 + 8 = 13)",
    "S3 = 12 actually 5 + 8 = 13",
    "S3 = 12 ≈ 13",
    "S3 = 5 + 8 = 12? = 13",
])
def test_a_correction_on_one_line_is_refused_not_taken_as_the_value(text: str) -> None:
    value, error = _value(text, "S3")
    assert value is None and error in ("correction or hedge", "more than one value"), (value, error)


@pytest.mark.parametrize("text,want", [
    ("S3 = S2 + S1 = 8 + 5 = 13", 13),
    ("S3 = S2 * S1 = 8 × 5 = 40", 40),
    ("S3 = round(S2 / S1, 2) = round(8 / 5, 2) = 1.60", Fraction(8, 5)),
    ("S3 = 0.1 if S2 >= 100 else 0 = 0", 0),
    ("S3 = max(S1, S2) = max(5, 8) = 8", 8),
    ("S3 = **S2** - S1 = 8 − 5 = 3", 3),
    ("S3 = \\frac{S2}{2} = 4", 4),
    ("S3 = ... = 13", 13),
    ("S3 = S2 + S1 (the two before) = 13", 13),
])
def test_a_derivation_chain_still_reads_its_value(text: str, want: object) -> None:
    assert _value(text, "S3") == (want, None)


BREAKS = ["\n", "\r\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


@pytest.mark.parametrize("br", BREAKS, ids=[repr(b) for b in BREAKS])
def test_every_line_break_of_splitlines_ends_a_record(br: str) -> None:
    text = f"S1 = 5{br}S2 = 8{br}S3 = 13{br}Final answer: 13"
    assert len(text.splitlines()) == 4
    trace = parse_trace(text, var_names=S3)
    assert [(r.var, r.value) for r in trace.records] == [("S1", 5), ("S2", 8), ("S3", 13)]
    assert [a.value for a in trace.answers] == [13]


@pytest.mark.parametrize("br", BREAKS, ids=[repr(b) for b in BREAKS])
def test_a_streamed_line_is_complete_at_every_line_break(br: str) -> None:
    assert line_end(f"S1 = 5{br}S2 = 8") == len(f"S1 = 5{br}")
    assert line_end("S1 = 5") == 0


ACCOUNTING = ["(42.00)", "(42)", "( 42.00 )", "**(42.00)**", "($42.00)"]


@pytest.mark.parametrize("written", ACCOUNTING)
def test_accounting_parentheses_are_refused_in_every_way_in(written: str) -> None:
    assert _value(f"S1 = {written}", "S1") == (None, "accounting parentheses") or written.startswith("($")
    assert _value(f"S1 = {written}", "S1")[0] is None
    answer = parse_trace(f"Final answer: {written}").answers[0]
    assert answer.value is None
    assert numbers_in(f"the total is {written}.")[-1].value is None


def test_a_signed_number_in_parentheses_is_read() -> None:
    assert _value("S1 = (-42.00)", "S1") == (-42, None)
    assert numbers_in("the total is (-42.00).")[-1].value == -42


DASHED = ["–42", "－42", "‐42", "‒42", "—42", "﹣42", "‑42"]


@pytest.mark.parametrize("written", DASHED)
def test_a_dash_that_is_no_minus_sign_is_refused_in_every_way_in(written: str) -> None:
    assert _value(f"S1 = {written}", "S1") == (None, "unknown dash")
    assert parse_trace(f"Final answer: {written}").answers[0].value is None
    last = numbers_in(f"so the answer is {written}")[-1]
    assert last.value is None and last.why is not None and "unknown dash" in last.why


@pytest.mark.parametrize("written", ["1 176.50", "12 000", "12'000", "12’000", "1 234 567"])
def test_digits_grouped_by_spaces_or_apostrophes_are_refused_in_every_way_in(written: str) -> None:
    assert _value(f"S1 = {written}", "S1")[0] is None
    assert parse_trace(f"Final answer: {written}").answers[0].value is None
    assert numbers_in(f"the answer is {written}")[-1].value is None


def _prompt() -> UserPrompt:
    return UserPrompt(path=None, sha256="", messages=(), answer_format="last_number")  # type: ignore[arg-type]


@pytest.mark.parametrize("written", [*DASHED, "1 176.50", "12 000", "12'000", *ACCOUNTING])
def test_last_number_refuses_what_the_step_reader_refuses(written: str) -> None:
    read = _prompt().read_answer(f"So the final price is {written}")
    assert read.value is None and read.refused, read


@pytest.mark.parametrize("written,want", [("-42", -42), ("−42", -42), ("1,176.50", Fraction(2353, 2)), ("42.00", 42)])
def test_last_number_reads_what_the_step_reader_reads(written: str, want: object) -> None:
    assert _prompt().read_answer(f"So the final price is {written}.").value == want
    assert _value(f"S1 = {written}", "S1") == (want, None)




def _check_only() -> Procedure:
    return Procedure.model_validate({
        "name": "m", "inputs": {"x": "integer"},
        "steps": [{"var": "discount", "check": "0 <= value <= 10"}, {"var": "total", "expr": "x - discount"}],
    })


@pytest.mark.parametrize("sep", ["|", "→", "<br>", "/", ">"])
def test_a_check_only_step_never_commits_a_number_the_model_gave_another_step(sep: str) -> None:
    model = SameReply(f"discount = 3 {sep} total = 7")
    result = Guard(model, GuardConfig(on_exhausted="flag", max_reprompts_per_step=1)).run(_check_only(), {"x": 10})
    committed = {s.var: s.value for s in result.steps}
    assert committed.get("discount") != "7" and committed.get("discount") != 7, result.steps
    assert result.status != "verified"


@pytest.mark.parametrize("sep", ["|", "→", "<br>"])
def test_a_value_past_a_separator_is_not_verified_at_the_first_try(sep: str) -> None:
    proc = Procedure.model_validate({
        "name": "m", "inputs": {"x": "integer"},
        "steps": [{"var": "S1", "expr": "x"}, {"var": "S2", "expr": "S1 + 3"}],
    })
    model = SameReply(f"S1 = 5 {sep} S2 = 8")  # x = 8: the model wrote 5 for S1, and 8 belongs to S2
    result = Guard(model, GuardConfig(on_exhausted="flag", max_reprompts_per_step=1)).run(proc, {"x": 8})
    s1 = next(s for s in result.steps if s.var == "S1")
    assert s1.provenance != "model_verified" or s1.reprompts > 0


@pytest.mark.parametrize("sep", ["|", "→", "<br>", "•", "&"])
@pytest.mark.parametrize("step,reply,later", [
    ({"var": "ok1", "type": "boolean", "expr": "x > 5"}, "ok1 = false {} ok2 = true", {"var": "ok2", "type": "boolean", "expr": "x > 5"}),
    ({"var": "a", "type": "one_of", "choices": ["small", "large"], "expr": "'large' if x > 5 else 'small'"},
     "a = small {} b = large", {"var": "b", "type": "one_of", "choices": ["small", "large"], "expr": "'large' if x > 5 else 'small'"}),
])
def test_a_boolean_or_choice_step_never_takes_the_next_assignment_s_word(sep: str, step: dict, reply: str, later: dict) -> None:
    proc = Procedure.model_validate({"name": "m", "inputs": {"x": "integer"}, "steps": [step, later]})
    from stepguard.verify import read_raw_value

    rec = next(r for r in parse_trace(reply.format(sep), var_names=proc.variables).records if r.var == step["var"])
    assert read_raw_value(rec, step["type"], step.get("choices")) is None
    result = Guard(SameReply(reply.format(sep)), GuardConfig(on_exhausted="flag", max_reprompts_per_step=1)).run(proc, {"x": 8})
    first = result.steps[0]
    assert first.provenance != "model_verified", first


@pytest.mark.parametrize("written", ["1e3", "1_000", "0x3E8", "1E3"])
def test_a_tool_call_in_text_reads_numbers_by_the_one_notation(written: str) -> None:
    from stepguard.tools import parse_calls

    call = parse_calls(f"CALL refund(amount={written})")[0]
    assert call.error is not None and "amount" in call.error, call


def test_a_tool_call_in_text_reads_a_plain_number() -> None:
    from stepguard.tools import parse_calls

    call = parse_calls("CALL refund(amount=-19.99, note='ok')")[0]
    assert call.error is None and call.args["amount"] == Fraction(-1999, 100)


@pytest.mark.parametrize("sep", ["/", "|", "→", "<br>"])
def test_an_extract_reply_never_takes_a_later_step_s_value(sep: str) -> None:
    proc = Procedure.model_validate({
        "name": "m", "inputs": {"doc": "string"},
        "steps": [{"var": "total", "kind": "extract", "source": "doc", "label": "Total"},
                  {"var": "discount", "expr": "total / 10"}],
    })
    from stepguard.kinds.extract import verify_extract

    verdict = verify_extract(proc, 0, {"doc": "Total: 5.00"}, f"total = 20 {sep} discount = 5.00")
    assert verdict.deviation is not None and verdict.value is None, verdict


def test_a_failed_check_names_the_value_with_its_places() -> None:
    """New-user pass: "withholding = 1000: check ... is false" where the model wrote 1000.00."""
    proc = Procedure.model_validate({"name": "m", "inputs": {"gross": "decimal"}, "steps": [
        {"var": "withholding", "check": "0 <= value <= gross", "type": "decimal", "scale": 2}]})
    result = Guard(SameReply("withholding = 1000.00"), GuardConfig.for_procedure(proc, on_exhausted="flag")).run(proc, {"gross": "914.23"})
    assert "withholding = 1000.00: check" in result.deviations[0].detail, result.deviations[0].detail
