"""A breaker's faults in the report over a user's suite (issue 32): grouping by procedure, the
per-case table's cells, runs with one label, runs of different suites.

Each test failed on the code before its fix; the neighbours of each fault are its other asserts.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

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
