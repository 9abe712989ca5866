"""The simulated executor answers a guarded call from its :class:`~stepguard.model.PromptPlan` (what the
guard asks, as data), not from the prompt's wording: the same reply as reading the text wherever the
text reads as the plan says (every seeded figure unchanged), and still the right one when a prompt set
words the prompt so that the text cannot be read. The plan never leaves the process: no HTTP body and
no recorded request carries it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from examples.agent_tools import TOOLS
from examples.run_example import AGENT_EXAMPLES, EXAMPLES
from stepguard import Guard, GuardConfig
from stepguard.adapters import RecordingModel, load_model
from stepguard.adapters.models.replay import request_key
from stepguard.adapters.models.sim import SimulatedExecutor
from stepguard.bench.generate import generate_instance
from stepguard.model import ChatMessage, ChatResponse, GenerationSettings, PlannedStep, PromptPlan
from stepguard.procedure import Procedure, load_procedure
from tests._fakes import chain_expected, chain_procedure
from tests._paths import ROOT
from tests._stub_server import StubServer


class _Twin(SimulatedExecutor):
    """``sim:`` answering each planned call twice, from the plan and from the text, and holding both equal."""

    compared = 0
    roles: set[str] = set()

    def for_procedure(self, procedure: Procedure | None) -> _Twin:
        return _Twin(self.preset, self.seed, self.latency_s, procedure)

    def _respond(self, messages: list[ChatMessage], settings: GenerationSettings | None, t0: float) -> ChatResponse:
        got = super()._respond(messages, settings, t0)
        if settings is not None and settings.plan is not None:
            read = super()._respond(messages, dataclasses.replace(settings, plan=None), t0)
            assert got.text == read.text, (settings.plan, messages[-1]["content"])
            _Twin.compared += 1
            _Twin.roles.add(settings.plan.role)
        return got


class _PlanStripped:
    """A model that passes calls on without their plan (as a server would get them)."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.spec, self.provider, self.model_name, self.simulated = inner, inner.spec, inner.provider, inner.model_name, True

    def for_procedure(self, procedure: Procedure | None) -> _PlanStripped:
        return _PlanStripped(self.inner.for_procedure(procedure))

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        out: ChatResponse = self.inner.complete(messages, dataclasses.replace(settings or GenerationSettings(), plan=None))
        return out

    async def acomplete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        return self.complete(messages, settings)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [0, 1])
def test_planned_and_read_replies_are_the_same_on_generated_and_production_runs(seed: int) -> None:
    """Chunked, streamed, inlined and with a caller's context, generated instances and the production
    procedures (rungs nested) on ``sim:paper``: each planned call's reply is the text-read one."""
    _Twin.compared, _Twin.roles = 0, set()
    model = _Twin("paper", seed=seed)
    context: list[ChatMessage] = [{"role": "user", "content": "Please compute this for me."}]
    for streamed, inline in ((False, False), (True, False), (False, True)):
        guard = Guard(model, GuardConfig(on_exhausted="flag", streamed=streamed, inline_known=inline))
        for n, lookback, index in ((5, 2, 0), (23, 2, 0), (23, 7, 1), (47, 3, 0)):
            inst = generate_instance(n, lookback, index=index)
            guard.run(inst.to_procedure(), inst.inputs, thread_id=f"{inst.id}-{streamed}-{inline}", context=context)
    from stepguard.bench.suites import load_suite

    seen: set[str] = set()
    for case in load_suite(ROOT / "benchmarks" / "production"):
        if case.procedure_name in seen:
            continue
        seen.add(case.procedure_name)
        for follow in (False, True):  # one step a call, and windows following the model
            Guard(model, GuardConfig.for_procedure(case.procedure, on_exhausted="flag", follow=follow)).run(case.procedure, case.inputs)
    assert _Twin.compared > 100 and {"chunk", "window", "nested"} <= _Twin.roles, _Twin.roles


@pytest.mark.slow
def test_planned_and_read_replies_are_the_same_on_every_example() -> None:
    """The examples' step kinds (tool, extract, text, instruction, decimal) answered from the plan as from the text."""
    _Twin.compared = 0
    for name, inputs in {**EXAMPLES, **AGENT_EXAMPLES}.items():
        procedure = load_procedure(ROOT / "examples" / f"{name}.yaml")
        result = Guard(_Twin("perfect"), GuardConfig.for_procedure(procedure, on_exhausted="flag"), tools=TOOLS).run(procedure, inputs)
        assert result.status == "verified", name
    assert _Twin.compared >= 10


def _reworded(folder: Path) -> Path:
    """A prompt set whose chunk and correction templates name the blocks otherwise (``Given:``, ``To do:``)."""
    folder.mkdir()
    for name in ("chunk.txt", "correction.txt"):
        text = (ROOT / "stepguard" / "guard" / "prompts" / name).read_text(encoding="utf-8")
        (folder / name).write_text(text.replace("Known values:", "Given:").replace("Steps:", "To do:"), encoding="utf-8")
    return folder


def test_a_reworded_prompt_set_is_answered_from_the_plan(tmp_path: Path) -> None:
    """Templates whose blocks the text reader cannot find: with the plan every step verifies at one
    call; the same calls without it get non-answers (the text is what the plan replaced)."""
    proc = chain_procedure(12)
    config = GuardConfig(prompt_dir=_reworded(tmp_path / "prompts"), on_exhausted="flag", max_reprompts_per_step=1)
    result = Guard(load_model("sim:perfect"), config).run(proc, {"x": 7, "y": 3})
    assert result.status == "verified" and result.values == chain_expected(proc)
    assert result.usage.model_calls == Guard(load_model("sim:perfect"), GuardConfig()).run(proc, {"x": 7, "y": 3}).usage.model_calls
    stripped = Guard(_PlanStripped(load_model("sim:perfect")), config).run(proc, {"x": 7, "y": 3})
    assert stripped.status != "verified"


def test_a_reworded_prompt_set_is_answered_from_the_plan_for_kinds_asked_alone(tmp_path: Path) -> None:
    """An extract, a text and a tool step asked under the reworded templates: answered from the plan's step and values."""
    config_dir = _reworded(tmp_path / "prompts")
    for name in ("receipt", "summary_count", "refund"):
        procedure = load_procedure(ROOT / "examples" / f"{name}.yaml")
        config = GuardConfig.for_procedure(procedure, prompt_dir=config_dir, on_exhausted="flag")
        result = Guard(load_model("sim:perfect"), config, tools=TOOLS).run(procedure, AGENT_EXAMPLES[name])
        assert result.status == "verified", name


def test_the_guard_plans_each_call_from_its_data() -> None:
    """A chunk's plan: its steps in order with their expressions as shown, the known values it reads as
    written, the answer step marked, no final answer asked; a stream's ``window``, a re-ask's ``reask``."""
    seen: list[GenerationSettings] = []

    class Spy(SimulatedExecutor):
        def for_procedure(self, procedure: Procedure | None) -> Spy:
            return self

        def _respond(self, messages: list[ChatMessage], settings: GenerationSettings | None, t0: float) -> ChatResponse:
            assert settings is not None
            seen.append(settings)
            return super()._respond(messages, settings, t0)

    proc = chain_procedure(6)
    Guard(Spy("perfect"), GuardConfig(chunk_size=3, on_exhausted="flag")).run(proc, {"x": 7, "y": 3})
    first, second = (s.plan for s in seen)
    assert first is not None and second is not None
    assert first.role == "chunk" and [s.var for s in first.steps] == ["S1", "S2", "S3"]
    assert [s.expression for s in first.steps] == ["x", "y", "S2 + S1"] and first.known == {"x": "7", "y": "3"}
    assert second.known == {"S1": "7", "S2": "3", "S3": "10"} and [s.answer for s in second.steps] == [False, False, True]
    assert not first.final_answer and all(s.kind == "compute" for s in first.steps + second.steps)
    seen.clear()
    Guard(Spy("perfect"), GuardConfig(streamed=True)).run(proc, {"x": 7, "y": 3})
    assert seen[0].plan is not None and seen[0].plan.role == "window"

    class WrongFirst(Spy):
        def _respond(self, messages: list[ChatMessage], settings: GenerationSettings | None, t0: float) -> ChatResponse:
            reply = super()._respond(messages, settings, t0)
            return dataclasses.replace(reply, text="S1 = 999") if len(seen) == 1 else reply

    seen.clear()
    result = Guard(WrongFirst("perfect"), GuardConfig(chunk_size=3, ladder=("narrow",))).run(proc, {"x": 7, "y": 3})
    assert result.status == "verified" and seen[1].plan is not None
    assert seen[1].plan.role == "reask" and seen[1].plan.steps[0].var == "S1"


def test_a_plan_round_trips_as_json_and_refuses_an_unknown_role() -> None:
    plan = PromptPlan("chunk", (PlannedStep("t", expression="a * 2", scale=2, answer=True),), {"a": "1.5"}, {"doc": "Hi."})
    assert PromptPlan.from_json(json.loads(json.dumps(plan.as_json()))) == plan
    with pytest.raises(ValueError, match="role must be one of"):
        PromptPlan("prompt", ())
    with pytest.raises(ValueError, match="not a prompt plan"):
        PromptPlan.from_json({"role": "chunk"})


@pytest.mark.slow
@pytest.mark.parametrize("streamed", [False, True])
def test_the_plan_is_never_sent_to_an_http_endpoint(tmp_path: Path, streamed: bool) -> None:
    """A guarded run over a local OpenAI-compatible server: each body holds only what a request sends
    (no plan), and a recorded request's settings and key are the ones without a plan."""
    proc = chain_procedure(8)
    with StubServer() as stub:
        model = RecordingModel(load_model(f"{stub.base_url}#sim"), tmp_path / "cassette.jsonl")
        result = Guard(model, GuardConfig(streamed=streamed)).run(proc, {"x": 7, "y": 3})
        bodies = list(stub.requests)
    assert result.status == "verified" and bodies
    for body in bodies:
        assert "plan" not in json.dumps(body) and set(body) <= {"model", "messages", "temperature", "seed", "max_tokens", "stream",
                                                               "stream_options", "max_completion_tokens"}
    for line in (tmp_path / "cassette.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        assert "plan" not in row["request"]["settings"]
        settings = GenerationSettings(**{k: tuple(v) if k == "tools" else v for k, v in row["request"]["settings"].items()})
        assert row["key"] == request_key(row["request"]["model"], row["request"]["messages"], settings)


def test_a_request_key_is_the_same_with_and_without_a_plan() -> None:
    messages: list[ChatMessage] = [{"role": "user", "content": "Steps:\nS1 = 1"}]
    plan = PromptPlan("chunk", (PlannedStep("S1", expression="1"),))
    bare = GenerationSettings(temperature=0.0, seed=3, max_tokens=40)
    assert request_key("m", messages, dataclasses.replace(bare, plan=plan)) == request_key("m", messages, bare)
    assert dataclasses.replace(bare, plan=plan).sent() == bare.sent() and "plan" not in bare.sent()
