"""bench run on a user's procedure files with input sets (stepguard.bench.suites): loading and its
errors, raw-mode scoring of decimal answers, resume and identity, the Python API and the CLI end
to end on sim:perfect and sim:paper, and the report over such runs."""

from __future__ import annotations

import json
import shutil
from decimal import Decimal
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stepguard.adapters import load_model
from stepguard.bench.run import run_benchmark
from stepguard.bench.store import RESULTS, iter_rows
from stepguard.bench.suites import load_suite, suite_sha256
from stepguard.cli._app import app
from stepguard.cli._exit import ExitCode
from stepguard.errors import ProcedureError, RunStoreError
from stepguard.verify import score_generation
from tests._paths import ROOT

SUITE = ROOT / "benchmarks" / "production"

ORDER = """\
name: order
inputs: {subtotal: decimal, rate: decimal}
steps:
  - {var: tax, expr: subtotal * rate, type: decimal, scale: 2, rounding: ROUND_HALF_UP}
  - {var: total, expr: subtotal + tax, type: decimal, scale: 2}
"""
ORDER_SETS = """\
- {id: half-cent, inputs: {subtotal: "100.10", rate: "0.05"}}
- inputs: {subtotal: "12.00", rate: "0.025"}
"""


def _suite(tmp_path: Path, sets: str | None = ORDER_SETS, name: str = "order") -> Path:
    folder = tmp_path / "suite"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.yaml").write_text(ORDER, encoding="utf-8")
    if sets is not None:
        (folder / f"{name}.inputs.yaml").write_text(sets, encoding="utf-8")
    return folder


def _rows(rundir: Path) -> dict[str, dict]:
    return {r["id"]: r for r in iter_rows(rundir / RESULTS)}


def test_cases_have_stable_ids_and_expected_values_at_scale(tmp_path: Path) -> None:
    cases = load_suite(_suite(tmp_path) / "order.yaml")
    assert [c.id for c in cases] == ["order/half-cent", "order/set-2"]
    first = cases[0]
    assert first.expected == {"tax": Decimal("5.01"), "total": Decimal("105.11")}  # 5.005 half up
    assert str(first.answer) == "105.11" and first.n_steps == 2 and first.lookback is None
    assert str(cases[1].expected["tax"]) == "0.30"


def test_a_procedure_without_input_sets_names_the_file_and_what_to_add(tmp_path: Path) -> None:
    folder = _suite(tmp_path, sets=None)
    with pytest.raises(ProcedureError) as err:
        load_suite(folder)
    assert str(folder / "order.yaml") in str(err.value) and "add order.inputs.yaml" in str(err.value)


@pytest.mark.parametrize(("sets", "says"), [
    ("[]", "non-empty list"),
    ("- {inputs: {subtotal: '1.00'}}", "[0]: procedure 'order': inputs: missing ['rate']"),
    ("- {id: a, inputs: {subtotal: '1', rate: '0.1'}}\n- {id: a, inputs: {subtotal: '2', rate: '0.1'}}", "[1]: input set id 'a'"),
    ("- {subtotal: '1', rate: '0.1'}", "[0]: an input set is a mapping with 'inputs'"),
    ("- {inputs: {subtotal: '1', rate: '0.1'}, seed: 3}", "unknown keys ['seed']"),
    ("- &a {inputs: {subtotal: '1', rate: '0.1'}}\n- *a", "aliases"),
])
def test_bad_input_sets_are_refused_with_file_and_place(tmp_path: Path, sets: str, says: str) -> None:
    folder = _suite(tmp_path, sets=sets)
    with pytest.raises(ProcedureError) as err:
        load_suite(folder)
    assert str(folder / "order.inputs.yaml") in str(err.value) and says in str(err.value)


def test_an_input_sets_file_without_its_procedure_is_refused(tmp_path: Path) -> None:
    folder = _suite(tmp_path)
    (folder / "ordr.inputs.yaml").write_text(ORDER_SETS, encoding="utf-8")
    with pytest.raises(ProcedureError, match=r"ordr\.inputs\.yaml: an input-sets file with no procedure"):
        load_suite(folder)


def test_a_step_with_only_a_predicate_is_refused(tmp_path: Path) -> None:
    folder = _suite(tmp_path)
    (folder / "order.yaml").write_text(ORDER + "  - {var: tip, check: 'value >= 0', type: decimal, scale: 2}\n", encoding="utf-8")
    with pytest.raises(ProcedureError, match=r"steps \['tip'\] have no expected value"):
        load_suite(folder)


def test_raw_scoring_compares_the_decimal_answer_exactly() -> None:
    case = next(c for c in load_suite(SUITE / "invoice.yaml") if c.id == "invoice/ten-percent-tier-half-cent")
    values = {k: str(v) for k, v in case.expected.items()}
    trace = "".join(f"{k} = {v}\n" for k, v in values.items())
    good = score_generation(case.scoring_target(), trace + f"Final answer: {values['total']}", id=case.id)
    assert good.correct and good.exact and good.id == case.id
    assert values["discount"] == "130.25"
    half_even = trace.replace("discount = 130.25", "discount = 130.24")  # the other rounding of 130.245
    wrong = score_generation(case.scoring_target(), half_even + f"Final answer: {values['total']}", id=case.id)
    assert wrong.correct and not wrong.exact and wrong.first_error_step == "discount" and "arithmetic_error" in wrong.labels
    assert values["total"] == "1406.64"
    longer = score_generation(case.scoring_target(), trace + "Final answer: 1406.641", id=case.id)
    assert not longer.correct and longer.first_answer == "1406.641"  # more places than the scale: another value
    assert score_generation(case.scoring_target(), trace + "Final answer: 1406.640").correct  # trailing zero: the same value


@pytest.mark.slow
def test_api_runs_the_production_suite_raw_and_guarded(tmp_path: Path) -> None:
    cases = load_suite(SUITE)
    for mode, spec in [("raw", "sim:perfect"), ("guarded", "sim:perfect"), ("raw", "sim:paper"), ("guarded", "sim:paper")]:
        rundir = tmp_path / f"{mode}-{spec[4:]}"
        summary = run_benchmark(SUITE, mode, load_model(spec), rundir, progress=False, concurrency=2)  # type: ignore[arg-type]
        rows = _rows(rundir)
        assert summary.written == len(cases) == len(rows) and summary.errors == 0, (mode, spec)
        assert set(rows) == {c.id for c in cases}
        run = json.loads((rundir / "run.json").read_text())
        assert run["instances"] == str(SUITE) and run["instances_sha256"] == suite_sha256(SUITE)
        # shipping carries its user's own prompt (shipping.prompt.yaml), prose the simulator cannot read:
        # in raw mode its cases get no answer (tests/bench/test_user_prompt.py); every other case is stepguard's prompt
        own = {r["id"] for r in rows.values() if mode == "raw" and r.get("raw_prompt") == "user"}
        assert own == ({c.id for c in cases if c.id.startswith("shipping/")} if mode == "raw" else set())
        if spec == "sim:perfect":
            assert summary.correct == len(cases) - len(own), [r["id"] for r in rows.values() if not r["correct"]]
            assert all(r["exact"] for r in rows.values() if r["id"] not in own)
        if mode == "guarded":
            assert all(r["status"] == "verified" for r in rows.values())
            for case in cases:
                assert rows[case.id]["first_answer"] == str(case.answer)  # "1406.37": the answer step's places
    raw_paper = _rows(tmp_path / "raw-paper")
    assert 0 < sum(r["correct"] for r in raw_paper.values()) < len(cases)  # sim:paper errs in raw mode, and is scored so


def test_resume_skips_finished_cases_and_a_changed_file_is_another_run(tmp_path: Path) -> None:
    folder = _suite(tmp_path)
    model = load_model("sim:perfect")
    first = run_benchmark(folder, "raw", model, tmp_path / "run", progress=False)
    assert first.written == 2 and first.correct == 2
    again = run_benchmark(folder, "raw", model, tmp_path / "run", progress=False)
    assert again.resumed and again.skipped == 2 and again.written == 0
    (folder / "order.inputs.yaml").write_text(ORDER_SETS + "- {id: third, inputs: {subtotal: '1', rate: '0.5'}}\n", encoding="utf-8")
    with pytest.raises(RunStoreError, match="different run"):
        run_benchmark(folder, "raw", model, tmp_path / "run", progress=False)


def test_cases_as_a_list_run_too(tmp_path: Path) -> None:
    cases = load_suite(_suite(tmp_path))
    summary = run_benchmark(cases, "guarded", load_model("sim:paper"), tmp_path / "g", progress=False)
    assert summary.written == 2 and set(_rows(tmp_path / "g")) == {"order/half-cent", "order/set-2"}
    assert json.loads((tmp_path / "g" / "run.json").read_text())["instances_sha256"]


@pytest.mark.slow
def test_cli_runs_the_suite_and_reports_it(tmp_path: Path) -> None:
    cli = CliRunner()
    n = len(load_suite(SUITE))
    guarded = ["bench", "run", "--instances", str(SUITE), "--mode", "guarded", "--model", "sim:perfect", "--out", str(tmp_path / "g"), "--no-progress"]
    res = cli.invoke(app, guarded)
    assert res.exit_code == 0, res.output
    assert f"{n} new rows ({n} correct)" in res.output
    res = cli.invoke(app, ["bench", "run", "--instances", str(SUITE / "payroll.yaml"), "--mode", "raw", "--model", "sim:paper",
                           "--out", str(tmp_path / "r"), "--no-progress"])
    assert res.exit_code == 0, res.output
    assert set(_rows(tmp_path / "r")) == {f"payroll/{s}" for s in ("part-time-half-cent", "exactly-40-hours", "overtime-half-cent", "withholding-half-cent")}
    res = cli.invoke(app, ["bench", "report", str(tmp_path / "g"), str(tmp_path / "r"), "--out", str(tmp_path / "rep")])
    assert res.exit_code == 0, res.output
    md = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert "SIMULATED" in md and f"sim:perfect · SIMULATED, {n} rows" in md and "sim:paper · SIMULATED, 4 rows" in md
    assert (tmp_path / "rep" / "report.html").stat().st_size > 1000
    summary = json.loads((tmp_path / "rep" / "summary.json").read_text(encoding="utf-8"))
    assert summary  # the summary the report is built from


def test_cli_names_a_procedure_file_without_input_sets(tmp_path: Path) -> None:
    folder = tmp_path / "mine"
    folder.mkdir()
    shutil.copy(SUITE / "payroll.yaml", folder / "payroll.yaml")
    res = CliRunner().invoke(app, ["bench", "run", "--instances", str(folder / "payroll.yaml"), "--mode", "raw",
                                   "--model", "sim:perfect", "--out", str(tmp_path / "r"), "--no-progress"])
    assert res.exit_code == ExitCode.PROCEDURE, res.output
    assert "payroll.yaml" in res.output and "add payroll.inputs.yaml" in res.output and "not valid JSON" not in res.output


def test_an_empty_folder_or_an_input_sets_file_is_not_a_suite(tmp_path: Path) -> None:
    with pytest.raises(ProcedureError, match="no procedure files"):
        load_suite(tmp_path)
    folder = _suite(tmp_path)
    with pytest.raises(ProcedureError, match="this is an input-sets file: pass its procedure file"):
        load_suite(folder / "order.inputs.yaml")
    with pytest.raises(ProcedureError, match="no such file or folder"):
        load_suite(tmp_path / "missing.yaml")


def test_guarded_procedure_files_get_the_production_defaults_and_generated_instances_keep_the_benchmarks(tmp_path: Path) -> None:
    """As ``stepguard run``: a suite beyond integer sums runs one step a call, values inline, on the
    ``split`` ladder unless an option says otherwise; generated instances keep the benchmark defaults."""
    from stepguard.bench.generate import generate_grid
    from stepguard.bench.instances import write_instances
    from stepguard.bench.store import read_meta

    cli = CliRunner()
    base = ["bench", "run", "--mode", "guarded", "--model", "sim:perfect", "--no-progress"]
    res = cli.invoke(app, [*base, "--instances", str(_suite(tmp_path)), "--out", str(tmp_path / "p")])
    assert res.exit_code == 0, res.output
    cfg = read_meta(tmp_path / "p")["guard_config"]
    assert (cfg["chunk_size"], cfg["ladder"], cfg["inline_known"]) == (1, ["split", "resample", "resample", "digits"], True)
    assert cfg["on_exhausted"] == "flag"  # the benchmark's own default stays
    res = cli.invoke(app, [*base, "--instances", str(_suite(tmp_path)), "--out", str(tmp_path / "q"), "--chunk-size", "3"])
    assert res.exit_code == 0, res.output
    assert read_meta(tmp_path / "q")["guard_config"]["chunk_size"] == 3  # an option given wins
    jsonl = tmp_path / "gen.jsonl"
    write_instances(generate_grid(steps=(5,), lookbacks=(2,), per_config=1), jsonl)
    res = cli.invoke(app, [*base, "--instances", str(jsonl), "--out", str(tmp_path / "g")])
    assert res.exit_code == 0, res.output
    cfg = read_meta(tmp_path / "g")["guard_config"]
    assert cfg["chunk_size"] == 5 and cfg["inline_known"] is False


HIDDEN = """\
name: hidden
inputs: [a, b]
steps:
  - {var: s, instruction: Add a and b., check: a + b}
  - {var: d, expr: s * 2}
"""


@pytest.mark.parametrize("mode", ["raw", "guarded"])
def test_an_instruction_step_with_a_hidden_check_is_followed_by_the_simulator_in_the_benchmark(tmp_path: Path, mode: str) -> None:
    """As in ``stepguard run``: the simulated executor is given each case's procedure, so a step the
    prompt shows only as an instruction is computed as a model following it would (it scored 0 of 1)."""
    folder = _suite(tmp_path, "- {id: one, inputs: {a: 2, b: 3}}\n", name="hidden")
    (folder / "hidden.yaml").write_text(HIDDEN, encoding="utf-8")
    summary = run_benchmark(folder, mode, load_model("sim:perfect"), tmp_path / mode, progress=False)
    assert (summary.written, summary.correct) == (1, 1)


def test_bench_rows_and_the_report_show_inputs_as_the_input_sets_wrote_them(tmp_path) -> None:  # noqa: ANN001
    import json

    from stepguard.adapters import load_model
    from stepguard.bench.report import build_report
    from stepguard.bench.run import run_benchmark
    from stepguard.bench.store import RESULTS, iter_rows

    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "cover.yaml").write_text("name: cover\ninputs:\n  insured: {type: boolean}\n  insured_value: {type: decimal}\n"
                                      "  price: {type: decimal}\nsteps:\n"
                                      '  - {var: fee, expr: "insured_value * 2 if insured else price", type: decimal, scale: 2}\n')
    (suite / "cover.inputs.yaml").write_text("- {id: a, inputs: {insured: true, insured_value: 50.00, price: 1249.50}}\n")
    for mode in ("raw", "guarded"):
        run_benchmark(suite, mode, load_model("sim:perfect"), tmp_path / mode, progress=False)
        row = next(iter(iter_rows(tmp_path / mode / RESULTS)))
        assert row["inputs"] == {"insured": True, "insured_value": "50.00", "price": "1249.50"}, row["inputs"]
    md = build_report([tmp_path / "raw", tmp_path / "guarded"], tmp_path / "rep").report_md.read_text(encoding="utf-8")
    assert "insured=true, insured_value=50.00, price=1249.50" in md
    assert json.loads(json.dumps(row["inputs"]))["insured"] is True
