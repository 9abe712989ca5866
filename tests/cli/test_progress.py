"""``stepguard run`` prints its progress on stderr as the run goes, and stdout keeps the result alone."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import Result
from typer.testing import CliRunner

from stepguard.cli._app import app
from stepguard.cli._progress import model_label
from tests._paths import ROOT

EXAMPLES = ROOT / "examples"
INVOICE = [str(EXAMPLES / "invoice.yaml"), "-i", "subtotal=100.10", "-i", "rate=0.1", "--model", "sim:paper"]
N23 = [str(EXAMPLES / "benchmark_n23.yaml"), "-i", "x=3", "-i", "y=13", "--model", "sim:paper"]  # inputs the simulator errs on


def _run(*args: str) -> Result:
    return CliRunner().invoke(app, ["run", *args])


def test_each_step_prints_on_stderr_as_it_commits_and_stdout_is_unchanged() -> None:
    loud, quiet = _run(*INVOICE), _run(*INVOICE, "--quiet")
    assert loud.exit_code == quiet.exit_code == 0, loud.output
    wall = re.compile(r"wall \d+\.\d+s")
    assert wall.sub("", loud.stdout) == wall.sub("", quiet.stdout)  # the final table alone, with or without progress
    assert "s] " not in loud.stdout and "step 1/4" not in loud.stdout
    lines = loud.stderr.splitlines()
    assert re.fullmatch(r"\[\d+\.\ds\] procedure invoice \(4 steps\)  model sim:paper  follow \(window 100, re-asks 1 a call\)  ladder split, resample, resample, digits",
                        lines[0]), lines[0]
    steps = [re.sub(r"^\[\d+\.\ds\] ", "", line) for line in lines[1:]]
    assert steps == ["step 1/4 discount = 5.01  model_verified (exact)", "step 2/4 net = 95.09  model_verified (exact)",
                     "step 3/4 tax = 9.51  model_verified (exact)", "step 4/4 total = 104.60  model_verified (exact)"]
    assert quiet.stderr == ""


def test_deviations_print_with_the_rung_taking_them_and_json_stays_json() -> None:
    out = _run(*N23, "--chunked", "--chunk-size", "5", "--ladder", "restate,narrow", "--json")
    result = json.loads(out.stdout)  # stdout is the JSON alone
    assert result["deviations"], "the simulator should deviate here"
    shown = [line for line in out.stderr.splitlines() if "deviation at" in line]
    assert len(shown) == len(result["deviations"])
    first = result["deviations"][0]
    assert f"deviation at {first['step']}: {first['kind']} -> {first['action']}" in shown[0]
    if first["rung"]:
        assert f"({first['rung']})" in shown[0]
    committed = [line for line in out.stderr.splitlines() if re.search(r"step \d+/23 ", line)]
    assert len(committed) == 23
    for line, step in zip(committed, result["steps"], strict=True):
        assert f" {step['var']} = " in line and step["provenance"] in line
    assert "deviation" not in _run(*N23, "--chunked", "--chunk-size", "5", "--ladder", "restate,narrow", "-q").stderr


def test_the_header_says_which_model_local_resolved_to() -> None:
    class Local:
        model_name = "qwen2.5-coder-1.5b"

    assert model_label("local", Local()) == "local (local:qwen2.5-coder-1.5b)"
    assert model_label("local:qwen2.5-coder-1.5b", Local()) == "local:qwen2.5-coder-1.5b"
    assert model_label("sim:paper", object()) == "sim:paper"


@pytest.mark.slow
def test_a_ladder_that_cannot_re_ask_the_steps_warns_in_one_line_naming_the_flag() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "stepguard", "run", *INVOICE, "--ladder", "bridge,decompose", "-q"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    warning = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(warning) == 1, done.stderr  # no file name, line number or source line of Python's format
    assert warning[0].startswith("warning: procedure 'invoice' has decimal or non-sum steps")
    assert "(bridge, decompose)" in warning[0] and "--ladder replaces" in warning[0]
    assert "GuardConfig" not in warning[0]
