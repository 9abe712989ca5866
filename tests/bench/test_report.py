"""build_report: files, SIMULATED marking, summary numbers against the rows, a guarded run's caught
deviations, labelled plot axes; the CLI commands."""

from __future__ import annotations

import json
import re
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from stepguard.bench import plots
from stepguard.bench.report import build_report
from stepguard.bench.rows import caught_deviations
from stepguard.bench.store import RESULTS, iter_rows
from stepguard.cli.bench_run import register
from tests.conftest import SimRuns


@pytest.fixture(scope="module")
def runs(sim_runs: SimRuns) -> tuple[Path, Path, Path]:
    return sim_runs.root, sim_runs.raw, sim_runs.guarded


AXES: list[tuple[str, str, str]] = []
"""(panel title, x label, y label) of every axis drawn by the ``report`` fixture."""


@pytest.fixture(scope="module")
def report(runs: tuple[Path, Path, Path], tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, list[str]]:
    titles: list[str] = []
    save = plots._save

    def capture(fig: Any, path: Path) -> Path:
        titles.append(fig.get_suptitle())
        titles.extend(a.get_title() for a in fig.axes)
        AXES.extend((f"{path.name}: {a.get_title()}", a.get_xlabel(), a.get_ylabel()) for a in fig.axes)
        return save(fig, path)

    plots._save = capture  # type: ignore[assignment]
    try:
        rep = build_report([runs[1], runs[2]], tmp_path_factory.mktemp("report"))
    finally:
        plots._save = save  # type: ignore[assignment]
    return rep, titles


@pytest.mark.slow
def test_report_files_exist_and_html_is_self_contained(report: tuple[Any, list[str]]) -> None:
    rep, _ = report
    names = {p.name for p in rep.outdir.iterdir()}
    assert {"summary.json", "report.md", "report.html", "overlay.png", "accuracy.png", "labels.png", "guard_cost.png"} <= names
    page = rep.report_html.read_text()
    assert page.count("data:image/png;base64,") == 4 and "src='http" not in page and "<link" not in page
    assert "![accuracy](accuracy.png)" in rep.report_md.read_text()


def test_the_overlay_figure_leads_the_report(report: tuple[Any, list[str]]) -> None:
    rep, titles = report
    assert rep.plots[0].name == "overlay.png" and rep.plots[0].stat().st_size > 10_000
    md = rep.report_md.read_text()
    figures = re.findall(r"!\[[^]]*\]\(([^)]+\.png)\)", md)
    assert figures[0] == "overlay.png" and len(figures) == 4
    assert md.index("overlay.png") < md.index("### ")  # before the first table
    page = rep.report_html.read_text()
    assert re.findall(r"<img alt='([^']+)'", page)[0] == "overlay" and page.index("alt='overlay'") < page.index("<table>")
    overlay_title = next(t for t in titles if t.startswith("Raw first-answer accuracy vs guarded verified completion"))
    assert "SIMULATED" in overlay_title and "2605.00817" in overlay_title


def test_every_title_says_simulated(report: tuple[Any, list[str]]) -> None:
    rep, titles = report
    md = rep.report_md.read_text()
    table_titles = [line for line in md.splitlines() if line.startswith("#")]
    assert len(table_titles) == 6 and all("SIMULATED" in t for t in table_titles)  # title, headline, paired, 3 per run
    assert titles and all("SIMULATED" in t for t in titles if t)
    assert "SIMULATED" in rep.report_html.read_text().split("<table>")[0]
    assert json.loads(rep.summary_json.read_text())["simulated"] is True


def test_summary_numbers_match_the_rows(runs: tuple[Path, Path, Path], report: tuple[Any, list[str]]) -> None:
    rep, _ = report
    summary = json.loads(rep.summary_json.read_text())
    assert summary["headline"]["n_steps"] == 47
    for run in summary["runs"]:
        rows = list(iter_rows(Path(run["rundir"]) / RESULTS))
        assert run["rows"] == len(rows) == 18
        for cfg in run["configs"]:
            sel = [r for r in rows if (r["n_steps"], r["lookback"]) == (cfg["n_steps"], cfg["lookback"])]
            assert cfg["n"] == len(sel) == 3
            assert cfg["first_answer_accuracy"]["k"] == sum(r["correct"] for r in sel)
            assert cfg["exact_step_rate"]["k"] == sum(r["exact"] for r in sel)
            lo, hi = cfg["first_answer_accuracy"]["low"], cfg["first_answer_accuracy"]["high"]
            assert lo <= cfg["first_answer_accuracy"]["value"] <= hi
            for label, m in cfg["labels"].items():
                assert m["k"] == sum(label in r["labels"] for r in sel)
            tokens = sum(r["usage"]["input_tokens"] + r["usage"]["output_tokens"] for r in sel) / len(sel)
            assert cfg["per_instance"]["total_tokens"] == pytest.approx(tokens)
            if run["mode"] == "guarded":
                assert cfg["per_instance"]["reprompts"] == pytest.approx(sum(r["reprompts"] for r in sel) / len(sel))
        head = next(h for h in summary["headline"]["runs"] if h["rundir"] == run["rundir"])
        at47 = [r for r in rows if r["n_steps"] == 47]
        assert head["metrics"]["first_answer_accuracy"]["k"] == sum(r["correct"] for r in at47)


@pytest.mark.slow
def test_cli_run_report_compare(runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    app = typer.Typer()
    register(app)
    cli = CliRunner()
    root = runs[0]
    res = cli.invoke(app, ["run", "--instances", str(root / "inst.jsonl"), "--mode", "guarded", "--model", "sim:paper",
                           "--out", str(tmp_path / "g"), "--configs", "5x2", "--limit", "2", "--chunk-size", "3", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "2 new rows" in res.output and "SIMULATED" in res.output
    assert len(list(iter_rows(tmp_path / "g" / RESULTS))) == 2
    res = cli.invoke(app, ["run", "--instances", str(root / "inst.jsonl"), "--mode", "raw", "--model", "sim:paper",
                           "--out", str(tmp_path / "g"), "--no-progress"])
    assert res.exit_code == 7 and "different run" in res.output
    res = cli.invoke(app, ["report", str(runs[1]), str(runs[2]), "--out", str(tmp_path / "rep")])
    assert res.exit_code == 0 and (tmp_path / "rep" / "report.html").exists(), res.output
    res = cli.invoke(app, ["compare", str(runs[1]), str(runs[2])])
    assert res.exit_code == 0 and "McNemar" in res.output and "overall" in res.output, res.output
    swapped = cli.invoke(app, ["compare", str(runs[2]), str(runs[1])])
    assert swapped.exit_code == 0 and swapped.output == res.output  # raw and guarded read from run.json
    same = cli.invoke(app, ["compare", str(runs[2]), str(runs[2])])
    assert same.exit_code == 2 and "one raw and one guarded" in same.output


@pytest.mark.slow
def test_cli_demo_on_the_simulator(tmp_path: Path) -> None:
    app = typer.Typer()
    register(app)
    res = CliRunner().invoke(app, ["demo", "--model", "sim:paper", "--out", str(tmp_path / "demo"),
                                   "--sizes", "5:2,23:1", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert "expected duration" in res.output and "SIMULATED" in res.output
    assert (tmp_path / "demo" / "report-sim-paper" / "report.html").exists()
    assert "report.html" in res.output and "report.md" in res.output


def test_two_runs_of_one_mode_are_told_apart_by_their_folder(runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    import shutil

    from stepguard.bench.aggregate import aggregate_run

    _, raw, guarded = runs
    other = tmp_path / "guarded-v1"
    shutil.copytree(guarded, other)
    labels = [aggregate_run(d).label for d in (raw, guarded, other)]
    assert labels[0].startswith("raw · ") and labels[1].startswith("guarded · ")
    assert labels[2].startswith("guarded (guarded-v1) · ") and "SIMULATED" in labels[2]


def test_guarded_deviations_are_reported_by_kind_and_ending(runs: tuple[Path, Path, Path], report: tuple[Any, list[str]]) -> None:
    rep, _ = report
    rows = list(iter_rows(runs[2] / RESULTS))
    events = [d for r in rows for d in r["guard"]["deviations"]]
    assert events and any(d["kind"] not in r["labels"] for r in rows for d in r["guard"]["deviations"])  # not only raw labels
    guarded = next(r for r in json.loads(rep.summary_json.read_text())["runs"] if r["mode"] == "guarded")
    total = guarded["overall"]["deviations"]
    assert total["caught"] == len(events)
    for kind in {d["kind"] for d in events}:
        assert total["by_kind"][kind] == pytest.approx(sum(d["kind"] == kind for d in events) / len(rows))
    assert sum(total["by_action"].values()) == len(events)
    assert sum(m["k"] for m in total["ended"].values()) == len(events)
    for cfg in guarded["configs"]:
        sel = [r for r in rows if (r["n_steps"], r["lookback"]) == (cfg["n_steps"], cfg["lookback"])]
        assert cfg["deviations"]["caught"] == sum(len(r["guard"]["deviations"]) for r in sel)
        assert cfg["deviations"]["instances_with"]["k"] == sum(bool(r["guard"]["deviations"]) for r in sel)
    md = rep.report_md.read_text()
    table = md[md.index("deviations the guard caught"):]
    header = table.splitlines()[2]
    assert "lookback_confusion / inst" in header and "ended verified" in header and "ended stopped" in header


def test_a_deviation_ends_as_its_step_did() -> None:
    guard = {"status": "failed", "steps": [{"var": "S1", "provenance": "model_verified"}, {"var": "S2", "provenance": "repaired"},
                                           {"var": "S3", "provenance": "flagged"}, {"var": "S4", "provenance": "missing"}],
             "deviations": [{"kind": "arithmetic_error", "step": s, "action": a}
                            for s, a in (("S1", "reprompt"), ("S2", "repair"), ("S3", "flag"), ("S4", "raise"))]
             + [{"kind": "truncated", "step": None, "action": "note"}]}
    got = caught_deviations({"mode": "guarded", "guard": guard})
    assert [(d.action, d.ended) for d in got] == [("reprompt", "verified"), ("repair", "repaired"), ("flag", "flagged"),
                                                 ("raise", "stopped"), ("note", "stopped")]
    assert caught_deviations({"mode": "guarded", "deviation_counts": {"type_error": 2}}) == [("type_error", "reprompt", None)] * 2
    assert caught_deviations({"mode": "raw", "labels": ["arithmetic_error"]}) == []


def test_every_plot_axis_is_labelled(report: tuple[Any, list[str]]) -> None:
    assert {a[0].split(":")[0] for a in AXES} == {"overlay.png", "accuracy.png", "labels.png", "guard_cost.png"}
    unlabelled = [title for title, x, y in AXES if not x.strip() or not y.strip()]
    assert not unlabelled


def test_the_accuracy_figure_names_what_each_mode_counts(report: tuple[Any, list[str]]) -> None:
    """Raw panels show first-answer accuracy; guarded panels verified completion, the guarded figure."""
    top = [(title, y) for title, _, y in AXES if title.startswith("accuracy.png:") and "exact-step" not in title]
    assert len(top) == 2, top
    raw, guarded = sorted(top, key=lambda t: "guarded" in t[0])
    assert "first-answer accuracy" in raw[0] and "first-answer accuracy" in raw[1]
    assert "verified completion" in guarded[0] and "verified completion" in guarded[1]


def test_a_run_on_the_native_runtime_says_so_in_its_label(runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """Temperature-0 replies differ between the runtimes, so two runs that differ only there are told apart."""
    import json
    import shutil

    from stepguard.bench.aggregate import aggregate_run

    _, raw, _ = runs
    native = tmp_path / "raw"
    shutil.copytree(raw, native)
    meta = json.loads((native / "run.json").read_text())
    meta["model"]["runtime"] = "native"
    (native / "run.json").write_text(json.dumps(meta))
    python_run, native_run = aggregate_run(raw), aggregate_run(native)
    assert "runtime" not in python_run.label and python_run.summary()["runtime"] is None
    assert "· native runtime" in native_run.label and native_run.summary()["runtime"] == "native"


@pytest.mark.parametrize(("modes", "same", "says"), [
    (("raw", "guarded"), True, "Raw first-answer accuracy vs guarded verified completion, same instances"),
    (("raw", "guarded"), False, "(runs on different instances: see the legend)"),
    (("raw",), True, "Raw first-answer accuracy by procedure length"),
    (("guarded",), True, "Guarded verified completion by procedure length"),
])
def test_the_overlay_title_says_what_is_drawn(modes: tuple[str, ...], same: bool, says: str) -> None:
    """A figure of raw runs alone does not claim a guarded curve, nor one of two instance files the same instances."""
    from stepguard.bench.overlay import Curve, _title

    title = _title([Curve(m, m, None, ((5, 1, 2),)) for m in modes], same)
    assert says in title and (same or "same instances" not in title)


def _demo_like_curves(n: int) -> list[Any]:
    """``n`` curves, raw and guarded in turn, as the demo's figure draws them: every one at 100% at 5
    steps, at 100% or 90% at 23 (a raw label below a higher point meets a guarded one above a lower
    point), and one alone at 95."""
    from stepguard.bench.overlay import Curve

    out = [Curve(f"run {i}", ("raw", "guarded")[i % 2], None, ((5, 3 + i, 3 + i), (23, 10 - (i % 2), 10))) for i in range(n)]
    return [*out, Curve("alone", "guarded", None, ((95, 20, 20),))]


@pytest.mark.parametrize("n", [2, 3, 4, 7])
def test_the_k_of_n_labels_of_one_step_count_never_overlap(n: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """At 5 and 23 steps the demo's figure wrote "10/10" over "3/3": each point's label is drawn, and
    after the figure is drawn (Agg) no two labels of one step count share a pixel, for any number of curves."""
    from matplotlib.transforms import Bbox

    from stepguard.bench.overlay import _LABEL_DY, plot_overlay

    figs: list[Any] = []
    save = plots._save
    monkeypatch.setattr(plots, "_save", lambda fig, path: figs.append(fig) or save(fig, path))
    curves = _demo_like_curves(n)
    plot_overlay(curves, tmp_path / "overlay.png", simulated=False, same_instances=False)
    (fig,) = figs
    renderer = fig.canvas.get_renderer()
    fig.draw(renderer)
    ax = fig.axes[0]
    labels = [t for t in ax.texts if re.fullmatch(r"\d+/\d+", t.get_text())]
    by_x: dict[float, list[Any]] = {}
    for t in labels:
        by_x.setdefault(t.xy[0], []).append(t)
    assert {x: sorted(t.get_text() for t in ts) for x, ts in by_x.items()} == {
        x: sorted(f"{k}/{m}" for c in curves for s, k, m in c.points if s == x) for x in (5, 23, 95)}
    for x, ts in by_x.items():
        boxes = sorted((Bbox.union([t.get_window_extent(renderer), *([t.get_bbox_patch().get_window_extent(renderer)]
                                                                     if t.get_bbox_patch() else [])]) for t in ts),
                       key=lambda b: b.y0)  # the text, with its box where it has one
        for low, high in pairwise(boxes):
            assert low.y1 <= high.y0, f"labels at {x} steps overlap: {low} and {high}"
    (alone,) = by_x[95]
    assert alone.xyann == (0, _LABEL_DY["guarded"])  # a label with none beside it stays where it was put


def test_labels_are_spread_away_from_their_points() -> None:
    from stepguard.bench.overlay import spread_labels

    assert spread_labels([10, 30], [8, 8], [False, False]) == [10, 30]  # apart already: unchanged
    assert spread_labels([10, 10], [8, 8], [False, False], gap=1) == [10, 19]  # above their points: the second up
    assert spread_labels([-10, -10], [8, 8], [True, True], gap=1) == [-10, -19]  # below: the second down
    # one below a higher point meets two above a lower one: the two above go up, it stays
    assert spread_labels([-2, 2, 2], [8, 8, 8], [True, False, False], gap=1) == [-2, 7, 16]
    with pytest.raises(ValueError, match="differ in length"):
        spread_labels([1, 2], [8], [True, True])


@pytest.mark.slow
def test_a_run_with_no_finished_row_yet_is_reported_not_a_traceback(runs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """A run that has just started (run.json, no results.jsonl): the report is made, its overlay empty."""
    import shutil

    from stepguard.bench.report import build_report

    _, raw, guarded = runs
    started = tmp_path / "guarded"
    started.mkdir()
    shutil.copy(guarded / "run.json", started / "run.json")
    for dirs in ([started], [raw, started]):
        rep = build_report(dirs, tmp_path / f"report{len(dirs)}")
        assert rep.plots[0].name == "overlay.png" and rep.plots[0].stat().st_size > 5_000
