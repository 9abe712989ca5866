"""The demo's report shows the committed measurement beside the demo's own instances, each labelled
(issue 45): alone, the demo's four instances drew one-point axes and bands over the whole plot. The
committed curves are drawn from the run stores kept in the repository (``benchmarks/stores/curve/raw``
and ``curve/follow-together``, the guarded runs under the defaults), named by what they are and the
date each store records; a source without the stores (an installed wheel) draws nothing. Drawn here
beside demo-sized runs of the simulator (the demo adds it on a real model only: a SIMULATED stamp
would mislabel the committed, real measurement); the Markdown and HTML reports carry it under its
own heading."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from stepguard.bench import plots
from stepguard.bench.aggregate import RunAggregate, aggregate_run
from stepguard.bench.demo_evidence import COMMITTED_STORES, FIGURE, CommittedStore, add_committed_evidence, committed_curves
from stepguard.bench.report import Report, build_report
from stepguard.errors import RunStoreError
from tests._paths import ROOT

STORES = ROOT / "benchmarks" / "stores" / "curve"
RAW, GUARDED = STORES / "raw", STORES / "follow-together"


def _rows(rundir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (rundir / "results.jsonl").read_text(encoding="utf-8").splitlines() if line.strip()]


def _day(rundir: Path) -> str:
    """The date the store's run.json records (``created_at``), as the figure names it."""
    return str(json.loads((rundir / "run.json").read_text(encoding="utf-8"))["created_at"])[:10]


@pytest.fixture(scope="module")
def demo_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A raw and a guarded ``sim:paper`` run of the demo's default sizes (three of 5 steps, one of 23)."""
    from stepguard.adapters import load_model
    from stepguard.bench.generate import generate_grid
    from stepguard.bench.instances import write_instances
    from stepguard.bench.run import run_benchmark

    root = tmp_path_factory.mktemp("demo")
    instances = root / "instances.jsonl"
    write_instances([*generate_grid([5], [2], 3, seed=0), *generate_grid([23], [2], 1, seed=0)], instances)
    model = load_model("sim:paper")
    for mode in ("raw", "guarded"):
        run_benchmark(instances, mode, model, root / mode, concurrency=2, progress=False)  # type: ignore[arg-type]
    return root / "raw", root / "guarded"


def _report(demo_runs: tuple[Path, Path], tmp_path: Path) -> tuple[Report, list[RunAggregate]]:
    return build_report(list(demo_runs), tmp_path / "report"), [aggregate_run(d) for d in demo_runs]


@pytest.fixture
def drawn(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The figures saved as FIGURE (matplotlib Figures), in order."""
    figs: list[Any] = []
    save = plots._save

    def capture(fig: Any, path: Path) -> Path:
        if path.name == FIGURE:
            figs.append(fig)
        return save(fig, path)

    monkeypatch.setattr(plots, "_save", capture)
    return figs


def test_the_committed_curves_are_the_committed_stores() -> None:
    """The raw curve is the raw store's first answers pooled over look-backs, step by step; the
    guarded one the follow-together store's verified completion: 20 of 20 at 95 steps."""
    curves = {c.mode: c for c in committed_curves()}
    assert sorted(curves) == ["guarded", "raw"] and all(c.lookback is None for c in curves.values())
    right: Counter[int] = Counter()
    total: Counter[int] = Counter()
    for row in _rows(RAW):
        right[row["n_steps"]] += bool(row["correct"])
        total[row["n_steps"]] += 1
    assert curves["raw"].points == tuple((s, right[s], total[s]) for s in sorted(total))
    assert [s for s, _, _ in curves["raw"].points] == [5, 14, 23, 32, 50, 95]
    assert curves["guarded"].points == ((95, 20, 20),)
    assert curves["raw"].run == f"committed raw, {_day(RAW)}"
    assert curves["guarded"].run == f"committed guarded (defaults), {_day(GUARDED)}"
    assert {s.rundir for s in COMMITTED_STORES} == {RAW, GUARDED}


def test_the_committed_guarded_store_ran_under_todays_defaults() -> None:
    """The figure names the guarded store's curve "under the defaults": the store's settings are
    those a guarded benchmark run gets today. When the defaults change, this fails: measure a store
    under the new defaults and draw that one (or rename the curve)."""
    from stepguard.bench._runmeta import _guard_config_dict
    from stepguard.bench.run import resolve_guard_config

    stored = json.loads((GUARDED / "run.json").read_text(encoding="utf-8"))["guard_config"]
    assert stored == json.loads(json.dumps(_guard_config_dict(resolve_guard_config(None, None))))


def test_the_committed_stores_and_the_demo_are_on_one_figure_each_labelled(
        demo_runs: tuple[Path, Path], tmp_path: Path, drawn: list[Any]) -> None:
    report, runs = _report(demo_runs, tmp_path)
    path = add_committed_evidence(report, runs)
    assert path is not None and path.is_file() and path.name == FIGURE
    (fig,) = drawn
    ax = fig.axes[0]
    lines = {ln.get_label(): ln for ln in ax.get_lines()}
    guarded = next(ln for name, ln in lines.items() if name.startswith(f"committed guarded (defaults), {_day(GUARDED)}:"))
    assert list(guarded.get_xdata()) == [95] and list(guarded.get_ydata()) == [1.0]
    raw = next(ln for name, ln in lines.items() if name.startswith(f"committed raw, {_day(RAW)}:"))
    assert list(raw.get_xdata()) == [5, 14, 23, 32, 50, 95]
    assert any(name.startswith("this demo raw:") for name in lines) and any(name.startswith("this demo guarded:") for name in lines)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sum(t.startswith("committed ") for t in legend) == 2 and sum(t.startswith("this demo ") for t in legend) == 2
    at_95 = {t.get_text() for t in ax.texts if getattr(t, "xy", (None,))[0] == 95}
    assert "20/20" in at_95  # the guarded store's point, its k/n written
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    page_box = fig.bbox
    for box in (ax.get_legend().get_window_extent(renderer), fig._suptitle.get_window_extent(renderer)):
        assert page_box.x0 <= box.x0 and box.x1 <= page_box.x1, f"{box} runs off the figure {page_box}"  # names not cut off
    assert ax.get_position().width > 0.7  # the legend below does not squeeze the plot
    title = fig.get_suptitle()
    assert "benchmarks/stores/curve/raw" in title and "curve/follow-together" in title and "qwen2.5-coder-1.5b" in title
    assert _day(RAW) in title and _day(GUARDED) in title
    md = report.report_md.read_text(encoding="utf-8")
    assert f"## This demo beside the committed measurement\n\n![{path.stem}]({FIGURE})" in md
    assert "benchmarks/stores/curve/follow-together" in md and "fidelity_cells" not in md
    page = report.report_html.read_text(encoding="utf-8")
    assert "This demo beside the committed measurement" in page and page.rstrip().endswith("</body></html>")


def test_missing_stores_give_no_figure_and_no_error(demo_runs: tuple[Path, Path], tmp_path: Path, drawn: list[Any]) -> None:
    report, runs = _report(demo_runs, tmp_path)
    before = (report.report_md.read_text(encoding="utf-8"), report.report_html.read_text(encoding="utf-8"))
    absent = [s._replace(rundir=tmp_path / "no-benchmarks" / s.rundir.name) for s in COMMITTED_STORES]
    assert committed_curves(absent) == []
    assert add_committed_evidence(report, runs, stores=absent) is None
    after = (report.report_md.read_text(encoding="utf-8"), report.report_html.read_text(encoding="utf-8"))
    assert after == before and not (report.outdir / FIGURE).exists() and drawn == []


def test_a_store_with_no_finished_row_is_left_out(demo_runs: tuple[Path, Path], tmp_path: Path, drawn: list[Any]) -> None:
    """One store there, one begun without a finished row, one absent: only the first is drawn."""
    begun = tmp_path / "begun"
    begun.mkdir()
    shutil.copy(GUARDED / "run.json", begun / "run.json")
    stores = [CommittedStore("committed raw", RAW, "raw"), CommittedStore("begun", begun, "guarded"),
              CommittedStore("absent", tmp_path / "absent", "raw")]
    report, runs = _report(demo_runs, tmp_path)
    assert add_committed_evidence(report, runs, stores=[stores[1], stores[2]]) is None and drawn == []
    assert add_committed_evidence(report, runs, stores=stores) is not None
    names = [ln.get_label() for ln in drawn[0].axes[0].get_lines()]
    assert sum(n.startswith("committed raw") for n in names) == 1 and not any(n.startswith(("begun", "absent")) for n in names)


def test_a_corrupt_store_is_an_error_naming_it(tmp_path: Path) -> None:
    bad = tmp_path / "raw"
    shutil.copytree(RAW, bad)
    with (bad / "results.jsonl").open("a", encoding="utf-8") as fh:
        fh.write('{"id": "x", "n_steps": "many"}\n')
    with pytest.raises(RunStoreError, match="results.jsonl"):
        committed_curves([CommittedStore("committed raw", bad, "raw")])
