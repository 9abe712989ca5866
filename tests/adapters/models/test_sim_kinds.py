"""The simulated executor runs every step kind a procedure file can hold, under the real guard:
expressions, instruction steps (hidden expected value, predicate, neither), boolean, string and
one_of values (conditional string expressions included), rounding; sync and async, raw and guarded."""

from __future__ import annotations

import asyncio

import pytest
from typer.testing import CliRunner

from stepguard import Guard, GuardConfig, parse_trace, render_raw_prompt
from stepguard.adapters import load_model
from stepguard.adapters.models.sim import SimulatedExecutor
from stepguard.cli._app import app
from stepguard.procedure import Procedure, parse_procedure
from stepguard.verify import read_raw_value

INPUTS = {"subtotal": "100.10", "rate": "0.1", "member": "true", "region": "north"}
HEAD = """
inputs: {subtotal: decimal, rate: decimal, member: boolean, region: string}
steps:
  - {var: net, expr: subtotal * 0.95, type: decimal, scale: 2, rounding: ROUND_HALF_UP}
"""
KINDS = {  # one step kind each, after `net` (95.10 for the inputs above)
    "expression": "{var: tax, expr: net * rate, type: decimal, scale: 2}",
    "rounding_half_up": "{var: tax, expr: net * 0.055, type: decimal, scale: 2, rounding: ROUND_HALF_UP}",
    "integer": "{var: whole, expr: net // 1, type: integer}",
    "instruction_hidden_value": "{var: tax, instruction: Apply the rate to net., check: net * rate, type: decimal, scale: 2}",
    "instruction_predicate": "{var: tip, instruction: Any tip up to net., check: 0 <= value <= net}",
    "instruction_predicate_far": "{var: tip, instruction: A tip above 90., check: value > 90 and value < net}",
    "instruction_unverifiable": "{var: note, instruction: Say something., type: string}",
    "boolean_expression": "{var: big, expr: net >= 100, type: boolean}",
    "boolean_from_input": "{var: vip, expr: member and net > 50, type: boolean}",
    "boolean_instruction": "{var: big, instruction: Is net at least 100?, type: boolean, check: value == (net >= 100)}",
    "string_expression": "{var: label, expr: \"'north' if region == 'north' else 'south'\", type: string}",
    "string_predicate": "{var: label, instruction: Write ok., type: string, check: value == 'ok'}",
    "one_of_conditional": "{var: size, type: one_of, choices: [small, medium, large], expr: \"'large' if net >= 1000 else 'medium' if net >= 50 else 'small'\"}",
    "one_of_instruction": "{var: size, instruction: Classify by net., type: one_of, choices: [small, medium, large], check: \"value == ('large' if net >= 1000 else 'medium' if net >= 50 else 'small')\"}",
}
BOUNDED = ("instruction_predicate", "instruction_predicate_far")
"""The kinds whose only check is a predicate over value (a ``value == ...`` check pins one value: exact)."""
LATER = "  - {var: after, expr: \"1 if %s else 0\", type: integer}\n"  # a later step reads the kind's value


def _procedure(kind: str) -> Procedure:
    text = HEAD + f"  - {KINDS[kind]}\n"
    var = parse_procedure(text).steps[-1].var
    return parse_procedure(text + LATER % var + f"answer: {var}\n")


@pytest.mark.slow
@pytest.mark.parametrize("chunk_size", [5, 1], ids=["one-chunk", "a-step-a-call"])
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_verifies_on_sim_perfect(kind: str, chunk_size: int) -> None:
    """One step a call, a later step reads each value back from the run's state: a committed boolean
    ``True`` was read back as false (the state's reader knew only ``true``), and ``after = 1 if vip
    else 0`` took the wrong branch and was marked verified (2026-12-01)."""
    proc = _procedure(kind)
    model = load_model("sim:perfect", procedure=proc)
    result = Guard(model, GuardConfig(chunk_size=chunk_size)).run(proc, INPUTS)
    unverifiable = {s.var for s in proc.steps if s.expr is None and s.check is None}  # presence and type only
    # nothing checked an unverifiable value; a predicate alone bounds a value, proving none (issue 41.3)
    assert result.status == ("flagged" if unverifiable else "bounded" if kind in BOUNDED else "verified"), result.deviations
    assert result.grades[proc.steps[1].var] == ("unchecked" if unverifiable else "bounded" if kind in BOUNDED else "exact")
    bounded = proc.steps[1].var if kind in BOUNDED and not unverifiable else None  # a bounded run names its bounded step
    assert result.first_unverified == next(iter(unverifiable), bounded)
    assert result.reprompts == 0
    assert [s.provenance for s in result.steps] == ["unverifiable" if s.var in unverifiable else "model_verified" for s in proc.steps]
    expected = proc.expected_values(INPUTS)
    for step in result.steps:  # every value with an expected value is exactly it
        if step.var in expected:
            assert _same(step.value, expected[step.var]), step


def _same(value: object, expected: object) -> bool:
    """A typed result value (Decimal at the step's scale, int, bool, str) equals the exact expected one."""
    return value == expected and isinstance(value, bool) == isinstance(expected, bool)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_verifies_async(kind: str) -> None:
    proc = _procedure(kind)
    result = asyncio.run(Guard(SimulatedExecutor("perfect", procedure=proc)).arun(proc, INPUTS))
    assert result.status == ("flagged" if kind == "instruction_unverifiable" else "bounded" if kind in BOUNDED else "verified"), \
        result.deviations


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_in_raw_mode(kind: str) -> None:
    """The whole procedure in one prompt: every step line and the final answer are right."""
    proc = _procedure(kind)
    reply = SimulatedExecutor("perfect", procedure=proc).complete(render_raw_prompt(proc, proc.bind_inputs(INPUTS)))
    trace = parse_trace(reply.text, var_names=proc.variables)
    assert [r.var for r in trace.records] == list(proc.variables), reply.text
    assert len(trace.answers) == 1
    expected = proc.expected_values(INPUTS)
    for rec, step in zip(trace.records, proc.steps):
        if step.var in expected and step.type in ("boolean", "string", "one_of"):
            assert read_raw_value(rec, step.type, step.choices) == expected[step.var], rec.text


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10))
def test_paper_faults_on_every_kind_never_crash_and_never_pass_a_wrong_value(seed: int) -> None:
    """sim:paper on non-numeric steps: faults become wrong values the guard catches, never a crash."""
    for kind in sorted(KINDS):
        proc = _procedure(kind)
        model = SimulatedExecutor("paper", seed=seed, procedure=proc)
        result = Guard(model, GuardConfig(on_exhausted="flag", chunk_size=3)).run(proc, INPUTS)
        expected = proc.expected_values(INPUTS)
        for step in result.steps:
            if step.provenance == "model_verified" and step.var in expected:
                assert _same(step.value, expected[step.var]), (kind, seed)


def test_without_the_procedure_an_instruction_step_is_left_out_but_a_guard_hands_it_over() -> None:
    """No oracle: the simulator alone cannot read instructions and writes nothing for them; a guard
    running a procedure gives the simulator that procedure (issue 32), so the run verifies."""
    from stepguard.guard import PromptSet

    proc = _procedure("instruction_hidden_value")
    index = next(i for i, s in enumerate(proc.steps) if s.expression is None and s.instruction)
    messages = PromptSet().chunk_messages(proc, [index], proc.bind_inputs(INPUTS) | proc.expected_values(INPUTS))
    alone = load_model("sim:perfect").complete(messages)
    assert f"{proc.steps[index].var} =" not in alone.text
    result = Guard(load_model("sim:perfect"), GuardConfig(on_exhausted="flag")).run(proc, INPUTS)
    assert result.status == "verified", result.deviations


def test_a_predicate_no_candidate_satisfies_is_left_out() -> None:
    proc = parse_procedure("steps:\n  - {var: a, expr: '2'}\n  - {var: b, instruction: pick, check: value * value == 2}\n")
    reply = SimulatedExecutor("perfect", procedure=proc).complete(render_raw_prompt(proc, {}))
    assert [r.var for r in parse_trace(reply.text, var_names=proc.variables).records] == ["a"]


def test_init_starter_runs_verified_on_sim_perfect(tmp_path) -> None:  # noqa: ANN001
    runner = CliRunner()
    path = tmp_path / "starter.yaml"
    assert runner.invoke(app, ["init", str(path)]).exit_code == 0
    out = runner.invoke(app, ["run", str(path), "-i", "subtotal=100.10", "-i", "rate=0.1", "--model", "sim:perfect"])
    assert out.exit_code == 0, out.output
    assert "status verified" in out.output and "answer total = 104.6" in out.output
    assert out.stdout.count("model_verified") == 6
