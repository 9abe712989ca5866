"""A breaker's faults in the report over a user's suite (issue 32): grouping by procedure, the
per-case table's cells, runs with one label, runs of different suites.

Each test failed on the code before its fix; the neighbours of each fault are its other asserts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest

from stepguard.adapters import load_model
from stepguard.bench.compare import compare_runs
from stepguard.bench.report import build_report
from stepguard.bench.run import run_benchmark
from stepguard.bench.suites import load_suite

PROCEDURE = ("name: inv\ninputs:\n  qty: {type: integer}\n  rate: {type: decimal}\n  note: {type: string}\n"
             "steps:\n  - {var: sub, expr: 'qty * rate', type: decimal, scale: 2}\n"
             "  - {var: total, expr: 'sub + 1', type: decimal, scale: 2}\n")


def _suite(folder: Path, sets: str, procedure: str = PROCEDURE, stem: str = "inv") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{stem}.yaml").write_text(procedure, encoding="utf-8")
    (folder / f"{stem}.inputs.yaml").write_text(sets, encoding="utf-8")
    return folder


def _run(suite: Path, out: Path, mode: Literal["raw", "guarded"], model: str = "sim:perfect") -> Path:
    run_benchmark(suite, mode, load_model(model), out, progress=False)
    return out


def test_an_input_sets_id_with_a_slash_is_a_case_of_its_own_procedure(tmp_path: Path) -> None:
    """Set 'eu/a' of inv.yaml was a case 'a' of a procedure 'inv/eu' in every table and in compare."""
    suite = _suite(tmp_path / "s", "- {id: eu/a, inputs: {qty: 3, rate: '1.50', note: x}}\n"
                                   "- {id: eu/b, inputs: {qty: 4, rate: '1.50', note: y}}\n")
    cases = load_suite(suite)
    assert [c.procedure_name for c in cases] == ["inv", "inv"]
    raw, guarded = _run(suite, tmp_path / "raw", "raw"), _run(suite, tmp_path / "guarded", "guarded")
    assert [p.procedure for p in compare_runs(raw, guarded).configs] == ["inv"]
    build_report([raw, guarded], tmp_path / "report")
    summary = json.loads((tmp_path / "report" / "summary.json").read_text(encoding="utf-8"))
    assert [(c["procedure"], c["case"]) for c in summary["cases"]] == [("`inv`", "eu/a"), ("`inv`", "eu/b")]
    assert list(summary["runs"][0]["procedures"]) == ["inv"]


def test_a_cell_with_a_bar_or_a_line_break_stays_in_its_cell(tmp_path: Path) -> None:
    """A text input 'a|b' split its row into one more column, and 'line1\\nline2' ended the table."""
    suite = _suite(tmp_path / "s", "- {id: a, inputs: {qty: 3, rate: '1.50', note: 'a|b'}}\n"
                                   "- {id: b, inputs: {qty: 4, rate: '1.50', note: \"line1\\nline2\"}}\n")
    raw, guarded = _run(suite, tmp_path / "raw", "raw"), _run(suite, tmp_path / "guarded", "guarded")
    report = build_report([raw, guarded], tmp_path / "report")
    lines = report.report_md.read_text(encoding="utf-8").splitlines()
    table = lines[lines.index(next(x for x in lines if x.startswith("### Per case"))) + 2:]
    table = table[:table.index("")]
    columns = {len(row.replace("\\|", "").split("|")) for row in table}
    assert len(columns) == 1 and len(table) == 4  # header, rule, two cases: each row as many cells as the header
    assert "note=a\\|b" in table[2] and "note=line1<br>line2" in table[3]


def test_two_runs_in_folders_of_one_name_keep_apart_in_every_table(tmp_path: Path) -> None:
    """Two raw runs in a/raw and b/raw on one model had one label: the per-case table had two columns
    of one heading and summary.json's cases, keyed by heading, kept only the second run's answers."""
    suite = _suite(tmp_path / "s", "- {id: a, inputs: {qty: 3, rate: '1.50', note: x}}\n")
    first = _run(suite, tmp_path / "a" / "raw", "raw", "sim:paper")
    second = _run(suite, tmp_path / "b" / "raw", "raw", "sim:paper")
    report = build_report([first, second], tmp_path / "report")
    summary = json.loads(report.summary_json.read_text(encoding="utf-8"))
    labels = [r["label"] for r in summary["runs"]]
    assert len(set(labels)) == 2 and "a/raw" in labels[0] and "b/raw" in labels[1]
    case = summary["cases"][0]
    assert [k for k in case if k.endswith(": answer")] == [f"{labels[0]}: answer", f"{labels[1]}: answer"]
    headings = [h for t in [report.headline] for h in t.rows]
    assert [row[0] for row in headings] == labels


def test_runs_of_two_suites_that_share_case_ids_are_not_one_per_case_table(tmp_path: Path) -> None:
    """Two raw runs of suites whose inv/a differ (3 x 1.50 and 5 x 2.00) were one line: the first
    run's inputs and expected answer beside the second run's answer to another question."""
    from stepguard.bench.compare import InstancesDiffer

    one = _suite(tmp_path / "one", "- {id: a, inputs: {qty: 3, rate: '1.50', note: x}}\n")
    two = _suite(tmp_path / "two", "- {id: a, inputs: {qty: 5, rate: '2.00', note: x}}\n")
    first, second = _run(one, tmp_path / "r1", "raw"), _run(two, tmp_path / "r2", "raw")
    with pytest.raises(InstancesDiffer, match="'inv/a'"):
        build_report([first, second], tmp_path / "report")
    assert not (tmp_path / "report").exists()
    same = _run(one, tmp_path / "r3", "guarded")
    assert build_report([first, same], tmp_path / "ok").summary_json.is_file()  # one suite, raw and guarded: one table


@pytest.mark.slow
def test_an_instances_file_without_look_backs_is_not_reported_as_a_suite(tmp_path: Path) -> None:
    """Instances of a JSONL with a null look-back (allowed: "user procedures without one") were taken
    for a suite: every instance its own "procedure" with a row of rates and a paired table of one pair."""
    from stepguard.bench.generate import generate_instance
    from stepguard.bench.instances import load_instances, write_instances

    instances = [generate_instance(5, 1, index=k).model_copy(update={"lookback": None}) for k in range(3)]
    path = tmp_path / "mine.jsonl"
    write_instances(instances, path)
    assert all(i.lookback is None for i in load_instances(path))
    raw = tmp_path / "raw"
    guarded = tmp_path / "guarded"
    run_benchmark(path, "raw", load_model("sim:paper"), raw, progress=False)
    run_benchmark(path, "guarded", load_model("sim:paper"), guarded, progress=False)
    cmp = compare_runs(raw, guarded)
    assert [(p.procedure, p.n_steps, p.n) for p in cmp.configs] == [(None, 5, 3)]
    report = build_report([raw, guarded], tmp_path / "report")
    summary = json.loads(report.summary_json.read_text(encoding="utf-8"))
    assert not summary.get("suite") and "cases" not in summary
    # a suite's rows stay cases, by the procedure they record
    suite = _suite(tmp_path / "s", "- {id: a, inputs: {qty: 3, rate: '1.50', note: x}}\n")
    rep = build_report([_run(suite, tmp_path / "sr", "raw"), _run(suite, tmp_path / "sg", "guarded")], tmp_path / "srep")
    assert json.loads(rep.summary_json.read_text(encoding="utf-8"))["suite"] is True


def test_the_per_case_table_shows_inputs_as_the_input_set_writes_them(tmp_path: Path) -> None:
    """rate '1.50' was shown 1.5 and 1.50 as a YAML number 1.5: the case's inputs, not as the user wrote them."""
    suite = _suite(tmp_path / "s", "- {id: a, inputs: {qty: 3, rate: '1.50', note: x}}\n"
                                   "- {id: b, inputs: {qty: 3, rate: 1.50, note: '007'}}\n")
    report = build_report([_run(suite, tmp_path / "raw", "raw")], tmp_path / "report")
    cases = json.loads(report.summary_json.read_text(encoding="utf-8"))["cases"]
    assert [c["inputs"] for c in cases] == ["qty=3, rate=1.50, note=x", "qty=3, rate=1.50, note=007"]


def test_rows_written_before_rows_named_their_procedure_are_cases_only_of_a_suites_run(make_run: Any) -> None:
    """A row without ``procedure`` (a store written before rows recorded it, as benchmarks/stores/prod-streamed)
    is a case by its id when its run read a suite, and an instance when its run read an instances file."""
    from stepguard.bench.aggregate import aggregate_run

    rows = [{"id": "p/1", "n_steps": 4, "lookback": None, "correct": True}]
    for where, suite in [("/x/cases", True), ("/x/inv.yaml", True), ("/x/mine.jsonl", False), (None, False)]:
        runs = []
        for mode in ("raw", "guarded"):
            run = make_run(f"{mode}-{suite}-{str(where).replace('/', '_')}", mode, rows)
            meta = json.loads((run / "run.json").read_text(encoding="utf-8"))
            meta["instances"] = where
            (run / "run.json").write_text(json.dumps(meta), encoding="utf-8")
            runs.append(run)
        assert (aggregate_run(runs[0]).suite_rows == 1) is suite
        assert [p.procedure for p in compare_runs(*runs).configs] == (["p"] if suite else [None])


@pytest.mark.slow
def test_a_suite_run_and_a_generated_run_are_refused_together(tmp_path: Path, sim_runs: Any) -> None:
    """A generated benchmark and a user's suite (issue 45) made one report without a word: its headline
    counted the suite's guarded cases as n = 0 of any length. Refused, naming both and what to do;
    each kind alone still builds its report, and nothing is written for the refused pair."""
    suite = _suite(tmp_path / "s", "- {id: a, inputs: {qty: 3, rate: '1.50', note: x}}\n")
    guarded = _run(suite, tmp_path / "suite-guarded", "guarded")
    for dirs in ([sim_runs.raw, guarded], [guarded, sim_runs.raw, sim_runs.guarded]):
        with pytest.raises(ValueError, match="of generated instances and .*suite-guarded a run of a procedure suite: "
                                             "they do not belong in one report; build one report for each"):
            build_report(dirs, tmp_path / "mixed")
    assert not (tmp_path / "mixed").exists()
    build_report([guarded], tmp_path / "suite-report")
    build_report([sim_runs.raw], tmp_path / "bench-report")


def test_the_cli_refuses_the_mix_with_a_usage_exit(tmp_path: Path, sim_runs: Any) -> None:
    from typer.testing import CliRunner

    from stepguard.cli import app

    suite = _suite(tmp_path / "s", "- {id: a, inputs: {qty: 3, rate: '1.50', note: x}}\n")
    guarded = _run(suite, tmp_path / "suite-guarded", "guarded")
    out = CliRunner().invoke(app, ["bench", "report", str(sim_runs.raw), str(guarded), "--out", str(tmp_path / "r")])
    assert out.exit_code != 0 and "do not belong in one report" in out.output
