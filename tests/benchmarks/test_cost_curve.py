"""benchmarks/cost_curve.py: each guarded mode of the cost curve runs the mode its name says, as the
benchmark resolves it (every run's default follows the model, so "chunked" must ask for chunks)."""

from __future__ import annotations

import pytest

from stepguard.bench.suites import load_suite
from stepguard.guard import GuardOptions
from tests._paths import ROOT
from tests._scripts import load_script

COST = load_script("benchmarks/cost_curve.py")
CASE = load_suite(ROOT / "benchmarks" / "production" / "invoice.yaml")[0]


@pytest.mark.parametrize(("mode", "want"), [("chunked", (False, False)), ("streamed", (False, True)), ("follow", (True, False))])
@pytest.mark.parametrize("procedure", [CASE.procedure, None], ids=["production", "generated"])
def test_each_mode_resolves_to_the_mode_it_names(mode: str, want: tuple[bool, bool], procedure: object) -> None:
    config = GuardOptions.parse(COST.GUARDED[mode]).resolve(procedure, defaults=COST.GUARDED_DEFAULTS)
    assert (config.follow, config.streamed) == want


def test_the_measured_points_pair_the_committed_stores_by_case() -> None:
    """The embedded model's points are read from the committed stores, on the cases every store of a panel
    finished: at 95 steps the 20 instances (the default's store included), on the production suite the
    cases the default's store has finished so far."""
    import json

    points = COST.measured(ROOT / "benchmarks" / "stores")
    assert set(points["95"]) == {"chunked", "streamed", "follow"} and {p["n"] for p in points["95"].values()} == {20}
    done = {json.loads(line)["id"] for line in
            (ROOT / "benchmarks" / "stores" / "prod-follow" / "forms9" / "results.jsonl").read_text(encoding="utf-8").splitlines()}
    assert points["production"]["follow"]["n"] == len(done) and points["production"]["chunked"]["n"] == len(done)
    for panel in points.values():
        for point in panel.values():
            assert 0 < point["p"] <= 1 and point["calls"] >= 1


def test_a_panel_without_its_stores_has_no_points(tmp_path) -> None:  # type: ignore[no-untyped-def]
    assert COST.measured(tmp_path) == {}
