"""No message names an ``expr`` a step does not have (issue 33 #16), and a hidden check stays hidden.

The fault: a number step with an instruction and ``check: a > 0`` (no ``value``: an expected-value
check) failed every run with "its expr gives true" although it has no ``expr``, and ``stepguard
check`` passed it silently. The kind of fault: a message built for ``expr`` reused for a value that
came from ``check``. Neighbours: other types (integer, one_of), an ``expr`` that still says expr,
predicate-only steps of the compute and text kinds, an instruction-only step, and the text kind's
refusal, at load, of a check without ``value`` (its value is not computed).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from typer.testing import CliRunner

from stepguard.cli import app
from stepguard.cli.authoring import describe_step
from stepguard.errors import ProcedureError
from stepguard.kinds import StepContext, kind_of
from stepguard.procedure import parse_procedure


def _proc(step: dict[str, Any], inputs: str = "{a: integer}") -> Any:
    import json

    return parse_procedure(f"name: p\ninputs: {inputs}\nsteps:\n  - {json.dumps(step)}\n")


EXPR = re.compile(r"\bexpr\b")

# (step, inputs, what the start-of-run error says)
REFUSED_AT_START = [
    ({"var": "b", "instruction": "Add one to a.", "check": "a > 0", "type": "number"}, {"a": 3},
     "declared number, but its check gives true on these inputs (check: 'a > 0'); a check that does not mention value"),
    ({"var": "b", "instruction": "Halve a.", "check": "a / 2", "type": "integer"}, {"a": 5},
     "declared integer, but its check gives 2.5 on these inputs (check: 'a / 2'); round it in the check"),
    ({"var": "b", "instruction": "Pick.", "check": "'huge' if a > 1 else 'small'", "type": "one_of",
      "choices": ["small", "large"]}, {"a": 3}, "declared one_of, but its check gives huge on these inputs (check: \"'huge' if a > 1 else 'small'\") (choices: small, large)"),
    ({"var": "b", "instruction": "Is a big?", "check": "a", "type": "boolean"}, {"a": 3}, "declared boolean, but its check gives 3"),
]


@pytest.mark.parametrize(("step", "inputs", "says"), REFUSED_AT_START, ids=[r[0]["type"] for r in REFUSED_AT_START])
def test_a_hidden_check_of_the_wrong_type_is_named_as_the_check(step: dict[str, Any], inputs: dict[str, Any], says: str) -> None:
    proc = _proc(step)
    with pytest.raises(ProcedureError) as info:
        proc.expected_values(inputs)
    assert says in str(info.value), str(info.value)
    assert not EXPR.search(str(info.value)), str(info.value)


def test_an_expr_of_the_wrong_type_still_names_the_expr() -> None:
    with pytest.raises(ProcedureError, match=r"declared integer, but its expr gives 2\.5 on these inputs \(expr: 'a / 2'\); round it in the expression"):
        _proc({"var": "b", "expr": "a / 2", "type": "integer"}).expected_values({"a": 5})


def test_stepguard_check_warns_of_a_condition_as_an_expected_value(tmp_path: Any) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("name: p\ninputs: {a: integer}\nsteps:\n  - {var: b, instruction: Add one, check: a > 0, type: number}\n")
    out = CliRunner().invoke(app, ["check", str(path)])
    assert out.exit_code == 0, out.output
    assert "warning: this check does not mention value, so it is the expected value, and it gives true or false" in out.output
    assert not EXPR.search(out.output)
    run = CliRunner().invoke(app, ["run", str(path), "-i", "a=3", "--model", "sim:perfect"])
    assert run.exit_code == 5 and "its check gives true" in run.output and not EXPR.search(run.output), run.output


# Steps without an expr, every way a person or the model reads about them: none may say "expr".
NO_EXPR_STEPS = [
    {"var": "b", "instruction": "Add one to a.", "check": "value > a", "type": "integer"},          # compute predicate
    {"var": "b", "instruction": "Add one to a.", "check": "a + 1", "type": "integer"},              # hidden expected value
    {"var": "b", "instruction": "Is a big?", "check": "a > 1", "type": "boolean"},                 # hidden, a condition, boolean
    {"var": "b", "instruction": "Say anything.", "type": "number"},                                # instruction only
    {"var": "b", "kind": "text", "check": "len(value) > 2"},                                       # text predicate
    {"var": "b", "kind": "text", "format": "list", "check": "len(value) == 2"},                    # list predicate
]


@pytest.mark.parametrize("step", NO_EXPR_STEPS, ids=[str(i) for i in range(len(NO_EXPR_STEPS))])
def test_a_step_without_an_expr_is_never_described_by_one(step: dict[str, Any]) -> None:
    proc = _proc(step)
    kind = kind_of(proc.steps[0])
    text = "\n".join(describe_step(proc, 0) + list(getattr(kind, "notes", lambda *a: [])(StepContext(proc, 0))))
    assert not EXPR.search(text), text
    assert "warning" not in text  # a condition as the expected value warns only on a step that is not boolean
    if step.get("check") and "value" not in step["check"]:
        assert step["check"] not in "\n".join(getattr(kind, "notes", lambda *a: [])(StepContext(proc, 0)))  # hidden from the model


def test_a_text_steps_check_without_value_is_refused_at_load_naming_the_check() -> None:
    with pytest.raises(ProcedureError, match=r"steps\[0\]\.check \(t\): a text step's check must be a predicate over value"):
        _proc({"var": "t", "kind": "text", "check": "'Done.'"})
