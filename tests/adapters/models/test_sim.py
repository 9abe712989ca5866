"""The seeded simulated executor ``sim:<preset>`` (stepguard.adapters.models.sim)."""

from __future__ import annotations

import asyncio
import hashlib
import random
import re
from string import Template

import pytest

from stepguard.adapters.models.sim import DEFAULT_PRESET, PRESETS, SimPreset, SimulatedExecutor
from stepguard.errors import ModelSpecError
from stepguard.evaluator import compile_expression, format_number, parse_number
from stepguard.model import ChatModel, GenerationSettings
from tests._paths import ROOT

PROMPTS = ROOT / "stepguard" / "guard" / "prompts"
RAW = Template((PROMPTS / "raw.txt").read_text())
CHUNK = Template((PROMPTS / "chunk.txt").read_text())
CORRECTION = Template((PROMPTS / "correction.txt").read_text())
EXAMPLE = "S11 = S10 - S4 = -159 - (-12) = -147"
ANSWER = re.compile(r"Final answer: (\S+)")


def instance(n: int, lookback: int, index: int, seed: int = 0) -> tuple[dict[str, int], list[tuple[str, str]], dict[str, int]]:
    """A benchmark-shaped procedure (benchmark.md's rules, values bounded by 1000): inputs, steps, values."""
    rng = random.Random(int.from_bytes(hashlib.sha256(f"{seed}|{n}|{lookback}|{index}".encode()).digest()[:8], "big"))
    inputs = {"x": rng.randint(2, 20), "y": rng.randint(2, 20)}
    vals = {"S1": inputs["x"], "S2": inputs["y"]}
    steps = [("S1", "x"), ("S2", "y")]
    for k in range(3, n + 1):
        while True:
            pair = [f"S{k - 1}", str(rng.randint(1, 9)) if lookback == 1 else f"S{max(1, k - lookback)}"]
            rng.shuffle(pair)
            op = rng.choice("+-*")
            a, b = (vals[p] if p in vals else int(p) for p in pair)
            value = a + b if op == "+" else a - b if op == "-" else a * b
            if abs(value) < 1000 and (op != "*" or min(abs(a), abs(b)) <= 12):
                break
        expr = f"{pair[0]} {op} {pair[1]}"
        assert compile_expression(expr).evaluate(vals) == value
        steps.append((f"S{k}", expr))
        vals[f"S{k}"] = value
    return inputs, steps, vals


def raw_prompt(inputs: dict[str, int], steps: list[tuple[str, str]]) -> list[dict[str, str]]:
    """Messages for raw mode, from raw.txt."""
    text = RAW.substitute(
        inputs="\n".join(f"{k} = {v}" for k, v in inputs.items()),
        steps="\n".join(f"{v} = {e}" for v, e in steps),
        last=steps[-1][0],
    )
    return [{"role": "system", "content": "You are a careful calculator."}, {"role": "user", "content": text}]


def chunk_prompt(known: dict[str, object], steps: list[tuple[str, str]], note: str | None = None) -> list[dict[str, str]]:
    """Messages for the guard's chunk mode, from chunk.txt (or correction.txt with ``note``)."""
    fields = {
        "known": "\n".join(f"{k} = {format_number(v)}" for k, v in known.items()),
        "steps": "\n".join(f"{v} = {e}" for v, e in steps),
        "example": EXAMPLE,
        "count_line": f"Write {len(steps)} lines, one for each step from {steps[0][0]} to {steps[-1][0]}, in order, each as",
    }
    text = CORRECTION.substitute(note=note, **fields) if note else CHUNK.substitute(**fields)
    return [{"role": "user", "content": text}]


def step_values(text: str) -> dict[str, object]:
    """Variable -> last number on its (first) line."""
    out: dict[str, object] = {}
    for m in re.finditer(r"^(S\d+) = .*?(\S+)$", text, re.MULTILINE):
        out.setdefault(m.group(1), parse_number(m.group(2)))
    return out


def test_perfect_raw_is_exact() -> None:
    model = SimulatedExecutor("perfect")
    for lookback in (1, 3, 7):
        inputs, steps, vals = instance(30, lookback, 0)
        reply = model.complete(raw_prompt(inputs, steps))
        lines = reply.text.splitlines()
        assert lines[:-1] == [f"{v} = {vals[v]}" for v, _ in steps]
        assert lines[-1] == f"Final answer: {vals['S30']}"


def test_perfect_chunk_writes_substitution_lines() -> None:
    known = {"S10": -159, "S4": -12, "S7": parse_number("2.5")}
    steps = [("S11", "S10 - S4"), ("S12", "S11 + S7"), ("S13", "S12 * 2"), ("S14", "S4"), ("S15", "3 - S13")]
    text = SimulatedExecutor("perfect").complete(chunk_prompt(known, steps)).text
    assert text.splitlines() == [
        "S11 = S10 - S4 = -159 - (-12) = -147",
        "S12 = S11 + S7 = -147 + 2.5 = -144.5",
        "S13 = S12 * 2 = -144.5 * 2 = -289",
        "S14 = S4 = -12",
        "S15 = 3 - S13 = 3 - (-289) = 292",
    ]
    assert "Final answer" not in text
    noted = chunk_prompt(known, steps, note="S12 was wrong: it is S11 + S7. Final answer: give it last.")
    assert SimulatedExecutor("perfect").complete(noted).text.endswith("S15 = 3 - S13 = 3 - (-289) = 292\nFinal answer: 292")


@pytest.mark.parametrize(
    "content",
    ["", "hello", "Steps:\n\n", "Inputs:\nx = 1\n\nProcedure:\nS1 = x +\nS2 = zz * 2\nS3 = __import__('os')\n",
     "Known values:\nS1 = 1/3\nS2 = banana\n\nSteps:\nS3 = S1 * 3\nS4 = S2 + 1\nS5 = S3 ** 2000000\n",
     "Procedure:\n" + "\n".join(f"S{i} = S{i - 1} * 99" for i in range(2, 400)) + "\nS1 = 7\n", "\u00e9\x00" * 5000],
)
def test_odd_prompts_never_raise(content: str) -> None:
    for preset in ("perfect", "paper"):
        reply = SimulatedExecutor(preset).complete([{"role": "user", "content": content}])
        assert isinstance(reply.text, str) and reply.finish_reason == "stop" and reply.simulated
    assert SimulatedExecutor().complete([]).text  # no user message: a plausible non-answer
    assert "Final answer" not in SimulatedExecutor().complete([{"role": "user", "content": "hi"}]).text


def test_odd_prompt_values_are_read_exactly() -> None:
    text = SimulatedExecutor("perfect").complete(
        [{"role": "user", "content": "Known values:\nS1 = 1/3\nS2 = -0.25\n\nSteps:\nS3 = S1 * 3\nS4 = S2 - S3\nS5 = nope + 1\n"}]
    ).text
    assert text.splitlines() == ["S3 = S1 * 3 = 1/3 * 3 = 1", "S4 = S2 - S3 = -0.25 - 1 = -1.25"]


def test_paper_is_deterministic_and_seeded() -> None:
    prompts = [raw_prompt(*instance(95, 5, i)[:2]) for i in range(4)]
    a, b, c = SimulatedExecutor("paper", seed=1), SimulatedExecutor("paper", seed=1), SimulatedExecutor("paper", seed=2)
    assert [a.complete(p).text for p in prompts] == [b.complete(p).text for p in prompts]
    assert [a.complete(p).text for p in prompts] != [c.complete(p).text for p in prompts]
    hot = GenerationSettings(temperature=0.7)
    assert [a.complete(p, hot).text for p in prompts] != [a.complete(p).text for p in prompts]
    assert [a.complete(p, GenerationSettings(seed=5)).text for p in prompts] != [a.complete(p).text for p in prompts]
    user_only = [m for m in prompts[0] if m["role"] == "user"]  # the system message is not read
    assert SimulatedExecutor("perfect").complete(user_only).text == SimulatedExecutor("perfect").complete(prompts[0]).text


def test_wrong_value_rate_matches_preset() -> None:
    model = SimulatedExecutor(SimPreset(arithmetic_base=0.2), seed=3)
    wrong = 0
    for i in range(1500):
        reply = model.complete(chunk_prompt({"S1": i, "S2": 7}, [("S3", "S1 + S2")]))
        value = step_values(reply.text)["S3"]
        wrong += value != i + 7
        assert reply.text.startswith(f"S3 = S1 + S2 = {i} + 7 = ")  # substituted operands stay right
    assert abs(wrong / 1500 - 0.2) < 0.04


def test_lookback_confusion_reads_a_nearer_variable() -> None:
    model = SimulatedExecutor(SimPreset(lookback_base=0.05), seed=4)
    wrong = 0
    for i in range(1000):
        inputs = {"x": 1000 + i, "y": 3}
        steps = [("S1", "x"), ("S2", "y")] + [(f"S{k}", f"S{k - 1} + 1") for k in range(3, 8)] + [("S8", "S7 + S1")]
        vals = step_values(model.complete(raw_prompt(inputs, steps)).text)
        if vals["S8"] != 8 + 1000 + i:
            wrong += 1
            assert vals["S8"] - 8 in {vals[f"S{j}"] for j in range(2, 8)}  # S1 replaced by S2..S7
    assert abs(wrong / 1000 - 6 * 0.05) < 0.05  # distance 7: (7 - 1) * rate


@pytest.mark.slow
@pytest.mark.parametrize("field,rate", [("missing_answer", 0.3), ("skip_rate", 0.1), ("premature_answer", 0.25)])
def test_fault_rates_roughly(field: str, rate: float) -> None:
    model = SimulatedExecutor(SimPreset(**{field: rate}), seed=5)
    hits = total = 0
    for i in range(600):
        inputs, steps, vals = instance(10, 2, i, seed=9)
        text = model.complete(raw_prompt(inputs, steps)).text
        answers = ANSWER.findall(text)
        if field == "missing_answer":
            hits, total = hits + (not answers), total + 1
        elif field == "skip_rate":
            hits, total = hits + 10 - len(step_values(text)), total + 10
        else:
            hits, total = hits + (len(answers) == 2), total + 1
        assert answers[-1:] in ([], [str(vals["S10"])])  # no other fault: any last answer is right
    assert abs(hits / total - rate) < 0.06


def test_failure_mode_shapes() -> None:
    inputs, steps, vals = instance(12, 3, 0)
    prompt = raw_prompt(inputs, steps)
    right = str(vals["S12"])
    text = SimulatedExecutor(SimPreset(self_correction=1.0)).complete(prompt).text
    first, last = ANSWER.findall(text)
    assert first != right and last == right and "Wait" in text
    text = SimulatedExecutor(SimPreset(extra_steps=1.0)).complete(prompt).text
    assert "S13 = " in text and ANSWER.findall(text) == [str(step_values(text)[max(step_values(text), key=lambda v: int(v[1:]))])]
    text = SimulatedExecutor(SimPreset(premature_answer=1.0)).complete(prompt).text
    assert text.index("Final answer") < text.index("S12 = ") and ANSWER.findall(text)[-1] == right
    text = SimulatedExecutor(SimPreset(stop_growth=0.5)).complete(prompt).text
    assert "S12 = " not in text and len(ANSWER.findall(text)) == 1  # stopped early, answered anyway


def first_answer_accuracy(n: int, model: SimulatedExecutor, count: int = 60) -> float:
    hits = 0
    for i in range(count):
        for lookback in (1, 3, 7):
            inputs, steps, vals = instance(n, lookback, i, seed=21)
            answers = ANSWER.findall(model.complete(raw_prompt(inputs, steps)).text)
            hits += bool(answers) and answers[0] == str(vals[f"S{n}"])
    return hits / (3 * count)


@pytest.mark.slow
def test_paper_raw_accuracy_falls_with_length() -> None:
    model = SimulatedExecutor("paper", seed=6)
    short, long = first_answer_accuracy(5, model), first_answer_accuracy(95, model)
    assert 0.45 < short < 0.78 and 0.08 < long < 0.35 and short - long > 0.25


@pytest.mark.slow
def test_paper_chunk_errors_are_low_and_fixed_by_reprompting() -> None:
    model = SimulatedExecutor("paper", seed=7)
    bad_steps = total = fixed = failed = 0
    for i in range(150):
        _, steps, vals = instance(60, 7, i, seed=8)
        for start in (20, 45):  # 5-step chunks; far operands restated as known values
            chunk = steps[start : start + 5]
            known = {f"S{k}": vals[f"S{k}"] for k in range(start - 6, start + 1)}
            reply = model.complete(chunk_prompt(known, chunk)).text
            got = step_values(reply)
            bad = sum(got.get(v) != vals[v] for v, _ in chunk)
            bad_steps, total = bad_steps + bad, total + len(chunk)
            if bad:
                failed += 1
                note = "Your previous answer had a wrong or missing step. Recompute every step."
                again = step_values(model.complete(chunk_prompt(known, chunk, note)).text)
                fixed += all(again.get(v) == vals[v] for v, _ in chunk)
    assert bad_steps / total < 0.04
    assert failed and fixed / failed > 0.75


def test_response_metadata_usage_and_limits() -> None:
    model = SimulatedExecutor(seed=0)
    assert isinstance(model, ChatModel) and DEFAULT_PRESET in PRESETS
    assert (model.spec, model.model_name, model.provider, model.simulated) == ("sim:paper", "sim:paper", "stepguard.sim", True)
    prompt = raw_prompt(*instance(20, 2, 0)[:2])
    reply = model.complete(prompt)
    assert reply.simulated and reply.model == "sim:paper" and reply.finish_reason == "stop"
    assert reply.usage.input_tokens == sum(len(m["content"]) for m in prompt) // 4
    assert reply.usage.output_tokens == len(reply.text) // 4
    assert asyncio.run(model.acomplete(prompt)).text == reply.text
    cut = model.complete(prompt, GenerationSettings(max_tokens=5))
    assert (cut.finish_reason, cut.usage.output_tokens, cut.text) == ("length", 5, reply.text[:20])
    slow = SimulatedExecutor("perfect", latency_s=0.02)
    assert slow.complete(prompt).latency_s >= 0.02 and asyncio.run(slow.acomplete(prompt)).latency_s >= 0.02
    with pytest.raises(ModelSpecError, match="perfect"):
        SimulatedExecutor("nonsense")
    assert SimulatedExecutor("").spec == f"sim:{DEFAULT_PRESET}" and SimulatedExecutor("mild").spec == "sim:mild"


def test_a_per_step_accuracy_is_a_spec() -> None:
    """``sim:p=<accuracy>`` (issue 43's cost curve): each computed step right with probability p, nothing else wrong."""
    from stepguard.adapters import load_model

    model = load_model("sim:p=0.8", seed=3)
    assert model.model_name == "sim:p=0.8" and model.preset == SimPreset.at_accuracy(0.8)
    right = total = 0
    for i in range(300):
        reply = model.complete(raw_prompt({"x": i, "y": 7}, [("S1", "x"), ("S2", "y"), ("S3", "S1 + S2"), ("S4", "S3 * 2")]))
        values = step_values(reply.text)
        assert set(values) == {"S1", "S2", "S3", "S4"} and ANSWER.search(reply.text)  # no other fault
        right += (values["S3"] == i + 7) + (values["S4"] == 2 * values["S3"])
        total += 2
    assert abs(right / total - 0.8) < 0.05
    perfect = load_model("sim:p=1")
    prompt = raw_prompt({"x": 4, "y": 7}, [("S1", "x"), ("S2", "y"), ("S3", "S1 + S2")])
    assert perfect.complete(prompt).text == SimulatedExecutor("perfect").complete(prompt).text


def test_an_accuracy_that_falls_with_the_position_in_the_reply_is_a_spec() -> None:
    """``sim:p=<accuracy>,decay=<per step line>`` (issue 43): the step at 0-based line ``j`` of a reply is
    right with probability ``p - decay * j``, so the same step errs more deep in a long reply."""
    from stepguard.adapters import load_model

    model = load_model("sim:p=0.99,decay=0.02", seed=3)
    assert model.model_name == "sim:p=0.99,decay=0.02" and model.preset == SimPreset.at_accuracy(0.99, 0.02)
    steps = [("S1", "x")] + [(f"S{k}", f"S{k - 1} + {k}") for k in range(2, 31)]
    wrong = [0] * 30
    for i in range(200):
        values = step_values(model.complete(raw_prompt({"x": i}, steps)).text)
        for k in range(2, 31):  # each step against the value the reply wrote before it
            wrong[k - 1] += values[f"S{k}"] != values[f"S{k - 1}"] + k
    near, deep = sum(wrong[1:6]) / (5 * 200), sum(wrong[25:30]) / (5 * 200)
    assert near < 0.1 and 0.4 < deep < 0.6  # 0.01 + 0.02 * j: about 0.07 at lines 1-5, 0.5 (the cap) at lines 25-29


def test_no_decay_is_the_accuracy_spec_as_it_was() -> None:
    prompt = raw_prompt({"x": 4, "y": 7}, [("S1", "x"), ("S2", "y"), ("S3", "S1 + S2"), ("S4", "S3 * 2")])
    assert SimulatedExecutor("p=0.9,decay=0").preset == SimulatedExecutor("p=0.9").preset == SimPreset.at_accuracy(0.9)
    assert SimulatedExecutor("p=0.9").spec == "sim:p=0.9"
    for seed in range(20):
        assert SimulatedExecutor("p=0.9,decay=0", seed).complete(prompt).text == SimulatedExecutor("p=0.9", seed).complete(prompt).text


@pytest.mark.parametrize(("spec", "says"), [("sim:p=0.9,decay=-0.1", "decay must be a number from 0 to 0.5"),
                                            ("sim:p=0.9,decay=0.6", "decay must be a number from 0 to 0.5"),
                                            ("sim:p=0.9,decay=fast", "decay must be a number from 0 to 0.5"),
                                            ("sim:p=0.9,delay=0.1", "p=<accuracy>,decay=<per step line>"),
                                            ("sim:p=0.9,decay=", "p=<accuracy>,decay=<per step line>"),
                                            ("sim:p=high,decay=0.1", "per-step accuracy p must be a number")])
def test_a_bad_decay_is_refused_naming_it(spec: str, says: str) -> None:
    from stepguard.adapters import load_model

    with pytest.raises(ModelSpecError, match=re.escape(says)):
        load_model(spec)


@pytest.mark.parametrize("spec", ["sim:p=0.4", "sim:p=1.5", "sim:p=nan", "sim:p=high", "sim:p="])
def test_a_per_step_accuracy_out_of_range_is_refused_naming_it(spec: str) -> None:
    from stepguard.adapters import load_model

    with pytest.raises(ModelSpecError, match="per-step accuracy p must be a number from 0.5 to 1"):
        load_model(spec)
