"""Raw and guarded scoring of boolean, string and one_of steps, and the raw prompt of a procedure
whose answer is not its last step (stepguard.bench._raw, stepguard.bench.rows)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from stepguard.adapters import load_model
from stepguard.bench._raw import raw_messages, score_raw
from stepguard.bench._runmeta import instance_source, run_meta
from stepguard.bench.run import run_benchmark
from stepguard.bench.store import RESULTS, iter_rows
from stepguard.bench.suites import load_suite
from tests._paths import ROOT

EXAMPLES = ROOT / "examples"

KINDS = """\
name: kinds
inputs: {total: decimal}
steps:
  - {var: big, expr: total >= 100, type: boolean}
  - {var: size, type: one_of, choices: [small, large], expr: "'large' if big else 'small'"}
  - {var: label, type: string, expr: "'bulk' if big else 'single'"}
  - {var: fee, expr: "5 if big else 2", type: integer}
  - {var: flag, expr: fee > 3, type: boolean}
"""
MEDICATION_SETS = """\
- {id: capped, inputs: {weight_kg: "72.5", mg_per_kg: "15", max_single_mg: "1000", doses_per_day: 4, max_daily_mg: "3000"}}
- {id: free, inputs: {weight_kg: "50", mg_per_kg: "10", max_single_mg: "1000", doses_per_day: 4, max_daily_mg: "3000"}}
"""
ANSWER_FIRST = """\
name: early
inputs: {a: integer, b: integer}
steps:
  - {var: s, expr: a + b}
  - {var: t, expr: s * 2}
answer: s
"""


def _suite(tmp_path: Path) -> Path:
    folder = tmp_path / "suite"
    folder.mkdir()
    shutil.copy(EXAMPLES / "medication.yaml", folder / "medication.yaml")
    (folder / "medication.inputs.yaml").write_text(MEDICATION_SETS, encoding="utf-8")
    (folder / "kinds.yaml").write_text(KINDS, encoding="utf-8")
    (folder / "kinds.inputs.yaml").write_text('- {id: big, inputs: {total: "150"}}\n- {id: small, inputs: {total: "20"}}\n', encoding="utf-8")
    return folder


@pytest.mark.parametrize("mode", ["raw", "guarded"])
def test_a_perfect_model_is_right_and_exact_on_boolean_string_and_one_of_steps(tmp_path: Path, mode: str) -> None:
    run_benchmark(_suite(tmp_path), mode, load_model("sim:perfect"), tmp_path / mode, progress=False)  # type: ignore[arg-type]
    rows = list(iter_rows(tmp_path / mode / RESULTS))
    assert len(rows) == 4
    for r in rows:
        assert r["correct"] and r["exact"], (r["id"], r.get("labels"), r.get("first_error_step"), r.get("text"))
        assert r["first_error_step"] is None and r["step_values_correct"] == r["n_steps"]
        assert "arithmetic_error" not in r["labels"]


def _case(tmp_path: Path, case_id: str):  # noqa: ANN202
    return next(c for c in load_suite(_suite(tmp_path)) if c.id == case_id)


def test_raw_scoring_reads_each_kind_as_what_it_is(tmp_path: Path) -> None:
    case = _case(tmp_path, "kinds/big")  # big true, size large, label bulk, fee 5, flag true
    right = "big = true\nsize = large\nlabel = bulk\nfee = 5\nflag = 150 >= 100 = True\nFinal answer: **true**\n"
    score = score_raw(case, right)
    assert score.correct and score.exact and score.labels == ["exact"] and score.first_answer == "true"
    wrong = right.replace("size = large", "size = small").replace("Final answer: **true**", "Final answer: false")
    score = score_raw(case, wrong)
    assert not score.correct and score.labels == ["arithmetic_error"] and score.first_answer == "false"
    assert (score.first_error_step, score.first_error_position, score.step_values_correct) == ("size", 2, 4)
    assert score_raw(case, right.replace("big = true", "big = 1")).first_error_step == "big"  # 1 is no boolean
    two = right.replace("Final answer: **true**", "Final answer: false\nFinal answer: true")
    assert "self_correction" in score_raw(case, two).labels


def test_the_raw_prompt_names_the_answer_variable_when_it_is_not_the_last_step(tmp_path: Path) -> None:
    folder = tmp_path / "early"
    folder.mkdir()
    (folder / "early.yaml").write_text(ANSWER_FIRST, encoding="utf-8")
    (folder / "early.inputs.yaml").write_text("- {id: one, inputs: {a: 3, b: 4}}\n", encoding="utf-8")
    case = load_suite(folder)[0]
    text = raw_messages(case.procedure, case.inputs)[-1]["content"]
    assert "After the last step (t), write `Final answer: <the value of s>`" in text and "last step (s)" not in text
    assert score_raw(case, "s = 7\nt = 14\nFinal answer: 7").exact
    assert not score_raw(case, "s = 7\nt = 14\nFinal answer: 14").correct
    # a run made with the old wording is another run: raw generation records the new one
    make, meta = instance_source(folder)
    assert run_meta("raw", load_model("sim:perfect"), None, meta)["generation"]["final_answer"]
    plain = _suite(tmp_path)
    assert "final_answer" not in run_meta("raw", load_model("sim:perfect"), None, instance_source(plain)[1])["generation"]
    medication = load_suite(plain)[0]  # answer last: the prompt is render_raw_prompt's, unchanged
    from stepguard.guard import render_raw_prompt

    assert raw_messages(medication.procedure, medication.inputs) == render_raw_prompt(medication.procedure, medication.inputs)


def test_sim_perfect_raw_is_right_when_the_answer_is_not_the_last_step(tmp_path: Path) -> None:
    folder = tmp_path / "early"
    folder.mkdir()
    (folder / "early.yaml").write_text(ANSWER_FIRST, encoding="utf-8")
    (folder / "early.inputs.yaml").write_text("- {id: one, inputs: {a: 3, b: 4}}\n", encoding="utf-8")
    run_benchmark(folder, "raw", load_model("sim:perfect"), tmp_path / "raw", progress=False)  # type: ignore[arg-type]
    (row,) = iter_rows(tmp_path / "raw" / RESULTS)
    assert row["correct"] and row["exact"], row["text"]
