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
