"""Exit codes and printed values of real ``stepguard`` invocations (issue 14, items 12 and 13):
each outcome has its own documented code; a flagged run does not exit 0; values keep their places."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stepguard import GuardResult
from stepguard.cli import app
from stepguard.cli._exit import EXIT_CODES_HELP, ExitCode
from stepguard.cli.run import print_result
from tests._paths import ROOT
from tests._stub_server import StubServer

INVOICE = str(ROOT / "examples" / "invoice.yaml")
INPUTS = ["-i", "subtotal=100.10", "-i", "rate=0.1"]
WRONG_TOTAL = "discount = 5.01\nnet = 95.09\ntax = 9.51\ntotal = 104.61\n"  # right but the last: 104.60
STRICT = ["--max-reprompts", "1", "--ladder", "restate"]


@pytest.fixture(scope="module")
def stub() -> Iterator[StubServer]:
    with StubServer(hang_s=1.0) as server:
        server.script = lambda _last: WRONG_TOTAL
        yield server


def _run(*args: str) -> object:
    return CliRunner().invoke(app, ["run", INVOICE, *INPUTS, *args])


def test_verified_exits_0_and_prints_two_places() -> None:
    out = _run("--model", "sim:perfect")
    assert out.exit_code == ExitCode.OK == 0, out.output
    assert "total                104.60  model_verified  exact      0" in out.stdout
    assert "answer total = 104.60" in out.stdout
    js = _run("--model", "sim:perfect", "--json")
    assert js.exit_code == 0, js.output
    data = json.loads(js.stdout)
    assert data["answer"] == "104.60" and data["steps"][-1]["value"] == "104.60"
    assert GuardResult.model_validate(data).answer_text == "104.60"


@pytest.mark.slow
@pytest.mark.parametrize(("policy", "code", "status"), [
    ("flag", ExitCode.FLAGGED, "flagged"),
    ("repair", ExitCode.REPAIRED, "repaired"),
    ("raise", ExitCode.FAILED, "failed"),      # StepDeviation
    ("reprompt", ExitCode.FAILED, "failed"),   # BudgetExhausted: the re-prompt is answered wrong again
])
@pytest.mark.parametrize("as_json", [False, True])
def test_each_outcome_has_its_code(stub: StubServer, policy: str, code: int, status: str, as_json: bool) -> None:
    out = _run("--model", f"{stub.base_url}#scripted", "--policy", policy, *STRICT, *(["--json"] if as_json else []))
    assert out.exit_code == code, out.output
    if as_json:
        assert json.loads(out.stdout)["status"] == status
    else:
        assert f"status {status}" in out.stdout


def test_codes_are_distinct_and_documented() -> None:
    assert len({int(c) for c in ExitCode}) == len(ExitCode)
    for code in ExitCode:
        assert f"{int(code)} " in EXIT_CODES_HELP
    docs = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert EXIT_CODES_HELP in " ".join(docs.split()), "docs/cli.md is stale: python scripts/gen_docs.py"


@pytest.mark.slow
def test_a_flagged_run_does_not_exit_0_as_a_process(stub: StubServer) -> None:
    """The real console entry point, in its own process (the bug: a flagged run exited 0)."""
    cmd = [sys.executable, "-m", "stepguard", "run", INVOICE, *INPUTS, "--model", f"{stub.base_url}#scripted",
           "--policy", "flag", *STRICT]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == ExitCode.FLAGGED, done.stdout + done.stderr
    assert "total                104.61  flagged" in done.stdout


@pytest.mark.slow
def test_usage_errors_exit_2() -> None:
    assert _run("--model", "sim:perfect", "--bogus").exit_code == ExitCode.USAGE == 2
    out = _run("--model", "sim:perfect", "--policy", "bogus")
    assert out.exit_code == 2 and "policy must be" in out.stderr
    out = CliRunner().invoke(app, ["run", INVOICE, "-i", "subtotal", "--model", "sim:perfect"])
    assert out.exit_code == 2 and "NAME=VALUE" in out.output


BAD = "inputs:\n  hours: {type: integer, defualt: 40}\nsteps:\n  - {var: gross, expr: hours * 2, type: decimal}\n  - {var: net, expr: gross, type: decimall}\n"


@pytest.mark.parametrize("command", ["run", "check"])
def test_a_bad_procedure_file_exits_5_with_every_error(tmp_path: Path, command: str) -> None:
    path = tmp_path / "payroll.yaml"
    path.write_text(BAD, encoding="utf-8")
    args = [command, str(path)] + (["-i", "hours=3", "--model", "sim:perfect"] if command == "run" else [])
    out = CliRunner().invoke(app, args)
    assert out.exit_code == ExitCode.PROCEDURE == 5, out.output
    assert out.stderr.splitlines() == [
        f"error: {path}: inputs.hours.defualt: unknown field 'defualt' (allowed: type, description, choices)",
        f"error: {path}: steps[0].type (gross): 'decimal' needs 'scale' (the number of places)",
        f"error: {path}: steps[1].type (net): 'decimall' is not one of 'integer', 'decimal', 'boolean', 'string', 'one_of' or 'number'",
    ]


@pytest.mark.slow
def test_bad_inputs_exit_5_and_missing_files_too(tmp_path: Path) -> None:
    out = CliRunner().invoke(app, ["run", INVOICE, "-i", "subtotal=1", "--model", "sim:perfect"])
    assert out.exit_code == 5 and "missing ['rate']" in out.stderr
    out = CliRunner().invoke(app, ["run", INVOICE, *INPUTS[:2], "-i", "rate=abc", "--model", "sim:perfect"])
    assert out.exit_code == 5 and "inputs.rate" in out.stderr
    out = CliRunner().invoke(app, ["check", str(tmp_path / "nope.yaml")])
    assert out.exit_code == 5 and "cannot read" in out.stderr


@pytest.mark.slow
def test_model_and_checkpoint_errors(stub: StubServer, tmp_path: Path) -> None:
    out = _run("--model", f"{stub.base_url}#error503")
    assert out.exit_code == ExitCode.MODEL == 6 and "503" in out.stderr
    assert _run("--model", "nosuchscheme:x").exit_code == ExitCode.USAGE  # ModelSpecError: a spec naming no model is usage, as serve says it
    broken = tmp_path / "ck.sqlite"
    broken.write_bytes(b"not a database " * 20)
    out = _run("--model", "sim:perfect", "--checkpoint", str(broken), "--thread-id", "a")
    assert out.exit_code == ExitCode.DATA == 7 and "not a usable checkpoint" in out.stderr


def test_reprompts_column_shows_each_steps_count() -> None:
    result = GuardResult.model_validate({
        "procedure": "p", "model": "m", "inputs": {}, "status": "verified", "answer": "3", "answer_var": "b",
        "steps": [{"var": "a", "value": "1221", "type": "decimal", "scale": 2, "provenance": "model_verified", "reprompts": 2},
                  {"var": "b", "value": "3", "type": "integer", "provenance": "model_verified", "reprompts": 0}],
    })
    runner = CliRunner()
    with runner.isolation() as (stdout, _stderr, *_):
        print_result(result)
        text = stdout.getvalue().decode()
    assert "a                   1221.00  model_verified  exact      2" in text
    assert "b                         3  model_verified  exact      0" in text


def test_an_answer_nothing_checked_is_flagged_not_verified(stub: StubServer, tmp_path: Path) -> None:
    """A step with neither expr nor check: its value is the model's, unchecked (999.99 for 120.00 was
    answered "status verified", exit 0, by a new user's stub); the run is flagged, exit 3."""
    proc = tmp_path / "unv.yaml"
    proc.write_text("name: unv\ninputs: {subtotal: decimal, rate: decimal}\nsteps:\n"
                    "  - {var: tax, expr: subtotal * rate, type: decimal, scale: 2}\n"
                    "  - {var: total, instruction: Add the tax to the subtotal., type: decimal, scale: 2}\n", encoding="utf-8")
    old, stub.script = stub.script, (lambda _last: "tax = 20.00\ntotal = 999.99\n")
    try:
        out = CliRunner().invoke(app, ["run", str(proc), "-i", "subtotal=100", "-i", "rate=0.2", "--model", f"{stub.base_url}#scripted", "--json"])
    finally:
        stub.script = old
    assert out.exit_code == ExitCode.FLAGGED, out.output
    data = json.loads(out.stdout)
    assert data["status"] == "flagged" and data["first_unverified"] == "total"
    assert [s["provenance"] for s in data["steps"]] == ["model_verified", "unverifiable"]
    assert [s["grade"] for s in data["steps"]] == ["exact", "unchecked"]


@pytest.mark.slow
def test_a_thread_id_without_a_checkpoint_file_is_a_usage_error() -> None:
    """Nothing would be kept, so the thread could never resume: said before the run, not ignored."""
    out = _run("--model", "sim:perfect", "--thread-id", "emp42")
    assert out.exit_code == ExitCode.USAGE and "thread_id needs a checkpointer (--checkpoint FILE)" in out.output
