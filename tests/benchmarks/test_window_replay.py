"""benchmarks/window_rules.py --replay: the windows are cut exactly where the recorded model's first tries were wrong."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.window_rules import replayed_runs
from stepguard import GuardConfig
from stepguard.bench.generate import generate_instance


def _store(tmp_path: Path, wrong: list[str]) -> tuple[Path, Path]:
    inst = generate_instance(23, 2, seed=0, index=3)
    instances = tmp_path / "instances.jsonl"
    instances.write_text(inst.model_dump_json() + "\n")
    store = tmp_path / "store"
    store.mkdir()
    deviations = [{"step": v, "attempt": 0} for v in wrong] + [{"step": wrong[0], "attempt": 1}]  # a re-ask's deviation is not a cut
    (store / "results.jsonl").write_text(json.dumps({"id": inst.id, "guard": {"deviations": deviations}}) + "\n")
    return store, instances


def test_windows_start_after_each_recorded_first_try_error(tmp_path: Path) -> None:
    store, instances = _store(tmp_path, ["S12", "S5"])
    [(proc, _inputs, result, rec)] = list(replayed_runs(store, instances, GuardConfig(streamed=True, on_exhausted="flag")))
    assert result.status == "verified"
    assert [c.start for c in rec.calls if c.role == "window"] == [0, 5, 12]  # cut at S5 (index 4), then S12 (index 11)
    assert [(d.step, d.attempt) for d in result.deviations] == [("S5", 0), ("S12", 0)]  # right at the first re-ask


def test_a_narrower_rule_asks_fewer_steps_after_a_cut(tmp_path: Path) -> None:
    store, instances = _store(tmp_path, ["S5"])
    [(*_, rec)] = list(replayed_runs(store, instances, GuardConfig(streamed=True, adaptive=True, on_exhausted="flag")))
    windows = [(c.start, c.end) for c in rec.calls if c.role == "window"]
    assert windows[0] == (0, 23)
    assert windows[1][0] == 5 and windows[1][1] - windows[1][0] < 23 - 5  # halved after the cut
