"""The report's PNG plots, drawn with matplotlib's object API on the Agg canvas (no pyplot, no display).

Each function takes the runs' :class:`~stepguard.bench.aggregate.RunAggregate` and writes one PNG;
every panel title names the run (mode and model) and says ``SIMULATED`` when its model is the
simulated executor, and so does the figure title when any run is. Every axis is labelled with
what it shows and its unit.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from stepguard.bench._extra import import_extra
from stepguard.bench.aggregate import RunAggregate
from stepguard.verify import DEVIATION_KINDS, FAILURE_LABELS

FigureCanvasAgg = import_extra("matplotlib.backends.backend_agg").FigureCanvasAgg
if TYPE_CHECKING:  # matplotlib's own annotations; at run time it is imported as an extra
    from matplotlib.figure import Figure as Figure  # re-exported: overlay draws on it too
else:
    Figure = import_extra("matplotlib.figure").Figure
colormaps = import_extra("matplotlib").colormaps

__all__ = ["plot_accuracy", "plot_guard_cost", "plot_labels"]

SIM_NOTE = "SIMULATED executor: not a model's accuracy"
_KIND_COLOURS = colormaps["tab20"]
"""One colour per deviation kind (its index in DEVIATION_KINDS), the same in every panel."""


def _title(runs: Sequence[RunAggregate], text: str) -> str:
    return f"{text}\n{SIM_NOTE}" if any(r.simulated for r in runs) else text


def _save(fig: Figure, path: Path) -> Path:
    FigureCanvasAgg(fig)
    fig.savefig(path, dpi=100)
    return path


def _step_ticks(ax: Any, steps: list[int]) -> None:
    """Ticks at the step counts drawn (never 4.8, 5.0, 5.2 around one count), the axis widened around a single one."""
    if not steps:
        return
    if len(steps) <= 15:
        ax.set_xticks(steps, [str(n) for n in steps])
    if len(steps) == 1:
        ax.set_xlim(steps[0] - 5, steps[0] + 5)


def _axes(fig: Figure, rows: int, cols: int) -> list[list[Any]]:  # matplotlib's Axes
    grid = fig.subplots(rows, cols, squeeze=False)
    return [list(r) for r in grid]


_LOOKBACK_MARKERS = ("o", "s", "^", "D", "v", "P")
"""The accuracy figure's marker per look-back line (in look-back order)."""
_LOOKBACK_LINES = ("-", "--", ":", "-.", (0, (5, 1)), (0, (1, 1)))
"""Its line style per look-back line."""


def plot_accuracy(runs: Sequence[RunAggregate], path: Path) -> Path:
    """First-answer accuracy (raw runs) or verified completion (guarded runs: verified, every value
    model-verified and right, nothing repaired) on top, exact-step rate below, vs steps, one line per
    look-back, one column per run (raw and guarded side by side), 95% Wilson intervals as error bars."""
    fig = Figure(figsize=(4.6 * max(1, len(runs)), 7.5), layout="constrained")
    ax = _axes(fig, 2, max(1, len(runs)))
    for col, run in enumerate(runs):
        guarded = run.mode == "guarded"
        top = ("verified_correct_rate", "verified completion") if guarded else ("first_answer_accuracy", "first-answer accuracy")
        for row, (key, name) in enumerate((top, ("exact_step_rate", "exact-step rate"))):
            a = ax[row][col]
            lookbacks = sorted({lb for _, lb in run.configs})
            lengths = sorted({n for n, _ in run.configs})
            span = (lengths[-1] - lengths[0]) if len(lengths) > 1 else 10
            for j, lb in enumerate(lookbacks):
                pts = sorted((n, run.configs[(n, lb)].metrics(run.mode)[key]) for (n, l2) in run.configs if l2 == lb)
                # side by side, by a share of the axis, each in its own marker and line style, the first drawn
                # largest: lines that agree (all at 100%) stay told apart instead of hiding each other
                shift = (j - (len(lookbacks) - 1) / 2) * span * 0.012
                xs = [n + shift for n, _ in pts]
                ys = [m["value"] for _, m in pts]
                err = [[m["value"] - m["low"] for _, m in pts], [m["high"] - m["value"] for _, m in pts]]
                a.errorbar(xs, ys, yerr=err, marker=_LOOKBACK_MARKERS[j % len(_LOOKBACK_MARKERS)],
                           linestyle=_LOOKBACK_LINES[j % len(_LOOKBACK_LINES)], markersize=max(3.0, 8.0 - 1.2 * j),
                           capsize=3, label=f"look-back {lb}" if lb else "no look-back")
            a.set_ylim(-0.03, 1.03)
            _step_ticks(a, sorted({n for n, _ in run.configs}))
            a.set_xlabel("procedure length (steps)")
            a.set_ylabel(f"{name} (share of instances)")
            a.set_title(f"{name}\n{run.label}", fontsize=9)
            a.grid(alpha=0.3)
            if lookbacks:
                a.legend(fontsize=7)
    fig.suptitle(_title(runs, "Accuracy vs procedure length (95% Wilson intervals)"))
    return _save(fig, path)


def plot_labels(runs: Sequence[RunAggregate], path: Path) -> Path:
    """Failure labels (raw runs) or caught deviations (guarded runs) as stacked bars vs steps, one
    panel per run (all look-backs pooled).

    Raw: a bar segment is the share of instances carrying that label; labels overlap (one trace
    can carry several), so a bar's height is labels per instance and can exceed 1. Guarded: a
    segment is the deviations of one kind the guard caught per instance (every kind it caught,
    not only the raw-mode labels); the bar is what the guard corrected or flagged, not what it returned.
    """
    fig = Figure(figsize=(4.6 * max(1, len(runs)), 4.2), layout="constrained")
    ax = _axes(fig, 1, max(1, len(runs)))[0]
    for col, run in enumerate(runs):
        a = ax[col]
        steps = sorted(run.by_steps)
        xs = list(range(len(steps)))
        bottom = [0.0] * len(steps)
        guarded = run.mode == "guarded"
        kinds = [k for k in DEVIATION_KINDS if run.overall.caught[k]] if guarded else list(FAILURE_LABELS)
        for kind in kinds:
            cells = [run.by_steps[n] for n in steps]
            ys = [(c.caught[kind] if guarded else c.labels[kind]) / c.n for c in cells]
            a.bar(xs, ys, bottom=bottom, label=kind, color=_KIND_COLOURS(DEVIATION_KINDS.index(kind)))
            bottom = [b + y for b, y in zip(bottom, ys, strict=True)]
        a.set_xticks(xs, [str(n) for n in steps])
        a.set_xlabel("procedure length (steps)")
        a.set_ylabel("deviations caught per instance" if guarded else "labels per instance")
        a.set_title(f"{'deviations caught' if guarded else 'failure labels'}\n{run.label}", fontsize=9)
        if guarded and not kinds:
            a.text(0.5, 0.5, "no deviation caught", ha="center", va="center", transform=a.transAxes)
        if steps and kinds:
            a.legend(fontsize=6)
    fig.suptitle(_title(runs, "Failure labels (raw) and deviations caught (guarded) vs procedure length"))
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
    left.set_ylabel("re-prompts per instance")
    right.set_ylabel("tokens per instance (input + output)")
    steps = sorted({n for r in runs for n, _ in r.configs})
    for a in (left, right):
        _step_ticks(a, steps)
        a.set_ylim(bottom=0, top=max(1.0, a.get_ylim()[1]))  # never an axis from -0.04 to 0.04 around zero
        a.set_xlabel("procedure length (steps)")
        a.grid(alpha=0.3)
        if a.get_legend_handles_labels()[0]:
            a.legend(fontsize=6)
    fig.suptitle(_title(runs, "Cost of the guard vs procedure length"))
    return _save(fig, path)
