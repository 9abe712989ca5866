"""Follow the model (issue 43): one streamed window while the model is right; narrower windows only where
the run measures that its steps deeper in a window deviate more (docs/policies.md, "Follow the model")."""

from __future__ import annotations

import asyncio
import re
import sys
from pathlib import Path

import pytest

from stepguard import Guard, GuardConfig
from stepguard.adapters import load_model
from stepguard.bench._raw import raw_messages
from stepguard.bench.generate import generate_instance
from stepguard.guard._observer import NullObserver
from stepguard.guard._options import GuardOptions
from stepguard.guard._state import GuardState
from stepguard.guard._window import calls_per_deviation, follow_window, tally_window, window_costs
from stepguard.procedure import load_inputs_file, load_procedure, parse_procedure
from tests._fakes import FailsAt, ScriptedModel, StreamingReplies
from tests._paths import ROOT

PRODUCTION = sorted(p for p in (ROOT / "benchmarks" / "production").glob("*.yaml") if ".inputs" not in p.name and ".prompt" not in p.name)
sys.path.insert(0, str(ROOT / "examples"))
from run_example import EXAMPLES  # noqa: E402  (the examples' compute procedures and their inputs)


def _raw_tokens(proc, inputs) -> int:
    """Raw mode's prompt tokens as the simulator counts them (characters / 4)."""
    return sum(len(m["content"]) for m in raw_messages(proc, inputs)) // 4


def _perfect(proc, inputs):
    config = GuardOptions(follow=True).resolve(proc)  # the procedure's defaults, following the model
    return Guard(load_model("sim:perfect", procedure=proc), config).run(proc, inputs)


# ------------------------------------------------------------------------------------------------ the rule
def _tally(deviations_at: list[int], windows: int = 0, width: int = 100) -> list[list[int]]:
    """Windows cut at each position of ``deviations_at``, then ``windows`` clean ones ``width`` wide."""
    tally: list[list[int]] = []
    for at in deviations_at:
        tally = tally_window(tally, 0, at, "arithmetic_error")
    for _ in range(windows):
        tally = tally_window(tally, 0, width, None)
    return tally


def test_the_tally_counts_each_position_of_a_window_first_asked() -> None:
    assert tally_window([], 0, 2, "arithmetic_error") == [[1, 0], [1, 0], [0, 1]]
    assert tally_window([[1, 0], [1, 0], [0, 1]], 0, 3, None) == [[2, 0], [2, 0], [1, 1]]
    assert tally_window([], 1, 3, "under_executed") == [[0, 0], [1, 0], [1, 0], [0, 1]]  # position 0 a re-ask: no first ask
    assert tally_window([], 1, 0, "arithmetic_error") == []  # the re-asked step deviated again: nothing first asked
    for kind in ("budget_exhausted", "truncated", "tool_error"):  # a budget, max_tokens or a tool says nothing of the model
        assert tally_window([], 0, 2, kind) == [[1, 0], [1, 0]]
    with pytest.raises(ValueError, match="negative"):
        tally_window([], -1, 2, None)


def test_the_calls_a_deviation_costs_are_measured_with_one_as_prior() -> None:
    assert calls_per_deviation([], 0) == 1
    assert calls_per_deviation([[3, 0]], 3) == 1  # three windows, no deviation: the prior
    # two windows, one cut at position 2; 5 calls: 2 windows and 3 for the deviation (re-asks, a rung's nested calls)
    assert calls_per_deviation([[2, 0], [2, 0], [1, 1]], 5) == pytest.approx((5 - 2 + 1) / (1 + 1))


@pytest.mark.parametrize(("p", "c"), [(0.9, 1.0), (0.99, 2.0), (0.999, 1.5)])
def test_with_one_error_chance_at_every_position_the_cost_falls_with_the_width(p: float, c: float) -> None:
    costs = window_costs(200, lambda j: 1 - p, c)
    want = [(1 - p) * (1 / (1 - p ** w) + c) for w in range(1, 201)]  # the renewal cost written out
    assert costs == pytest.approx(want)
    assert all(a > b for a, b in zip(costs, costs[1:], strict=False))


def test_with_an_error_chance_that_rises_with_the_position_a_narrower_window_is_cheaper() -> None:
    costs = window_costs(100, lambda j: 0.01 + 0.01 * j, 2.0)
    best = costs.index(min(costs)) + 1
    assert 5 <= best <= 20 and costs[best - 1] < 0.95 * costs[-1]


def test_nothing_measured_or_errors_alike_at_every_position_keep_the_window_whole() -> None:
    assert follow_window([], 100) == 100  # no deviation yet: one window over every step
    assert follow_window(_tally([], windows=3), 100) == 100
    assert follow_window(tally_window([], 0, 2, "arithmetic_error"), 60) == 60  # one early deviation says nothing of width
    # a model wrong one step in ten wherever it stands: deviations spread as a geometric run length is
    spread = [[90, 10]] + [[int(90 * 0.9 ** j), int(10 * 0.9 ** j)] for j in range(1, 30)]
    assert follow_window(spread, 100, reasks=2.0) == 100


def test_deviations_deeper_in_the_window_narrow_it_near_where_they_begin() -> None:
    deep = _tally([12] * 6)  # six windows, each right for 12 steps and wrong at the 13th
    width = follow_window(deep, 100, reasks=2.0)
    assert 1 < width <= 13
    assert follow_window(_tally([12]), 100, reasks=2.0) == 100  # one deviation: no evidence yet
    assert follow_window(_tally([12] * 2), 100, reasks=1.0) == 100 > follow_window(deep, 100, reasks=1.0)  # more, narrower
    assert follow_window(_tally([12] * 6, windows=1), 100, reasks=2.0) == 100  # then a window right to its end: whole again
    assert follow_window(deep, 100, reasks=0.0) == 100  # a deviation that costs no re-ask: no reason to narrow
    assert follow_window(_tally([30] * 6), 100, reasks=2.0) > width  # deeper, wider
    assert follow_window(deep, 8, reasks=2.0) <= 8  # never wider than GuardConfig.window


def test_deviations_at_the_window_start_keep_it_whole() -> None:
    assert follow_window(_tally([0, 0, 0, 1, 0, 0]), 100, reasks=2.0) == 100  # wrong early: narrowing would not help


@pytest.mark.parametrize(("args", "says"), [(([[1, -1]], 5), "negative"), (([], 0), "most >= 1"), (([], 5, -1.0), "reasks >= 0"),
                                            (([], 5, 1.0, 0.0), "prior > 0")])
def test_a_bad_tally_or_setting_is_refused_naming_it(args: tuple, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        follow_window(*args)


# ------------------------------------------------------------------------------------------- scripted runs
CHAIN = parse_procedure("inputs: [x]\nsteps:\n  - {var: s1, expr: x + 1}\n"
                        + "".join(f"  - {{var: s{k}, expr: s{k - 1} + {k % 7 + 1}}}\n" for k in range(2, 61)))


class Tires(FailsAt):
    """A scripted model wrong at the 10th step of any reply that asks 10 or more: its accuracy falls
    with the position in the window. Its ``at``-th call raises (``at = 0``: none does)."""

    def complete(self, messages, settings=None):  # type: ignore[no-untyped-def]
        asked = re.findall(r"^(s\d+) = ", messages[-1]["content"].split("Steps:\n", 1)[1].split("\n\n")[0], re.M)
        if len(asked) >= 10:
            self.faults[asked[9]] = ["wrong"]
        return super().complete(messages, settings)


def _widths(model: ScriptedModel) -> list[int]:
    """The steps each call asked (the lines of its ``Steps:`` block)."""
    return [len(re.findall(r"^s\d+ = ", m[-1]["content"].split("Steps:\n", 1)[1].split("\n\n")[0], re.M)) for m in model.calls]


def _tally_of(saver, thread: str) -> list[list[int]]:
    """The window tally of the thread's last checkpoint."""
    got = saver.get_tuple({"configurable": {"thread_id": thread, "checkpoint_ns": ""}})
    return GuardState.of(got.checkpoint["channel_values"]).progress.window_tally


def test_a_right_model_is_asked_every_step_in_one_window() -> None:
    model = ScriptedModel()
    result = Guard(model, GuardConfig(follow=True, ladder=("narrow",))).run(CHAIN, {"x": 2})
    assert result.status == "verified" and result.usage.model_calls == 1 and _widths(model) == [60]


def test_one_deviation_keeps_the_windows_whole_as_plain_streamed() -> None:
    model = ScriptedModel({"s3": ["wrong", None]})
    result = Guard(model, GuardConfig(follow=True, ladder=("narrow",))).run(CHAIN, {"x": 2})
    assert result.status == "verified" and [s.var for s in result.steps if s.reprompts] == ["s3"]
    assert _widths(model) == [60, 1, 57]  # the whole procedure cut at s3, s3 alone, the rest in one window


def test_deviations_deep_in_the_windows_narrow_them() -> None:
    model = Tires(0)
    result = Guard(model, GuardConfig(follow=True, ladder=("narrow",))).run(CHAIN, {"x": 2})
    assert result.status == "verified"
    plain = Tires(0)
    Guard(plain, GuardConfig(streamed=True, ladder=("narrow",))).run(CHAIN, {"x": 2})
    assert _widths(plain) == [60, 1, 50, 1, 40, 1, 30, 1, 20, 1, 10, 1]  # each window to the end, cut at its 10th step
    widths = _widths(model)
    assert widths[:6] == [60, 1, 50, 1, 40, 1]  # wide while one or two deviations are no evidence
    assert widths[6] == 9  # three windows wrong at their 10th step: the next ends before it
    assert len(widths) < len(_widths(plain))  # and fewer calls than plain streamed


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
    model = StreamingReplies([lines, f"s3 = {right['s3']}", "".join(f"s{k} = {right[f's{k}']}\n" for k in range(4, 9))])
    result = asyncio.run(Guard(model, GuardConfig(follow=True, ladder=("restate",))).arun(proc, {"x": 2}))
    assert result.status == "verified" and result.values == right
    assert model.streams[0]["closed"] is True  # cut at s3: the rest never read
    assert len(model.prompts) == 3  # the window, s3, then s4..s8 in one window


@pytest.mark.slow
def test_a_resumed_run_measures_what_it_measured_before() -> None:
    """The tally is checkpointed: a run that crashed resumes with the windows it had measured, not a whole one."""
    from langgraph.checkpoint.memory import InMemorySaver

    from stepguard.errors import ModelError

    saver, config = InMemorySaver(), GuardConfig(follow=True, ladder=("narrow",))
    whole = Tires(0)
    Guard(whole, config).run(CHAIN, {"x": 2})
    crash_at = next(i for i, w in enumerate(_widths(whole)) if 1 < w < 10) + 1  # the first narrowed window's call
    first = Tires(crash_at)
    with pytest.raises(ModelError):
        Guard(first, config, saver).run(CHAIN, {"x": 2}, thread_id="t")
    assert sum(k for _, k in _tally_of(saver, "t")) >= 2  # the deviations it had measured are in the checkpoint
    again = Tires(0)
    result = Guard(again, config, saver).run(CHAIN, {"x": 2}, thread_id="t")
    assert result.status == "verified"
    assert 1 < _widths(again)[0] == _widths(whole)[crash_at - 1] < 10  # the narrowed window, as the run had measured


class _Windows(NullObserver):
    """Records each first ask's window: ``(start, end)``."""

    def __init__(self) -> None:
        self.windows: list[tuple[int, int]] = []

    def chunk_started(self, chunk: int, start: int, end: int, rung: str | None, attempt: int) -> None:
        if rung is None:
            self.windows.append((start, end))


@pytest.mark.slow
@pytest.mark.parametrize(("spec", "narrows"), [("sim:p=0.9", False), ("sim:p=0.99", False), ("sim:p=0.99,decay=0.02", True)])
def test_on_the_simulator_follow_narrows_only_where_accuracy_falls_with_the_position(spec: str, narrows: bool) -> None:
    inst = generate_instance(95, 3, seed=7)
    proc = inst.to_procedure()
    seen = _Windows()
    result = Guard(load_model(spec, seed=0, procedure=proc), GuardConfig(follow=True), observer=seen).run(proc, inst.inputs)
    assert result.status == "verified"
    n = len(proc.steps)
    assert any(end < n for _, end in seen.windows) is narrows, seen.windows  # a window that stopped short of the last step


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
