"""Issue 45: the procedures figure's legend covered two procedure labels, and its k/n labels sat on
the error bars' caps. Drawn from the committed production stores, the legend lies below every tick
label and each k/n label above its bar's error bar."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepguard.bench import plots, suite_report
from stepguard.bench.aggregate import aggregate_run

STORES = Path(__file__).parent.parent / "benchmarks" / "stores" / "prod-digits"


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
