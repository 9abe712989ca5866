"""A step computed, not asked (issue 43 part 4): ``execute: evaluator`` at step or procedure level; the
evaluator's value is committed with provenance ``computed``, never the model's; the bench refuses it guarded."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from stepguard import Guard, GuardConfig
from stepguard.errors import EvaluationError, ProcedureError
from stepguard.guard._state import GuardState
from stepguard.procedure import load_procedure, parse_procedure, save_procedure
from tests._fakes import FixedReplies, ScriptedModel

SOURCE = """\
name: mixed
inputs: [x]
steps:
  - {var: a, expr: x + 1}
  - {var: b, expr: a * 2, execute: evaluator}
  - {var: c, expr: b + a}
  - {var: d, expr: c * 3, execute: evaluator}
  - {var: e, expr: d - 4}
"""
PROC = parse_procedure(SOURCE)


def _asked(model: ScriptedModel) -> list[list[str]]:
    """The steps each call asked (its ``Steps:`` block's variables)."""
    return [re.findall(r"^(\w+) = ", m[-1]["content"].split("Steps:\n", 1)[1].split("\n\n")[0], re.M) for m in model.calls]


@pytest.mark.parametrize("config", [GuardConfig(), GuardConfig(chunk_size=1), GuardConfig(streamed=True), GuardConfig(follow=True)],
                         ids=["chunked", "one-a-call", "streamed", "follow"])
def test_a_computed_step_is_never_asked_and_is_committed_as_computed(config: GuardConfig) -> None:
    model = ScriptedModel()
    result = Guard(model, config).run(PROC, {"x": 2})
    assert result.status == "verified" and result.values == {"a": 3, "b": 6, "c": 9, "d": 27, "e": 23}
    assert [s.provenance for s in result.steps] == ["model_verified", "computed", "model_verified", "computed", "model_verified"]
    assert [s.grade for s in result.steps] == ["exact", "computed", "exact", "computed", "exact"]
    asked = [v for call in _asked(model) for v in call]
    assert "b" not in asked and "d" not in asked and sorted(set(asked)) == ["a", "c", "e"]
    assert all(len(call) == 1 for call in _asked(model))  # each chunk ends before a computed step
    assert "b = 6" in model.calls[1][-1]["content"]  # c's call shows b's computed value as known
    assert result.first_unverified is None


def test_a_wrong_model_is_reasked_around_computed_steps_and_they_never_count_as_its() -> None:
    model = ScriptedModel({"c": ["wrong", None]})
    result = Guard(model, GuardConfig(ladder=("narrow",))).run(PROC, {"x": 2})
    assert result.status == "verified" and [s.var for s in result.steps if s.reprompts] == ["c"]
    assert {s.var for s in result.steps if s.provenance == "computed"} == {"b", "d"}
    from langgraph.checkpoint.memory import InMemorySaver

    saver = InMemorySaver()
    Guard(ScriptedModel({"c": ["wrong", None]}), GuardConfig(follow=True, ladder=("narrow",)), saver).run(PROC, {"x": 2}, thread_id="t")
    got = saver.get_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})
    assert GuardState.of(got.checkpoint["channel_values"]).progress.window_tally == [[2, 1]]  # a, e right; c wrong; b, d neither


def test_procedure_level_evaluator_computes_every_step_with_an_expr_unless_the_step_says_model() -> None:
    proc = parse_procedure("inputs: [x]\nexecute: evaluator\nsteps:\n  - {var: a, expr: x + 1}\n"
                           "  - {var: b, expr: a * 2, execute: model}\n  - {var: c, type: integer, check: 'value > 0'}\n")
    assert proc.evaluated == (True, False, False)  # c has no expr: the model gives it
    proc = parse_procedure("inputs: [x]\nexecute: evaluator\nsteps:\n  - {var: a, expr: x + 1}\n"
                           "  - {var: b, expr: a * 2, execute: model}\n")
    model = ScriptedModel()
    result = Guard(model, GuardConfig()).run(proc, {"x": 2})
    assert [s.provenance for s in result.steps][:2] == ["computed", "model_verified"] and "a" not in _asked(model)[0]


def test_steps_all_computed_take_no_model_call() -> None:
    proc = parse_procedure("inputs: [x]\nexecute: evaluator\nsteps:\n  - {var: a, expr: x + 1}\n  - {var: b, expr: a * 2}\n")
    model = ScriptedModel()
    result = Guard(model, GuardConfig()).run(proc, {"x": 2})
    assert result.status == "verified" and result.values == {"a": 3, "b": 6} and model.calls == [] and result.usage.model_calls == 0


@pytest.mark.parametrize("step", ["{var: c, type: integer, check: 'value > 0', execute: evaluator}",
                                  "{var: c, kind: text, execute: evaluator}"])
def test_execute_evaluator_on_a_step_without_an_expr_is_refused_at_load_naming_it(step: str) -> None:
    with pytest.raises(ProcedureError, match=r"steps\[1\]\.execute \(c\): execute: evaluator computes a step's expr"):
        parse_procedure(f"inputs: [x]\nsteps:\n  - {{var: a, expr: x + 1}}\n  - {step}\n")


def test_an_unknown_execute_is_refused_naming_the_field() -> None:
    with pytest.raises(ProcedureError, match="execute"):
        parse_procedure("inputs: [x]\nsteps:\n  - {var: a, expr: x + 1, execute: python}\n")


def test_a_computed_value_that_fails_its_own_check_stops_the_run_naming_the_step() -> None:
    """Known up front, a contradiction is refused before the run (as for any step); read from a model's
    value (here an instruction step's), the computed value is checked when it is computed."""
    proc = parse_procedure("inputs: [x]\nsteps:\n  - {var: a, expr: x + 1}\n"
                           "  - {var: b, expr: a - 10, check: 'value >= 0', execute: evaluator}\n")
    with pytest.raises(ProcedureError, match="x = 2 give step b no value that passes its check"):  # the inputs named
        Guard(ScriptedModel(), GuardConfig()).run(proc, {"x": 2})
    proc = parse_procedure("inputs: [x]\nsteps:\n  - {var: m, type: integer, instruction: Pick a number}\n"
                           "  - {var: b, expr: m * 2, check: 'value < 0', execute: evaluator}\n")
    says = r"step b: its check 'value < 0' is false for the value its expr 'm \* 2' gives \(10\) on the values it reads"
    with pytest.raises(EvaluationError, match=says):
        Guard(FixedReplies(["m = 5"]), GuardConfig()).run(proc, {"x": 2})


def test_the_setting_round_trips_through_a_file(tmp_path: Path) -> None:
    save_procedure(PROC, tmp_path / "p.yaml")
    assert load_procedure(tmp_path / "p.yaml").evaluated == PROC.evaluated == (False, True, False, True, False)
    assert "execute" not in (tmp_path / "p.yaml").read_text().split("var: b")[0]  # the default is left out


def test_the_bench_refuses_a_computed_step_in_guarded_mode_and_runs_it_raw(tmp_path: Path) -> None:
    from stepguard.adapters import load_model
    from stepguard.bench.run import run_benchmark

    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "mixed.yaml").write_text(SOURCE, encoding="utf-8")
    (suite / "mixed.inputs.yaml").write_text("- {id: a, inputs: {x: 2}}\n", encoding="utf-8")
    with load_model("sim:perfect") as model:
        with pytest.raises(ValueError, match="step 'b' is computed by the evaluator .execute: evaluator., and guarded mode "
                                             "measures the model"):
            run_benchmark(suite, "guarded", model, tmp_path / "guarded", progress=False)
        assert not (tmp_path / "guarded").exists()
        run_benchmark(suite, "raw", model, tmp_path / "raw", progress=False)
    row = json.loads((tmp_path / "raw" / "results.jsonl").read_text().splitlines()[0])
    assert row["mode"] == "raw" and row["correct"] is True
