"""The demo run again with larger sizes in the same folder resumes, running only the new instances;
sizes that leave out finished instances are refused before anything is overwritten."""

from __future__ import annotations

from pathlib import Path

import pytest

from stepguard.adapters import load_model
from stepguard.bench.demo import run_demo
from stepguard.bench.store import read_meta
from stepguard.errors import RunStoreError

pytestmark = pytest.mark.slow


def test_larger_sizes_add_instances_and_smaller_ones_are_refused_untouched(tmp_path: Path) -> None:
    model = load_model("sim:paper")
    out = tmp_path / "d3"
    first = run_demo(model, out, sizes=((5, 3), (23, 1)), concurrency=2, progress=False, echo=lambda _: None)  # type: ignore[arg-type]
    assert first.raw.written == first.guarded.written == 4
    said: list[str] = []
    again = run_demo(model, out, sizes=((5, 3), (23, 2), (95, 1)), concurrency=2, progress=False, echo=said.append)  # type: ignore[arg-type]
    assert (again.raw.skipped, again.raw.written, again.guarded.skipped, again.guarded.written) == (4, 2, 4, 2)
    assert any("kept their finished rows" in line for line in said)
    assert read_meta(again.raw.rundir)["instances_sha256_earlier"]
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.suffix in (".json", ".jsonl")}
    with pytest.raises(RunStoreError, match=r"finished instances are not in the new instance set.*nothing was changed"):
        run_demo(model, out, sizes=((5, 2),), progress=False, echo=lambda _: None)  # type: ignore[arg-type]
    assert {p: p.read_bytes() for p in before} == before and not (out / "instances.jsonl.new").exists()
