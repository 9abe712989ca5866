"""Breaker round on the one reader (issue 41): text that made the reader take a value the model did
not write for the step, or read one number two ways in differently. Each case is a reply a model's
odd output or a prompt injection could give; the promise is that the guard commits only a value the
model wrote for that step, read one way and checked, and refuses anything else by name."""

from __future__ import annotations

from fractions import Fraction

import pytest

from stepguard import Guard, GuardConfig, Procedure
from stepguard.bench.user_prompt import UserPrompt
from stepguard.trace import numbers_in, parse_trace
from stepguard.verify import read_raw_value
from tests._fakes import SameReply

S3 = ("S1", "S2", "S3")




def _records(text: str, var: str, names: tuple[str, ...] = S3) -> list[tuple[object, str | None]]:
    return [(r.value, r.error) for r in parse_trace(text, var_names=names).records if r.var == var]


def _first(text: str, var: str, names: tuple[str, ...] = S3) -> tuple[object, str | None]:
    recs = _records(text, var, names)
    assert recs, f"no record of {var} in {text!r}"
    return recs[0]


# -- 1. a later step's name glued to the value by markup, an underscore or a digit ----------------

GLUED = [
    "S1 = _5_S2 = 8",  # markdown italic closed right before the next name
    "S1 = 5\\_S2 = 8",  # markdown's escaped underscore
    "S1 = 5_S2 = 8",
    "S1 = 5__S2 = 8",
    "S1 = 5_S_2 = 8",
    "S1 = 5_S3 = 8",
    "S1=5_S2=8",
    "S1 = 5S2 = 8",  # no space at all (or 5 times S2: a later name either way)
    "S1 = 5 5S2 = 8",
]


@pytest.mark.parametrize("text", GLUED)
def test_a_later_name_glued_to_the_value_is_not_part_of_a_derivation(text: str) -> None:
    value, error = _first(text, "S1")
    assert value is None and error == "more than one value", (value, error)


@pytest.mark.parametrize("text", ["S3 = 5_S1 = 8", "S3 = _5_S2 = 8", "S3 = 13\\_S1 = 5"])
def test_an_earlier_name_glued_to_the_value_by_an_underscore_is_no_derivation(text: str) -> None:
    value, error = _first(text, "S3")
    assert value is None and error == "more than one value", (value, error)


@pytest.mark.parametrize("text,want", [
    ("S3 = (1 if S1 == 1 else 2) = 2", 2),  # "==" inside brackets is a comparison, not an assignment
    ("S3 = (S1 <= 5) = 1", 1),
    ("S3 = _S1_ + _S2_ = 13", 13),  # italic names
])
def test_comparisons_in_brackets_and_italic_names_still_read(text: str, want: object) -> None:
    assert _first(text, "S3") == (want, None)


def test_a_later_named_step_glued_by_an_underscore_gives_no_value() -> None:
    value, error = _first("discount = 3_total = 7", "discount", ("discount", "total"))
    assert value is None and error == "more than one value", (value, error)


@pytest.mark.parametrize("text", ["ok1 = false_ok2 = true", "ok1 = false\\_ok2 = true", "ok1 = _false_ok2 = true"])
def test_a_boolean_step_never_reads_a_glued_later_step_s_word(text: str) -> None:
    rec = next(r for r in parse_trace(text, var_names=("ok1", "ok2")).records if r.var == "ok1")
    assert read_raw_value(rec, "boolean") is None, rec


@pytest.mark.parametrize("text,want", [
    ("S3 = 2S1 = 10", 10),  # 2 times an earlier name: a derivation
    ("S3 = S1 + S2 = 5 + 8 = 13", 13),
    ("S3 = max_S2 = 8", 8),  # an identifier of its own (not S2): no name of the procedure
])
def test_a_glued_earlier_name_or_an_identifier_still_reads(text: str, want: object) -> None:
    assert _first(text, "S3") == (want, None)


def test_a_glued_later_name_is_refused_through_a_guard_run() -> None:
    proc = Procedure.model_validate({
        "name": "m", "inputs": {"x": "integer"},
        "steps": [{"var": "S1", "expr": "x"}, {"var": "S2", "expr": "S1 + 3"}],
    })
    model = SameReply("S1 = _5_S2 = 8")  # x = 8: the model wrote 5 for S1; 8 is what it gave S2
    result = Guard(model, GuardConfig(on_exhausted="flag", max_reprompts_per_step=1)).run(proc, {"x": 8})
    s1 = next(s for s in result.steps if s.var == "S1")
    assert s1.provenance != "model_verified" or s1.reprompts > 0, s1


# -- 2. an "=" inside brackets: an aside that assigns, not a link of the chain ---------------------

@pytest.mark.parametrize("text", [
    "S2 = 5 (S1 = 8)",
    "S2 = 5 (S1 = 8",
    "S2 = 5 [S1 = 8]",
    "S2 = 5 {S1 = 8}",
    "S2 = 5 (which is S1 = 8)",
])
def test_an_assignment_inside_brackets_after_the_value_is_not_the_value(text: str) -> None:
    value, error = _first(text, "S2")
    assert value in (None, 5), (value, error)  # 5 where a clause of the grammar ends it ("which is S1 = 8")


@pytest.mark.parametrize("text,want", [
    ("S3 = round(S2 / S1, 2) = round(8 / 5, 2) = 1.60", Fraction(8, 5)),
    ("S3 = (S1 + S2) = (5 + 8) = 13", 13),
    ("S3 = S2 + S1 (the two before) = 13", 13),
    ("S3 = \\frac{S2}{2} = 4", 4),
    ("S3 = [S1 + S2] = 13", 13),
])
def test_balanced_brackets_in_a_chain_still_read(text: str, want: object) -> None:
    assert _first(text, "S3") == (want, None)


# -- 2b. LaTeX: a line break between two assignments, an operator word before the next operand --

@pytest.mark.parametrize("text", [
    r"$S_3 = 13 \\ S_1 = 5$",  # an aligned display written on one line: S3 read S1's 5
    r"S3 = 13 \\ S1 = 5",
    r"S2 = 5 \\ S1 = 8",
    r"S3 = 13 \newline S1 = 5",
    r"S3 = 13 \cr S1 = 5",
])
def test_a_latex_line_break_ends_the_value_s_chain(text: str) -> None:
    var = text.split("=")[0].strip(" $").replace("_", "")
    value, error = _first(text, var)
    assert value == {"S3": 13, "S2": 5}[var] or (value is None and error == "more than one value"), (value, error)


@pytest.mark.parametrize("text,want", [
    (r"S3 = S2 \times S1 = 8 \times 5 = 40", 40),  # the chain went on: S1 was read as a new clause (S1 = 40)
    (r"S3 = S2 \cdot S1 = 40", 40),
    ("S3 = S2 x S1 = 40", 40),
    ("S3 = S2 plus S1 = 13", 13),
    ("S3 = S2 minus S1 = 3", 3),
    ("S3 = S2 over S1 = 8/5 = 1.6", Fraction(8, 5)),
])
def test_an_operator_word_before_an_earlier_name_continues_the_chain(text: str, want: object) -> None:
    trace = parse_trace(text, var_names=S3)
    assert [(r.var, r.value, r.error) for r in trace.records] == [("S3", want, None)]


# -- 3. a lone number before the value: the model wrote two results -------------------------------

TWO_RESULTS = [
    "S3 = 12 = 13",
    "S3 = 5 + 8 = 12 = 13",
    "S3 = S1 + S2 = 12 = 13",
    "S3 = **12** = 13",
    "S3 = $12$ = 13",
    "S3 = (12) = 13",
    "S3 = -13 = 13",
    "S3 = 12.4 = 13",
    "S3 = 1.649 = 1.64",  # a step rounds half up or half to even: 1.649 is not 1.64
    "S3 = 1,200 = 1300",
]


@pytest.mark.parametrize("text", TWO_RESULTS)
def test_two_different_results_in_one_chain_are_a_correction(text: str) -> None:
    value, error = _first(text, "S3")
    assert value is None and error == "correction or hedge", (value, error)


@pytest.mark.parametrize("text,want", [
    ("S3 = 13 = 13", 13),
    ("S3 = 13.0 = 13", 13),
    ("S3 = 1,300 = 1300", 1300),
    ("S3 = 0.0825 * 19.99 = 1.649175 = 1.65", Fraction(165, 100)),  # rounded at the value's places
    ("S3 = 8 / 3 = 2.667 = 2.67", Fraction(267, 100)),
    ("S3 = 12.5 = 13", 13),
    ("S3 = 12 apples = 12", 12),
])
def test_a_result_restated_or_rounded_still_reads(text: str, want: object) -> None:
    assert _first(text, "S3") == (want, None)


@pytest.mark.parametrize("text", ["Final answer: S3 = 12 = 13", "Final answer: \\boxed{S3 = 12 = 13}"])
def test_an_answer_chain_with_two_results_has_no_value(text: str) -> None:
    answers = parse_trace(text, var_names=S3).answers
    assert answers and answers[0].value is None, answers


def test_two_results_in_a_chain_are_not_verified_at_the_first_try() -> None:
    proc = Procedure.model_validate({
        "name": "m", "inputs": {"x": "integer"},
        "steps": [{"var": "S1", "expr": "x"}, {"var": "S2", "expr": "S1 + 8"}],
    })
    model = SameReply("S1 = 5\nS2 = S1 + 8 = 12 = 13")
    result = Guard(model, GuardConfig(on_exhausted="flag", max_reprompts_per_step=1)).run(proc, {"x": 5})
    s2 = next(s for s in result.steps if s.var == "S2")
    assert s2.provenance != "model_verified" or s2.reprompts > 0, s2


@pytest.mark.parametrize("text,type_,choices", [
    ("ok1 = false = true", "boolean", None),
    ("ok1 = no = yes", "boolean", None),
    ("ok1 = **false** = true", "boolean", None),
    ("a = small = large", "one_of", ("small", "large")),
])
def test_two_different_words_in_one_chain_are_no_value(text: str, type_: str, choices: tuple[str, ...] | None) -> None:
    rec = parse_trace(text, var_names=("ok1", "a")).records[0]
    assert read_raw_value(rec, type_, choices) is None, rec


@pytest.mark.parametrize("text,type_,choices,want", [
    ("ok1 = S1 > 3 = true", "boolean", None, True),
    ("ok1 = true = true", "boolean", None, True),
    ("ok1 = yes = true", "boolean", None, True),
    ("a = 'large' if x > 5 else 'small' = large", "one_of", ("small", "large"), "large"),
])
def test_a_chain_that_ends_in_its_word_still_reads(text: str, type_: str, choices: tuple[str, ...] | None, want: object) -> None:
    rec = parse_trace(text, var_names=("ok1", "a")).records[0]
    assert read_raw_value(rec, type_, choices) == want, rec


# -- 4. last_number: a sign it does not take is dropped -------------------------------------------

_PROMPT = UserPrompt(path=None, sha256="", messages=(), answer_format="last_number")  # type: ignore[arg-type]

DROPPED_SIGN = [
    "- 42",  # the step reader and the final answer read -42
    "-\t42",
    "-\u00a042",  # no-break space
    "−\u00a042",
    "-\u200942",
    "-\u200b42",  # zero-width space
    "-\u00ad42",  # soft hyphen
    "_-42_",  # markdown italic
    "*-42*",
    "-$42",  # a negative amount in dollars
    "−$42",
    "-\\$42",
    "-€42",
    "$-$42",
    "minus 42",
    "negative 42",
]


@pytest.mark.parametrize("written", DROPPED_SIGN)
def test_last_number_never_drops_a_sign(written: str) -> None:
    read = _PROMPT.read_answer(f"So the final balance is {written}")
    assert read.value in (None, -42), (written, read)


DOUBLED_SIGN = ["--42", "-(-42)", "−-42", "- -42", "+-42", "-+42"]


@pytest.mark.parametrize("written", DOUBLED_SIGN)
def test_last_number_does_not_read_one_of_two_signs(written: str) -> None:
    read = _PROMPT.read_answer(f"So the final balance is {written}")
    assert read.value is None, (written, read)


@pytest.mark.parametrize("written", ["- 42", "-\t42", "_-42_", "-$42", "--42", "-(-42)"])
def test_no_two_ways_in_read_a_signed_number_differently(written: str) -> None:
    step = _records(f"S1 = {written}\nS2 = 5", "S1")[0][0]
    answers = parse_trace(f"S1 = 3\nFinal answer: {written}").answers
    answer = answers[0].value if answers else None
    last = _PROMPT.read_answer(f"So the total is {written}").value
    read = {v for v in (step, answer, last) if v is not None}
    assert len(read) <= 1, (written, step, answer, last)


@pytest.mark.parametrize("text,want", [
    ("The totals:\n- 42", 42),  # a list item's marker, not a sign
    ("The totals:\n  - 42", 42),
    ("So the final balance is -42", -42),
    ("So the final balance is −42.50", Fraction(-85, 2)),
    ("So the final balance is $-42", -42),
    ("So the final balance is (-42)", -42),
    ("So the answer is 42", 42),
    ("ages 40-45 and then 42", 42),
])
def test_last_number_still_reads_plain_and_signed_numbers(text: str, want: object) -> None:
    assert _PROMPT.read_answer(text).value == want


@pytest.mark.parametrize("text", [
    "the rate is 1e-5",  # read 5: the exponent's digits
    "the rate is 2.5e-3",
    "the rate is 1E+5",
    "so it is 6.02×10^23",  # read 23: the power's exponent
    "so it is 10^-3",
    "so it is 2**10",
    "so it is 3/-4",  # read -4: the denominator
    "so it is 3 / 4",
    "so it is 42 ÷ 2",
])
def test_last_number_never_reads_an_exponent_or_a_denominator_as_the_number(text: str) -> None:
    read = _PROMPT.read_answer(text)
    assert read.value is None, (text, read)


def test_numbers_in_names_the_sign_it_refuses() -> None:
    last = numbers_in("So the final balance is - 42")[-1]
    assert last.value is None and last.why is not None and "sign" in last.why


# -- 5. a tool call in text: accounting parentheses ------------------------------------------------

@pytest.mark.parametrize("written", ["(19.99)", "( 19.99 )", "((19.99))", "(20)"])
def test_a_text_tool_call_refuses_accounting_parentheses(written: str) -> None:
    from stepguard.tools import parse_calls

    call = parse_calls(f"CALL refund(amount={written}, note='ok')")[0]
    assert call.error is not None and "amount" in call.error, call


@pytest.mark.parametrize("written,want", [
    ("(-19.99)", Fraction(-1999, 100)), ("19.99", Fraction(1999, 100)), ("-19.99", Fraction(-1999, 100)),
])
def test_a_text_tool_call_still_reads_signed_numbers(written: str, want: object) -> None:
    from stepguard.tools import parse_calls

    call = parse_calls(f"CALL refund(amount={written}, note='(ok)')")[0]
    assert call.error is None and call.args == {"amount": want, "note": "(ok)"}, call


# -- 6. extract: a value written twice, and other clauses on its line -----------------------------

def _extract_proc() -> Procedure:
    return Procedure.model_validate({"name": "m", "inputs": {"doc": "string"}, "steps": [
        {"var": "subtotal", "kind": "extract", "source": "doc", "label": "Subtotal"},
        {"var": "total", "kind": "extract", "source": "doc"},
        {"var": "discount", "expr": "subtotal - total"},
    ]})


@pytest.mark.parametrize("reply", [
    "total = 20\ntotal = 5.00",  # a correction on the next line: which is meant is not written
    "total = 5.00\ntotal = 20",
    "total: 20.00\ntotal = 5.00",
    "total = 5.00 (subtotal = 20)",  # an earlier step's value in an aside
    "total = 5.00 = 20",
    "total = 5.00_subtotal = 20",
])
def test_an_extract_reply_with_two_values_for_the_step_is_refused(reply: str) -> None:
    from stepguard.kinds.extract import verify_extract

    verdict = verify_extract(_extract_proc(), 1, {"doc": "Subtotal: 20.00  Total: 5.00", "subtotal": 20}, reply)
    assert verdict.deviation is not None and verdict.value is None, (reply, verdict)


@pytest.mark.parametrize("reply", ["total = 5.00", "total = 5.00\ntotal = 5", "total = 5.00\nsubtotal = 20", "**total** = 5.00"])
def test_an_extract_reply_with_one_value_still_verifies(reply: str) -> None:
    from stepguard.kinds.extract import verify_extract

    verdict = verify_extract(_extract_proc(), 1, {"doc": "Subtotal: 20.00  Total: 5.00", "subtotal": 20}, reply)
    assert verdict.deviation is None and verdict.value == 5, (reply, verdict)


# -- 7. a name in another script's letters ends a clause as an unknown ASCII name does ------------

@pytest.mark.parametrize("text", [
    "S1 = 5 Ｓ2 = 8",  # full-width S
    "S1 = 5 Ѕ2 = 8",  # Cyrillic DZE, an S to the eye
    "S1 = 5 Σ2 = 8",
    "S1 = 5 é = 8",
])
def test_a_name_in_other_letters_does_not_give_its_value_to_the_step(text: str) -> None:
    value, _ = _first(text, "S1")
    assert value != 8, (text, value)


# -- 8. a correction on the next line that opens with a word ------------------------------------

CORRECTED = ["Actually S3 = 13", "Actually, S3 = 13", "Wait, S3 = 13", "(wait, S3 = 13)", "Correction: S3 = 13",
             "Sorry, S3 = 13", "I mean S3 = 13", "- Oops, S3 = 13", "**Wait**, S3 = 13"]


@pytest.mark.parametrize("again", CORRECTED)
def test_a_correction_on_the_next_line_is_read_as_the_step_written_again(again: str) -> None:
    assert [v for v, _ in _records(f"S3 = 12\n{again}", "S3")] == [12, 13]


@pytest.mark.parametrize("again", ["Actually, discount = 12", "Wait, discount = 12", "(wait, discount = 12)"])
def test_a_correction_after_the_chunk_s_last_step_leaves_neither_value(again: str) -> None:
    proc = Procedure.model_validate({"name": "m", "inputs": {"x": "integer"}, "steps": [
        {"var": "total", "expr": "x"}, {"var": "discount", "check": "0 <= value <= 10"}]})
    model = SameReply(f"total = 10\ndiscount = 3\n{again}")
    result = Guard(model, GuardConfig.for_procedure(proc, on_exhausted="flag", max_reprompts_per_step=1)).run(proc, {"x": 10})
    discount = next(s for s in result.steps if s.var == "discount")
    assert discount.provenance != "model_verified", discount


@pytest.mark.parametrize("again", ["Actually, discount = 12", "Wait, discount = 12", "(wait, discount = 12)"])
def test_a_check_only_step_never_commits_a_value_the_model_withdrew(again: str) -> None:
    proc = Procedure.model_validate({"name": "m", "inputs": {"x": "integer"}, "steps": [
        {"var": "discount", "check": "0 <= value <= 10"}, {"var": "total", "expr": "x - discount"}]})
    model = SameReply(f"discount = 3\n{again}\ntotal = 7")
    result = Guard(model, GuardConfig.for_procedure(proc, on_exhausted="flag", max_reprompts_per_step=1)).run(proc, {"x": 10})
    discount = next(s for s in result.steps if s.var == "discount")
    assert discount.provenance != "model_verified", discount


@pytest.mark.parametrize("line", ["Note: S3 = 13", "Now S3 = 13", "Nothing, S3 = 13", "Notably S3 = 13"])
def test_prose_that_only_starts_like_a_correction_word_is_no_step_line(line: str) -> None:
    assert [v for v, _ in _records(f"S3 = 12\n{line}", "S3")] == [12]


def test_a_restatement_with_a_correction_word_and_the_same_value_still_verifies() -> None:
    proc = Procedure.model_validate({"name": "m", "inputs": {"x": "integer"}, "steps": [
        {"var": "S1", "expr": "x"}, {"var": "S2", "expr": "S1 + 3"}]})
    model = SameReply("S1 = 5\nWait, S1 = 5\nS2 = 8")
    result = Guard(model, GuardConfig.for_procedure(proc, on_exhausted="flag")).run(proc, {"x": 5})
    assert result.status == "verified" and all(s.reprompts == 0 for s in result.steps), result.steps


# -- 9. open: a value, then an unknown name and "=" -----------------------------------------------

@pytest.mark.xfail(strict=True, reason=(
    "open (judgment call): 'area = 6 pi = 18.85' reads area = 6, since an unknown name after a value and "
    "blanks ends the clause ('S1 = 3 x = 5' reads 3, pinned by tests/trace/test_trace.py); the model meant 6 pi = "
    "18.85, and a check-only step commits 6 at the first try. Refusing such a record (more than one value) "
    "would close it and change that pinned rule"))
def test_a_value_then_a_unit_or_constant_and_its_result_is_not_read_as_the_value() -> None:
    proc = Procedure.model_validate({"name": "m", "inputs": {"x": "integer"}, "steps": [
        {"var": "area", "check": "5 <= value <= 10"}, {"var": "final", "expr": "area + x"}]})
    result = Guard(SameReply("area = 6 pi = 18.85\nfinal = 7"),
                   GuardConfig.for_procedure(proc, on_exhausted="flag")).run(proc, {"x": 1})
    area = next(s for s in result.steps if s.var == "area")
    assert not (area.value == 6 and area.provenance == "model_verified" and area.reprompts == 0), area


# -- 10. a chain that names an EARLIER step: a step with no expected value has its working checked --------------

def test_a_chain_through_an_earlier_name_does_not_commit_the_restated_value() -> None:
    proc = Procedure.model_validate({"name": "m", "inputs": {"x": "integer"}, "steps": [
        {"var": "total", "expr": "x"}, {"var": "discount", "check": "0 <= value <= 10"},
        {"var": "final", "expr": "total - discount"}]})
    model = SameReply("total = 5\ndiscount = 20 / total = 5\nfinal = 0")
    result = Guard(model, GuardConfig.for_procedure(proc, on_exhausted="flag")).run(proc, {"x": 5})
    discount = next(s for s in result.steps if s.var == "discount")
    assert not (discount.value == 5 and discount.provenance == "model_verified" and discount.reprompts == 0), discount


@pytest.mark.parametrize("line,value", [
    ("discount = 0.05 * subtotal = 6.00", 6),                   # working that gives the value
    ("discount = subtotal * 5 / 100 = 6", 6),
    ("discount = 19060 / 71400 * 100 = 26.69", Fraction(2669, 100)),  # rounded at the places written
    ("discount = 5% of subtotal = 6", 6),                       # prose the evaluator cannot read: not checked
])
def test_a_check_only_step_with_working_that_gives_its_value_still_verifies(line: str, value: object) -> None:
    proc = Procedure.model_validate({"name": "m", "inputs": {"subtotal": "decimal"}, "steps": [
        {"var": "discount", "check": "0 <= value <= 30"}], "accept_bounded": ["discount"]})
    result = Guard(SameReply(line), GuardConfig.for_procedure(proc, on_exhausted="flag")).run(proc, {"subtotal": "120"})
    discount = result.steps[0]
    assert discount.provenance == "model_verified" and discount.reprompts == 0, result.deviations
    assert Fraction(str(discount.value)) == value


@pytest.mark.parametrize("line", ["discount = 20 / subtotal = 5", "discount = subtotal / 10 = 13", "discount = 0.05 * subtotal = 7"])
def test_a_check_only_step_whose_working_gives_another_value_is_refused(line: str) -> None:
    proc = Procedure.model_validate({"name": "m", "inputs": {"subtotal": "decimal"}, "steps": [
        {"var": "discount", "check": "0 <= value <= 30"}], "accept_bounded": ["discount"]})
    result = Guard(SameReply(line), GuardConfig.for_procedure(proc, on_exhausted="flag", max_reprompts_per_step=1)).run(
        proc, {"subtotal": "120"})
    dev = result.deviations[0]
    assert dev.kind == "arithmetic_error" and "its working" in dev.detail, dev
    assert result.steps[0].provenance != "model_verified"
