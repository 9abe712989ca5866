"""Per-configuration summaries of raw-mode scores (``stepguard bench summarize``), and a plain-text table.

Scores are folded by the report's own :class:`~stepguard.bench.aggregate.Cell` (one reporting
pipeline, one label list: :data:`stepguard.verify.FAILURE_LABELS`); this module only groups
scores, counts instances without one, and renders rates as :class:`~stepguard.bench.stats.Rate`.

What is reported follows benchmark.md ("Report per configuration"): first-answer accuracy,
exact-step rate, each label's rate, per-step value accuracy, first-error position, with 95% Wilson
intervals and the instance count. Two choices are *ours*:

* per-step value accuracy pools the steps of all instances of a configuration (k = steps whose
  first line is right, n = N x instances); its interval treats steps as independent, which they
  are not within an instance, so read it as a lower bound on the uncertainty;
* the first-error position is a mean over the instances that have an arithmetic error (no
  interval: it is a mean, not a proportion); ``lookback_confusion`` is the share of those
  instances whose first wrong value is a wrong-operand reading.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from stepguard.bench.aggregate import LABEL_HEADINGS, Cell
from stepguard.bench.instances import Instance
from stepguard.bench.stats import Rate, rate
from stepguard.verify import FAILURE_LABELS, Score

__all__ = ["ConfigSummary", "render_table", "summarize"]

_EMPTY = Rate(0, 0, float("nan"), float("nan"), float("nan"))


@dataclass(frozen=True)
class ConfigSummary:
    """One row: the scores of one (n_steps, lookback) configuration."""

    n_steps: int
    """Procedure length N."""
    lookback: int | None
    """Look-back depth L (``None`` for procedures without one)."""
    count: int
    """Scored instances."""
    missing: int
    """Instances of the configuration with no score (only known when instances are given)."""
    accuracy: Rate
    """First-answer accuracy."""
    exact: Rate
    """Exact-step execution rate."""
    labels: dict[str, Rate]
    """Rate of each failure label (``missing_answer`` ... ``arithmetic_error``)."""
    step_accuracy: Rate
    """Per-step value accuracy, pooled over the configuration's steps."""
    first_error_mean: float | None
    """Mean 1-based position of the first wrong step, over instances with one; ``None`` if none."""
    lookback_confusion: Rate | None
    """Share of instances with an arithmetic error whose first wrong value is a wrong-operand reading."""

    @classmethod
    def from_cell(cls, n_steps: int, lookback: int | None, cell: Cell, missing: int = 0) -> ConfigSummary:
        """The row of one folded :class:`~stepguard.bench.aggregate.Cell` (all rates empty when it has no row)."""
        n = cell.n
        if n == 0:
            return cls(n_steps, lookback, 0, missing, _EMPTY, _EMPTY, dict.fromkeys(FAILURE_LABELS, _EMPTY), _EMPTY, None, None)
        errors = cell.first_error_n
        return cls(
            n_steps=n_steps,
            lookback=lookback,
            count=n,
            missing=missing,
            accuracy=rate(cell.correct, n),
            exact=rate(cell.exact, n),
            labels={label: rate(cell.labels[label], n) for label in FAILURE_LABELS},
            step_accuracy=rate(cell.step_values_correct, cell.steps_total) if cell.steps_total else _EMPTY,
            first_error_mean=cell.first_error_sum / errors if errors else None,
            lookback_confusion=rate(cell.lookback_confusion, errors) if errors else None,
        )


def summarize(scores: Iterable[Score], instances: Iterable[Instance] | None = None) -> list[ConfigSummary]:
    """Group scores by (n_steps, lookback) and compute the reported rates.

    Args:
        scores: one :class:`Score` per instance (a repeated id is counted once: the first).
        instances: optional; when given, each score's configuration is taken from its instance and
            instances without a score are counted in ``missing``.

    Returns:
        Rows sorted by (n_steps, lookback).

    Raises:
        ValueError: ``instances`` is given and a score's id is not among them (the first few named).
    """
    config_of: Mapping[str, tuple[int, int | None]] | None = None
    if instances is not None:
        config_of = {inst.id: (inst.n_steps, inst.lookback) for inst in instances}
    groups: dict[tuple[int, int | None], Cell] = defaultdict(Cell)
    seen: set[str] = set()
    unknown: list[str] = []
    for score in scores:
        if score.id in seen:
            continue
        seen.add(score.id)
        if config_of is None:
            groups[(score.n_steps, score.lookback)].add(dict(score))
        elif score.id in config_of:
            groups[config_of[score.id]].add(dict(score))
        else:
            unknown.append(score.id)
    if unknown:
        raise ValueError(f"{len(unknown)} scores have ids not among the instances: {', '.join(unknown[:5])}")
    missing: dict[tuple[int, int | None], int] = defaultdict(int)
    for id_, config in (config_of or {}).items():
        if id_ not in seen:
            missing[config] += 1
    keys = sorted(set(groups) | set(missing), key=lambda c: (c[0], -1 if c[1] is None else c[1]))
    return [ConfigSummary.from_cell(key[0], key[1], groups.get(key, Cell()), missing.get(key, 0)) for key in keys]


def _cell(r: Rate | None, intervals: bool) -> str:
    if r is None or r.n == 0:
        return "-"
    return r.percent(intervals)


def render_table(rows: Iterable[ConfigSummary], *, intervals: bool = True) -> str:
    """Render rows as a fixed-width text table (percentages; ``[low, high]`` = 95% Wilson interval).

    Columns: N, L, n (scored), acc (first-answer accuracy), exact, step (per-step value accuracy),
    one per failure label, lbconf (look-back confusion among arithmetic errors), err@ (mean first
    error position), and ``miss`` (instances without a score) when any is missing.
    """
    rows = list(rows)
    show_missing = any(r.missing for r in rows)
    header = ["N", "L", "n", "acc", "exact", "step", *(LABEL_HEADINGS[label] for label in FAILURE_LABELS), "lbconf", "err@"]
    if show_missing:
        header.append("miss")
    table = [header]
    for r in rows:
        cells = [str(r.n_steps), "-" if r.lookback is None else str(r.lookback), str(r.count)]
        cells += [_cell(x, intervals) for x in (r.accuracy, r.exact, r.step_accuracy)]
        cells += [_cell(r.labels.get(label), intervals) for label in FAILURE_LABELS]
        cells += [_cell(r.lookback_confusion, intervals), "-" if r.first_error_mean is None else f"{r.first_error_mean:.1f}"]
        if show_missing:
            cells.append(str(r.missing))
        table.append(cells)
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(row, widths, strict=True)).rstrip() for row in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"
