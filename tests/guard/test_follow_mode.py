"""Follow the model (issue 43 part 1): one streamed window while the model is right; after a deviation,
windows as wide as the per-step accuracy measured in the run allows, widening as the model holds."""

from __future__ import annotations

import asyncio
import math
import re
import sys
from pathlib import Path

import pytest

from stepguard import Guard, GuardConfig
from stepguard.adapters import load_model
from stepguard.bench._raw import raw_messages
from stepguard.bench.generate import generate_instance
from stepguard.guard._options import GuardOptions
from stepguard.guard._window import first_try_tally, follow_window, measured_accuracy
from stepguard.procedure import load_inputs_file, load_procedure, parse_procedure
from tests._fakes import FailsAt, ScriptedModel, StreamingReplies
from tests._paths import ROOT

PRODUCTION = sorted(p for p in (ROOT / "benchmarks" / "production").glob("*.yaml") if ".inputs" not in p.name and ".prompt" not in p.name)
sys.path.insert(0, str(ROOT / "examples"))
from run_example import EXAMPLES  # noqa: E402  (the examples' compute procedures and their inputs)


def _window(right: int, wrong: int, most: int = 100) -> int:
    """The rule written out apart from the code under test: the most steps w with p ** w >= 0.9."""
    if wrong == 0:
        return most
    p = (right + 1) / (right + wrong + 2)
    w = 1
    while w < most and p ** (w + 1) >= 0.9:
        w += 1
    return w


def _raw_tokens(proc, inputs) -> int:
    """Raw mode's prompt tokens as the simulator counts them (characters / 4)."""
    return sum(len(m["content"]) for m in raw_messages(proc, inputs)) // 4


def _perfect(proc, inputs):
    config = GuardOptions(follow=True).resolve(proc)  # the procedure's defaults, following the model
    return Guard(load_model("sim:perfect", procedure=proc), config).run(proc, inputs)


# ------------------------------------------------------------------------------------------------ the rule
@pytest.mark.parametrize(("right", "wrong"), [(0, 1), (2, 1), (10, 1), (36, 1), (100, 1), (100, 5), (1000, 1), (5000, 2)])
def test_the_window_is_the_horizon_of_the_measured_accuracy(right: int, wrong: int) -> None:
    assert follow_window(right, wrong, 100) == _window(right, wrong)
    assert measured_accuracy(right, wrong) == pytest.approx((right + 1) / (right + wrong + 2))


def test_the_window_is_whole_until_a_deviation_and_widens_as_the_model_holds() -> None:
    assert follow_window(0, 0, 100) == follow_window(50, 0, 100) == 100
    widths = [follow_window(r, 1, 100) for r in range(0, 2000, 10)]
    assert widths == sorted(widths) and widths[0] == 1 and widths[-1] > 50  # never narrower as right steps come
    assert follow_window(100, 1, 100) > follow_window(100, 3, 100)  # more deviations, narrower
    assert follow_window(10**6, 1, 7) == 7  # never wider than GuardConfig.window
    assert follow_window(100, 1, 100, target=0.5) == math.floor(math.log(0.5) / math.log(101 / 103))


@pytest.mark.parametrize(("args", "says"), [((-1, 0, 5), "negative"), ((0, -1, 5), "negative"), ((1, 1, 0), "most >= 1")])
def test_a_bad_count_is_refused_naming_it(args: tuple[int, int, int], says: str) -> None:
    with pytest.raises(ValueError, match=says):
        follow_window(*args)


def test_the_tally_counts_each_deviating_step_once_and_the_pending_one() -> None:
    values = {"a": "1", "b": "2", "c": "3", "d": "4"}
    reprompts = {"a": 0, "b": 3, "c": 0, "d": 0}
    provenance = {"a": "model_verified", "b": "model_verified", "c": "repaired", "d": "tool"}
    assert first_try_tally(reprompts, provenance, values, pending=False) == (2, 2)
    assert first_try_tally(reprompts, provenance, values, pending=True) == (2, 3)


# ------------------------------------------------------------------------------------------- scripted runs
CHAIN = parse_procedure("inputs: [x]\nsteps:\n  - {var: s1, expr: x + 1}\n"
                        + "".join(f"  - {{var: s{k}, expr: s{k - 1} + {k % 7 + 1}}}\n" for k in range(2, 61)))


def _widths(model: ScriptedModel) -> list[int]:
    """The steps each call asked (the lines of its ``Steps:`` block)."""
    return [len(re.findall(r"^s\d+ = ", m[-1]["content"].split("Steps:\n", 1)[1].split("\n\n")[0], re.M)) for m in model.calls]


def test_a_right_model_is_asked_every_step_in_one_window() -> None:
    model = ScriptedModel()
    result = Guard(model, GuardConfig(follow=True, ladder=("narrow",))).run(CHAIN, {"x": 2})
    assert result.status == "verified" and result.usage.model_calls == 1 and _widths(model) == [60]


def test_after_a_deviation_the_windows_narrow_to_the_measured_accuracy_then_widen() -> None:
    model = ScriptedModel({"s3": ["wrong", None]})
    result = Guard(model, GuardConfig(follow=True, ladder=("narrow",))).run(CHAIN, {"x": 2})
    assert result.status == "verified" and [s.var for s in result.steps if s.reprompts] == ["s3"]
    widths = _widths(model)
    assert widths[:2] == [60, 1]  # the whole procedure, cut at s3; s3 re-asked alone
    # then each window as the rule says for the steps verified so far (s3 counts as the one wrong step)
    want, right = [], 2
    while right + 1 < 60:
        w = min(_window(right, 1), 60 - (right + 1))
        want.append(w)
        right += w
    assert widths[2:] == want
    assert want[0] == 1 and max(want) >= 2  # narrowed to one step, widened as the model held


def test_chunked_and_plain_streamed_stay_as_they_were() -> None:
    chunked = ScriptedModel({"s3": ["wrong", None]})
    Guard(chunked, GuardConfig(chunk_size=5, ladder=("narrow",))).run(CHAIN, {"x": 2})
    assert _widths(chunked)[:3] == [5, 1, 5]  # the chunk, s3 alone, the next chunk from s4
    streamed = ScriptedModel({"s3": ["wrong", None]})
    Guard(streamed, GuardConfig(streamed=True, ladder=("narrow",))).run(CHAIN, {"x": 2})
    assert _widths(streamed) == [60, 1, 57]


def test_follow_streams_the_window_and_cuts_it_at_the_first_wrong_step() -> None:
    proc = parse_procedure("inputs: [x]\nsteps:\n" + "".join(
        f"  - {{var: s{k}, expr: s{k - 1} + {k}}}\n" if k > 1 else "  - {var: s1, expr: x + 1}\n" for k in range(1, 9)))
    right = {f"s{k}": 2 + sum(range(1, k + 1)) for k in range(1, 9)}
    lines = "".join(f"s{k} = {99 if k == 3 else right[f's{k}']}\n" for k in range(1, 9))
    model = StreamingReplies([lines, f"s3 = {right['s3']}", *[f"s{k} = {right[f's{k}']}" for k in range(4, 9)]])
    result = asyncio.run(Guard(model, GuardConfig(follow=True, ladder=("restate",))).arun(proc, {"x": 2}))
    assert result.status == "verified" and result.values == right
    assert model.streams[0]["closed"] is True  # cut at s3: the rest never read
    assert len(model.prompts) == 7  # the window, s3, then s4..s8 one a call (p = 3/5 .. 7/9: one step a window)


@pytest.mark.slow
def test_a_resumed_run_measures_what_it_measured_before() -> None:
    """The tally is read from the checkpointed steps: a run that crashed resumes with the window it had measured."""
    from langgraph.checkpoint.memory import InMemorySaver

    from stepguard.errors import ModelError

    saver, config = InMemorySaver(), GuardConfig(follow=True, ladder=("narrow",))
    first = FailsAt(4, faults={"s3": ["wrong", None]})
    with pytest.raises(ModelError):
        Guard(first, config, saver).run(CHAIN, {"x": 2}, thread_id="t")
    assert _widths(first)[:3] == [60, 1, 1]  # the window cut at s3, s3 alone, s4 alone; then the crash
    again = ScriptedModel()
    result = Guard(again, config, saver).run(CHAIN, {"x": 2}, thread_id="t")
    assert result.status == "verified" and _widths(again)[0] == _window(3, 1) == 1  # not the whole rest at once


# ----------------------------------------------------------------------------------- sim:perfect, 1 call each
@pytest.mark.slow
@pytest.mark.parametrize("path", PRODUCTION, ids=lambda p: p.stem)
def test_sim_perfect_takes_one_call_for_each_production_procedure(path: Path) -> None:
    proc = load_procedure(path)
    inputs = load_inputs_file(path.with_name(path.stem + ".inputs.yaml"))[0]["inputs"]
    result = _perfect(proc, inputs)
    assert result.status == "verified", result.deviations
    assert result.usage.model_calls == 1
    assert result.usage.input_tokens <= 1.1 * _raw_tokens(proc, inputs)


@pytest.mark.parametrize("name", sorted(EXAMPLES))
def test_sim_perfect_takes_one_call_for_each_example_compute_procedure(name: str) -> None:
    proc = load_procedure(ROOT / "examples" / f"{name}.yaml")
    result = _perfect(proc, EXAMPLES[name])
    assert result.status == "verified" and result.usage.model_calls == 1
    assert result.usage.input_tokens <= 1.1 * _raw_tokens(proc, EXAMPLES[name])


@pytest.mark.slow
@pytest.mark.parametrize("n", [5, 23, 95])
def test_sim_perfect_takes_one_call_for_a_generated_instance(n: int) -> None:
    inst = generate_instance(n, 3, seed=7)
    proc = inst.to_procedure()
    result = _perfect(proc, inst.inputs)
    assert result.status == "verified" and result.usage.model_calls == 1
    assert result.usage.input_tokens <= 1.1 * _raw_tokens(proc, inst.inputs)


def test_follow_is_refused_as_any_flag_is() -> None:
    with pytest.raises(ValueError, match="follow must be true or false, not 'yes'"):
        GuardConfig(follow="yes")  # type: ignore[arg-type]
    assert GuardConfig(follow=True).streams and not GuardConfig().streams and GuardConfig(streamed=True).streams


def test_the_langgraph_node_follows_the_model_when_its_config_says_so() -> None:
    from typing import TypedDict

    from langgraph.graph import StateGraph

    from stepguard.adapters import guarded_node

    proc = load_procedure(ROOT / "examples" / "invoice.yaml")

    class State(TypedDict, total=False):
        subtotal: str
        rate: str
        invoice: dict

    node = guarded_node(load_model("sim:perfect", procedure=proc), proc, inputs={"subtotal": "subtotal", "rate": "rate"},
                        output_key="invoice", config=GuardConfig.for_procedure(proc, follow=True))
    graph = StateGraph(State)
    graph.add_node("invoice", node)
    graph.set_entry_point("invoice")
    graph.set_finish_point("invoice")
    out = graph.compile().invoke({"subtotal": "100.10", "rate": "0.1"})
    assert out["invoice"]["status"] == "verified" and out["invoice"]["usage"]["model_calls"] == 1  # the default: one a step


def test_bench_run_follow_records_the_setting_and_takes_one_call_a_case_on_sim_perfect(tmp_path: Path) -> None:
    import json
    import shutil

    from typer.testing import CliRunner

    from stepguard.cli import app

    suite = tmp_path / "suite"
    suite.mkdir()
    for name in ("invoice.yaml", "invoice.inputs.yaml"):
        shutil.copy(ROOT / "benchmarks" / "production" / name, suite / name)
    out = CliRunner().invoke(app, ["bench", "run", "--instances", str(suite), "--mode", "guarded", "--model", "sim:perfect",
                                   "--follow", "--out", str(tmp_path / "run"), "--no-progress"])
    assert out.exit_code == 0, out.output
    assert json.loads((tmp_path / "run" / "run.json").read_text())["guard_config"]["follow"] is True
    rows = [json.loads(line) for line in (tmp_path / "run" / "results.jsonl").read_text().splitlines()]
    assert rows and all(r["status"] == "verified" and r["usage"]["model_calls"] == 1 for r in rows)
