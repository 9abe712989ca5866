"""Issue 41.3: a grade for every committed value; a predicate-only step is graded bounded, never exact,
and its run is not ``verified`` unless the procedure accepts the step by name (``accept_bounded``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stepguard import Guard, GuardConfig, ProcedureError, parse_procedure
from stepguard.guard import GuardResult, StepOutcome
from tests._fakes import FixedReplies, ReplyModel, StreamingReplies

DISCOUNT = """
name: discount
inputs: {subtotal: decimal}
steps:
  - var: discount
    instruction: Take 5% off orders of 100 or more.
    type: decimal
    scale: 2
    check: 0 <= value <= subtotal
  - var: total
    expr: subtotal - discount
    type: decimal
    scale: 2
"""
WRONG = "discount = 42.00\ntotal = 120.00 - 42.00 = 78.00\n"
"""A stub's wrong discount (right: 6.00, total 114.00), inside the predicate's range."""


def _proc(accept: str = ""):
    return parse_procedure(DISCOUNT + accept)


def _config(streamed: bool = False) -> GuardConfig:
    return GuardConfig.for_procedure(_proc(), **({"streamed": True} if streamed else {"chunk_size": 2}))


@pytest.mark.parametrize("streamed", [False, True], ids=["chunked", "streamed"])
def test_a_predicate_only_step_is_graded_bounded_and_the_run_is_not_verified(streamed: bool) -> None:
    config = _config(streamed)
    result = Guard(StreamingReplies([WRONG]), config).run(_proc(), {"subtotal": "120.00"})
    assert result.grades == {"discount": "bounded", "total": "exact"}
    assert [s.provenance for s in result.steps] == ["model_verified", "model_verified"]
    assert result.status == "bounded"
    assert result.answer_text == "78.00"  # the wrong value a predicate cannot tell: bounded says so


@pytest.mark.parametrize("streamed", [False, True], ids=["chunked", "streamed"])
def test_the_stream_of_steps_carries_each_grade(streamed: bool) -> None:
    config = _config(streamed)
    items = list(Guard(StreamingReplies([WRONG]), config).stream(_proc(), {"subtotal": "120.00"}))
    steps = {i.var: i.grade for i in items if isinstance(i, StepOutcome)}
    assert steps == {"discount": "bounded", "total": "exact"}
    assert isinstance(items[-1], GuardResult) and items[-1].status == "bounded"


def test_a_procedure_that_accepts_the_bounded_step_is_verified() -> None:
    proc = _proc("accept_bounded: [discount]\n")
    result = Guard(FixedReplies([WRONG]), _config()).run(proc, {"subtotal": "120.00"})
    assert result.grades["discount"] == "bounded"  # accepted, still bounded: the grade tells what was checked
    assert result.status == "verified"


def test_accept_bounded_naming_no_step_is_refused_at_load_naming_it() -> None:
    with pytest.raises(ProcedureError, match=r"accept_bounded\[0\].*'discont' is not a step variable"):
        _proc("accept_bounded: [discont]\n")
    with pytest.raises(ProcedureError, match=r"accept_bounded\[0\].*'subtotal' is not a step variable"):
        _proc("accept_bounded: [subtotal]\n")  # an input is not a step


def test_accept_bounded_round_trips_and_an_empty_one_is_not_written(tmp_path: Path) -> None:
    from stepguard.procedure import load_procedure, save_procedure

    save_procedure(_proc("accept_bounded: [discount]\n"), tmp_path / "a.yaml")
    assert load_procedure(tmp_path / "a.yaml").accept_bounded == ("discount",)
    save_procedure(_proc(), tmp_path / "b.yaml")
    assert "accept_bounded" not in (tmp_path / "b.yaml").read_text(encoding="utf-8")


@pytest.mark.parametrize("check,grade", [
    ("0 <= value <= subtotal", "bounded"),
    ("value > 0", "bounded"),
    ("value == subtotal * 0.05", "exact"),  # one value only: the evaluator computes it
    ("subtotal * 0.05 == value", "exact"),
    ("subtotal * 0.05", "exact"),  # no value: an expected-value expression
    ("value == value", "bounded"),
])
def test_a_compute_step_s_grade_follows_the_check_that_runs(check: str, grade: str) -> None:
    from stepguard.kinds import StepContext, kind_of

    proc = parse_procedure(f"inputs: {{subtotal: decimal}}\nsteps:\n  - {{var: d, check: '{check}'}}\n")
    assert kind_of(proc.steps[0]).grade(StepContext(proc, 0)) == grade


def test_every_kind_s_grade() -> None:
    proc = parse_procedure("""
inputs: {doc: string, x: integer}
steps:
  - {var: amount, kind: extract, source: doc, label: Total, type: decimal, scale: 2}
  - {var: note, kind: text, max_length: 40}
  - {var: doubled, expr: x * 2}
  - {var: free, type: integer}
""")
    from stepguard.kinds import StepContext, kind_of

    assert [kind_of(s).grade(StepContext(proc, i)) for i, s in enumerate(proc.steps)] == ["matched", "free_text", "exact", "unchecked"]
    replies = ["amount = 18.86", "note = paid in full", "doubled = 14\nfree = 3\n"]
    result = Guard(FixedReplies(replies), GuardConfig()).run(proc, {"doc": "Total: 18.86", "x": 7})
    assert result.grades == {"amount": "matched", "note": "free_text", "doubled": "exact", "free": "unchecked"}
    assert result.status == "flagged"  # an unchecked value outranks a bounded one


def test_a_tool_step_is_graded_tool_and_verified() -> None:
    from stepguard.tools import Tool

    proc = parse_procedure("inputs: {x: integer}\nsteps:\n  - {var: y, kind: tool, tool: double, args: {n: x}, type: integer}\n")
    result = Guard(ReplyModel(["CALL double(n=4)"]), tools=[Tool("double", lambda n: 2 * n)]).run(proc, {"x": 4})
    assert result.grades == {"y": "tool"} and result.status == "verified", result.deviations


def test_a_text_step_is_free_text_and_bounded_unless_accepted() -> None:
    base = "inputs: {x: integer}\nsteps:\n  - {var: note, kind: text, max_length: 40}\n"
    assert Guard(FixedReplies(["note = hello"]), GuardConfig()).run(parse_procedure(base), {"x": 1}).status == "bounded"
    accepted = parse_procedure(base + "accept_bounded: [note]\n")
    result = Guard(FixedReplies(["note = hello"]), GuardConfig()).run(accepted, {"x": 1})
    assert result.grades == {"note": "free_text"} and result.status == "verified"


def test_repaired_and_flagged_values_are_graded_so() -> None:
    proc = parse_procedure("inputs: [x]\nsteps:\n  - {var: a, expr: x + 1}\n  - {var: b, expr: a + 1}\n")
    repaired = Guard(FixedReplies(["a = 9\nb = 10\n", "b = 3\n"]), GuardConfig(policy="repair")).run(proc, {"x": 1})
    assert repaired.grades == {"a": "repaired", "b": "exact"} and repaired.status == "repaired"
    flagged = Guard(FixedReplies(["a = 9\nb = 10\n", "b = 10\n"]), GuardConfig(policy="flag")).run(proc, {"x": 1})
    assert flagged.grades == {"a": "flagged", "b": "flagged"} and flagged.status == "flagged"  # b read a flagged value


OLD_RESULT = {
    "procedure": "p", "model": "m", "inputs": {"x": "1"}, "status": "verified", "answer": "3", "answer_var": "b",
    "steps": [{"var": "a", "value": "2", "type": "integer", "provenance": "model_verified", "reprompts": 0},
              {"var": "t", "value": "4", "type": "integer", "provenance": "tool", "reprompts": 0},
              {"var": "b", "value": None, "type": "integer", "provenance": "missing", "reprompts": 0}],
}


def test_a_result_written_before_grades_reads_with_grades_from_provenance() -> None:
    result = GuardResult.model_validate_json(json.dumps(OLD_RESULT))
    assert result.grades == {"a": "exact", "t": "tool", "b": None}
    assert result.status == "verified"  # as written
    again = GuardResult.model_validate_json(result.model_dump_json())
    assert again.grades == result.grades
    assert json.loads(result.model_dump_json())["steps"][0]["grade"] == "exact"


@pytest.mark.slow
def test_a_checkpoint_written_before_grades_gives_the_kind_s_grade(tmp_path: Path) -> None:
    """A checkpoint holds provenance only (grades were never stored): a resumed or finished thread's
    result takes each grade from the procedure, so a predicate-only step reads bounded, not exact."""
    from stepguard.guard import sqlite_checkpointer

    db = tmp_path / "ck.sqlite"
    first = Guard(FixedReplies([WRONG]), _config(), sqlite_checkpointer(db)).run(_proc(), {"subtotal": "120.00"}, thread_id="t1")
    again = Guard(FixedReplies([]), _config(), sqlite_checkpointer(db)).run(_proc(), {"subtotal": "120.00"}, thread_id="t1")
    assert again.resumed == "finished" and again.grades == first.grades == {"discount": "bounded", "total": "exact"}
    assert again.status == "bounded"
    # the opt-in names a status, not other work: the thread is the same run, now verified
    accepted = Guard(FixedReplies([]), _config(), sqlite_checkpointer(db)).run(_proc("accept_bounded: [discount]\n"),
                                                                               {"subtotal": "120.00"}, thread_id="t1")
    assert accepted.resumed == "finished" and accepted.status == "verified"


def test_the_proxy_s_step_event_carries_the_grade() -> None:
    from stepguard.serve._responses import event

    step = StepOutcome(var="d", value="1.00", type="decimal", scale=2, provenance="model_verified", grade="bounded", index=0)
    assert event(step)["grade"] == "bounded"


def test_the_run_span_carries_the_grades() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from stepguard.telemetry import OtelObserver

    exporter = InMemorySpanExporter()
    tp = TracerProvider()
    tp.add_span_processor(SimpleSpanProcessor(exporter))
    Guard(FixedReplies([WRONG]), _config(), observer=OtelObserver(tp)).run(_proc(), {"subtotal": "120.00"})
    run = next(s for s in exporter.get_finished_spans() if s.name.startswith("invoke_workflow"))
    assert run.attributes["stepguard.result.status"] == "bounded"
    assert tuple(run.attributes["stepguard.result.grades"]) == ("discount=bounded", "total=exact")


def _app():
    from stepguard.cli import app

    return app


def test_check_warns_of_each_bounded_step_not_accepted(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(DISCOUNT, encoding="utf-8")
    out = CliRunner().invoke(_app(), ["check", str(f)])
    assert out.exit_code == 0, out.output
    warnings = [line for line in out.output.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "step discount is graded bounded" in warnings[0] and "accept_bounded: [discount]" in warnings[0]
    assert "grade: exact" in out.output  # total
    f.write_text(DISCOUNT + "accept_bounded: [discount]\n", encoding="utf-8")
    out = CliRunner().invoke(_app(), ["check", str(f)])
    assert "warning:" not in out.output and "grade: bounded  (accepted: named in accept_bounded)" in out.output


def test_check_warns_of_a_text_step_too(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text("inputs: {x: integer}\nsteps:\n  - {var: note, kind: text, max_length: 40}\n", encoding="utf-8")
    out = CliRunner().invoke(_app(), ["check", str(f)])
    assert "warning: step note is graded free_text" in out.output


def test_run_exits_8_for_a_bounded_run_and_json_carries_grades(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from stepguard.cli._exit import ExitCode, exit_for_status

    assert exit_for_status("bounded") == ExitCode.BOUNDED == 8
    f = tmp_path / "p.yaml"
    f.write_text("name: note\ninputs: {x: integer}\nsteps:\n  - {var: y, expr: x + 1}\n  - {var: z, type: integer, check: value > 0}\n",
                 encoding="utf-8")
    out = CliRunner().invoke(_app(), ["run", str(f), "--model", "sim:perfect", "-i", "x=1", "--json", "--quiet"])
    assert out.exit_code == 8, out.output
    data = json.loads(out.stdout)
    assert [s["grade"] for s in data["steps"]] == ["exact", "bounded"] and data["status"] == "bounded"
    table = CliRunner().invoke(_app(), ["run", str(f), "--model", "sim:perfect", "-i", "x=1", "--quiet"])
    assert table.exit_code == 8 and "z                         1  model_verified  bounded    0" in table.stdout
    assert "bounded: z (bounded)" in table.stdout


def _status_schema(statuses: list[str]) -> dict:
    return {"type": "json_schema", "json_schema": {"name": "r", "schema": {
        "type": "object", "properties": {"status": {"type": "string", "enum": statuses}}, "required": ["status"]}}}


def test_a_response_schema_s_status_enum_needs_bounded_only_where_a_run_can_end_so() -> None:
    from stepguard.wire import InvalidGuardedCall, response_shape

    old = ["verified", "repaired", "flagged", "failed"]
    exact = parse_procedure("inputs: [x]\nsteps:\n  - {var: a, expr: x + 1}\n")
    assert response_shape(_status_schema(old), exact).kind == "json_schema"  # a schema written before bounded still holds
    with pytest.raises(InvalidGuardedCall, match="cannot hold 'bounded'"):
        response_shape(_status_schema(old), _proc())
    assert response_shape(_status_schema(old), _proc("accept_bounded: [discount]\n")).kind == "json_schema"
    assert response_shape(_status_schema([*old, "bounded"]), _proc()).kind == "json_schema"


def test_a_committed_store_written_before_grades_still_reports_its_values_by_grade() -> None:
    from stepguard.bench.aggregate import aggregate_run
    from stepguard.bench.rows import row_grades

    run = aggregate_run(Path("benchmarks/stores/curve/guarded"))
    assert run.overall.n > 0 and set(run.overall.grades) <= {"exact", "flagged", "repaired", "unchecked", "tool"}
    assert run.overall.grades["exact"] > 0
    assert run.overall.metrics("guarded")["grades"] == dict(sorted(run.overall.grades.items()))
    new_row = {"mode": "guarded", "grades": {"bounded": 1, "exact": 2}, "guard": {"steps": []}}
    assert row_grades(new_row) == {"bounded": 1, "exact": 2}  # a row with grades keeps its own


def test_a_guarded_row_counts_its_values_by_grade() -> None:
    from stepguard.adapters import load_model
    from stepguard.bench.generate import generate_instance
    from stepguard.bench.rows import guarded_row

    inst = generate_instance(5, 2, seed=3)
    proc = inst.to_procedure()
    result = Guard(load_model("sim:perfect", procedure=proc), GuardConfig()).run(proc, inst.inputs)
    row = guarded_row(inst, result)
    assert row["grades"] == {"exact": 5} and row["guard"]["steps"][0]["grade"] == "exact"


def test_a_bounded_run_names_its_first_bounded_step_in_first_unverified() -> None:
    """New-user pass: --json showed status bounded with first_unverified null, so a reader of the JSON
    could not tell which value made it bounded."""
    from stepguard import Guard, GuardConfig, Procedure
    from tests._fakes import SameReply

    proc = Procedure.model_validate({"name": "m", "inputs": {"x": "integer"}, "steps": [
        {"var": "a", "expr": "x + 1"}, {"var": "d", "check": "0 <= value <= 10"}, {"var": "t", "expr": "a - d"}]})
    result = Guard(SameReply("a = 11\nd = 3\nt = 8"), GuardConfig.for_procedure(proc, on_exhausted="flag")).run(proc, {"x": 10})
    assert result.status == "bounded" and result.first_unverified == "d"
    accepted = proc.model_copy(update={"accept_bounded": ("d",)})
    again = Guard(SameReply("a = 11\nd = 3\nt = 8"), GuardConfig.for_procedure(accepted, on_exhausted="flag")).run(accepted, {"x": 10})
    assert again.status == "verified" and again.first_unverified is None
