"""report and compare refuse what does not pair or cannot be read, naming why and where; bench run
refuses a selection that matches nothing; a report writes nothing before its inputs are read."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stepguard.bench.compare import InstancesDiffer, NoSharedInstances, compare_runs
from stepguard.bench.generate import generate_grid
from stepguard.bench.instances import write_instances
from stepguard.bench.report import build_report
from stepguard.bench.store import RESULTS, iter_rows
from stepguard.cli.bench import app
from stepguard.errors import RunStoreError
from tests.conftest import RunFactory, SimRuns


def _row(rid: str, ok: bool = True, **extra: object) -> dict:
    return {"id": rid, "n_steps": 5, "lookback": 2, "correct": ok, "exact": ok, "verified_correct": ok, **extra}


@pytest.mark.slow
def test_compare_without_shared_ids_is_an_error_naming_both_counts(make_run: RunFactory) -> None:
    raw = make_run("raw", "raw", [_row("a"), _row("b")])
    guarded = make_run("guarded", "guarded", [_row("c")])
    with pytest.raises(NoSharedInstances, match=r"no instance ids in common: raw .* has 2 finished rows, guarded .* has 1"):
        compare_runs(raw, guarded)
    res = CliRunner().invoke(app, ["compare", str(raw), str(guarded)])
    assert res.exit_code != 0 and "no instance ids in common" in res.output and "McNemar" not in res.output
    build_report([raw, guarded], raw.parent / "rep")  # the report shows both runs, with no paired table


def test_configurations_without_look_back_read_as_in_the_report(make_run: RunFactory) -> None:
    rows = [{"id": "p/1", "n_steps": 4, "lookback": None, "correct": True}]
    cmp = compare_runs(make_run("raw", "raw", rows), make_run("guarded", "guarded", rows))
    assert "4x-" in cmp.table() and "None" not in cmp.table()


def test_pairs_of_different_instances_are_refused_and_other_models_are_said(make_run: RunFactory, tmp_path: Path) -> None:
    raw = make_run("raw", "raw", [_row("a", instance_sha256="1" * 64), _row("b", instance_sha256="2" * 64)])
    guarded = make_run("guarded", "guarded", [_row("a", instance_sha256="1" * 64), _row("b", instance_sha256="3" * 64)])
    with pytest.raises(InstancesDiffer, match=r"1 of the 2 ids .* different instances .*'b' \(.*results.jsonl:2 vs .*results.jsonl:2\)"):
        compare_runs(raw, guarded)
    with pytest.raises(InstancesDiffer):
        build_report([raw, guarded], tmp_path / "rep")
    other = tmp_path / "other"
    other.mkdir()
    same = make_run("g2", "guarded", [_row("a", instance_sha256="1" * 64)])
    meta = json.loads((same / "run.json").read_text())
    meta["model"] = {"spec": "sim:paper"}
    (same / "run.json").write_text(json.dumps(meta))
    cmp = compare_runs(raw, same)
    assert cmp.warnings and "different models" in cmp.table() and "'m'" in cmp.table() and cmp.as_dict()["warnings"]


@pytest.mark.slow
def test_rows_record_their_instance_and_a_changed_copy_is_refused(sim_runs: SimRuns, tmp_path: Path) -> None:
    from stepguard.adapters import load_model
    from stepguard.bench.run import run_benchmark

    assert all(len(r["instance_sha256"]) == 64 for r in iter_rows(sim_runs.guarded / RESULTS))
    lines = sim_runs.instances.read_text().splitlines()
    first = json.loads(lines[0])  # the same id, another input (expected values no longer matter to the check)
    first["inputs"]["x"] += 1
    copy = tmp_path / "copy.jsonl"
    copy.write_text("\n".join([json.dumps(first, separators=(",", ":")), *lines[1:]]) + "\n")
    run_benchmark(copy, "raw", load_model("sim:paper"), tmp_path / "raw", limit=1, configs="5x2", progress=False)  # type: ignore[arg-type]
    with pytest.raises(InstancesDiffer, match=first["id"]):
        compare_runs(tmp_path / "raw", sim_runs.guarded)


def _append(rundir: Path, text: str) -> None:
    with (rundir / RESULTS).open("a") as fh:
        fh.write(text + "\n")


@pytest.mark.parametrize(("line", "says"), [
    (json.dumps(_row("a")), r"results.jsonl:3: duplicate id 'a' \(also on line 1\)"),
    (json.dumps({"id": "z", "lookback": 2}), r"results.jsonl:3: row 'z' has no 'n_steps'"),
    (json.dumps({**_row("z"), "n_steps": "x"}), r"results.jsonl:3: row 'z': 'n_steps' must be a whole number"),
    (json.dumps({**_row("z"), "step_values_correct": "x"}), r"results.jsonl:3: row 'z': a field of the wrong type"),
    (json.dumps({**_row("z"), "correct": "false"}), r"results.jsonl:3: row 'z': 'correct' must be true or false, not 'false'"),
])
def test_report_and_compare_refuse_a_bad_row_naming_file_and_line(make_run: RunFactory, tmp_path: Path, line: str, says: str) -> None:
    raw = make_run("raw", "raw", [_row("a"), _row("b")])
    guarded = make_run("guarded", "guarded", [_row("a"), _row("b")])
    _append(raw, line)
    with pytest.raises(RunStoreError, match=says):
        build_report([raw, guarded], tmp_path / "rep")
    if "wrong type" not in says:  # compare reads only what it pairs by
        with pytest.raises(RunStoreError, match=says):
            compare_runs(raw, guarded)
    res = CliRunner().invoke(app, ["report", str(raw), "--out", str(tmp_path / "rep")])
    assert res.exit_code == 7 and "results.jsonl:3" in res.output and "Traceback" not in res.output
    assert not (tmp_path / "rep").exists()


def test_report_refuses_a_run_given_twice_and_writes_nothing_before_reading(make_run: RunFactory, tmp_path: Path) -> None:
    raw = make_run("raw", "raw", [_row("a")])
    with pytest.raises(ValueError, match=r"given twice \(arguments 1 and 2\)"):
        build_report([raw, tmp_path / "raw" / "."], tmp_path / "rep")
    res = CliRunner().invoke(app, ["report", str(tmp_path / "nope"), "--out", str(tmp_path / "rep2")])
    assert res.exit_code == 7 and not (tmp_path / "rep2").exists() and not (tmp_path / "rep").exists()


@pytest.mark.parametrize(("option", "says"), [
    (["--limit", "-1"], "limit must be at least 1"), (["--limit", "0"], "limit must be at least 1"),
    (["--configs", "7x7"], r"configs 7x7 matched no instance in .*inst.jsonl \(it holds 5x2\)"),
])
def test_run_refuses_a_selection_that_matches_nothing(tmp_path: Path, option: list[str], says: str) -> None:
    write_instances(generate_grid([5], [2], 2, seed=0), tmp_path / "inst.jsonl")
    res = CliRunner().invoke(app, ["run", "--instances", str(tmp_path / "inst.jsonl"), "--model", "sim:perfect",
                                   "--out", str(tmp_path / "r"), "--no-progress", *option])
    assert res.exit_code == 2 and re.search(says, res.output), res.output
    assert not (tmp_path / "r").exists()
