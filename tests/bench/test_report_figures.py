"""The report's numbers are pinned: the same runs give the same figures as before the reporting
pipelines were merged (issue 15). ``data/report_figures.json`` was written by the old pipeline
(summary.json of :data:`tests.conftest.SIM_GRID` on ``sim:paper``), timings left out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stepguard.bench.report import build_report
from tests._paths import DATA
from tests.conftest import SimRuns

pytestmark = pytest.mark.slow

GOLDEN = DATA / "report_figures.json"
TIMED = {"wall_s", "model_s"}
PINNED = ("n", "n_steps", "lookback", "first_answer_accuracy", "exact_step_rate", "labels", "step_value_accuracy",
          "lookback_confusion", "truncated", "mean_first_error_position", "per_instance",
          "answer_right_any_provenance", "verified_correct_rate", "instances_with_repairs")


def figures(summary: dict[str, Any]) -> list[dict[str, Any]]:
    """Every per-configuration, per-length and overall figure of summary.json, timings left out."""
    out = []
    for run in summary["runs"]:
        cells = [("configs", c) for c in run["configs"]] + [("by_steps", c) for c in run["by_steps"]]
        for group, cell in [*cells, ("overall", run["overall"])]:
            kept = {k: cell[k] for k in PINNED if k in cell}
            kept["per_instance"] = {k: v for k, v in cell["per_instance"].items() if k not in TIMED}
            out.append({"mode": run["mode"], "group": group, **kept})
    return out


def test_same_runs_give_the_same_figures(sim_runs: SimRuns, tmp_path: Path) -> None:
    rep = build_report([sim_runs.raw, sim_runs.guarded], tmp_path)
    got = figures(json.loads(rep.summary_json.read_text()))
    want = json.loads(GOLDEN.read_text())
    assert len(got) == len(want) == 2 * (6 + 3 + 1)
    for g, w in zip(got, want):
        assert g == w, (g["mode"], g["group"], g.get("n_steps"), g.get("lookback"))
