"""The one reporting pipeline's fold: rows into per-configuration counters (what summary.json holds).

Run-store rows (:func:`aggregate_run`) and raw-mode scores (:func:`stepguard.bench.summary.summarize`)
are folded by the same :class:`Cell`, one row at a time, so summarising a 55,000-row run holds
55 small cells, never the rows. Labels are the taxonomy's (:data:`stepguard.verify.FAILURE_LABELS`,
spelled in tables as :data:`LABEL_HEADINGS`). Rates carry 95% Wilson intervals (Wilson 1927, via
:func:`stepguard.bench.stats.wilson_interval`) and the instance count.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stepguard.bench._results import numbered_results, row_error
from stepguard.bench.compare import procedure_of
from stepguard.bench.rows import ACTIONS, ENDINGS, caught_deviations, row_grades
from stepguard.bench.stats import rate as stats_rate
from stepguard.bench.store import ERRORS, iter_rows, read_meta
from stepguard.verify import DEVIATION_KINDS, FAILURE_LABELS

__all__ = ["LABEL_HEADINGS", "Cell", "RunAggregate", "aggregate_run", "distinct_labels", "rate"]

LABEL_HEADINGS: dict[str, str] = {
    "missing_answer": "missing", "premature_answer": "premature", "under_executed": "under-exec",
    "extra_steps": "extra", "self_correction": "self-corr", "arithmetic_error": "arith",
}
"""The short column heading of each failure label (one spelling for every table)."""

_USAGE = ("model_calls", "input_tokens", "output_tokens", "cached_tokens", "wall_s", "model_s")


def rate(k: int, n: int) -> dict[str, Any]:
    """``{k, n, value, low, high}``: a share with its 95% Wilson interval (:func:`stepguard.bench.stats.rate`,
    the same keys ``stepguard bench summarize --json`` writes); ``value``, ``low``, ``high`` are
    ``None`` when ``n == 0``."""
    if n == 0:
        return {"k": k, "n": 0, "value": None, "low": None, "high": None}
    return stats_rate(k, n)._asdict()


@dataclass
class Cell:
    """Counters over the rows of one group (a configuration, a step count, or the whole run)."""

    n: int = 0
    correct: int = 0
    exact: int = 0
    first_answer_correct: int = 0
    verified_correct: int = 0
    labels: Counter[str] = field(default_factory=Counter)
    steps_total: int = 0
    step_values_correct: int = 0
    lookback_confusion: int = 0
    truncated: int = 0
    first_error_sum: int = 0
    first_error_n: int = 0
    reprompts: int = 0
    chunks: int = 0
    repaired: int = 0
    repaired_rows: int = 0
    usage: Counter[str] = field(default_factory=Counter)
    caught: Counter[str] = field(default_factory=Counter)
    """Guarded: deviations caught, by kind (events, not instances)."""
    actions: Counter[str] = field(default_factory=Counter)
    """Guarded: what the policy did about each caught deviation."""
    endings: Counter[str] = field(default_factory=Counter)
    """Guarded: how each caught deviation ended (:data:`stepguard.bench.rows.ENDINGS`)."""
    rows_with_deviations: int = 0
    """Guarded: instances with at least one caught deviation."""
    grades: Counter[str] = field(default_factory=Counter)
    """Guarded: committed values by grade (:data:`stepguard.guard.Grade`); a row written before grades: read
    from its steps' provenance (``model_verified`` as ``exact``)."""

    def add(self, row: dict[str, Any]) -> None:
        """Fold one result row in (a run-store row of either mode, or a raw-mode score's fields)."""
        self.n += 1
        self.correct += bool(row.get("correct"))
        self.exact += bool(row.get("exact"))
        self.first_answer_correct += bool(row.get("first_answer_correct", row.get("correct")))
        self.verified_correct += bool(row.get("verified_correct", row.get("exact")))
        self.labels.update(lb for lb in row.get("labels") or () if lb in FAILURE_LABELS)
        self.steps_total += int(row.get("n_steps") or 0)
        self.step_values_correct += int(row.get("step_values_correct") or 0)
        self.truncated += row.get("finish_reason") == "length" or bool((row.get("deviation_counts") or {}).get("truncated"))
        self.lookback_confusion += bool(row.get("lookback_confusion") or (row.get("deviation_counts") or {}).get("lookback_confusion"))
        if row.get("first_error_position") is not None:
            self.first_error_sum += int(row["first_error_position"])
            self.first_error_n += 1
        self.reprompts += int(row.get("reprompts") or 0)
        self.chunks += int(row.get("chunks") or 0)
        self.repaired += int(row.get("repaired") or 0)
        self.repaired_rows += bool(row.get("repaired"))
        usage = row.get("usage") or {}
        for k in _USAGE:
            self.usage[k] += usage.get(k) or 0
        if row.get("mode") == "guarded":
            self.grades.update(row_grades(row))
            caught = caught_deviations(row)
            self.rows_with_deviations += bool(caught)
            for d in caught:
                self.caught[d.kind] += 1
                self.actions[d.action] += 1
                if d.ended is not None:
                    self.endings[d.ended] += 1

    @property
    def caught_total(self) -> int:
        """Guarded: every deviation caught in the cell."""
        return sum(self.caught.values())

    def _mean(self, total: float) -> float | None:
        return total / self.n if self.n else None

    def metrics(self, mode: str) -> dict[str, Any]:
        """The cell as summary.json writes it: rates with Wilson intervals, per-instance means.

        Keys: ``n``, ``first_answer_accuracy``, ``exact_step_rate``, ``labels`` (each label's rate),
        ``step_value_accuracy`` (right step values / required steps), ``lookback_confusion`` (raw: the
        first wrong value is a wrong-operand reading; guarded: the guard caught one), ``truncated``
        (raw: the reply hit max_tokens; guarded: a chunk reply did),
        ``mean_first_error_position``
        (1-based, over instances with an error), ``per_instance`` (means of calls, tokens, seconds,
        and in guarded mode re-prompts, chunks, repaired values); guarded mode adds
        ``answer_right_any_provenance``, ``verified_correct_rate``, ``instances_with_repairs`` and ``grades``
        (committed values by grade).
        """
        out: dict[str, Any] = {
            "n": self.n,
            "first_answer_accuracy": rate(self.correct, self.n),
            "exact_step_rate": rate(self.exact, self.n),
            "labels": {lb: rate(self.labels[lb], self.n) for lb in FAILURE_LABELS},
            "step_value_accuracy": rate(self.step_values_correct, self.steps_total),
            "lookback_confusion": rate(self.lookback_confusion, self.n),
            "truncated": rate(self.truncated, self.n),
            "mean_first_error_position": self.first_error_sum / self.first_error_n if self.first_error_n else None,
            "per_instance": {k: self._mean(self.usage[k]) for k in _USAGE},
        }
        per = out["per_instance"]
        per["total_tokens"] = self._mean(self.usage["input_tokens"] + self.usage["output_tokens"])
        if mode == "guarded":
            per.update(reprompts=self._mean(self.reprompts), chunks=self._mean(self.chunks), repaired=self._mean(self.repaired))
            out["answer_right_any_provenance"] = rate(self.first_answer_correct, self.n)
            out["verified_correct_rate"] = rate(self.verified_correct, self.n)
            out["instances_with_repairs"] = self.repaired_rows
            out["grades"] = dict(sorted(self.grades.items()))
            out["deviations"] = self.deviation_metrics()
        return out

    def deviation_metrics(self) -> dict[str, Any]:
        """Guarded: the caught deviations, by kind and by how they ended (keys: see :meth:`metrics`)."""
        total = self.caught_total
        return {
            "caught": total,
            "per_instance": self._mean(total),
            "instances_with": rate(self.rows_with_deviations, self.n),
            "by_kind": {kind: self._mean(self.caught[kind]) for kind in DEVIATION_KINDS},
            "by_action": {action: self.actions[action] for action in ACTIONS},
            "ended": {end: rate(self.endings[end], total) for end in ENDINGS},
        }


@dataclass
class RunAggregate:
    """One run folded: its metadata and cells by configuration, by step count, and overall.

    Attributes:
        rundir: the run folder.
        meta: its run.json.
        configs: ``{(n_steps, lookback): Cell}`` (look-back 0 for procedures without one).
        by_steps: ``{n_steps: Cell}`` over every look-back.
        overall: one cell over every row.
        unresolved_errors: ids with an error row and no result row (not in any rate).
    """

    rundir: Path
    meta: dict[str, Any]
    configs: dict[tuple[int, int], Cell] = field(default_factory=dict)
    by_steps: dict[int, Cell] = field(default_factory=dict)
    overall: Cell = field(default_factory=Cell)
    unresolved_errors: int = 0
    suite_rows: int = 0
    """Rows that are cases of a user's suite (:func:`stepguard.bench.compare.procedure_of`), not instances."""
    folder: str | None = None
    """The run folder as the label names it; ``None``: its name (:func:`distinct_labels` sets a longer
    path where two runs of one report would otherwise have one label)."""

    @property
    def mode(self) -> str:
        """``raw`` or ``guarded``."""
        return str(self.meta.get("mode"))

    @property
    def model(self) -> str:
        """The model specification string."""
        return str((self.meta.get("model") or {}).get("spec"))

    @property
    def simulated(self) -> bool:
        """True when the run's model is the simulated executor (its numbers are no model's accuracy)."""
        return bool(self.meta.get("simulated"))

    @property
    def runtime(self) -> str | None:
        """The embedded model's runtime where it is not the default one (``"native"``: llama.cpp's own
        ``llama-server``, whose temperature-0 replies differ from the Python server's), else ``None``."""
        runtime = (self.meta.get("model") or {}).get("runtime")
        return str(runtime) if runtime else None

    @property
    def label(self) -> str:
        """A short name for tables and plot titles: the mode, the run folder's name where it is not
        the mode (two guarded runs side by side), the model, its runtime where it is not the default,
        and ``SIMULATED`` where it applies."""
        name = self.folder or self.rundir.name
        folder = f" ({name})" if name != self.mode else ""
        runtime = f" · {self.runtime} runtime" if self.runtime else ""
        return f"{self.mode}{folder} · {self.model}{runtime}" + (" · SIMULATED" if self.simulated else "")

    @property
    def model_label(self) -> str:
        """The model as the many-model report groups runs by it: the model, its runtime where it is not
        the default, and ``SIMULATED`` where it applies (a raw and a guarded run of one model share it)."""
        runtime = f" · {self.runtime} runtime" if self.runtime else ""
        return f"{self.model}{runtime}" + (" · SIMULATED" if self.simulated else "")

    def summary(self) -> dict[str, Any]:
        """The run's entry in summary.json."""
        def rows(cells: dict[Any, Cell]) -> list[dict[str, Any]]:
            out = []
            for key in sorted(cells):
                n_steps, lookback = key if isinstance(key, tuple) else (key, None)
                out.append({"n_steps": n_steps, "lookback": lookback, **cells[key].metrics(self.mode)})
            return out

        return {
            "rundir": str(self.rundir), "label": self.label, "mode": self.mode, "model": self.model,
            "runtime": self.runtime, "simulated": self.simulated, "rows": self.overall.n, "unresolved_errors": self.unresolved_errors,
            "guard_config": self.meta.get("guard_config"), "generation": self.meta.get("generation"),
            "instances_sha256": self.meta.get("instances_sha256"),
            "configs": rows(self.configs), "by_steps": rows(self.by_steps), "overall": self.overall.metrics(self.mode),
        }


def distinct_labels(runs: list[RunAggregate]) -> None:
    """Give runs that would share a label (two folders both named ``raw``, one model) labels that tell
    them apart: each such run's folder is named by as many of its path's last parts as that takes
    (``a/raw``, ``b/raw``). A report's table headings, summary.json's per-case columns and the plots'
    legends are keyed by label, so two runs with one label would read as one."""
    for depth in range(1, max((len(r.rundir.resolve().parts) for r in runs), default=1) + 1):
        labels = [r.label for r in runs]
        clashing = {lb for lb in labels if labels.count(lb) > 1}
        if not clashing:
            return
        for r in runs:
            if r.label in clashing:
                r.folder = "/".join(r.rundir.resolve().parts[-depth - 1:])


def aggregate_run(rundir: str | Path) -> RunAggregate:
    """Fold a run folder's results.jsonl (streamed) into a :class:`RunAggregate`.

    Raises:
        RunStoreError: run.json missing, or a corrupt line, a duplicate id, a row without a usable
            ``n_steps`` / ``lookback`` or with a field of the wrong type (names file and line).
    """
    rundir = Path(rundir)
    agg = RunAggregate(rundir, read_meta(rundir))
    done: set[str] = set()
    for path, lineno, row in numbered_results(rundir):
        done.add(row["id"])
        key = (row["n_steps"], row["lookback"] if row.get("lookback") is not None else 0)
        try:
            Cell().add(row)  # a field of the wrong type fails here, before any cell has counted the row
        except (TypeError, ValueError, AttributeError) as exc:
            raise row_error(path, lineno, f"row {row['id']!r}: a field of the wrong type ({type(exc).__name__}: {exc})") from None
        agg.configs.setdefault(key, Cell()).add(row)
        agg.by_steps.setdefault(key[0], Cell()).add(row)
        agg.overall.add(row)
        agg.suite_rows += procedure_of(row, agg.meta) is not None
    agg.unresolved_errors = len({r["id"] for r in iter_rows(rundir / ERRORS)} - done)
    return agg
