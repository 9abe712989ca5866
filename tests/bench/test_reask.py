"""reask mode: the same instances through Instructor's re-ask loop (the real library), its validator
checking every step with stepguard's evaluator and never telling the expected value; its rows beside
raw and guarded ones in bench run, compare and the report."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from tests._paths import ROOT

pytest.importorskip("instructor")

from pydantic import ValidationError

from stepguard.bench.case import row_outcomes
from stepguard.bench.compare import compare_runs
from stepguard.bench.generate import generate_grid, generate_instance
from stepguard.bench.instances import Instance, write_instances
from stepguard.bench.reask import MAX_RETRIES, Execution, arun_reask
from stepguard.bench.report import build_report
from stepguard.bench.run import run_benchmark
from stepguard.errors import ModelTimeout
from stepguard.model import ChatMessage, ChatResponse, GenerationSettings, Usage


def _instance() -> Instance:
    """A 5-step instance whose values are all different and none a single digit (so none hides in other text)."""
    for index in range(200):
        inst = generate_instance(5, 2, seed=0, index=index)
        values = list(inst.expected.values())
        if len(set(values)) == 5 and all(abs(v) >= 10 for v in values):
            return inst
    raise AssertionError("no such instance")


class JsonModel:
    """Answers an instance in Instructor's MD_JSON form; ``wrong[k]`` is the step it gets wrong (by +1) on call k."""

    spec, provider, model_name, simulated = "json", "test", "json", False

    def __init__(self, instances: dict[str, Instance], wrong: list[str | None]) -> None:
        self.instances, self.wrong = instances, wrong
        self.calls: list[list[ChatMessage]] = []

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        raise TypeError("async only")

    async def acomplete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        self.calls.append(messages)
        first_user = next(m["content"] for m in messages if m["role"] == "user")
        inst = next(i for i in self.instances.values() if all(f"{k} = {v}\n" in first_user for k, v in i.inputs.items()))
        k = sum(1 for m in messages if m["role"] == "assistant")  # re-asks so far on this instance
        bad = self.wrong[min(k, len(self.wrong) - 1)]
        values = {var: v + (1 if var == bad else 0) for var, v in inst.expected.items()}
        body = {"steps": [{"var": var, "value": v} for var, v in values.items()], "final_answer": values[inst.steps[-1].var]}
        return ChatResponse(f"```json\n{json.dumps(body)}\n```", Usage(100, 40))


def test_the_validator_names_the_wrong_step_and_never_its_expected_value() -> None:
    inst = _instance()
    procedure = inst.to_procedure()
    values = dict(inst.expected)
    values["S4"] += 1
    data = {"steps": [{"var": k, "value": v} for k, v in values.items()], "final_answer": values["S5"]}
    with pytest.raises(ValidationError) as info:
        Execution.model_validate(data, context={"procedure": procedure, "inputs": inst.inputs})
    message = info.value.errors()[0]["msg"]
    assert "S4 = " in message and procedure.steps[3].expr in message
    assert str(inst.expected["S4"]) not in re.findall(r"-?\d+", message)  # the right value is not told
    Execution.model_validate({**data, "steps": [{"var": k, "value": v} for k, v in inst.expected.items()],
                              "final_answer": inst.answer}, context={"procedure": procedure, "inputs": inst.inputs})
    missing = {"steps": data["steps"][:3], "final_answer": 1}
    with pytest.raises(ValidationError, match="missing steps: S4, S5"):
        Execution.model_validate(missing, context={"procedure": procedure, "inputs": inst.inputs})


def test_a_reask_fixes_a_wrong_step_and_is_counted() -> None:
    inst = _instance()
    model = JsonModel({inst.id: inst}, ["S4", None])
    row = asyncio.run(arun_reask(inst, model))
    assert row["mode"] == "reask" and row["correct"] and row["exact"] and row["labels"] == ["exact"]
    assert row["reask"] == {**row["reask"], "attempts": 2, "exhausted": False}
    assert row["usage"]["model_calls"] == 2 and row["usage"]["input_tokens"] == 200
    reask = model.calls[1][-1]["content"]  # Instructor's re-ask: the reply, then the errors as a user message
    assert model.calls[1][-2]["role"] == "assistant" and "S4 = " in reask
    assert "Compute each step in order" in model.calls[0][1]["content"]
    assert row_outcomes(row)["correct"] == 1


def test_instructor_gives_up_after_max_retries_and_nothing_is_delivered() -> None:
    inst = _instance()
    model = JsonModel({inst.id: inst}, ["S4"])
    row = asyncio.run(arun_reask(inst, model))
    assert row["reask"]["exhausted"] and row["reask"]["attempts"] == MAX_RETRIES + 1 == len(model.calls)
    assert not row["correct"] and not row["exact"] and "arithmetic_error" in row["labels"]
    assert "S4 = " in row["reask"]["errors"][0]


def test_a_reply_cut_at_the_token_allowance_ends_the_loop_with_a_row_not_a_crash() -> None:
    class Cut(JsonModel):
        async def acomplete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
            whole = await super().acomplete(messages, settings)
            return ChatResponse(whole.text[:40], whole.usage, finish_reason="length")  # the embedded model at 23 steps

    inst = _instance()
    model = Cut({inst.id: inst}, [None])
    row = asyncio.run(arun_reask(inst, model))
    assert row["reask"]["exhausted"] and row["reask"]["attempts"] == 1 and "incomplete" in row["reask"]["errors"][0]
    assert not row["correct"] and not row["exact"] and row["usage"]["model_calls"] == 1


@pytest.mark.parametrize("fails_on", [0, 1])
def test_a_model_that_fails_inside_the_loop_raises_its_error_not_a_given_up_row(fails_on: int) -> None:
    """A timed-out or failed model call is the model's failure, not Instructor giving up: the error
    reaches the bench (an error row, retried on resume), where it once became a row of 0 calls scored
    as the loop's miss (a 95-step reply past the HTTP adapter's 60 s)."""
    class Fails(JsonModel):
        async def acomplete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
            if len(self.calls) == fails_on:
                self.calls.append(messages)
                raise ModelTimeout("the reply took longer than 60 s")
            return await super().acomplete(messages, settings)

    inst = _instance()
    with pytest.raises(ModelTimeout, match="60 s"):
        asyncio.run(arun_reask(inst, Fails({inst.id: inst}, ["S4"])))


@pytest.mark.slow
def test_reask_runs_beside_raw_and_guarded_in_the_report(tmp_path: Path) -> None:
    from stepguard.adapters import load_model

    instances = tmp_path / "inst.jsonl"
    grid = list(generate_grid([5], [1, 2], 3, seed=0))
    write_instances(grid, instances)
    sim = load_model("sim:paper")
    run_benchmark(instances, "raw", sim, tmp_path / "raw", progress=False)
    run_benchmark(instances, "guarded", sim, tmp_path / "guarded", progress=False)
    wrong: list[str | None] = ["S3", None]
    summary = run_benchmark(instances, "reask", JsonModel({i.id: i for i in grid}, wrong), tmp_path / "reask", progress=False)  # type: ignore[arg-type]
    assert summary.written == 6 and summary.correct == 6
    meta = json.loads((tmp_path / "reask" / "run.json").read_text())
    assert meta["mode"] == "reask" and meta["generation"]["instructor"] == {"mode": "md_json", "max_retries": MAX_RETRIES}
    cmp = compare_runs(tmp_path / "reask", tmp_path / "guarded", "verified")
    assert cmp.overall.n == 6 and cmp.warnings  # different models: said
    rep = build_report([tmp_path / "raw", tmp_path / "reask", tmp_path / "guarded"], tmp_path / "report")
    md = rep.report_md.read_text()
    headline = md.split("### Headline")[1].split("###")[0]
    reask_line = next(line for line in headline.splitlines() if line.startswith("| reask"))
    assert "6/6" in reask_line and "| 2.0 |" in reask_line  # all right, at two calls an instance
    assert rep.plots[0].name == "models.png"  # two models (the simulator, the JSON model)


def test_a_suite_case_is_refused(tmp_path: Path) -> None:
    from stepguard.bench.suites import load_suite

    root = ROOT / "benchmarks" / "production"
    case = load_suite(root / "invoice.yaml")[0]
    with pytest.raises(ValueError, match="generated instances only"):
        asyncio.run(arun_reask(case, JsonModel({}, [None])))  # type: ignore[arg-type]


