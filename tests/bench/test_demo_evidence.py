"""The demo's report shows the committed curve beside the demo's own instances, each labelled (issue
45): alone, the demo's four instances drew one-point axes and bands over the whole plot. Drawn here
from the simulator's runs (the demo adds it on a real model only: a SIMULATED stamp would mislabel
the committed, real measurement); the figure's legend names both, and the Markdown and HTML reports
carry it under its own heading."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from stepguard.bench import plots
from stepguard.bench.aggregate import aggregate_run
from stepguard.bench.demo_evidence import COMMITTED_CELLS, FIGURE, add_committed_evidence, committed_curves
from stepguard.bench.report import build_report
from tests.conftest import SimRuns

pytestmark = pytest.mark.slow


def test_the_committed_curve_and_the_demo_are_on_one_figure_each_labelled(sim_runs: SimRuns, tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    legends: list[str] = []
    save = plots._save

    def capture(fig: Any, path: Path) -> Path:
        if path.name == FIGURE:
            legends.extend(t.get_text() for a in fig.axes for t in (a.get_legend().get_texts() if a.get_legend() else []))
            legends.append(fig.get_suptitle())
        return save(fig, path)

    monkeypatch.setattr(plots, "_save", capture)
    report = build_report([sim_runs.raw, sim_runs.guarded], tmp_path / "report")
    path = add_committed_evidence(report, [aggregate_run(sim_runs.raw), aggregate_run(sim_runs.guarded)])
    assert path is not None and path.is_file() and path.name == FIGURE
    assert any(t.startswith("committed raw") for t in legends) and any(t.startswith("committed guarded") for t in legends)
    assert any(t.startswith("this demo raw") for t in legends) and any(t.startswith("this demo guarded") for t in legends)
    assert "qwen2.5-coder-1.5b" in legends[-1]
    md = report.report_md.read_text(encoding="utf-8")
    assert f"## This demo beside the committed measurement\n\n![{path.stem}]({FIGURE})" in md
    page = report.report_html.read_text(encoding="utf-8")
    assert "This demo beside the committed measurement" in page and page.rstrip().endswith("</body></html>")


def test_the_committed_curves_are_the_recorded_cells() -> None:
    data = json.loads(COMMITTED_CELLS.read_text(encoding="utf-8"))
    curves = committed_curves(data)
    assert {c.run for c in curves} == {f"committed {r['mode']}" for r in data["runs"]}
    assert all(c.lookback is None for c in curves)


def test_nothing_changes_without_the_committed_cells(sim_runs: SimRuns, tmp_path: Path) -> None:
    report = build_report([sim_runs.raw, sim_runs.guarded], tmp_path / "report")
    before = report.report_md.read_text(encoding="utf-8")
    assert add_committed_evidence(report, [aggregate_run(sim_runs.raw)], cells=tmp_path / "absent.json") is None
    assert report.report_md.read_text(encoding="utf-8") == before and not (tmp_path / "report" / FIGURE).exists()
