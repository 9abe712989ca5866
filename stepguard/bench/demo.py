"""The demo: a small instance set, run raw and guarded on one model, then the report.

``stepguard bench demo`` is the README's first command. With no set-up beyond the install it
generates :data:`DEFAULT_SIZES` (3 instances at 5 steps, 1 at 23, look-back 2; :data:`SIM_SIZES`
with 95 steps added on the simulator), runs them raw and guarded on the embedded local model, and
writes the report::

    ./stepguard-demo/instances.jsonl
    ./stepguard-demo/raw-<model>/        run store (resumable: run the demo again to finish it, or with
                                         larger --sizes to add instances: only the new ones run)
    ./stepguard-demo/guarded-<model>/
    ./stepguard-demo/report-<model>/report.html, report.md, summary.json, *.png

On a real model the report ends with the demo's instances beside the committed measurement of the
embedded model, each labelled (:mod:`stepguard.bench.demo_evidence`).
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING

from stepguard.bench.report import Report, build_report
from stepguard.bench.run import RunSummary, arun_benchmark
from stepguard.model import ChatModel

if TYPE_CHECKING:
    from stepguard.guard import GuardConfig

__all__ = ["DEFAULT_SIZES", "SIM_SIZES", "DemoResult", "estimate_seconds", "parse_sizes", "run_demo"]

DEFAULT_SIZES: tuple[tuple[int, int], ...] = ((5, 3), (23, 1))
"""``(steps, instances)`` of the demo on a real model: raw and guarded, about 8 minutes on 2 idle CPU
cores with the model's start and the report (README; the demo prints its own estimate first)."""

SIM_SIZES: tuple[tuple[int, int], ...] = ((5, 3), (23, 2), (95, 1))
"""The demo's sizes on the simulated executor (seconds), and the full demo on a real model
(``--sizes 5:3,23:2,95:1``: about 20 minutes more on 2 idle CPU cores, the 95-step headline; README)."""

# Seconds per step on the embedded Qwen2.5-Coder-1.5B, 2 CPU cores, measured in the fidelity runs
# (docs/lab/fidelity-history.md): raw 22 s for 5 steps and 208 s for 23 (~37 generated tokens a
# step, at 4-5 tokens a second on these machines); guarded 9 s for 5 steps and 152 s for 23.
_RAW_S_PER_STEP, _GUARDED_S_PER_STEP, _START_S = 7.0, 5.5, 20.0
_REPORT_S = 10.0  # imports, plots and the report


def parse_sizes(text: str) -> tuple[tuple[int, int], ...]:
    """``"5:3,23:2,95:1"`` -> ``((5, 3), (23, 2), (95, 1))`` (steps:instances).

    Raises:
        ValueError: an item is not ``<steps>:<count>`` with steps >= 3 and count >= 1.
    """
    out = []
    for item in text.replace(" ", "").split(","):
        n, sep, k = item.partition(":")
        if not sep or not n.isdigit() or not k.isdigit() or int(n) < 3 or int(k) < 1:
            raise ValueError(f"size {item!r} is not <steps>:<count> (steps >= 3, count >= 1), e.g. 95:1")
        out.append((int(n), int(k)))
    return tuple(out)


def estimate_seconds(sizes: tuple[tuple[int, int], ...], simulated: bool) -> tuple[float, float]:
    """A rough (low, high) wall-time estimate of the demo in seconds: raw plus guarded plus start-up.

    For a real local model on 2 CPU cores (see the constants above); a simulated model takes seconds.
    """
    steps = sum(n * k for n, k in sizes)
    if simulated:
        return 5.0, 2 * _REPORT_S + 0.05 * steps
    mid = _START_S + _REPORT_S + steps * (_RAW_S_PER_STEP + _GUARDED_S_PER_STEP)
    return 0.6 * mid, 1.6 * mid


def _slug(spec: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", spec).strip("-")[:60] or "model"


@dataclass
class DemoResult:
    """What :func:`run_demo` produced: the instances file, both run summaries, the report."""

    instances: Path
    raw: RunSummary
    guarded: RunSummary
    report: Report


def _take(instances: Path, fresh: Path, root: Path) -> list[Path]:
    """Make ``fresh`` the demo's instances file; returns the run folders moved onto it.

    Where an earlier demo with other sizes left runs of the old file, they are first moved onto the
    new one (:func:`~stepguard.bench._rebase.rebase_runs`: only if the new set holds, unchanged,
    every instance they finished), so the demo resumes and runs only what is new; otherwise this
    raises and the old file stays, with every run that depends on it.
    """
    from stepguard.bench._rebase import rebase_runs, runs_of

    if instances.exists() and instances.read_bytes() == fresh.read_bytes():
        return []
    moved = rebase_runs(runs_of(root, instances), instances, fresh) if instances.exists() else []
    os.replace(fresh, instances)
    return moved


def run_demo(
    model: ChatModel,
    out: str | Path = "stepguard-demo",
    *,
    sizes: tuple[tuple[int, int], ...] = DEFAULT_SIZES,
    lookback: int = 2,
    seed: int = 0,
    concurrency: int = 1,
    guard_config: GuardConfig | None = None,
    progress: bool = True,
    echo: Callable[[str], None] = print,
) -> DemoResult:
    """Generate the demo instances, run them raw then guarded on ``model``, and build the report.

    Args:
        model: the model (the caller closes it).
        out: the demo folder (created; an earlier demo there is resumed, also with other sizes: runs
            keep their rows and run the instances that are new, where the new sizes hold every
            instance they finished; else RunStoreError, and nothing is overwritten).
        sizes: ``(steps, instances)`` pairs.
        lookback: the look-back depth of every instance.
        seed: the generator seed.
        concurrency: instances in flight (1 suits a single local server on a small machine).
        guard_config: a :class:`~stepguard.guard.GuardConfig` (default: reprompt, flag when spent).
        progress: show progress bars.
        echo: where status lines go.

    Raises:
        RunStoreError, ModelError, LocalServerError: as :func:`~stepguard.bench.run.run_benchmark`.
    """
    from stepguard.bench.generate import generate_grid
    from stepguard.bench.instances import write_instances

    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    instances = root / "instances.jsonl"
    grid = chain.from_iterable(generate_grid([n], [lookback], k, seed) for n, k in sizes)
    fresh = root / "instances.jsonl.new"
    count = write_instances(grid, fresh)
    slug = _slug(getattr(model, "spec", "model"))
    try:
        moved = _take(instances, fresh, root)
    finally:
        fresh.unlink(missing_ok=True)
    echo(f"{count} instances ({', '.join(f'{k} x {n} steps' for n, k in sizes)}, look-back {lookback}) -> {instances}")
    if moved:
        echo(f"  {', '.join(d.name for d in moved)}: kept their finished rows, the new instances run now")
    async def both() -> dict[str, RunSummary]:
        # one event loop for both modes: an async HTTP client is bound to the loop of its first call
        runs = {}
        for mode in ("raw", "guarded"):
            rundir = root / f"{mode}-{slug}"
            echo(f"{mode} mode -> {rundir}")
            runs[mode] = await arun_benchmark(instances, mode, model, rundir, concurrency=concurrency,
                                              guard_config=guard_config if mode == "guarded" else None,
                                              progress=progress)
            s = runs[mode]
            echo(f"  {s.written} new rows, {s.skipped} already done, {s.errors} errors, {s.wall_s:.1f} s")
        return runs

    runs = asyncio.run(both())
    report = build_report([root / f"raw-{slug}", root / f"guarded-{slug}"], root / f"report-{slug}")
    if not getattr(model, "simulated", False):  # a real model's few points beside the committed curve, each labelled
        from stepguard.bench.aggregate import aggregate_run
        from stepguard.bench.demo_evidence import add_committed_evidence

        add_committed_evidence(report, [aggregate_run(root / f"raw-{slug}"), aggregate_run(root / f"guarded-{slug}")])
    return DemoResult(instances, runs["raw"], runs["guarded"], report)
