"""Issue 18: every agent-workflow example checks, and runs verified on sim:perfect with its offline tools."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stepguard import Guard, load_procedure
from stepguard.adapters import load_model
from stepguard.cli._app import app
from tests._paths import ROOT

EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(EXAMPLES))
from agent_tools import TOOLS  # noqa: E402
from run_example import AGENT_EXAMPLES  # noqa: E402
from run_example import main as run_example  # noqa: E402

ANSWERS = {"refund": "RF-ORD-7-", "age_power": "2.28", "receipt": "17.63", "summary_count": "15"}
PROVENANCE = {
    "refund": ["tool", "tool"],
    "age_power": ["tool", "tool", "model_verified"],
    "receipt": ["model_verified", "model_verified", "model_verified"],
    "summary_count": ["model_verified", "model_verified"],
}


def test_every_agent_example_has_a_file_and_an_answer() -> None:
    assert set(AGENT_EXAMPLES) == set(ANSWERS) == set(PROVENANCE)
    assert all((EXAMPLES / f"{n}.yaml").exists() for n in AGENT_EXAMPLES)


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_agent_example_checks_and_verifies_on_sim_perfect(name: str) -> None:
    path = EXAMPLES / f"{name}.yaml"
    out = CliRunner().invoke(app, ["check", str(path)])
    assert out.exit_code == 0, out.output
    proc = load_procedure(path)
    result = Guard(load_model("sim:perfect", procedure=proc), tools=TOOLS).run(proc, AGENT_EXAMPLES[name])
    assert result.status == "verified", result.deviations
    assert result.answer_text is not None and result.answer_text.startswith(ANSWERS[name])
    assert [s.provenance for s in result.steps] == PROVENANCE[name]


@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_runner_runs_each_agent_example(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert run_example([name, "--model", "sim:perfect"]) == 0
    assert "guarded: status verified" in capsys.readouterr().out


@pytest.mark.slow
def test_cli_runs_tools_only_when_given_explicitly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(EXAMPLES.parent)
    args = ["run", "examples/refund.yaml", "-i", "sku=A-12", "-i", "amount=19.99", "--model", "sim:perfect"]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 5 and "not among the tools given to the guard" in out.output
    out = CliRunner().invoke(app, args + ["--tools", "examples.agent_tools:TOOLS"])
    assert out.exit_code == 0, out.output
    assert "tool" in out.output and "RF-ORD-7-" in out.output
    out = CliRunner().invoke(app, args + ["--tools", "examples/agent_tools.py:TOOLS"])
    assert out.exit_code == 0, out.output
    out = CliRunner().invoke(app, args + ["--tools", "no_such_module:TOOLS"])
    assert out.exit_code == 5 and "cannot import tools module" in out.output
    for spec, says in [("examples.agent_tools:__doc__", "__doc__ is a str, not a tool"),
                       ("examples.agent_tools:Decimal", "Decimal is a type, not a tool"),
                       ("examples.agent_tools:CATALOG", "a tool must be a callable")]:
        out = CliRunner().invoke(app, args + ["--tools", spec])
        assert out.exit_code == 5 and says in out.output and "Traceback" not in out.output, (spec, out.output)
    raising = tmp_path / "raising_tools.py"
    raising.write_text("raise RuntimeError('no database')\n", encoding="utf-8")
    out = CliRunner().invoke(app, args + ["--tools", f"{raising}:TOOLS"])
    assert out.exit_code == 5 and "RuntimeError: no database" in out.output, out.output


def test_check_describes_what_each_kind_verifies() -> None:
    out = CliRunner().invoke(app, ["check", str(EXAMPLES / "refund.yaml")]).output
    assert "argument order_id: must equal order_id, exactly" in out and "tool_error" in out
    out = CliRunner().invoke(app, ["check", str(EXAMPLES / "receipt.yaml")]).output
    assert "must occur in input receipt_text after the label 'Total'" in out
    out = CliRunner().invoke(app, ["check", str(EXAMPLES / "summary_count.yaml")]).output
    assert "length: 20..120 characters" in out and "predicate: words(value) >= 5" in out
