"""The overlay figure: raw first-answer accuracy and guarded verified completion vs procedure length,
on one pair of axes (the report's first figure, and docs/fidelity.md's).

A :class:`Curve` is one line: a mode's successes ``k`` of ``n`` per step count, either all
look-backs pooled or one look-back. Curves come from run folders (:func:`curves_from_runs`, via
:class:`~stepguard.bench.aggregate.RunAggregate`) or from recorded cell counts
(:func:`curves_from_cells`, the file ``docs/data/fidelity_cells.json``, for measurements whose run
folders are not at hand). :func:`plot_overlay` draws them: one colour per run, one line style per
look-back (pooled: solid, with its 95% Wilson interval, :func:`stepguard.bench.stats.wilson_interval`,
as a shaded band), and the paper's reported raw means as reference markers.

What is plotted, per instance: raw, the first answer equals the expected answer (``correct``);
guarded, the run ended verified with every value model-verified and right and nothing repaired
(``verified_correct``). The benchmark is this project's reconstruction of Panda et al. (arXiv
2605.00817); the reference markers are the paper's numbers on its own (unpublished) data.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any, NamedTuple

from stepguard.bench import plots
from stepguard.bench.aggregate import RunAggregate
from stepguard.bench.plots import SIM_NOTE, Figure
from stepguard.bench.stats import wilson_interval

__all__ = ["MODELS_CAPTION", "PAPER_RAW_MEANS", "Curve", "curves_from_cells", "curves_from_runs", "paired_from_cells", "plot_models",
           "plot_overlay", "spread_labels"]

PAPER_RAW_MEANS: tuple[tuple[int, float], ...] = ((5, 0.61), (95, 0.20))
"""(steps, mean first-answer accuracy) reported by Panda et al., arXiv 2605.00817 v1 (14 models;
v3: 63% at 5 steps); docs/benchmark.md. Their benchmark, not this reconstruction of it."""

PAPER_LABEL = "paper's reported raw mean, 14 models (arXiv 2605.00817v1; its data, not ours)"
METRIC_NAMES = {"raw": "first-answer accuracy", "guarded": "verified completion", "reask": "answer right after re-asks"}
"""What each mode's curve measures (raw: ``correct``; guarded: ``verified_correct``; reask, Instructor's
re-ask loop: ``correct``, the answer it delivered right)."""

_MODE_COLOURS = {"raw": ("#c0392b", "#e67e22", "#8e44ad"), "guarded": ("#1f5fa8", "#16a085", "#2c3e50"),
                 "reask": ("#7f8c8d", "#b7950b", "#6d4c41")}
_LOOKBACK_STYLES = ("--", ":", "-.", (0, (5, 1, 1, 1, 1, 1)), (0, (1, 3)))
_MARKERS = ("s", "^", "v", "D", "P")


class Curve(NamedTuple):
    """One line of the overlay figure."""

    run: str
    """The run's name (legend text; curves of one run share a colour)."""
    mode: str
    """``raw`` or ``guarded``."""
    lookback: int | None
    """The look-back of every point, or ``None``: all look-backs pooled."""
    points: tuple[tuple[int, int, int], ...]
    """``(n_steps, k, n)`` per step count, in step order: ``k`` of ``n`` instances succeeded."""

    @property
    def label(self) -> str:
        """The legend entry: run, what is measured, which look-back."""
        which = "all look-backs" if self.lookback is None else f"look-back {self.lookback}"
        return f"{self.run}: {METRIC_NAMES.get(self.mode, self.mode)}, {which}"


def _curves(run: str, mode: str, cells: Mapping[tuple[int, int], tuple[int, int]]) -> list[Curve]:
    """A run's curves from ``{(n_steps, lookback): (k, n)}``: pooled over look-backs, and one per
    look-back when there are several (look-back 0, a suite's "none", gives only the pooled one)."""
    lookbacks = sorted({lb for _, lb in cells})
    pooled: dict[int, list[int]] = {}
    for (n_steps, _), (k, n) in cells.items():
        acc = pooled.setdefault(n_steps, [0, 0])
        acc[0] += k
        acc[1] += n
    single = lookbacks[0] if len(lookbacks) == 1 and lookbacks[0] else None
    out = [Curve(run, mode, single, tuple((s, k, n) for s, (k, n) in sorted(pooled.items())))]
    if len(lookbacks) > 1:
        for lb in lookbacks:
            pts = tuple(sorted((s, k, n) for (s, l2), (k, n) in cells.items() if l2 == lb))
            out.append(Curve(run, mode, lb or None, pts))
    return out


def curves_from_runs(runs: Sequence[RunAggregate]) -> list[Curve]:
    """The overlay's curves of aggregated runs (raw: ``correct``; guarded: ``verified_correct``)."""
    out: list[Curve] = []
    for r in runs:
        guarded = r.mode == "guarded"
        cells = {key: (c.verified_correct if guarded else c.correct, c.n) for key, c in r.configs.items() if c.n}
        if cells:  # a run with no finished row yet has no line to draw
            out += _curves(r.label.replace(" · SIMULATED", ""), r.mode, cells)
    return out


def curves_from_cells(data: Mapping[str, Any]) -> list[Curve]:
    """The overlay's curves of recorded cell counts (the shape of ``docs/data/fidelity_cells.json``).

    Args:
        data: ``{"runs": [{"mode": "raw"|"guarded", "label": str, "cells": [{"n_steps", "lookback",
            "k", "n"}, ...]}, ...]}`` (other keys are ignored here).

    Raises:
        ValueError: a run without cells, an unknown mode, or a cell with ``k`` outside ``0..n``
            (names the run and the cell).
    """
    out: list[Curve] = []
    for i, run in enumerate(data.get("runs") or ()):
        mode, label = run.get("mode"), run.get("label") or run.get("mode")
        if mode not in METRIC_NAMES:
            raise ValueError(f"runs[{i}]: mode must be 'raw' or 'guarded', not {mode!r}")
        cells: dict[tuple[int, int], tuple[int, int]] = {}
        for j, c in enumerate(run.get("cells") or ()):
            k, n = int(c["k"]), int(c["n"])
            if n < 1 or not 0 <= k <= n:
                raise ValueError(f"runs[{i}] ({label}): cells[{j}]: need 0 <= k <= n and n >= 1, got k={k}, n={n}")
            cells[(int(c["n_steps"]), int(c.get("lookback") or 0))] = (k, n)
        if not cells:
            raise ValueError(f"runs[{i}] ({label}): no cells")
        out += _curves(str(label), mode, cells)
    if not out:
        raise ValueError("no runs with cells")
    return out


def paired_from_cells(data: Mapping[str, Any]) -> list[tuple[str, int, int, int, int, float]]:
    """The recorded pairs of a cells file (``data["pairs"]["groups"]``) with the exact McNemar p-value.

    Returns:
        ``(steps, both, neither, only_raw, only_guarded, p_value)`` per group, then ``"all"`` over
        the groups (none when the file records no pairs).
    """
    from stepguard.bench.compare import mcnemar_exact

    groups = [(str(g["steps"]), int(g["both"]), int(g["neither"]), int(g["only_raw"]), int(g["only_guarded"]))
              for g in (data.get("pairs") or {}).get("groups") or ()]
    if groups:
        groups.append(("all", sum(g[1] for g in groups), sum(g[2] for g in groups), sum(g[3] for g in groups),
                       sum(g[4] for g in groups)))
    return [(s, b, nn, r, g, mcnemar_exact(g, r)) for s, b, nn, r, g in groups]


def _colours(curves: Iterable[Curve]) -> dict[str, str]:
    colours: dict[str, str] = {}
    used = {"raw": 0, "guarded": 0}
    for c in curves:
        if c.run not in colours:
            palette = _MODE_COLOURS.get(c.mode, _MODE_COLOURS["guarded"])
            colours[c.run] = palette[used.get(c.mode, 0) % len(palette)]
            used[c.mode] = used.get(c.mode, 0) + 1
    return colours


def _title(curves: Sequence[Curve], same_instances: bool) -> str:
    """The first title line: what is drawn (raw, guarded or both), and whether on the same instances."""
    modes = {c.mode for c in curves if c.points}
    if not modes:
        return "Raw first-answer accuracy and guarded verified completion by procedure length"
    if modes >= {"raw", "guarded"}:
        what = "Raw first-answer accuracy vs guarded verified completion"
        return what + (", same instances" if same_instances else " (runs on different instances: see the legend)")
    if modes == {"raw"}:
        return "Raw first-answer accuracy by procedure length"
    return "Guarded verified completion by procedure length"


def _share_axes(ax: Any, steps: list[int]) -> None:
    """The axes of a figure of shares vs procedure length (the overlay's and the models figure's): ticks at
    the step counts drawn, the share in 10% steps, labels, grid, and the legend below the plot."""
    if len(steps) <= 15:
        ax.set_xticks(steps)
    if len(steps) == 1:  # one step count: a point in a readable axis, not ticks from 4.8 to 5.2
        ax.set_xlim(steps[0] - 5, steps[0] + 5)
    ax.set_ylim(-0.05, 1.08)
    ax.set_yticks([i / 10 for i in range(11)], [f"{10 * i}%" for i in range(11)])
    ax.set_xlabel("procedure length (steps)")
    ax.set_ylabel("share of instances (95% Wilson band)")
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)


def _curve_look(c: Curve, main: bool, styles: Mapping[int, int]) -> tuple[Any, str]:
    """The line style (a name or a dash pattern) and marker of curve ``c``: a main curve solid, circles for raw and squares for
    guarded; a look-back's own curve beside a pooled one in the style and marker of its look-back."""
    if main:
        return "-", "o" if c.mode == "raw" else "s"
    i = styles.get(c.lookback, 0) if c.lookback is not None else 0
    return _LOOKBACK_STYLES[i % len(_LOOKBACK_STYLES)], _MARKERS[i % len(_MARKERS)]


_LABEL_DY = {"guarded": 11.0, "raw": -10.0}
"""Where a point's ``k/n`` goes, in points from the point to the label's centre: a guarded curve's
above its point, any other's below (:func:`_separate_labels` moves labels of one step count apart)."""
_LABEL_GAP = 2.0
"""Points between two labels of one step count (each label's pale box reaches 0.8 points past its text)."""


def _draw_curve(ax: Any, c: Curve, colour: Any, main: bool, styles: Mapping[int, int]) -> list[Any]:
    """One curve of the overlay: its line, and for a main curve its band and ``k/n`` at each point.

    Returns:
        The ``k/n`` labels drawn (matplotlib ``Annotation`` objects; none for a curve that is not main).
    """
    xs = [s for s, _, _ in c.points]
    ys = [k / n for _, k, n in c.points]
    lows, highs = zip(*(wilson_interval(k, n) for _, k, n in c.points), strict=True) if c.points else ((), ())
    style, marker = _curve_look(c, main, styles)
    ax.plot(xs, ys, linestyle=style, marker=marker, color=colour, linewidth=2.4 if main else 1.3,
            markersize=7 if main else 5, label=c.label, zorder=3 if main else 2)
    if not main:
        return []  # its interval is in the tables; bands of every look-back would hide each other
    if len(xs) > 1:
        ax.fill_between(xs, lows, highs, color=colour, alpha=0.18, linewidth=0, zorder=1)
    else:
        ax.errorbar(xs, ys, yerr=[[ys[0] - lows[0]], [highs[0] - ys[0]]], color=colour, capsize=4, linestyle="none")
    dy = _LABEL_DY["guarded" if c.mode == "guarded" else "raw"]
    box = {"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.75}  # readable over a line
    return [ax.annotate(f"{k}/{n}", (s, y), textcoords="offset points", xytext=(0, dy), ha="center", va="center",
                        fontsize=8, color=colour, bbox=box, zorder=5) for (s, k, n), y in zip(c.points, ys, strict=True)]


def spread_labels(wanted: Sequence[float], heights: Sequence[float], below: Sequence[bool],
                  gap: float = _LABEL_GAP) -> list[float]:
    """Centres for labels stacked in one column, none overlapping another.

    Each label ``i`` wants its centre at ``wanted[i]`` and is ``heights[i]`` tall (any one unit,
    points on a figure). A label above its point (``below[i]`` false) is only moved up, away from
    the point, and one below its point only down; labels that still meet (one below a higher point
    and one above a lower one) are then moved up, lowest first. Two labels end at least ``gap`` apart.

    Returns:
        The centres, in the order of ``wanted``.

    Raises:
        ValueError: the three sequences differ in length.
    """
    if not len(wanted) == len(heights) == len(below):
        raise ValueError(f"wanted, heights and below differ in length: {len(wanted)}, {len(heights)}, {len(below)}")
    centres = [float(w) for w in wanted]

    def apart(i: int, j: int) -> float:
        return (heights[i] + heights[j]) / 2 + gap

    up = sorted((i for i in range(len(centres)) if not below[i]), key=lambda i: centres[i])
    for i, j in pairwise(up):
        centres[j] = max(centres[j], centres[i] + apart(i, j))
    down = sorted((i for i in range(len(centres)) if below[i]), key=lambda i: -centres[i])
    for i, j in pairwise(down):
        centres[j] = min(centres[j], centres[i] - apart(i, j))
    order = sorted(range(len(centres)), key=lambda i: centres[i])
    for i, j in pairwise(order):
        centres[j] = max(centres[j], centres[i] + apart(i, j))
    return centres


def _separate_labels(fig: Any, ax: Any, labels: Sequence[Any]) -> None:
    """Move the ``k/n`` labels of each step count apart (:func:`spread_labels`), from where they were
    placed (:data:`_LABEL_DY`): the positions are read after a layout, and read again until the layout
    no longer moves them (the labels are part of it)."""
    wanted = {id(a): float(a.xyann[1]) for a in labels}
    columns: dict[float, list[Any]] = {}
    for a in labels:
        columns.setdefault(float(a.xy[0]), []).append(a)
    columns = {x: col for x, col in columns.items() if len(col) > 1}
    for _ in range(4):  # the layout moves the axes with the labels: settled in one or two rounds
        fig.draw_without_rendering()
        moved = False
        per_point = fig.dpi / 72
        for col in columns.values():
            anchors = [float(ax.transData.transform(a.xy)[1]) / per_point for a in col]
            heights = [a.get_window_extent().height / per_point for a in col]
            centres = spread_labels([y + wanted[id(a)] for y, a in zip(anchors, col, strict=True)], heights,
                                    [wanted[id(a)] < 0 for a in col])
            for a, y, centre in zip(col, anchors, centres, strict=True):
                moved |= abs(float(a.xyann[1]) - (centre - y)) > 0.01
                a.xyann = (0, centre - y)
        if not moved:
            return


def _main_curves(curves: Sequence[Curve]) -> list[Curve]:
    """The curves drawn in full (band and ``k/n``): each run's pooled curve, or its look-back curves
    when it has no pooled one."""
    several = {c.run for c in curves if c.lookback is None} & {c.run for c in curves if c.lookback is not None}
    return [c for c in curves if c.lookback is None or c.run not in several]


def _steps_drawn(curves: Sequence[Curve], paper: bool) -> list[int]:
    """The step counts on the x axis: every curve's, and the paper's when its means are drawn."""
    return sorted({s for c in curves for s, _, _ in c.points} | ({x for x, _ in PAPER_RAW_MEANS} if paper else set()))


def _draw_paper_means(ax: Any) -> None:
    """The paper's reported raw means (:data:`PAPER_RAW_MEANS`) as labelled stars."""
    paper_xs, paper_ys = zip(*PAPER_RAW_MEANS, strict=True)
    ax.plot(paper_xs, paper_ys, linestyle="none", marker="*", markersize=15, color="black", label=PAPER_LABEL, zorder=4)
    for x, y in PAPER_RAW_MEANS:
        ax.annotate(f"paper {100 * y:.0f}%", (x, y), textcoords="offset points", xytext=(9, -3), fontsize=8)


def _overlay_title(curves: Sequence[Curve], same_instances: bool, subtitle: str, simulated: bool) -> str:
    """The overlay's title: what is drawn, the benchmark's source, then the subtitle and the simulation note if any."""
    title = _title(curves, same_instances) + \
        "\nstepguard's reconstruction of the benchmark of arXiv 2605.00817 (shaded: 95% Wilson intervals)"
    if subtitle:
        title += "\n" + textwrap.fill(subtitle, 120)
    if simulated:
        title += f"\n{SIM_NOTE}"
    return title


def plot_overlay(curves: Sequence[Curve], path: Path, *, simulated: bool, subtitle: str = "", paper: bool = True,
                 same_instances: bool = True) -> Path:
    """Draw the overlay figure into ``path`` (PNG).

    Args:
        curves: the lines (:func:`curves_from_runs`, :func:`curves_from_cells`). A run's main curve
            (all look-backs pooled, or its only one) is drawn solid with its 95% Wilson band and its
            ``k/n`` written at each point (the labels of one step count stacked apart, never
            overlapping: :func:`spread_labels`); beside a pooled curve, each look-back's is a thin line in
            a style of its own, without a band (its interval is in the report's tables).
        path: the PNG to write.
        simulated: stamp ``SIMULATED`` across the plot and in the title.
        subtitle: a second title line (model, date).
        paper: draw the paper's reported raw means (:data:`PAPER_RAW_MEANS`) as reference markers.
        same_instances: every curve's runs share one instance file (the title says so only then).

    Returns:
        ``path``.
    """
    fig = Figure(figsize=(9, 6.2), layout="constrained")
    ax = fig.subplots()
    colours = _colours(curves)
    styles = {lb: i for i, lb in enumerate(sorted({c.lookback for c in curves if c.lookback is not None}))}
    mains = _main_curves(curves)
    if not any(c.points for c in curves):
        ax.text(0.5, 0.6, "no finished instances yet", transform=ax.transAxes, ha="center", va="center", fontsize=14)
    labels = [a for c in curves if c.points for a in _draw_curve(ax, c, colours[c.run], c in mains, styles)]
    if paper:
        _draw_paper_means(ax)
    _share_axes(ax, _steps_drawn(curves, paper))
    if simulated:
        ax.text(0.5, 0.5, "SIMULATED", transform=ax.transAxes, fontsize=64, color="#d39e00", alpha=0.25,
                ha="center", va="center", rotation=25, zorder=0)
    fig.suptitle(_overlay_title(curves, same_instances, subtitle, simulated), fontsize=10)
    _separate_labels(fig, ax, labels)
    return plots._save(fig, path)


MODELS_CAPTION = ("Per model, all look-backs pooled: raw first-answer accuracy (solid, circles) and guarded verified "
                  "completion (dashed, squares) vs procedure length, one colour per model, 95% Wilson interval shaded; "
                  "stars: the paper's reported raw means over its 14 models (arXiv 2605.00817v1, on its data, not this "
                  "reconstruction). A model marked SIMULATED is stepguard's simulated executor: a simulation, never a "
                  "model's accuracy.")


_MODE_LINES = {"raw": "-", "guarded": "--", "reask": ":"}
"""Line style of each mode on the many-model figure (reask: Instructor's re-ask loop)."""


def _pooled_points(r: RunAggregate) -> list[tuple[int, int, int]]:
    """``(n_steps, k, n)`` per step count of run ``r``, all look-backs pooled, in step order: ``k``
    correct (verified correct for a guarded run) of ``n``; step counts with no instance left out."""
    guarded = r.mode == "guarded"
    cells: dict[int, list[int]] = {}
    for (n_steps, _), c in r.configs.items():
        acc = cells.setdefault(n_steps, [0, 0])
        acc[0] += c.verified_correct if guarded else c.correct
        acc[1] += c.n
    return [(s, k, n) for s, (k, n) in sorted(cells.items()) if n]


def _models_title(runs: Sequence[RunAggregate], n_models: int) -> str:
    """The many-model figure's title: what each line style is, the source, and a simulation note when any run is simulated."""
    reask = " and Instructor's re-ask loop (dotted)" if any(r.mode == "reask" for r in runs) else ""
    title = (f"Decline by procedure length, {n_models} model{'s' if n_models != 1 else ''}: raw first-answer accuracy (solid) "
             f"and guarded verified completion (dashed){reask}\nstepguard's reconstruction of the benchmark of arXiv 2605.00817")
    if any(r.simulated for r in runs):
        title += "\nentries marked SIMULATED are stepguard's simulated executor: not a model's accuracy"
    return title


def plot_models(runs: Sequence[RunAggregate], path: Path, *, paper: bool = True) -> Path:
    """The decline curve of each model on one pair of axes (the shape of the paper's 14-model figure).

    Args:
        runs: aggregated runs of one or more models (:attr:`RunAggregate.model_label` groups them):
            a raw run is drawn solid (``correct``), a guarded one dashed (``verified_correct``), both
            pooled over look-backs, in the model's colour, with the 95% Wilson band.
        path: the PNG to write.
        paper: draw the paper's reported raw means (:data:`PAPER_RAW_MEANS`).

    Returns:
        ``path``. A simulated model's legend entry says ``SIMULATED``, and so does the title when
        any run is simulated.
    """
    fig = Figure(figsize=(10, 6.8), layout="constrained")
    ax = fig.subplots()
    models = list(dict.fromkeys(r.model_label for r in runs))
    palette = plots.colormaps["tab10"]
    drawn: set[int] = set()
    for r in runs:
        guarded = r.mode == "guarded"
        pts = _pooled_points(r)
        if not pts:
            continue
        i = models.index(r.model_label)
        colour = palette(i % 10)
        shift = (i - (len(models) - 1) / 2) * min(0.6, 3 / len(models))  # models side by side: equal curves stay visible
        xs, ys = [s + shift for s, _, _ in pts], [k / n for _, k, n in pts]
        lows, highs = zip(*(wilson_interval(k, n) for _, k, n in pts), strict=True)
        ax.plot(xs, ys, linestyle=_MODE_LINES.get(r.mode, "-"), marker="s" if guarded else "^" if r.mode == "reask" else "o",
                color=colour, linewidth=2.2,
                label=f"{r.model_label}: {METRIC_NAMES[r.mode]}" + (f" ({r.rundir.name})" if r.rundir.name != r.mode else ""),
                zorder=3)
        if len(xs) > 1:
            ax.fill_between(xs, lows, highs, color=colour, alpha=0.12, linewidth=0, zorder=1)
        drawn.update(s for s, _, _ in pts)
    if not drawn:
        ax.text(0.5, 0.6, "no finished instances yet", transform=ax.transAxes, ha="center", va="center", fontsize=14)
    if paper:
        paper_xs, paper_ys = zip(*PAPER_RAW_MEANS, strict=True)
        ax.plot(paper_xs, paper_ys, linestyle="none", marker="*", markersize=15, color="black", label=PAPER_LABEL, zorder=4)
        drawn.update(paper_xs)
    steps = sorted(drawn)
    _share_axes(ax, steps)
    title = _models_title(runs, len(models))
    fig.suptitle("\n".join(textwrap.fill(line, 120) for line in title.split("\n")), fontsize=10)  # no line wider than the figure
    return plots._save(fig, path)
