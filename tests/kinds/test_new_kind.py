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
from stepguard.errors import ProcedureError
from stepguard.kinds import Kind, KindVerdict, register_kind, unregister_kind
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

    def notes(self, procedure: Procedure, index: int) -> list[str]:
        return [f"{procedure.steps[index].source} in capital letters"]  # type: ignore[attr-defined]

    def check(self, procedure: Procedure, index: int, env: Mapping[str, Any], reply: str, tool_calls: Sequence[Any] = ()) -> KindVerdict:
        step = procedure.steps[index]
        out, raw = step_line(reply, step.var)
        if raw is None:
            return out
        want = str(env[step.source]).upper()  # type: ignore[attr-defined]
        if raw.strip() != want:
            out.deviation = Deviation(kind="check_failed", step=step.var, detail=f"{step.var} is not {step.source} in capitals", got=raw)  # type: ignore[attr-defined]
            return out
        out.value = raw.strip()
        return out

    def grade(self, procedure: Procedure, index: int) -> str:
        return "exact"  # its check computes the one right value (the default, bounded, would say it proves none)

    def describe(self, procedure: Procedure, index: int) -> list[str]:
        return [f"upper: the value must be input {procedure.steps[index].source} in capital letters"]  # type: ignore[attr-defined]

    def perfect_reply(self, step: Step, env: Mapping[str, Any], procedure: Procedure | None = None) -> str | None:
        return f"{step.var} = {str(env[step.source]).upper()}"  # type: ignore[attr-defined]


@pytest.fixture
def upper() -> Iterator[type[Kind]]:
    register_kind(Upper)
    try:
        yield Upper
    finally:
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
