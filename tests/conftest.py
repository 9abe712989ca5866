"""Shared fixtures: benchmark instances, simulated raw and guarded runs, hand-written run stores.

Several test files built these themselves (an instances file from ``generate_grid``, a raw and a
guarded run of it on ``sim:paper``, a run store written row by row); they live here once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

SIM_GRID = ((5, 23, 47), (2, 7), 3, 1)
"""``(steps, look-backs, per configuration, seed)`` of :func:`sim_runs`: 18 instances, and on
``sim:paper`` the guarded run catches deviations of several kinds (arithmetic, look-back, under-executed)."""


@dataclass(frozen=True)
class SimRuns:
    """A raw and a guarded run of the same instances on the simulated executor."""

    root: Path
    instances: Path
    raw: Path
    guarded: Path


def write_sim_runs(root: Path, grid: tuple[Any, ...] = SIM_GRID) -> SimRuns:
    """Generate ``grid`` into ``root/inst.jsonl`` and run it raw and guarded (chunked) on ``sim:paper``."""
    from stepguard.adapters import load_model
    from stepguard.bench.generate import generate_grid
    from stepguard.bench.instances import write_instances
    from stepguard.bench.run import run_benchmark
    from stepguard.guard import GuardOptions

    steps, lookbacks, per_config, seed = grid
    instances = root / "inst.jsonl"
    write_instances(generate_grid(list(steps), list(lookbacks), per_config, seed=seed), instances)
    model = load_model("sim:paper")
    chunked = GuardOptions.parse({"follow": False, "substeps_together": False})  # the runs the golden figures were made of
    for mode in ("raw", "guarded"):
        run_benchmark(instances, mode, model, root / mode, concurrency=4, progress=False,  # type: ignore[arg-type]
                      guard_config=chunked if mode == "guarded" else None)
    return SimRuns(root, instances, root / "raw", root / "guarded")


@pytest.fixture(scope="session")
def sim_runs(tmp_path_factory: pytest.TempPathFactory) -> SimRuns:
    """One raw and one guarded ``sim:paper`` run of :data:`SIM_GRID` (read-only: copy before changing)."""
    return write_sim_runs(tmp_path_factory.mktemp("sim-runs"))


RunFactory = Callable[..., Path]


@pytest.fixture
def make_run(tmp_path: Path) -> RunFactory:
    """A factory: ``make_run(name, mode, rows, simulated=False)`` writes a run store of ``rows``
    (dicts with at least ``id``, ``n_steps``, ``lookback``) under ``tmp_path/name`` and returns its folder."""
    from stepguard.bench.store import RunStore

    def make(name: str, mode: str, rows: Iterable[dict[str, Any]], simulated: bool = False) -> Path:
        meta = {"model": {"spec": "m"}, "mode": mode, "guard_config": None, "generation": None,
                "instances_sha256": None, "simulated": simulated}
        path = tmp_path / name
        with RunStore.open(path, meta) as store:
            for row in rows:
                store.add_result({"mode": mode, **row})
        return path

    return make


_EXIT_STATUS: list[int] = [0]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Keep the run's exit status for :func:`pytest_unconfigure`'s exit watch."""
    _EXIT_STATUS[0] = int(exitstatus)


def pytest_unconfigure(config: pytest.Config) -> None:
    """After the summary: a hang while the process exits is reported and ended (tests/_exit_watch.py)."""
    from tests._exit_watch import arm

    arm(_EXIT_STATUS[0])
