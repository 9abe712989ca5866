"""Procedure authoring: value checks vs predicates, decimals, non-numeric steps, init/check, --show-prompts."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stepguard.cli._app import app
from stepguard.procedure import parse_procedure, procedure_json_schema
from stepguard.trace import Record, parse_trace
from stepguard.verify import read_raw_value, verify_chunk
from tests._paths import ROOT

SCHEMA = ROOT / "docs" / "schemas" / "procedure.schema.json"
PROC = parse_procedure("""
inputs: {subtotal: decimal, rate: decimal}
steps:
  - {var: tax, instruction: apply the rate, check: subtotal * rate, type: decimal, scale: 2, rounding: ROUND_HALF_UP}
  - {var: tip, check: 0 <= value <= subtotal}
  - {var: big, expr: subtotal >= 100, type: boolean}
  - {var: tier, type: one_of, choices: [gold, silver], check: "value == ('gold' if big else 'silver')"}
  - {var: note, type: string}
""")
ENV = PROC.bind_inputs({"subtotal": "100.10", "rate": "0.05"})


def _verify(text: str):
    return verify_chunk(PROC, 0, len(PROC.steps), ENV, parse_trace(text, var_names=PROC.variables))


def test_schema_file_is_up_to_date() -> None:
    on_disk = json.loads(SCHEMA.read_text(encoding="utf-8"))
    assert on_disk == procedure_json_schema(), "regenerate: python scripts/gen_docs.py"


def test_check_without_value_is_an_expected_value() -> None:
    assert PROC.check_is_expected == (True, False, False, False, False)
    assert PROC.expected_values({"subtotal": "100.10", "rate": "0.05"}) == {"tax": Fraction(501, 100), "big": True}
    good = _verify("tax = 5.005\ntip = 3\nbig = true\ntier = Gold\nnote = thanks, all fine")
    assert good.deviation is None
    assert dict(good.verified) == {"tax": Fraction(501, 100), "tip": 3, "big": True, "tier": "gold", "note": "thanks, all fine"}
    bad = _verify("tax = 5.00\ntip = 3")
    assert bad.deviation.kind == "arithmetic_error" and bad.step_index == 0


def test_decimal_scale_equality_and_predicates() -> None:
    assert _verify("tax = 5.010\ntip = 200\n").deviation.kind == "check_failed"  # 12.3 == 12.30; tip > subtotal
    assert _verify("tax = 5.01\ntip = 1\nbig = maybe").deviation.kind == "type_error"
    assert _verify("tax = 5.01\ntip = 1\nbig = false").deviation.kind == "arithmetic_error"
    assert _verify("tax = 5.01\ntip = 1\nbig = true\ntier = bronze").deviation.kind == "type_error"
    assert _verify("tax = 5.01\ntip = 1\nbig = true\ntier = silver").deviation.kind == "check_failed"


@pytest.mark.parametrize(("line", "type_", "want"), [
    ("eligible = total >= 100 = true", "boolean", True),
    ("**eligible** = `False`", "boolean", False),
    ('tier = "gold".', "one_of", "gold"),
    ("tier = platinum", "one_of", None),
    ("name = Ada Lovelace", "string", "Ada Lovelace"),
    ("name =", "string", None),
])
def test_read_raw_value(line: str, type_: str, want: object) -> None:
    assert read_raw_value(Record(var="v", value=None, text=line), type_, ("gold", "silver")) == want


def test_init_then_check(tmp_path: Path) -> None:
    runner = CliRunner()
    path = tmp_path / "p.yaml"
    assert runner.invoke(app, ["init", str(path)]).exit_code == 0
    assert runner.invoke(app, ["init", str(path)]).exit_code == 2  # no overwrite without --force
    out = runner.invoke(app, ["check", str(path)])
    assert out.exit_code == 0, out.output
    assert "expected value: net * rate  (hidden check" in out.output and "ROUND_HALF_UP" in out.output


def test_init_makes_a_missing_folder_and_refuses_what_cannot_be_written(tmp_path: Path) -> None:
    runner = CliRunner()
    path = tmp_path / "new" / "deeper" / "p.yaml"
    out = runner.invoke(app, ["init", str(path)])
    assert out.exit_code == 0 and path.is_file(), out.output
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    out = runner.invoke(app, ["init", str(blocker / "p.yaml")])  # its "folder" is a file
    assert out.exit_code == 7 and f"{blocker / 'p.yaml'}: cannot be written" in out.output and "Traceback" not in out.output


def test_init_writes_yaml_only_where_the_name_says_yaml(tmp_path: Path) -> None:
    """`init p.json` wrote YAML that `check p.json` then refused as not valid JSON."""
    for name in ("p.json", "p", "p.txt"):
        out = CliRunner().invoke(app, ["init", str(tmp_path / name)])
        assert out.exit_code == 2 and "name it" in out.output and not (tmp_path / name).exists(), out.output
    assert CliRunner().invoke(app, ["init", str(tmp_path / "p.YML")]).exit_code == 0


def test_check_names_file_step_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("steps:\n  - {var: a, expr: x + 1}\n  - {var: b, check: a + c}\n", encoding="utf-8")
    out = CliRunner().invoke(app, ["check", str(path)])
    assert out.exit_code == 5  # ExitCode.PROCEDURE
    assert f"{path}: steps[0].expr (a): reads 'x'" in out.output


def test_run_show_prompts_prints_each_correction(monkeypatch) -> None:
    """A user-written procedure with a step the model gets wrong, seen from the CLI."""
    import stepguard.adapters
    from tests._fakes import ScriptedModel

    model = ScriptedModel(faults={"tax": ["wrong", "wrong"]})
    monkeypatch.setattr(stepguard.adapters, "load_model", lambda spec, **kw: model)
    out = CliRunner().invoke(app, ["run", "examples/tax_brackets.yaml", "-i", "income=52345.67", "--model", "scripted", "--show-prompts",
                                 "--chunked", "--ladder", "restate,narrow"])
    assert out.exit_code == 0, out.output
    # beyond integer sums, one step a call with the values written into the line (defaults by procedure)
    # on stderr, each under its chunk, step, attempt and rung: stdout stays the result (--json too)
    assert re.search(r"--- re-prompt \(chunk \d+, step \d+, attempt 1, restate\) ---\nYour line `tax = 1000 \+ 6000 \+ 3703.7",
                     out.stderr), out.stderr
    assert re.search(r"--- re-prompt \(chunk \d+, step \d+, attempt 2, narrow\) ---\n", out.stderr)
    assert "--- re-prompt" not in out.stdout
    assert "status verified" in out.stdout and "re-prompts 2" in out.stdout
    model.faults = {"tax": ["wrong", "wrong"]}
    as_json = CliRunner().invoke(app, ["run", "examples/tax_brackets.yaml", "-i", "income=52345.67", "--model", "scripted",
                                       "--show-prompts", "--ladder", "restate,narrow", "--json"])
    assert json.loads(as_json.stdout)["status"] == "verified"  # --show-prompts no longer breaks --json


def test_the_starter_runs_on_the_simulator_as_written(tmp_path: Path) -> None:
    """init's template said `--model local`, which a newcomer on the fast path has not installed (issue 45);
    its Run line now works as written, with no set-up."""
    path = tmp_path / "mine.yaml"
    assert CliRunner().invoke(app, ["init", str(path)]).exit_code == 0
    run_line = next(line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("# Run:"))
    args = run_line.split("stepguard ", 1)[1].split()
    assert "--model" in args and args[args.index("--model") + 1] == "sim:paper"
    out = CliRunner().invoke(app, [*args, "-q"])
    assert out.exit_code == 0 and "status verified" in out.stdout, out.output


def test_show_prompts_heads_a_derived_rungs_sub_step_notes_as_such(monkeypatch, tmp_path: Path) -> None:
    """Under split, the nested run's sub-step re-prompts all printed as `re-prompt 1 (split)` (issue 45)."""
    import stepguard.adapters
    from tests._fakes import ScriptedModel

    model = ScriptedModel(faults={"S3": ["wrong", "wrong"], "t2": ["wrong"]})
    monkeypatch.setattr(stepguard.adapters, "load_model", lambda spec, **kw: model)
    (tmp_path / "sums.yaml").write_text("name: sums\ninputs: [x, y]\nsteps:\n  - {var: S1, expr: x}\n  - {var: S2, expr: y}\n"
                                        "  - {var: S3, expr: S1 + S2 + 4567}\n", encoding="utf-8")
    out = CliRunner().invoke(app, ["run", str(tmp_path / "sums.yaml"), "-i", "x=1234", "-i", "y=5678", "--model", "scripted",
                                   "--show-prompts", "--ladder", "split,resample", "-q"])
    assert out.exit_code == 0, out.output
    assert re.search(r"--- sub-step re-prompt 1 inside split \(chunk \d+, step 3, attempt 1, split\) ---\nYour line `t2 = ",
                     out.stderr), out.stderr
