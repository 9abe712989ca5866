"""compare_runs: the paired 2x2 table and the exact McNemar test, per configuration and overall."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scipy.stats import binomtest

from stepguard.bench.compare import compare_runs, mcnemar_exact
from tests.conftest import RunFactory


def _run(make_run: RunFactory, name: str, mode: str, outcomes: dict[str, tuple[int, int, bool]], simulated: bool = False) -> Path:
    rows = [{"id": rid, "n_steps": n, "lookback": lb, "correct": ok, "exact": False} for rid, (n, lb, ok) in outcomes.items()]
    return make_run(name, mode, rows, simulated)


def test_counts_and_exact_mcnemar(make_run: RunFactory) -> None:
    # config 95x7: 1 both right, 6 only guarded, 0 only raw, 2 both wrong; config 5x2: 1 only raw, 1 both right
    raw = {f"a{i}": (95, 7, i == 0) for i in range(9)} | {"b0": (5, 2, True), "b1": (5, 2, True), "x": (5, 2, True)}
    guarded = {f"a{i}": (95, 7, i <= 6) for i in range(9)} | {"b0": (5, 2, False), "b1": (5, 2, True), "y": (5, 2, True)}
    cmp = compare_runs(_run(make_run, "raw", "raw", raw), _run(make_run, "g", "guarded", guarded, simulated=True))
    by = {(p.n_steps, p.lookback): p for p in cmp.configs}
    p95 = by[(95, 7)]
    assert (p95.both_right, p95.only_guarded, p95.only_raw, p95.both_wrong) == (1, 6, 0, 2)
    assert p95.p_value == pytest.approx(2 * 0.5**6)
    p5 = by[(5, 2)]
    assert (p5.both_right, p5.only_guarded, p5.only_raw, p5.both_wrong) == (1, 0, 1, 0) and p5.p_value == 1.0
    o = cmp.overall
    assert (o.both_right, o.only_guarded, o.only_raw, o.both_wrong, o.n) == (2, 6, 1, 2, 11)
    assert o.p_value == pytest.approx(binomtest(6, 7, 0.5).pvalue)
    assert (cmp.only_in_raw, cmp.only_in_guarded) == (1, 1)
    d = json.loads(json.dumps(cmp.as_dict()))
    assert d["overall"]["raw_rate"] == pytest.approx(3 / 11) and d["overall"]["guarded_rate"] == pytest.approx(8 / 11)
    text = cmp.table()
    assert "SIMULATED" in text and "95x7" in text and "unpaired" in text


def test_raw_and_guarded_are_told_apart_by_mode_not_by_order(make_run: RunFactory) -> None:
    raw = _run(make_run, "first", "raw", {"i": (5, 1, False), "j": (5, 1, True)})
    guarded = _run(make_run, "second", "guarded", {"i": (5, 1, True), "j": (5, 1, True)})
    forward, backward = compare_runs(raw, guarded), compare_runs(guarded, raw)
    assert backward.as_dict() == forward.as_dict()
    assert (backward.raw, backward.guarded) == (str(raw), str(guarded))
    assert (backward.overall.only_guarded, backward.overall.only_raw) == (1, 0)


def test_two_runs_of_one_mode_are_refused(make_run: RunFactory) -> None:
    a = _run(make_run, "a", "guarded", {"i": (5, 1, True)})
    b = _run(make_run, "b", "guarded", {"i": (5, 1, False)})
    with pytest.raises(ValueError, match=r"one raw and one guarded run .*'guarded'.*'guarded'"):
        compare_runs(a, b)
    with pytest.raises(ValueError, match="one raw and one guarded"):
        compare_runs(a, a)


def test_metric_and_edge_cases(make_run: RunFactory) -> None:
    assert mcnemar_exact(0, 0) == 1.0
    a = _run(make_run, "a", "raw", {"i": (5, 1, True)})
    b = _run(make_run, "b", "guarded", {"i": (5, 1, True)})
    cmp = compare_runs(a, b, metric="exact")
    assert cmp.overall.both_wrong == 1 and not cmp.simulated
    with pytest.raises(ValueError, match="metric"):
        compare_runs(a, b, metric="speed")  # type: ignore[arg-type]
