"""scripts/fidelity_figure.py and the recorded cells behind the fidelity figures: the cells agree with
the table of the lab notes that recorded them (docs/lab/fidelity-history.md, "Results (2026-11-30)"),
the figure is drawn from them (not SIMULATED) or from run folders (SIMULATED on sim:paper), and the
pages show the committed PNGs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from stepguard.bench import plots
from stepguard.bench.overlay import curves_from_cells, paired_from_cells
from tests._paths import ROOT
from tests._scripts import load_script
from tests.conftest import SimRuns

CELLS = ROOT / "docs" / "data" / "fidelity_cells.json"
PAGE = ROOT / "docs" / "fidelity.md"
LAB = ROOT / "docs" / "lab" / "fidelity-history.md"
"""The lab notes that recorded the cells (the first guarded measurement, 2026-11-30)."""


def _script() -> Any:
    return load_script("scripts/fidelity_figure.py")


@pytest.fixture
def titles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    save = plots._save

    def capture(fig: Any, path: Path) -> Path:
        seen.append(fig.get_suptitle())
        seen.extend(t.get_text() for a in fig.axes for t in a.texts)
        return save(fig, path)

    monkeypatch.setattr(plots, "_save", capture)
    return seen


def test_recorded_cells_agree_with_the_fidelity_page() -> None:
    data = json.loads(CELLS.read_text(encoding="utf-8"))
    assert data["simulated"] is False and data["commands"] and data["recorded"]
    rows = {m.group(1): m.group(2).split("|") for m in re.finditer(r"^\| (\d+ x \d+) \|(.*)$", LAB.read_text(), re.M)}
    column = {"raw": 0, "guarded": 1}
    checked = 0
    for run in data["runs"]:
        for c in run["cells"]:
            text = rows[f"{c['n_steps']} x {c['lookback']}"][column[run["mode"]]]
            assert re.match(rf"\s*\**{c['k']}/{c['n']} ", text), (run["mode"], c, text)
            checked += 1
    assert checked == 16
    pooled = {(c.mode, s): (k, n) for c in curves_from_cells(data) if c.lookback is None for s, k, n in c.points}
    assert pooled[("raw", 23)] == (3, 10) and pooled[("guarded", 23)] == (10, 10)
    assert pooled[("raw", 95)] == (0, 2) and pooled[("guarded", 95)] == (7, 10) and pooled[("guarded", 50)] == (5, 6)


def test_recorded_pairs_and_their_mcnemar_p() -> None:
    got = paired_from_cells(json.loads(CELLS.read_text(encoding="utf-8")))
    assert [g[:5] for g in got] == [("5", 10, 0, 0, 0), ("23", 3, 0, 0, 7), ("50 and 95", 0, 1, 0, 3), ("all", 13, 1, 0, 10)]
    assert [g[5] for g in got] == pytest.approx([1.0, 2 / 2**7, 2 / 2**3, 2 / 2**10])
    page = LAB.read_text()
    assert "| 23 | 10 | 3 | 0 | 0 | 7 | 0.0156 |" in page and "| all | 24 | 13 | 1 | 0 | 10 | 0.00195 |" in page


@pytest.mark.parametrize(("page", "link", "figure"), [(PAGE, "img/", "decline.png"), (LAB, "../img/", "fidelity.png")])
def test_the_page_shows_the_committed_figure(page: Path, link: str, figure: str) -> None:
    assert f"]({link}{figure})" in page.read_text()
    assert (ROOT / "docs" / "img" / figure).stat().st_size > 10_000


@pytest.mark.slow
def test_figure_from_recorded_cells(tmp_path: Path, titles: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fig.png"
    assert _script().main(["--cells", str(CELLS), "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert titles and not any("SIMULATED" in t for t in titles)
    assert "qwen2.5-coder-1.5b" in titles[0] and "2605.00817" in titles[0]
    assert "| 23 | all | 10 | 3 | 0 | 0 | 7 | 0.0156 |" in capsys.readouterr().out


@pytest.mark.slow
def test_figure_from_simulated_run_folders(sim_runs: SimRuns, tmp_path: Path, titles: list[str],
                                           capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "fig.png"
    assert _script().main([str(sim_runs.raw), str(sim_runs.guarded), "--out", str(out)]) == 0
    assert out.is_file() and "SIMULATED" in titles[0] and "SIMULATED" in titles  # the title and the stamp
    printed = capsys.readouterr().out
    assert "(SIMULATED)" in printed and "| all | all | 18 |" in printed


def test_bad_cells_are_refused() -> None:
    with pytest.raises(ValueError, match=r"runs\[0\] \(raw\): cells\[0\]: need 0 <= k <= n"):
        curves_from_cells({"runs": [{"mode": "raw", "label": "raw", "cells": [{"n_steps": 5, "lookback": 2, "k": 3, "n": 2}]}]})
    with pytest.raises(ValueError, match="mode must be"):
        curves_from_cells({"runs": [{"mode": "other", "cells": []}]})
    with pytest.raises(SystemExit):
        _script().main(["--out", "x.png"])


def test_figure_from_run_folders_beside_one_mode_of_the_recorded_cells(
        sim_runs: SimRuns, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The docs figure draws the committed raw curve store beside the recorded guarded cells: both
    sources' curves are drawn, only the chosen mode is taken from the cells, and the cells' recorded
    pairs (of their own raw run) are not printed as if they paired with the run folders."""
    mod = _script()
    drawn: list[Any] = []
    monkeypatch.setattr("stepguard.bench.overlay.plot_overlay", lambda curves, path, **kw: drawn.append((curves, kw)) or path)
    out = tmp_path / "fig.png"
    assert mod.main([str(sim_runs.raw), "--cells", str(CELLS), "--cells-mode", "guarded", "--out", str(out)]) == 0
    curves, kw = drawn[0]
    recorded_guarded = [c for c in curves if c.run.startswith("guarded (bridge")]
    from_folder = [c for c in curves if c.run.startswith("raw · ")]
    assert recorded_guarded and from_folder and len(recorded_guarded) + len(from_folder) == len(curves)
    assert kw["simulated"]  # a simulated run folder marks the whole figure
    assert kw["same_instances"] is False  # two sources: the title does not claim one instance file
    assert "| 23 | all | 10 |" not in capsys.readouterr().out
    with pytest.raises(SystemExit):
        mod.main(["--cells-mode", "guarded", str(sim_runs.raw), "--out", str(out)])


@pytest.mark.parametrize(("setup", "says"), [
    ("empty-run", "no finished rows to draw in"),
    ("missing-run", "is not a run directory"),
    ("missing-cells", "No such file"),
    ("corrupt-cells", "bad.json: not JSON"),
    ("no-guarded", "no guarded runs recorded (--cells-mode guarded)"),
])
def test_inputs_that_cannot_be_drawn_are_errors_naming_them(
        sim_runs: SimRuns, tmp_path: Path, capsys: pytest.CaptureFixture[str], setup: str, says: str) -> None:
    import shutil

    args: list[str] = []
    if setup == "empty-run":  # a run that has just started: run.json, no rows yet
        run = tmp_path / "raw"
        run.mkdir()
        shutil.copy(sim_runs.raw / "run.json", run / "run.json")
        args = [str(run)]
    elif setup == "missing-run":
        args = [str(tmp_path / "nowhere")]
    elif setup == "missing-cells":
        args = ["--cells", str(tmp_path / "none.json")]
    elif setup == "corrupt-cells":
        (tmp_path / "bad.json").write_text("{")
        args = ["--cells", str(tmp_path / "bad.json")]
    else:
        data = json.loads(CELLS.read_text())
        (tmp_path / "raw-only.json").write_text(json.dumps({**data, "runs": [r for r in data["runs"] if r["mode"] == "raw"]}))
        args = ["--cells", str(tmp_path / "raw-only.json"), "--cells-mode", "guarded"]
    assert _script().main([*args, "--out", str(tmp_path / "fig.png")]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err


def test_out_must_be_a_png_file(tmp_path: Path) -> None:
    for out in (tmp_path, tmp_path / "fig.svg"):
        with pytest.raises(SystemExit):
            _script().main(["--cells", str(CELLS), "--out", str(out)])


@pytest.mark.slow
def test_one_mode_of_the_cells_is_subtitled_with_its_own_date(tmp_path: Path, titles: list[str]) -> None:
    assert _script().main(["--cells", str(CELLS), "--cells-mode", "guarded", "--out", str(tmp_path / "f.png")]) == 0
    title = " ".join(titles[0].split())
    assert "measured guarded 2026-11-30" in title and "raw 2026-11-29" not in title
