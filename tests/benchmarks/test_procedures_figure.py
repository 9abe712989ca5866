"""Issue 45: the procedures figure's legend covered two procedure labels, and its k/n labels sat on
the error bars' caps. Drawn from the committed production stores, the legend lies below every tick
label and each k/n label above its bar's error bar."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepguard.bench import plots, suite_report
from stepguard.bench.aggregate import aggregate_run
from tests._paths import ROOT

pytestmark = pytest.mark.slow

STORES = ROOT / "benchmarks" / "stores" / "prod-digits"


def _figure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    drawn = []
    real = plots._save

    def keep(fig, path):
        drawn.append(fig)
        return real(fig, path)

    monkeypatch.setattr(plots, "_save", keep)
    runs = [suite_report.suite_run(aggregate_run(STORES / name)) for name in ("raw", "forms6")]
    suite_report.plot_procedures(runs, tmp_path / "procedures.png")
    fig = drawn[0]
    fig.canvas.draw()
    return fig


def test_the_legend_lies_below_every_procedure_label(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fig = _figure(tmp_path, monkeypatch)
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    legend = fig.legends[0].get_window_extent(renderer)
    labels = [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()]
    assert len(labels) == 14
    assert all(not legend.overlaps(b) for b in labels)
    assert legend.y1 <= min(b.y0 for b in labels)


def test_each_count_label_sits_clear_of_its_error_bar(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fig = _figure(tmp_path, monkeypatch)
    renderer = fig.canvas.get_renderer()
    ax = fig.axes[0]
    notes = [t for t in ax.texts if "/" in t.get_text()]
    assert len(notes) == 28  # 14 groups, raw and guarded
    for note in notes:
        box = note.get_window_extent(renderer)
        top_of_bar = ax.transData.transform(note.xy)[1]  # the error bar's cap
        assert box.y0 - top_of_bar >= 4, note.get_text()  # display pixels between the cap and the label (1.8 before)


def test_a_simulators_raw_run_on_a_prompt_file_reads_not_applicable_never_zero(tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 45: a simulator's raw bar on a user's prompt file read 0/4 where it means "not applicable"."""
    from typer.testing import CliRunner

    from stepguard.cli import app

    shipping = str(ROOT / "benchmarks" / "production" / "shipping.yaml")
    for mode in ("raw", "guarded"):
        out = CliRunner().invoke(app, ["bench", "run", "--instances", shipping, "--mode", mode, "--model", "sim:paper",
                                       "--out", str(tmp_path / mode)])
        assert out.exit_code == 0, out.output
    runs = [suite_report.suite_run(aggregate_run(tmp_path / m)) for m in ("raw", "guarded")]
    table = suite_report.procedure_table(runs)
    assert all(line[3] == suite_report.NOT_APPLICABLE for line in table.rows), table.rows
    assert all(line[5] == suite_report.NOT_APPLICABLE for line in suite_report.case_table(runs).rows)
    drawn = []
    real = plots._save
    monkeypatch.setattr(plots, "_save", lambda fig, path: (drawn.append(fig), real(fig, path))[1])
    suite_report.plot_procedures(runs, tmp_path / "p.png")
    texts = [t.get_text() for t in drawn[0].axes[0].texts]
    assert "n/a" in texts and "0/4" not in texts, texts
