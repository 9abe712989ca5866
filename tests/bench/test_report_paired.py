"""The report's paired table on a constructed pair of run folders: counts, Wilson intervals and the
exact McNemar p-value computed by hand, in report.md, report.html and summary.json."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from stepguard.bench.compare import compare_runs
from stepguard.bench.report import build_report
from tests.conftest import RunFactory

Z = 1.959963984540054  # the 97.5% normal quantile


def wilson(k: int, n: int) -> tuple[float, float]:
    """Wilson (1927) score interval, by its formula (independent of scipy)."""
    centre = (k + Z * Z / 2) / (n + Z * Z)
    half = Z / (n + Z * Z) * math.sqrt(k * (n - k) / n + Z * Z / 4)
    return max(0.0, centre - half), min(1.0, centre + half)


def cell(k: int, n: int) -> str:
    low, high = wilson(k, n)
    return f"{k}/{n} {100 * k / n:.0f}% [{100 * low:.0f}, {100 * high:.0f}]"


def _rows(mode: str, n_steps: int, lookback: int, ok: list[int], size: int, fooled: tuple[int, ...] = ()) -> list[dict]:
    """``size`` rows of one cell; the indexes in ``ok`` succeed. Guarded rows in ``fooled`` have
    ``correct`` true but ``verified_correct`` false (the table must read verified completion)."""
    out = []
    for i in range(size):
        row = {"id": f"n{n_steps}-l{lookback}-i{i}", "n_steps": n_steps, "lookback": lookback, "exact": False,
               "labels": [], "usage": {"model_calls": 1, "input_tokens": 10, "output_tokens": 5}}
        if mode == "raw":
            row["correct"] = i in ok
        else:
            row.update(correct=i in ok or i in fooled, verified_correct=i in ok, status="verified" if i in ok else "flagged")
        out.append(row)
    return out


@pytest.fixture
def pair(make_run: RunFactory) -> tuple[Path, Path]:
    # 23x2, 6 pairs: raw right on 0, 1; guarded verified 0, 2, 3, 4, 5
    #   -> both 1 (i0), only raw 1 (i1), only guarded 4, neither 0; McNemar: binom(4 of 5) = 2 * 6/32 = 0.375
    # 95x7, 5 pairs: raw right on none; guarded verified 0, 1, 2 (3 answered right, not verified)
    #   -> both 0, only raw 0, only guarded 3, neither 2; McNemar: 2 * 1/8 = 0.25
    # overall 11 pairs: both 1, only raw 1, only guarded 7, neither 2; McNemar: 2 * 9/256 = 0.0703125
    raw = _rows("raw", 23, 2, [0, 1], 6) + _rows("raw", 95, 7, [], 5)
    raw.append({"id": "raw-only", "n_steps": 23, "lookback": 2, "correct": True, "exact": False, "labels": []})
    guarded = _rows("guarded", 23, 2, [0, 2, 3, 4, 5], 6) + _rows("guarded", 95, 7, [0, 1, 2], 5, fooled=(3,))
    guarded.append({"id": "guarded-only", "n_steps": 95, "lookback": 7, "correct": True, "verified_correct": True,
                    "exact": True, "labels": []})
    return make_run("raw", "raw", raw), make_run("guarded", "guarded", guarded)


EXPECTED = [  # steps, look-back, pairs, raw right, guarded verified, both, neither, only raw, only guarded, p
    ("23", "2", 6, 2, 5, 1, 0, 1, 4, "0.375"),
    ("95", "7", 5, 0, 3, 0, 2, 0, 3, "0.25"),
    ("all", "all", 11, 2, 8, 1, 2, 1, 7, "0.0703"),
]


def _md_row(e: tuple) -> str:
    steps, lb, n, raw, guarded, both, neither, only_raw, only_guarded, p = e
    return f"| {steps} | {lb} | {n} | {cell(raw, n)} | {cell(guarded, n)} | {both} | {neither} | {only_raw} | {only_guarded} | {p} |"


def test_paired_counts_and_mcnemar(pair: tuple[Path, Path]) -> None:
    cmp = compare_runs(*pair, metric="verified")
    by = {(p.n_steps, p.lookback): p for p in cmp.configs}
    a, b, o = by[(23, 2)], by[(95, 7)], cmp.overall
    assert (a.both_right, a.both_wrong, a.only_raw, a.only_guarded) == (1, 0, 1, 4)
    assert (b.both_right, b.both_wrong, b.only_raw, b.only_guarded) == (0, 2, 0, 3)
    assert (o.both_right, o.both_wrong, o.only_raw, o.only_guarded, o.n) == (1, 2, 1, 7, 11)
    assert a.p_value == pytest.approx(12 / 32) and b.p_value == pytest.approx(2 / 8) and o.p_value == pytest.approx(18 / 256)
    assert (cmp.only_in_raw, cmp.only_in_guarded) == (1, 1)
    d = a.as_dict()
    assert (d["raw_right"], d["guarded_right"]) == (2, 5)
    assert d["raw_interval"] == pytest.approx(wilson(2, 6)) and d["guarded_interval"] == pytest.approx(wilson(5, 6))
    # metric "correct" reads the guarded row's correct: the answered-but-unverified instance counts
    assert compare_runs(*pair).overall.only_guarded == 8


@pytest.mark.slow
def test_paired_table_in_report_md_html_and_summary(pair: tuple[Path, Path], tmp_path: Path) -> None:
    rep = build_report(list(pair), tmp_path / "rep")
    md = rep.report_md.read_text()
    for e in EXPECTED:
        assert _md_row(e) in md, _md_row(e)
    assert "left out, ran in one mode only: 1 raw, 1 guarded" in md and "SIMULATED" not in md
    assert md.index("### Paired: raw") < md.index("raw · m: per configuration")
    page = rep.report_html.read_text()
    for steps, lb, n, raw, guarded, both, neither, only_raw, only_guarded, p in EXPECTED:
        cells = [steps, lb, n, cell(raw, n), cell(guarded, n), both, neither, only_raw, only_guarded, p]
        assert "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>" in page
    paired = json.loads(rep.summary_json.read_text())["paired"]
    assert len(paired) == 1 and paired[0]["metric"] == "verified"
    assert paired[0]["overall"]["p_value"] == pytest.approx(18 / 256)
    assert [p.overall.n for p in rep.paired] == [11]


@pytest.mark.slow
def test_no_paired_table_without_shared_instances(make_run: RunFactory, tmp_path: Path) -> None:
    raw = make_run("raw", "raw", _rows("raw", 5, 2, [0], 2))
    rep = build_report([raw], tmp_path / "rep")
    assert rep.paired == [] and "Paired" not in rep.report_md.read_text()
    assert rep.plots[0].name == "overlay.png"


def test_compare_prints_the_same_table_in_markdown(pair: tuple[Path, Path]) -> None:
    from typer.testing import CliRunner

    from stepguard.cli import app

    out = CliRunner().invoke(app, ["bench", "compare", str(pair[0]), str(pair[1]), "--metric", "verified", "--markdown"])
    assert out.exit_code == 0, out.output
    for e in EXPECTED:
        assert _md_row(e) in out.output, _md_row(e)
    assert "| raw first answer right [95% CI] | guarded verified completion [95% CI] |" in out.output
    # another metric is named as such: exact-step counts, not "verified completion"
    exact = CliRunner().invoke(app, ["bench", "compare", str(pair[0]), str(pair[1]), "--metric", "exact", "--markdown"])
    assert exact.exit_code == 0 and "| raw exact-step [95% CI] | guarded exact-step [95% CI] |" in exact.output
    assert "verified completion" not in exact.output
    both = CliRunner().invoke(app, ["bench", "compare", str(pair[0]), str(pair[1]), "--json", "--markdown"])
    assert both.exit_code == 2 and "choose one" in both.output
