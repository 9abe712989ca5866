"""The streamed mode (issue 29): one streamed call for a window of steps, each checked as its line
completes, the stream cut at the first deviation; re-asks as in chunked mode."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from stepguard import Guard, GuardConfig
from stepguard.adapters import load_model
from stepguard.bench.generate import generate_instance
from stepguard.guard import render_raw_prompt
from stepguard.guard._options import GuardOptions
from stepguard.procedure import load_inputs_file, load_procedure, parse_procedure
from tests._fakes import ChunksAsked, FixedReplies, StreamingReplies

PRODUCTION = sorted(p for p in Path("benchmarks/production").glob("*.yaml") if ".inputs" not in p.name and ".prompt" not in p.name)


def _raw_tokens(proc, inputs) -> int:
    return sum(len(m["content"]) for m in render_raw_prompt(proc, proc.bind_inputs(inputs))) // 4


@pytest.mark.parametrize("n", [5, 23, 95])
def test_a_perfect_model_takes_one_call_for_a_generated_instance(n: int) -> None:
    inst = generate_instance(n, 2, seed=3)
    proc = inst.to_procedure()
    result = Guard(load_model("sim:perfect", procedure=proc), GuardConfig(streamed=True)).run(proc, inst.inputs)
    assert result.status == "verified"
    assert result.usage.model_calls == 1
    assert result.usage.input_tokens <= 1.1 * _raw_tokens(proc, inst.inputs)


@pytest.mark.parametrize("path", PRODUCTION, ids=lambda p: p.stem)
def test_a_perfect_model_takes_one_call_for_each_production_procedure(path: Path) -> None:
    proc = load_procedure(path)
    inputs = load_inputs_file(path.with_name(path.stem + ".inputs.yaml"))[0]["inputs"]
    config = GuardOptions(streamed=True).resolve(proc)  # the production settings, streamed
    result = Guard(load_model("sim:perfect", procedure=proc), config).run(proc, inputs)
    assert result.status == "verified", result.deviations
    assert result.usage.model_calls == 1
    assert result.usage.input_tokens <= 1.1 * _raw_tokens(proc, inputs)


PROC = parse_procedure("inputs: [x]\nsteps:\n" + "".join(f"  - {{var: s{k}, expr: s{k - 1} + {k}}}\n" if k > 1 else "  - {var: s1, expr: x + 1}\n" for k in range(1, 9)))
RIGHT = {f"s{k}": 2 + sum(range(1, k + 1)) for k in range(1, 9)}  # x = 2


def _lines(values: dict[str, int], start: int = 1) -> str:
    return "\n".join(f"s{k} = {values[f's{k}']}" for k in range(start, 9)) + "\n"


def test_the_stream_is_cut_at_the_first_wrong_step_and_streams_on_after_the_fix() -> None:
    wrong = {**RIGHT, "s3": 99}
    model = StreamingReplies([_lines(wrong), f"s3 = {RIGHT['s3']}", _lines(RIGHT, 4)])
    result = Guard(model, GuardConfig(streamed=True, ladder=("restate",))).run(PROC, {"x": 2})
    assert result.status == "verified" and result.values == RIGHT
    first = model.streams[0]
    assert first["closed"] is True
    assert first["lines_served"] == 4  # s1, s2, s3 (wrong) and s4, which shows s3 is done: s5.. never read
    assert [e.kind for e in result.deviations] == ["arithmetic_error"]
    assert [s.var for s in result.steps if s.reprompts] == ["s3"]
    assert model.streams[-1]["closed"] is False and len(model.streams) == 2  # the re-ask is asked whole, then one stream on
    assert "s4 = " in model.prompts[2] and "s8 = " in model.prompts[2] and "s3 = 8" in model.prompts[2]


def test_a_step_written_over_several_lines_is_not_cut_after_its_first() -> None:
    text = "s1 = x + 1\ns1 = 2 + 1 = 3\n" + _lines(RIGHT, 2)  # a working line, then the value
    model = StreamingReplies([text])
    result = Guard(model, GuardConfig(streamed=True)).run(PROC, {"x": 2})
    assert result.status == "verified" and model.streams[0]["closed"] is False and result.usage.model_calls == 1


def test_a_model_that_cannot_stream_is_served_its_whole_reply_a_line_at_a_time() -> None:
    wrong = {**RIGHT, "s6": 0}
    model = FixedReplies([_lines(wrong), f"s6 = {RIGHT['s6']}", _lines(RIGHT, 7)])
    result = Guard(model, GuardConfig(streamed=True, ladder=("restate",))).run(PROC, {"x": 2})
    assert result.status == "verified" and result.values == RIGHT and result.usage.model_calls == 3


def test_the_async_run_streams_and_cuts_the_same() -> None:
    wrong = {**RIGHT, "s2": 1}
    model = StreamingReplies([_lines(wrong), f"s2 = {RIGHT['s2']}", _lines(RIGHT, 3)])
    result = asyncio.run(Guard(model, GuardConfig(streamed=True, ladder=("restate",))).arun(PROC, {"x": 2}))
    assert result.status == "verified" and model.streams[0]["closed"] is True and model.streams[0]["lines_served"] == 3


def test_a_window_is_bounded_by_window() -> None:
    full = _lines(RIGHT)
    model = StreamingReplies([full[: full.index("s4")], full[full.index("s4"): full.index("s7")], _lines(RIGHT, 7)])
    result = Guard(model, GuardConfig(streamed=True, window=3)).run(PROC, {"x": 2})
    assert result.status == "verified" and result.usage.model_calls == 3
    assert "s3 = " in model.prompts[0] and "s4 = " not in model.prompts[0]


def test_streamed_is_an_option_every_way_in_reads() -> None:
    assert GuardOptions.parse({"streamed": True, "window": 12}).resolve(PROC).streamed is True
    with pytest.raises(ValueError, match="window must be a whole number"):
        GuardConfig(window=0)
    with pytest.raises(ValueError, match="streamed must be true or false"):
        GuardConfig(streamed="yes")  # type: ignore[arg-type]


P3 = parse_procedure("inputs: [x]\nsteps:\n  - {var: s1, expr: x + 1}\n  - {var: s2, type: integer, check: 'value > 0'}\n"
                     "  - {var: s3, expr: s1 + 5}\n")


class _Deltas(StreamingReplies):
    """Streams each reply in the given pieces, not a line at a time (a server's deltas cut lines anywhere)."""

    def __init__(self, replies: list[list[str]]) -> None:
        super().__init__(["".join(r) for r in replies])
        self.pieces = [list(r) for r in replies]

    def stream(self, messages, settings=None):
        from stepguard.model import ChatResponse, Usage

        pieces = self.pieces.pop(0)
        self.complete(messages, settings)
        log = self.streams

        class S:
            response = None

            def __iter__(self):
                for i, p in enumerate(pieces):
                    log.append(i)
                    yield p
                S.response = ChatResponse("".join(pieces), Usage(10, 10))

            def close(self):
                if S.response is None:
                    S.response = ChatResponse("".join(pieces[: len(log)]), Usage(10, 1), "cut")

        return S()


def test_a_line_still_being_written_at_the_cut_is_never_read_as_a_value() -> None:
    """Breaker's fault: a cut kept the unfinished 's2 = 15' (the model went on to write '150')."""
    model = _Deltas([["s1 = 3\ns3 = 8\ns2 = 15", "0\nsomething\n"], ["s2 = 150\n"], ["s3 = 8\n"]])
    streamed = Guard(model, GuardConfig(streamed=True, window=2, ladder=("restate",))).run(P3, {"x": 2})
    chunked = Guard(FixedReplies(["s1 = 3\ns3 = 8\ns2 = 150\nsomething\n", "s3 = 8\n"]), GuardConfig(chunk_size=2)).run(P3, {"x": 2})
    assert chunked.values["s2"] == 150
    assert streamed.values.get("s2") != 15
    assert all(s.value != 15 for s in streamed.steps if s.provenance == "model_verified")


def test_a_line_of_a_step_beyond_the_window_is_judged_as_chunked_mode_judges_it() -> None:
    reply = "s1 = 3\ns3 = 8\ns2 = 5\ns4 = 12\ns5 = 17\n"
    proc = parse_procedure("inputs: [x]\nsteps:\n" + "".join(
        f"  - {{var: s{k}, expr: s{k - 1} + {k}}}\n" if k > 1 else "  - {var: s1, expr: x + 1}\n" for k in range(1, 6)))
    for mode in ({"chunk_size": 2}, {"streamed": True, "window": 2}):
        model = StreamingReplies([reply, "s3 = 8\ns4 = 12\n", "s5 = 17\n"])
        result = Guard(model, GuardConfig(**mode, policy="raise")).run(proc, {"x": 2})
        assert result.status == "verified", (mode, result.deviations)
        assert [e.kind for e in result.deviations] == [], mode


def test_a_list_value_in_arithmetic_is_a_deviation_not_a_type_error() -> None:
    proc = parse_procedure("inputs: [x]\nsteps:\n  - {var: items, kind: text, format: list}\n  - {var: n, expr: items * 2}\n")
    result = Guard(FixedReplies(['items = ["a"]'] + ["n = 2"] * 5), GuardConfig(on_exhausted="flag")).run(proc, {"x": 1})
    assert result.status != "verified"
    assert any(d.kind == "check_failed" and '["a"]' in d.detail for d in result.deviations), result.deviations


def test_the_adaptive_window_halves_after_a_deviation_and_doubles_after_a_clean_window() -> None:
    from tests._fakes import ScriptedModel

    proc = parse_procedure("inputs: [x]\nsteps:\n" + "".join(
        f"  - {{var: s{k}, expr: s{k - 1} + {k}}}\n" if k > 1 else "  - {var: s1, expr: x + 1}\n" for k in range(1, 31)))

    def windows(adaptive: bool) -> list[tuple[int, int]]:
        seen = ChunksAsked()
        cfg = GuardConfig(streamed=True, window=16, adaptive=adaptive, ladder=("restate",))
        result = Guard(ScriptedModel(faults={"s6": ["wrong"]}), cfg, observer=seen).run(proc, {"x": 2})
        assert result.status == "verified" and result.usage.model_calls == len(seen.asked)
        return [(start, end) for start, end, rung in seen.asked if rung is None]

    assert windows(False) == [(0, 16), (6, 22), (22, 30)]  # fixed: 16 steps a window
    assert windows(True) == [(0, 16), (6, 14), (14, 30)]  # 16, cut at s6: 8, clean: 16
