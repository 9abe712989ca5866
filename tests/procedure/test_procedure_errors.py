"""A bad procedure file gets every error, each with the file and its location, in the project's
words: none of pydantic's phrasing, none hidden behind "(and N more)" (issue 14, item 14)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from stepguard.errors import ProcedureError
from stepguard.procedure import load_procedure

PYDANTIC_PHRASES = ("Value error,", "Extra inputs are not permitted", "more)", "type=", "For further information visit",
                    "Input should be", "errors.pydantic.dev")

THREE_MISTAKES = """\
name: payroll
inputs:
  hours: {type: integer, defualt: 40}
  rate: decimal
steps:
  - {var: base, expr: hours * rate}
  - {var: gross, expr: base * 2, type: decimal}
  - {var: net, expr: gross - 1, type: decimall}
"""
WANT = [  # (location, message fragment), in file order
    ("inputs.hours.defualt", "unknown field 'defualt' (allowed: type, description, choices)"),
    ("steps[1].type (gross)", "'decimal' needs 'scale' (the number of places)"),
    ("steps[2].type (net)", "'decimall' is not one of 'integer', 'decimal'"),
]


def _error(tmp_path: Path, name: str, text: str) -> tuple[Path, list[str]]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ProcedureError) as info:
        load_procedure(path)
    message = str(info.value)
    assert not any(p in message for p in PYDANTIC_PHRASES), message
    return path, message.splitlines()


@pytest.mark.parametrize("fmt", ["yaml", "json"])
def test_every_error_is_shown_with_file_and_location(tmp_path: Path, fmt: str) -> None:
    text = THREE_MISTAKES if fmt == "yaml" else json.dumps(yaml.safe_load(THREE_MISTAKES))
    path, lines = _error(tmp_path, f"payroll.{fmt}", text)
    assert len(lines) == len(WANT), lines
    for line, (location, fragment) in zip(lines, WANT):
        assert line.startswith(f"{path}: {location}: "), line
        assert fragment in line, line


def test_inputs_as_a_list_are_located_by_index(tmp_path: Path) -> None:
    text = "inputs:\n  - {name: hours, defualt: 40}\n  - {name: rate, type: money}\nsteps:\n  - {var: a, expr: hours}\n"
    path, lines = _error(tmp_path, "p.yaml", text)
    assert lines == [
        f"{path}: inputs[0].defualt: unknown field 'defualt' (allowed: name, type, description, choices)",
        f"{path}: inputs[1].type: 'money' is not one of 'integer', 'decimal', 'boolean', 'string', 'one_of' or 'number'",
    ]


@pytest.mark.parametrize(("step", "want"), [
    ("{var: a, expr: '1', scale: 31, type: decimal}", "steps[0].scale (a): must be at most 30, got 31"),
    ("{var: a, expr: [1, 2]}", "steps[0].expr (a): expected text, got a list"),
    ("{var: 2a, expr: '1'}", "steps[0].var (2a): variable name '2a' must be a letter"),
    ("{var: if, expr: '1'}", "steps[0].var (if): variable name 'if' is a reserved word"),
    ("{expr: '1'}", "steps[0].var: required field 'var' is missing"),
    ("{var: a, type: one_of}", "steps[0].type (a): 'one_of' needs 'choices' (the allowed values)"),
    ("{var: a, expr: '1', rounding: UP}", "steps[0].rounding (a): 'UP' is not one of 'ROUND_HALF_EVEN' or 'ROUND_HALF_UP'"),
])
def test_each_kind_of_field_error_in_words(tmp_path: Path, step: str, want: str) -> None:
    path, lines = _error(tmp_path, "p.yaml", f"steps:\n  - {step}\n")
    assert lines[0].startswith(f"{path}: {want}"), lines


def test_top_level_and_empty_steps(tmp_path: Path) -> None:
    path, lines = _error(tmp_path, "p.yaml", "stepz: 1\nsteps: []\n")
    assert lines == [f"{path}: stepz: unknown field 'stepz' (allowed: name, description, inputs, steps, answer, accept_bounded, execute)"]
    path, lines = _error(tmp_path, "q.yaml", "steps: []\n")
    assert lines == [f"{path}: steps: a procedure needs at least one step"]


def test_every_cross_step_error_is_shown(tmp_path: Path) -> None:
    text = "inputs: [x]\nsteps:\n  - {var: a, expr: y + 1}\n  - {var: x, expr: '2'}\n  - {var: b, check: a + c}\nanswer: zz\n"
    path, lines = _error(tmp_path, "p.yaml", text)
    assert lines == [
        f"{path}: steps[0].expr (a): reads 'y', which is not an input or an earlier variable",
        f"{path}: steps[1].var: variable 'x' is already defined by an input",
        f"{path}: steps[2].check (b): reads 'c', which is not an input or an earlier variable",
        f"{path}: answer: answer 'zz' is not a step variable",
    ]


def test_a_one_of_input_declares_its_choices_and_a_value_outside_them_is_refused() -> None:
    """New user's finding: `zone: one_of` took `mars`, and the expression's else branch verified."""
    from stepguard.procedure import parse_procedure

    with pytest.raises(ProcedureError, match=r"inputs\.zone\.type: 'one_of' needs 'choices'"):
        parse_procedure("inputs: {zone: one_of}\nsteps:\n  - {var: r, expr: \"1\"}\n")
    with pytest.raises(ProcedureError, match=r"inputs\.zone\.choices: choices apply only to type one_of"):
        parse_procedure("inputs: {zone: {type: string, choices: [eu]}}\nsteps:\n  - {var: r, expr: \"1\"}\n")
    proc = parse_procedure("inputs:\n  zone: {type: one_of, choices: [eu, world]}\nsteps:\n  - {var: r, expr: \"2 if zone == 'eu' else 3\"}\n")
    assert proc.bind_inputs({"zone": "world"}) == {"zone": "world"}
    with pytest.raises(ProcedureError, match="inputs.zone: got 'mars', not one of eu, world"):
        proc.bind_inputs({"zone": "mars"})


def test_a_number_given_for_an_expression_says_to_quote_it() -> None:
    from stepguard.procedure import parse_procedure

    with pytest.raises(ProcedureError, match=r'expr: "0.085"'):
        parse_procedure("inputs: [x]\nsteps:\n  - {var: a, expr: 0.085}\n")
