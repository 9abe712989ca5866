"""Every example procedure: `stepguard check` passes, and Guard on sim:perfect verifies the expected answer."""

from __future__ import annotations

import sys
from decimal import Decimal

import pytest
from typer.testing import CliRunner

from stepguard import Guard, load_procedure
from stepguard.adapters import load_model
from stepguard.cli._app import app
from tests._paths import ROOT

EXAMPLES = ROOT / "examples"
sys.path.insert(0, str(EXAMPLES))
from run_example import AGENT_EXAMPLES  # noqa: E402
from run_example import EXAMPLES as INPUTS  # noqa: E402
from run_example import main as run_example  # noqa: E402

ANSWERS = {"invoice": "104.60", "medication": "750.0", "tax_brackets": "10703.70", "benchmark_n23": "-590"}


def test_every_example_file_has_inputs_and_an_answer() -> None:
    files = {p.stem for p in EXAMPLES.glob("*.yaml")} - set(AGENT_EXAMPLES)  # agent workflows: tests/docs/test_agent_examples.py
    assert files == set(INPUTS) == set(ANSWERS)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(ANSWERS))
def test_example_checks_and_verifies_on_sim_perfect(name: str) -> None:
    path = EXAMPLES / f"{name}.yaml"
    out = CliRunner().invoke(app, ["check", str(path)])
    assert out.exit_code == 0, out.output
    assert "is valid" in out.output
    proc = load_procedure(path)
    assert proc.expected_values(INPUTS[name])[proc.answer_var] == Decimal(ANSWERS[name])
    result = Guard(load_model("sim:perfect")).run(proc, INPUTS[name])
    assert result.status == "verified", result.deviations
    assert result.answer_text == ANSWERS[name] and result.answer == Decimal(ANSWERS[name])


def test_runner_prints_raw_and_guarded(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_example(["invoice", "--model", "sim:paper"]) == 0
    out = capsys.readouterr().out
    assert "raw:" in out and "guarded: status verified; answer 104.60 (right)" in out


@pytest.mark.slow
@pytest.mark.parametrize("name", ["invoice", "tax_brackets", "benchmark_n23"])
def test_runner_runs_guarded_with_the_settings_of_stepguard_run(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    import json
    import re

    out = CliRunner().invoke(app, ["run", str(EXAMPLES / f"{name}.yaml"), "--model", "sim:paper", "--json",
                                   *[f"-i{k}={v}" for k, v in INPUTS[name].items()]])
    cli = json.loads(out.stdout)
    assert run_example([name, "--model", "sim:paper"]) == 0
    printed = capsys.readouterr().out
    calls = re.search(r"model calls (\d+)", printed)
    assert calls is not None, printed
    assert int(calls.group(1)) == cli["usage"]["model_calls"]
    assert f"re-prompts {cli['reprompts']};" in printed


def test_runner_shows_values_with_their_places_and_judges_raw_by_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_example(["invoice", "--model", "sim:perfect"]) == 0
    out = capsys.readouterr().out
    assert "expected total = 104.60" in out and "first answer 104.60 (right)" in out
