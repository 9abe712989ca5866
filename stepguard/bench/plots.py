"""The report's PNG plots, drawn with matplotlib's object API on the Agg canvas (no pyplot, no display).

Each function takes the runs' :class:`~stepguard.bench.aggregate.RunAggregate` and writes one PNG;
every panel title names the run (mode and model) and says ``SIMULATED`` when its model is the
simulated executor, and so does the figure title when any run is.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from stepguard.bench._extra import import_extra
from stepguard.bench.aggregate import FAILURE_LABELS, RunAggregate

FigureCanvasAgg = import_extra("matplotlib.backends.backend_agg").FigureCanvasAgg
Figure = import_extra("matplotlib.figure").Figure

__all__ = ["plot_accuracy", "plot_guard_cost", "plot_labels"]

SIM_NOTE = "SIMULATED executor: not a model's accuracy"


def _title(runs: Sequence[RunAggregate], text: str) -> str:
    return f"{text}\n{SIM_NOTE}" if any(r.simulated for r in runs) else text


def _save(fig: Figure, path: Path) -> Path:
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=100)
    return path


def _axes(fig: Figure, rows: int, cols: int) -> list[list]:  # type: ignore[type-arg]
    grid = fig.subplots(rows, cols, squeeze=False)
    return [list(r) for r in grid]


def plot_accuracy(runs: Sequence[RunAggregate], path: Path) -> Path:
    """First-answer accuracy (top) and exact-step rate (bottom) vs steps, one line per look-back,
    one column per run (raw and guarded side by side), 95% Wilson intervals as error bars."""
    fig = Figure(figsize=(4.6 * max(1, len(runs)), 7.5), layout="constrained")
    ax = _axes(fig, 2, max(1, len(runs)))
    for col, run in enumerate(runs):
        for row, (key, name) in enumerate((("first_answer_accuracy", "first-answer accuracy"), ("exact_step_rate", "exact-step rate"))):
            a = ax[row][col]
            lookbacks = sorted({lb for _, lb in run.configs})
            for j, lb in enumerate(lookbacks):
                pts = sorted((n, run.configs[(n, lb)].metrics(run.mode)[key]) for (n, l2) in run.configs if l2 == lb)
                shift = (j - (len(lookbacks) - 1) / 2) * 0.6  # side by side, so intervals do not hide each other
                xs = [n + shift for n, _ in pts]
                ys = [m["value"] for _, m in pts]
                err = [[m["value"] - m["low"] for _, m in pts], [m["high"] - m["value"] for _, m in pts]]
                a.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=f"look-back {lb}" if lb else "no look-back")
            a.set_ylim(-0.03, 1.03)
            a.set_xlabel("steps")
            a.set_ylabel(name)
            a.set_title(f"{name}\n{run.label}", fontsize=9)
            a.grid(alpha=0.3)
            if lookbacks:
                a.legend(fontsize=7)
    fig.suptitle(_title(runs, "Accuracy vs procedure length (95% Wilson intervals)"))
    return _save(fig, path)


def plot_labels(runs: Sequence[RunAggregate], path: Path) -> Path:
    """Failure labels as stacked bars vs steps, one panel per run (all look-backs pooled).

    A bar segment is the share of instances carrying that label; labels overlap (one trace can
    carry several), so a bar's height is labels per instance and can exceed 1. In guarded mode the
    labels are the deviations the guard caught, not what it returned.
    """
    fig = Figure(figsize=(4.6 * max(1, len(runs)), 4.2), layout="constrained")
    ax = _axes(fig, 1, max(1, len(runs)))[0]
    for col, run in enumerate(runs):
        a = ax[col]
        steps = sorted(run.by_steps)
        xs = list(range(len(steps)))
        bottom = [0.0] * len(steps)
        for lb in FAILURE_LABELS:
            ys = [run.by_steps[n].labels[lb] / run.by_steps[n].n for n in steps]
            a.bar(xs, ys, bottom=bottom, label=lb)
            bottom = [b + y for b, y in zip(bottom, ys)]
        a.set_xticks(xs, [str(n) for n in steps])
        a.set_xlabel("steps")
        a.set_ylabel("labels per instance" if run.mode == "raw" else "deviations caught per instance")
        a.set_title(f"failure labels\n{run.label}", fontsize=9)
        if steps:
            a.legend(fontsize=6)
    fig.suptitle(_title(runs, "Failure labels vs procedure length (labels overlap)"))
    return _save(fig, path)


def plot_guard_cost(runs: Sequence[RunAggregate], path: Path) -> Path | None:
    """Re-prompts (left) and tokens (right) per instance vs steps, one line per look-back per
    guarded run; raw runs' tokens are drawn dashed for comparison. ``None`` without a guarded run."""
    guarded = [r for r in runs if r.mode == "guarded"]
    if not guarded:
        return None
    fig = Figure(figsize=(10, 4.2), layout="constrained")
    left, right = _axes(fig, 1, 2)[0]
    for run in runs:
        for lb in sorted({lb for _, lb in run.configs}):
            cells = sorted((n, c) for (n, l2), c in run.configs.items() if l2 == lb)
            xs = [n for n, _ in cells]
            tokens = [(c.usage["input_tokens"] + c.usage["output_tokens"]) / c.n for _, c in cells]
            style = "-" if run.mode == "guarded" else "--"
            right.plot(xs, tokens, style, marker="o", label=f"{run.label}, L{lb}")
            if run.mode == "guarded":
                left.plot(xs, [c.reprompts / c.n for _, c in cells], marker="o", label=f"{run.label}, L{lb}")
    mark = " · SIMULATED" if any(r.simulated for r in runs) else ""
    left.set_title(f"re-prompts per instance (guarded){mark}", fontsize=9)
    right.set_title(f"input + output tokens per instance{mark}", fontsize=9)
    for a in (left, right):
        a.set_xlabel("steps")
        a.grid(alpha=0.3)
        if a.get_legend_handles_labels()[0]:
            a.legend(fontsize=6)
    fig.suptitle(_title(runs, "Cost of the guard vs procedure length"))
    return _save(fig, path)
