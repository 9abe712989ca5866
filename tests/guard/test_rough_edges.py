"""Rough edges a newcomer met (issue 45): the run table for long names, a step's expr that names
itself, YAML errors that said ``in "<unicode string>"``. Neighbours: a later step's name (still
"defined by a later step"), a check that reads ``value`` and the step's own name, inputs files,
a short table (unchanged widths)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from stepguard import ProcedureError, parse_procedure
from stepguard.cli import app

LONG = ("name: long\ninputs: [a]\nsteps:\n  - {var: a_rather_long_variable_name_here, expr: a * 2}\n"
        "  - {var: b, expr: a_rather_long_variable_name_here + 123456789012345678}\n")


def test_the_run_table_stays_aligned_for_long_names_and_values(tmp_path: Path) -> None:
    (tmp_path / "long.yaml").write_text(LONG, encoding="utf-8")
    out = CliRunner().invoke(app, ["run", str(tmp_path / "long.yaml"), "-i", "a=3", "--model", "sim:perfect", "-q"])
    assert out.exit_code == 0, out.output
    lines = out.stdout.splitlines()
    table = lines[lines.index(next(x for x in lines if x.startswith("step "))):][:3]
    assert len({line.index("model_verified") for line in table[1:]}) == 1  # one column for the provenance
    assert len({line.index("provenance") for line in table[:1]} | {line.index("model_verified") for line in table[1:]}) == 1
    ends = {line.index("  model_verified") for line in table[1:]} | {table[0].index("  provenance")}
    assert len(ends) == 1  # values right-aligned under "value"


def test_a_short_table_keeps_its_widths() -> None:
    out = CliRunner().invoke(app, ["run", "examples/invoice.yaml", "-i", "subtotal=100.10", "-i", "rate=0.1", "--model",
                                   "sim:perfect", "-q"])
    assert "step                  value  provenance      grade      reprompts" in out.stdout
    assert "discount               5.01  model_verified  exact      0" in out.stdout


def test_an_expr_that_names_its_own_step_says_so() -> None:
    with pytest.raises(ProcedureError) as info:
        parse_procedure("name: p\ninputs: [a]\nsteps:\n  - {var: x, expr: x + a}\n", "p.yaml")
    assert "reads 'x', which is this step's own variable" in str(info.value)
    assert "later step" not in str(info.value)
    with pytest.raises(ProcedureError, match="reads 'y', which is defined by a later step"):
        parse_procedure("name: p\ninputs: [a]\nsteps:\n  - {var: x, expr: y + a}\n  - {var: y, expr: a}\n", "p.yaml")


@pytest.mark.parametrize(("name", "text", "says"), [
    ("bad.yaml", "name: p\ninputs: [a]\nsteps:\n  - {var: x, expr: a +\n",
     "not valid YAML: did not find expected ',' or '}' at line 5, column 1 (while parsing a flow mapping at line 4, column 5)"),
    ("tab.yaml", "name: p\nsteps:\n\t- {var: x, expr: 1}\n", "that cannot start any token at line 3, column 1"),
])
def test_a_yaml_error_names_the_file_not_a_unicode_string(tmp_path: Path, name: str, text: str, says: str) -> None:
    (tmp_path / name).write_text(text, encoding="utf-8")
    out = CliRunner().invoke(app, ["check", str(tmp_path / name)])
    assert out.exit_code == 5 and f"{tmp_path / name}: not valid YAML: " in out.output and says in out.output, out.output
    assert "<unicode string>" not in out.output and len(out.output.strip().splitlines()) == 1


def test_an_inputs_file_yaml_error_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "in.yaml").write_text("subtotal: [1\n", encoding="utf-8")
    out = CliRunner().invoke(app, ["run", "examples/invoice.yaml", "--inputs-file", str(tmp_path / "in.yaml"),
                                   "--model", "sim:perfect"])
    assert out.exit_code == 5 and "<unicode string>" not in out.output
    assert f"{tmp_path / 'in.yaml'}: not valid YAML: did not find expected ',' or ']' at line 2" in out.output


def test_the_accuracy_figures_look_back_lines_are_told_apart(sim_runs: Any, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines of look-backs that agree (all at 100%) hid each other (issue 45): each now has its own
    marker and line style (the first drawn largest), side by side by a share of the axis."""
    from stepguard.bench import plots
    from stepguard.bench.aggregate import aggregate_run

    seen: list[Any] = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: seen.append(fig) or path)
    plots.plot_accuracy([aggregate_run(sim_runs.guarded)], tmp_path / "accuracy.png")
    bars = [c for c in seen[0].axes[0].containers if str(c.get_label()).startswith("look-back")]
    markers = {c.get_label(): c.lines[0].get_marker() for c in bars}
    assert len(markers) == 2 and len(set(markers.values())) == 2, markers
    assert len({c.lines[0].get_linestyle() for c in bars}) == 2
    firsts = sorted(c.lines[0].get_xdata()[0] for c in bars)
    assert firsts[0] < 5 < firsts[1]  # side by side about their length


def test_a_raw_answer_is_shown_with_the_places_the_reply_wrote() -> None:
    """Issue 45: the per-case table showed a prompt file's answer ``2007.00`` as the number ``2007``."""
    from types import SimpleNamespace

    from stepguard.bench.suite_report import SuiteRun, case_table

    row = {"id": "shipping/0", "procedure": "shipping", "expected_answer": "2007.00", "first_answer": 2007, "correct": True,
           "answer_read": {"format": "last_number", "text": "2007.00", "refused": None}, "inputs": {"w": "1"}}
    run = SuiteRun(SimpleNamespace(label="raw", mode="raw", simulated=False), {"shipping/0": row})  # type: ignore[arg-type]
    line = case_table([run]).rows[0]
    assert "2007.00" in line and "2007" not in [c for c in line if c != "2007.00"]


def test_a_missing_extra_s_message_agrees_in_number() -> None:
    """New-user pass: "the guarding proxy (stepguard serve) need starlette"."""
    from stepguard._extra import import_extra
    from stepguard.errors import MissingExtraError

    for what, verb in (("the guarding proxy (stepguard serve)", "needs"), ("prompt files with a regex answer format", "need")):
        with pytest.raises(MissingExtraError, match=f"^{re.escape(what)} {verb} no_such_module_x"):
            import_extra("no_such_module_x", what=what, extra="serve")
