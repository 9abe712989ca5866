"""Adding a step kind is one class and its registration: nothing else in stepguard changes.

The kind below (``upper``: the value is a string input written in capitals) is defined here only;
the loader validates its steps with its own model, ``stepguard check`` describes them, and a
guarded run on ``sim:perfect`` verifies them, with the controller calling the kind throughout.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Literal

import pytest
from typer.testing import CliRunner

from stepguard import Guard
from stepguard.adapters import load_model
from stepguard.adapters.models.sim_kinds import register_sim_answer, unregister_sim_answer
from stepguard.errors import BudgetExhausted, ProcedureError
from stepguard.kinds import Kind, KindVerdict, StepContext, register_kind, unregister_kind
from stepguard.kinds._reading import step_line
from stepguard.procedure import Procedure, Step, parse_procedure
from stepguard.verify import Deviation

FILE = """
name: greeting
inputs: {who: string}
steps:
  - var: shout
    kind: upper
    source: who
  - var: n
    expr: len(shout)
"""


class Upper(Kind):
    """The value is the text of ``source`` in capitals."""

    name = "upper"

    class step_model(Step):  # noqa: N801 - the kind's step model, named as the protocol names it
        kind: Literal["upper"]
        source: str
        type: Literal["string"] = "string"

        def text_inputs(self) -> tuple[str, ...]:
            return (self.source,)

    def notes(self, ctx: StepContext) -> list[str]:
        return [f"{ctx.step.source} in capital letters"]  # type: ignore[attr-defined]

    def check(self, ctx: StepContext, env: Mapping[str, Any], reply: str, tool_calls: Sequence[Any] = ()) -> KindVerdict:
        step = ctx.step
        out, raw = step_line(reply, step.var)
        if raw is None:
            return out
        want = str(env[step.source]).upper()  # type: ignore[attr-defined]
        if raw.strip() != want:
            out.deviation = Deviation(kind="check_failed", step=step.var, detail=f"{step.var} is not {step.source} in capitals", got=raw)  # type: ignore[attr-defined]
            return out
        out.value = raw.strip()
        return out

    def grade(self, ctx: StepContext) -> str:
        return "exact"  # its check computes the one right value (the default, bounded, would say it proves none)

    def describe(self, ctx: StepContext) -> list[str]:
        return [f"upper: the value must be input {ctx.step.source} in capital letters"]  # type: ignore[attr-defined]



def upper_reply(step: Step, env: Mapping[str, Any], procedure: Procedure | None) -> str | None:
    """What a model that follows an ``upper`` step writes: for the simulator (sim:perfect), not the kind."""
    return f"{step.var} = {str(env[step.source]).upper()}"  # type: ignore[attr-defined]


@pytest.fixture
def upper() -> Iterator[type[Kind]]:
    register_kind(Upper)
    register_sim_answer("upper", upper_reply)
    try:
        yield Upper
    finally:
        unregister_sim_answer("upper")
        unregister_kind("upper")


def test_a_registered_kind_is_validated_by_its_own_model(upper: type[Kind]) -> None:
    proc = parse_procedure(FILE)
    assert type(proc.steps[0]) is Upper.step_model
    assert proc.reads(0) == ("who",)
    with pytest.raises(ProcedureError, match=r"steps\[0\]\.source \(shout\): required field 'source' is missing"):
        parse_procedure(FILE.replace("    source: who\n", "", 1))
    with pytest.raises(ProcedureError, match=r"expr applies only to kind compute|has no expr"):
        parse_procedure(FILE.replace("    source: who\n", "    source: who\n    expr: who\n", 1))


def test_unregistered_the_kind_is_refused_by_name() -> None:
    with pytest.raises(ProcedureError, match=r"steps\[0\]\.kind \(shout\): 'upper' is not a step kind \(kinds: compute, extract, text, tool\)"):
        parse_procedure(FILE)


def test_check_describes_the_new_kinds_steps(upper: type[Kind], tmp_path: Any) -> None:
    from stepguard.cli import app

    path = tmp_path / "greeting.yaml"
    path.write_text(FILE, encoding="utf-8")
    out = CliRunner().invoke(app, ["check", str(path)])
    assert out.exit_code == 0, out.output
    assert "upper: the value must be input who in capital letters" in out.output


def test_it_runs_guarded_on_sim_perfect_and_its_value_keeps_flowing(upper: type[Kind]) -> None:
    proc = parse_procedure(FILE)
    result = Guard(load_model("sim:perfect", procedure=proc)).run(proc, {"who": "Ada Lovelace"})
    assert result.status == "verified", result.deviations
    assert [(s.var, s.value, s.provenance) for s in result.steps] == [("shout", "ADA LOVELACE", "model_verified"), ("n", 12, "model_verified")]
    assert result.grades == {"shout": "exact", "n": "exact"}  # the kind's own grade


def test_a_kind_that_names_no_grade_is_bounded(upper: type[Kind], monkeypatch: pytest.MonkeyPatch) -> None:
    """A kind's check proves one value only where the kind says so: by default its values are bounded."""
    monkeypatch.delattr(Upper, "grade")
    proc = parse_procedure(FILE)
    result = Guard(load_model("sim:perfect", procedure=proc)).run(proc, {"who": "Ada Lovelace"})
    assert result.grades == {"shout": "bounded", "n": "exact"} and result.status == "bounded"


def test_a_wrong_reply_is_re_asked_with_the_kinds_note(upper: type[Kind]) -> None:
    from stepguard.model import ChatResponse, Usage

    replies = iter(["shout = Ada", "shout = ADA", "n = 3"])
    prompts: list[str] = []

    class Replies:
        spec = "replies"

        def complete(self, messages: Any, settings: Any = None) -> ChatResponse:
            prompts.append(messages[-1]["content"])
            return ChatResponse(next(replies), Usage(1, 1))

        async def acomplete(self, messages: Any, settings: Any = None) -> ChatResponse:
            return self.complete(messages, settings)

    proc = parse_procedure(FILE)
    result = Guard(Replies()).run(proc, {"who": "Ada"})  # type: ignore[arg-type]
    assert result.status == "verified", result.deviations
    assert [e.kind for e in result.deviations] == ["check_failed"]
    assert "shout = ?    (who in capital letters)" in prompts[0]
    assert "Your reply `Ada` was not accepted: shout is not who in capitals" in prompts[1]


def test_a_kind_whose_model_defaults_its_own_kind_survives_save_and_load(tmp_path: Any) -> None:
    from stepguard.procedure import load_procedure, save_procedure

    class Note(Kind):
        name = "note"

        class step_model(Step):  # noqa: N801
            kind: Literal["note"] = "note"
            type: Literal["string"] = "string"

    register_kind(Note)
    try:
        proc = parse_procedure("inputs: {}\nsteps:\n  - {var: n, kind: note}\n")
        for suffix in ("yaml", "json"):
            path = tmp_path / f"p.{suffix}"
            save_procedure(proc, path)
            assert load_procedure(path).steps[0].kind == "note"
    finally:
        unregister_kind("note")


def test_registration_refuses_another_class_of_a_taken_name_and_a_model_of_another_kind() -> None:
    class Compute(Kind):  # a user's class that shares the built-in's class name
        name = "compute"

        class step_model(Step):  # noqa: N801
            kind: Literal["compute"] = "compute"

    with pytest.raises(ProcedureError, match="already registered by stepguard.kinds.compute.Compute"):
        register_kind(Compute)

    class Lower(Kind):
        name = "upper"

        class step_model(Step):  # noqa: N801
            kind: Literal["lower"]

    with pytest.raises(ProcedureError, match=r"kind must be Literal\['upper'\]"):
        register_kind(Lower)
    assert parse_procedure("inputs: [x]\nsteps:\n  - {var: a, expr: x + 1}\n").steps[0].kind == "compute"  # nothing replaced


def test_the_schema_states_what_the_loader_refuses_where_a_schema_can() -> None:
    import jsonschema

    from stepguard.procedure import procedure_json_schema

    validator = jsonschema.Draft202012Validator(procedure_json_schema())
    assert not validator.is_valid({"steps": []})
    assert not validator.is_valid({"steps": [{"var": "1a", "expr": "1"}]})
    assert validator.is_valid({"steps": [{"var": "a1", "expr": "1"}]})


SAY = """
name: say
inputs: {n: integer}
steps:
  - {var: word, kind: say, instruction: "Say yes or no", check: "value in ('yes', 'no')"}
  - {var: m, expr: n + 1}
"""


class Say(Kind):
    """The fewest methods a kind needs: none. Its steps are asked alone, written ``word = <value>``,
    read as the step's type and checked by the step's own predicate (the defaults of the three parts)."""

    name = "say"

    class step_model(Step):  # noqa: N801
        kind: Literal["say"]
        type: Literal["string"] = "string"


@pytest.fixture
def say() -> Iterator[type[Kind]]:
    register_kind(Say)
    try:
        yield Say
    finally:
        unregister_kind("say")


def test_a_kind_with_no_methods_is_prompted_checked_and_re_asked_by_the_defaults(say: type[Kind]) -> None:
    from stepguard.model import ChatResponse, Usage

    replies = iter(["word = maybe", "word = yes", "m = 3"])
    prompts: list[str] = []

    class Replies:
        spec = "replies"

        def complete(self, messages: Any, settings: Any = None) -> ChatResponse:
            prompts.append(messages[-1]["content"])
            return ChatResponse(next(replies), Usage(1, 1))

        async def acomplete(self, messages: Any, settings: Any = None) -> ChatResponse:
            return self.complete(messages, settings)

    proc = parse_procedure(SAY)
    result = Guard(Replies()).run(proc, {"n": 2})  # type: ignore[arg-type]
    assert result.status == "bounded", result.deviations  # a predicate proves no one value: bounded by default
    assert result.values == {"word": "yes", "m": 3}
    assert [e.kind for e in result.deviations] == ["check_failed"]
    assert "word = ?    (Say yes or no)" in prompts[0]
    assert "Your reply `maybe` was not accepted: word = 'maybe': check \"value in ('yes', 'no')\" is false." in prompts[1]


def test_the_default_check_refuses_a_value_of_another_type_and_a_missing_line() -> None:
    class Count(Kind):
        name = "count"

        class step_model(Step):  # noqa: N801
            kind: Literal["count"]
            type: Literal["integer"] = "integer"

    register_kind(Count)
    try:
        proc = parse_procedure("inputs: {}\nsteps:\n  - {var: c, kind: count, check: 'value > 0'}\n")
        ctx = StepContext(proc, 0)
        assert Count().check(ctx, {}, "c = 4").value == 4
        assert Count().check(ctx, {}, "c = four").deviation.kind == "type_error"  # type: ignore[union-attr]
        assert Count().check(ctx, {}, "c = -1").deviation.kind == "check_failed"  # type: ignore[union-attr]
        assert Count().check(ctx, {}, "nothing").deviation.kind == "under_executed"  # type: ignore[union-attr]
    finally:
        unregister_kind("count")


def test_a_step_context_names_its_step_and_refuses_an_index_outside_the_procedure(upper: type[Kind]) -> None:
    proc = parse_procedure(FILE)
    ctx = StepContext(proc, 1)
    assert (ctx.var, ctx.step, ctx.kind.name, ctx.reads) == ("n", proc.steps[1], "compute", ("shout",))
    assert ctx.compiled is not None and ctx.compiled_check is None
    assert isinstance(StepContext(proc, 0).kind, Upper)
    with pytest.raises(IndexError, match="step index 2 is outside procedure 'greeting' \\(2 steps\\)"):
        StepContext(proc, 2)
    with pytest.raises(AttributeError):
        ctx.index = 0  # type: ignore[misc]


def test_the_kind_protocol_has_no_simulator_methods_and_the_simulator_answers_by_registration(upper: type[Kind]) -> None:
    """What a simulated model writes is the simulator's: the kind has no perfect_reply, and a kind whose
    answer is not registered with the simulator is not answered (its step deviates)."""
    from stepguard.kinds import Acting, Checking, Prompting

    for part in (Kind, Prompting, Checking, Acting):
        assert not hasattr(part, "perfect_reply") and not hasattr(part, "parse_line")
    proc = parse_procedure(FILE)
    unregister_sim_answer("upper")
    try:
        with pytest.raises(BudgetExhausted, match="budget spent at step shout"):
            Guard(load_model("sim:perfect", procedure=proc)).run(proc, {"who": "Ada"})
    finally:
        register_sim_answer("upper", upper_reply)


def test_the_simulators_registry_refuses_a_built_in_or_unknown_name() -> None:
    with pytest.raises(ValueError, match="step kind 'tool' is built in"):
        register_sim_answer("tool", upper_reply)
    with pytest.raises(ValueError, match="not 'up per'"):
        register_sim_answer("up per", upper_reply)
    with pytest.raises(KeyError, match="'extract' is a built-in step kind"):
        unregister_sim_answer("extract")
    with pytest.raises(KeyError, match="'nothing' is not a kind with a simulator answer"):
        unregister_sim_answer("nothing")


def test_without_the_procedure_the_simulator_reads_the_step_from_a_registered_line_reader(upper: type[Kind]) -> None:
    """An executor given no procedure reads the step from its prompt line, through the kind's read_line."""
    from stepguard.adapters.models.sim import SimulatedExecutor
    from stepguard.guard import PromptSet

    def read_line(var: str, rhs: str, notes: str) -> Step | None:
        source = notes.removesuffix(" in capital letters")
        return Upper.step_model.model_validate({"var": var, "kind": "upper", "source": source}) if source != notes else None

    proc = parse_procedure(FILE)
    messages = PromptSet().chunk_messages(proc, [0], {"who": "Ada"})
    assert "shout =" not in SimulatedExecutor("perfect").complete(messages).text  # no line reader: not answered
    assert SimulatedExecutor("perfect", procedure=proc).complete(messages).text == "shout = ADA"
    unregister_sim_answer("upper")
    register_sim_answer("upper", upper_reply, read_line)
    assert SimulatedExecutor("perfect").complete(messages).text == "shout = ADA"
