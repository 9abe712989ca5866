"""Raw-mode scoring (benchmark.md, "Failure taxonomy"), Wilson intervals and per-configuration summaries."""

from __future__ import annotations

import pytest

from stepguard.bench.instances import Instance
from stepguard.bench.stats import rate, wilson_interval
from stepguard.bench.summary import render_table, summarize
from stepguard.procedure import Procedure
from stepguard.verify import SCORE_LABELS, Score, score_generation

# N = 6, L = 3: S_k = S_{k-1} op S_{k-3} (S1 when k - 3 < 1).
INST = Instance(
    id="n6-l3-s0-i0", n_steps=6, lookback=3, inputs={"x": 7, "y": 3},
    steps=[{"var": "S1", "expr": "x"}, {"var": "S2", "expr": "y"}, {"var": "S3", "expr": "S2 - S1"},
           {"var": "S4", "expr": "S3 * S1"}, {"var": "S5", "expr": "S4 + S2"}, {"var": "S6", "expr": "S5 - S3"}],
    expected={"S1": 7, "S2": 3, "S3": -4, "S4": -28, "S5": -25, "S6": -21}, answer=-21,
)
RIGHT = {"S1": 7, "S2": 3, "S3": -4, "S4": -28, "S5": -25, "S6": -21}


def gen(*lines: str, values: dict | None = None, answer: str | None = "Final answer: -21") -> str:
    """Step lines for S1..S6 (overridden by ``values``; a value of None drops the line), extra lines, an answer."""
    vals = {**RIGHT, **(values or {})}
    out = [f"S{k} = {vals[f'S{k}']}" for k in range(1, 7) if vals[f"S{k}"] is not None]
    return "\n".join([*out, *lines, *([answer] if answer else [])])


def labels(text: str) -> list[str]:
    return score_generation(INST, text).labels


def test_exact() -> None:
    s = score_generation(INST, gen())
    assert s.labels == ["exact"] and s.exact and s.correct and s.first_answer == -21
    assert (s.steps_emitted, s.distinct_steps, s.step_values_correct) == (6, 6, 6)
    assert s.first_error_step is None and s.first_error_position is None and not s.lookback_confusion
    assert (s.id, s.n_steps, s.lookback) == ("n6-l3-s0-i0", 6, 3)


def test_substituted_format_is_exact_too() -> None:
    text = "S1 = x = 7\nS2 = y = 3\nS3 = S2 - S1 = 3 - 7 = -4\nS4 = S3 * S1 = -4 * 7 = -28\n" \
           "S5 = S4 + S2 = -28 + 3 = -25\nS6 = S5 - S3 = -25 - (-4) = -21\n**Final answer:** -21"
    assert labels(text) == ["exact"]


def test_missing_answer() -> None:
    s = score_generation(INST, gen(answer=None))
    assert s.labels == ["missing_answer"] and not s.correct and s.first_answer is None


def test_premature_answer_before_the_last_step_line() -> None:
    text = "Final answer: -21\n" + gen(answer=None)
    s = score_generation(INST, text)
    assert s.labels == ["premature_answer"] and s.correct and not s.exact


def test_premature_and_under_executed_when_the_trace_stops_early() -> None:
    s = score_generation(INST, gen(values={"S4": None, "S5": None, "S6": None}))
    assert s.labels == ["premature_answer", "under_executed"] and s.correct
    assert s.distinct_steps == 3 and s.step_values_correct == 3


def test_an_answer_line_is_not_the_last_step_line() -> None:
    s = score_generation(INST, gen(values={"S6": None}, answer="Final answer: S6 = -21"))
    assert s.labels == ["premature_answer", "under_executed"] and s.correct and s.first_answer == -21


def test_under_executed_skipped_step() -> None:
    assert labels(gen(values={"S4": None})) == ["under_executed"]


def test_extra_steps_nonexistent_variable_and_repeats() -> None:
    assert labels(gen("S7 = 4")) == ["extra_steps"]
    assert labels(gen("S3 = -4")) == ["extra_steps"]
    assert labels(gen(answer="S3 = -4\nFinal answer: -21")) == ["extra_steps"]


def test_self_correction_needs_a_wrong_first_answer() -> None:
    s = score_generation(INST, gen(answer="Final answer: -20\nWait, Final answer: -21"))
    assert s.labels == ["self_correction"] and not s.correct and s.first_answer == -20
    s = score_generation(INST, gen(answer="Final answer: -21\nFinal answer: -20"))
    assert s.labels == ["exact"] and s.correct  # a later, different answer neither rescues nor spoils
    assert labels(gen(answer="Final answer: -20\nFinal answer: -20")) == []  # wrong, but not corrected


def test_arithmetic_error_records_the_first_wrong_step() -> None:
    s = score_generation(INST, gen(values={"S4": -27, "S5": -24, "S6": -20}, answer="Final answer: -20"))
    assert s.labels == ["arithmetic_error"] and not s.correct
    assert (s.first_error_step, s.first_error_position, s.step_values_correct) == ("S4", 4, 3)
    assert not s.lookback_confusion


def test_unreadable_value_is_an_arithmetic_error() -> None:
    s = score_generation(INST, gen(values={"S2": "S1 - 4"}))
    assert s.labels == ["arithmetic_error"] and s.first_error_step == "S2"


def test_lookback_confusion_nearer_operand() -> None:
    # S4 = S3 * S1; reading S2 (nearer) instead of S1 gives -4 * 3 = -12.
    s = score_generation(INST, gen(values={"S4": -12}))
    assert s.first_error_step == "S4" and s.lookback_confusion
    # S6 = S5 - S3; reading S4 (nearer than S3) gives -25 - (-28) = 3.
    assert score_generation(INST, gen(values={"S6": 3})).lookback_confusion
    # the previous variable has nothing nearer: S5 = S4 + S2 with S4 replaced is not a look-back reading
    assert not score_generation(INST, gen(values={"S5": -7})).lookback_confusion


def test_label_combinations() -> None:
    text = "S1 = 7\nS2 = 3\nFinal answer: 5\nS3 = -5\nS3 = -4\nS6 = -21\nS9 = 1\nFinal answer: -21"
    s = score_generation(INST, text)
    assert s.labels == ["premature_answer", "under_executed", "extra_steps", "self_correction", "arithmetic_error"]
    assert s.first_error_step == "S3" and s.steps_emitted == 6 and s.distinct_steps == 4
    assert set(s.labels) <= set(SCORE_LABELS)
    assert labels("") == ["missing_answer", "under_executed"]


def test_out_of_order_is_not_exact_but_has_no_failure_label() -> None:
    text = gen(values={"S5": None, "S6": None}, answer="S6 = -21\nS5 = -25\nFinal answer: -21")
    s = score_generation(INST, text)
    assert s.labels == [] and s.correct and not s.exact


def test_code_capped_and_decimal_first_answer() -> None:
    s = score_generation(INST, "```python\nprint(-21)\n```\nFinal answer: 3.5")
    assert s.code and s.first_answer == "3.5" and not s.correct
    assert score_generation(INST, gen() + "\n" + "x" * 100, max_chars=40).capped


def test_procedure_target_with_generic_names() -> None:
    proc = Procedure(name="invoice", inputs=["price", "qty"], steps=[
        {"var": "subtotal", "expr": "price * qty"}, {"var": "tax", "expr": "subtotal * 0.2"},
        {"var": "total", "expr": "subtotal + tax"}])
    expected = proc.expected_values({"price": 12, "qty": 3})
    ok = "subtotal = 12 * 3 = 36\ntax = 36 * 0.2 = 7.2\ntotal = subtotal + tax = 36 + 7.2 = 43.2\nFinal answer: 43.2"
    s = score_generation((proc, expected), ok)
    assert s.labels == ["exact"] and s.id == "invoice" and s.n_steps == 3 and s.lookback is None
    s = score_generation((proc, expected), ok.replace("7.2", "12", 1), id="inv-1")
    assert s.id == "inv-1" and s.labels == ["arithmetic_error"] and s.first_error_step == "tax"
    assert not s.lookback_confusion  # subtotal is the nearest variable: nothing nearer to read instead
    s = score_generation((proc, expected), ok.replace("= 43.2\n", "= 14.4\n"))
    assert s.first_error_step == "total" and s.lookback_confusion  # tax read in place of subtotal: 7.2 + 7.2
    with pytest.raises(TypeError):
        score_generation(("not a procedure", {}), "x")  # type: ignore[arg-type]


def test_score_round_trips_as_json() -> None:
    s = score_generation(INST, gen(values={"S4": -12}))
    assert Score.model_validate_json(s.model_dump_json()) == s


# ---------------------------------------------------------------------------------- stats, summary
def test_wilson_interval_matches_the_reference_values() -> None:
    low, high = wilson_interval(3, 10)
    assert low == pytest.approx(0.1078, abs=1e-4) and high == pytest.approx(0.6032, abs=1e-4)
    assert wilson_interval(0, 10)[0] == 0.0 and wilson_interval(10, 10)[1] == 1.0
    assert wilson_interval(50, 100, 0.99)[0] < wilson_interval(50, 100)[0]
    assert rate(1, 4).value == 0.25 and rate(1, 4).percent(False) == "25.0"
    for bad in [(1, 0), (-1, 5), (6, 5)]:
        with pytest.raises(ValueError):
            wilson_interval(*bad)
    with pytest.raises(ValueError):
        wilson_interval(1, 2, 1.5)


def test_summarize_groups_by_configuration() -> None:
    other = INST.model_copy(update={"id": "n6-l3-s0-i1"})
    third = INST.model_copy(update={"id": "n6-l3-s0-i2"})
    scores = [score_generation(INST, gen()), score_generation(other, gen(values={"S4": -12}, answer="Final answer: 9"))]
    rows = summarize(scores)
    assert len(rows) == 1 and (rows[0].n_steps, rows[0].lookback, rows[0].count) == (6, 3, 2)
    r = rows[0]
    assert r.accuracy.k == 1 and r.exact.k == 1 and r.labels["arithmetic_error"].k == 1
    assert r.step_accuracy.k == 11 and r.step_accuracy.n == 12
    assert r.first_error_mean == 4 and r.lookback_confusion is not None and r.lookback_confusion.k == 1
    rows = summarize(scores + scores[:1], [INST, other, third])
    assert rows[0].count == 2 and rows[0].missing == 1
    table = render_table(rows)
    assert "acc" in table and "miss" in table and "[" in table
    with pytest.raises(ValueError, match="not among the instances"):
        summarize(scores, [INST])


def test_the_taxonomy_imports_nothing_from_the_benchmark() -> None:
    import ast
    from pathlib import Path

    import stepguard.verify

    found = []
    for path in Path(stepguard.verify.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):  # TYPE_CHECKING blocks included
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.name}: {n}" for n in names if n.startswith("stepguard.bench")]
    assert not found


def test_one_label_list_for_every_report() -> None:
    from stepguard.bench import aggregate, summary
    from stepguard.verify import DEVIATION_KINDS, FAILURE_LABELS

    assert SCORE_LABELS == ("exact", *FAILURE_LABELS) and set(FAILURE_LABELS) <= set(DEVIATION_KINDS)
    assert set(aggregate.LABEL_HEADINGS) == set(FAILURE_LABELS)
    header = render_table(summarize([score_generation(INST, gen())])).splitlines()[0].split()
    assert [aggregate.LABEL_HEADINGS[lb] for lb in FAILURE_LABELS] == header[6:12]
    assert not hasattr(summary, "FAILURE_LABELS") or summary.FAILURE_LABELS is FAILURE_LABELS


def test_boolean_and_choice_values_are_read_as_what_they_are() -> None:
    """A right `capped = true` was an arithmetic_error (the parser reads numbers only), and True == 1."""
    from stepguard import parse_procedure
    from stepguard.verify import score_generation

    proc = parse_procedure("""
inputs: {x: integer}
steps:
  - {var: big, expr: x > 10, type: boolean}
  - {var: tier, expr: "'gold' if big else 'silver'", type: one_of, choices: [gold, silver]}
  - {var: n, expr: "1 if big else 0"}
answer: big
""")
    expected = proc.expected_values({"x": 12})
    right = score_generation((proc, expected), "big = true\ntier = Gold\nn = 1\nFinal answer: true")
    assert right.exact and right.correct and right.first_answer == "true" and right.step_values_correct == 3
    wrong = score_generation((proc, expected), "big = 1\ntier = silver\nn = 1\nFinal answer: 1")
    assert not wrong.correct and wrong.first_error_step == "big" and "arithmetic_error" in wrong.labels


@pytest.mark.parametrize("final", ["Final answer:\ntrue", "Final answer: **true**", "\\boxed{\\text{true}}", "Final answer: $\\boxed{\\text{true}}$"])
def test_a_boolean_final_answer_is_read_where_a_number_would_be(final: str) -> None:
    """`Final answer:` with the value on the next line, or boxed as text, was scored None (the numeric one was read)."""
    from stepguard import parse_procedure
    from stepguard.verify import score_generation

    proc = parse_procedure("inputs: {x: integer}\nsteps:\n  - {var: big, expr: x > 10, type: boolean}\n")
    score = score_generation((proc, proc.expected_values({"x": 12})), f"big = true\n{final}")
    assert score.correct and score.first_answer == "true", score
