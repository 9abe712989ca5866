"""The report's tables and figure for runs of a user's suite (procedure files with input sets).

A suite varies procedures and input sets, not step counts and look-backs, so its report is laid
out by those (:func:`stepguard.bench.report.build_report` uses this module when every run is of a
suite, :func:`is_suite_run`):

* :func:`procedure_table`: per procedure and over all cases, each run's rate with its 95% Wilson
  interval (:func:`stepguard.bench.stats.rate`): raw, the answer right; guarded, verified
  completion (every value model-verified and right, nothing repaired).
* :func:`case_table`: one line per case: its inputs and expected answer, then per run the answer,
  the verdict and where it first went wrong (raw: the first wrong step line, or the first step
  whose value the reply never shows, or the answer; guarded: the first step not model-verified,
  with the deviations caught there).
* :func:`plot_procedures`: the rates per procedure as grouped bars (categories, never a one-point
  numeric axis).

None of it carries the paper's framing: the cases are the user's, not generated instances.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stepguard.bench._results import numbered_results
from stepguard.bench._table import Table
from stepguard.bench.aggregate import Cell, RunAggregate, rate
from stepguard.bench.compare import procedure_of

__all__ = ["SUITE_NOTE", "SuiteRun", "case_table", "check_same_cases", "is_suite_run", "plot_procedures", "procedure_table", "suite_run"]

SUITE_NOTE = ("Your procedures: each case is a procedure file with one of its input sets. Raw mode sends a procedure's "
              "own prompt file (NAME.prompt.yaml: the user's messages, the answer read as declared) where it has one, "
              "else stepguard's raw prompt; guarded mode runs the procedure under the guard.")

_RATE_NAME = {"raw": "answer right", "guarded": "verified completion"}


def is_suite_run(run: RunAggregate) -> bool:
    """Is ``run`` a run of a user's suite (every row a case of a procedure file), not of an instances file?
    An instances file's rows are never cases, even with no look-back (a JSONL of the user's own procedures)."""
    return run.overall.n > 0 and run.suite_rows == run.overall.n


@dataclass
class SuiteRun:
    """One run of a suite: its aggregate, its rows by case id and its cells by procedure."""

    agg: RunAggregate
    rows: dict[str, dict[str, Any]]
    by_procedure: dict[str, Cell] = field(default_factory=dict)

    def success(self, row: dict[str, Any]) -> bool:
        """What the run's rate counts: raw, the answer right; guarded, verified completion."""
        return bool(row.get("verified_correct") if self.agg.mode == "guarded" else row.get("correct"))


def _procedure(row: dict[str, Any]) -> str:
    return procedure_of(row) or str(row["id"])


def suite_run(agg: RunAggregate) -> SuiteRun:
    """Read a suite run's rows (a suite holds hundreds of cases at most: held in memory) and fold them by procedure."""
    out = SuiteRun(agg, {})
    for _, _, row in numbered_results(agg.rundir):
        out.rows[str(row["id"])] = row
        out.by_procedure.setdefault(_procedure(row), Cell()).add(row)
    return out


def check_same_cases(runs: Sequence[SuiteRun]) -> None:
    """Refuse runs whose rows of one case id hold different cases (rows' ``instance_sha256``): the
    per-case table shows one line per id, its inputs and expected answer from the first run, so
    runs of two suites that share ids (another input set under ``inv/a``) would be shown side by
    side as if on one case. Rows that record no hash are not checked.

    Raises:
        InstancesDiffer: the first such id, with the two run folders (a ValueError).
    """
    from stepguard.bench.compare import InstancesDiffer

    seen: dict[str, tuple[str, Path]] = {}
    for r in runs:
        for case_id, row in r.rows.items():
            sha = row.get("instance_sha256")
            if sha is None:
                continue
            first = seen.setdefault(case_id, (str(sha), r.agg.rundir))
            if first[0] != sha:
                raise InstancesDiffer(
                    f"case {case_id!r} is another case in {r.agg.rundir} than in {first[1]} (another input set or procedure "
                    "under the same id): runs of different suites do not share a per-case table; report each suite's runs apart")


def _rate_cell(k: int, n: int) -> str:
    if not n:
        return "-"
    r = rate(k, n)
    return f"{k}/{n} {100 * r['value']:.0f}% [{100 * r['low']:.0f}, {100 * r['high']:.0f}]"


def _count(run: SuiteRun, procedure: str | None) -> tuple[int, int]:
    """``(cases that succeeded, cases)`` of ``procedure`` (None: all), leaving out the cases the run
    could not measure (:func:`not_applicable`)."""
    rows = [r for r in run.rows.values() if (procedure is None or _procedure(r) == procedure) and not not_applicable(run, r)]
    return sum(run.success(r) for r in rows), len(rows)


NOT_APPLICABLE = "n/a (a simulator answers stepguard's prompts, not a prompt file)"
"""What a simulated raw run on a user's prompt file shows: it measures nothing, so no rate."""


def not_applicable(run: SuiteRun, row: dict[str, Any]) -> bool:
    """A simulated raw run's case sent as the user's own prompt file: the simulated executor answers
    only stepguard's prompts, so its reply is no measurement of anything (never a 0 of n)."""
    return run.agg.mode == "raw" and bool(run.agg.simulated) and row.get("raw_prompt") == "user"


def procedures_of(runs: Sequence[SuiteRun]) -> list[str]:
    """Every procedure any run has a row of, sorted."""
    return sorted({p for r in runs for p in r.by_procedure})


def procedure_table(runs: Sequence[SuiteRun]) -> Table:
    """Per procedure and over all cases: cases, steps, and each run's rate with its 95% Wilson interval
    (raw: the answer right; guarded: verified completion), and guarded runs' calls per case."""
    header = ["procedure", "cases", "steps"]
    for r in runs:
        header.append(f"{r.agg.label}: {_RATE_NAME.get(r.agg.mode, 'right')} [95% CI]")
        if r.agg.mode == "guarded":
            header.append(f"{r.agg.label}: calls / case")
    lines = [_procedure_line(runs, proc) for proc in [*procedures_of(runs), None]]
    sim = " (SIMULATED)" if any(r.agg.simulated for r in runs) else ""
    return Table(f"Per procedure: raw answer right, guarded verified completion{sim}", header, lines)


def _procedure_line(runs: Sequence[SuiteRun], proc: str | None) -> list[str]:
    """:func:`procedure_table`'s line for ``proc`` (None: all cases): its cases and step counts, then
    each run's cells (:func:`_run_cells`)."""
    ids = {i for r in runs for i, row in r.rows.items() if proc is None or _procedure(row) == proc}
    steps = sorted({int(row["n_steps"]) for r in runs for row in r.rows.values() if proc is None or _procedure(row) == proc})
    line = [f"`{proc}`" if proc else "**all**", str(len(ids)), ", ".join(map(str, steps)) if proc else "-"]
    for r in runs:
        line += _run_cells(r, proc)
    return line


def _run_cells(r: SuiteRun, proc: str | None) -> list[str]:
    """One run's cells for ``proc`` (None: all cases): its rate (:data:`NOT_APPLICABLE` where it has
    cases but measured none), and for a guarded run its model calls per case."""
    k, n = _count(r, proc)
    measured = any((proc is None or _procedure(row) == proc) for row in r.rows.values())
    cells = [_rate_cell(k, n) if n or not measured else NOT_APPLICABLE]
    if r.agg.mode == "guarded":
        cell = r.by_procedure.get(proc) if proc else r.agg.overall
        calls = cell.usage["model_calls"] / cell.n if cell and cell.n else None
        cells.append("-" if calls is None else f"{calls:.1f}")
    return cells


def _inputs(row: dict[str, Any] | None) -> str:
    inputs = (row or {}).get("inputs")
    if not isinstance(inputs, dict):
        return "-"
    return ", ".join(f"{k}={json.dumps(v) if isinstance(v, bool) else v}" for k, v in inputs.items())  # true, as written


def _verdict(row: dict[str, Any] | None, mode: str) -> str:
    if row is None:
        return "not run"
    if mode == "guarded":
        status = str(row.get("status"))
        if row.get("verified_correct"):
            return "verified"
        extra = f", {row['repaired']} repaired" if row.get("repaired") else ""
        if status == "bounded":
            weak = sum(k for g, k in (row.get("grades") or {}).items() if g in ("bounded", "free_text"))
            extra += f", {weak} value{'s' if weak != 1 else ''} bounded only"
        return f"{status}{extra}" + ("" if row.get("first_answer_correct") else ", answer wrong")
    if mode == "raw" and row.get("raw_prompt") == "user" and row.get("simulated"):
        return NOT_APPLICABLE
    cut = " (cut at max tokens)" if row.get("finish_reason") == "length" else ""
    if row.get("correct"):
        return "right" + cut
    read = row.get("answer_read") or {}
    if row.get("first_answer") is None:
        refused = read.get("refused")
        return ("no answer" + (f": {refused}" if refused else "")) + cut
    return "wrong" + cut


def _where(row: dict[str, Any] | None, mode: str) -> str:
    if row is None or (mode == "raw" and row.get("raw_prompt") == "user" and row.get("simulated")):
        return "-"  # not run, or a simulator's reply to a prompt file: nothing went wrong that it measures
    d = row.get("deviated_at")
    if d is None:
        if "deviated_at" in row or row.get("first_error_step") is None:
            return "-"
        return f"{row['first_error_step']}"  # a row written before deviated_at existed
    step, how, wrote, want = d.get("step"), d.get("how"), d.get("wrote"), d.get("expected")
    if mode == "guarded":
        kinds = ", ".join(d.get("kinds") or ()) or "no deviation recorded"
        shown = f"wrote {wrote}" if wrote is not None else "no value"
        return f"{step} {how}: {shown}, expected {want} ({kinds})"
    if how == "step line":
        return f"{step}: wrote {wrote if wrote is not None else 'no readable value'}, expected {want}"
    if how == "not shown":
        return f"{step}: its value {want} appears nowhere in the reply"
    return f"the answer: read {wrote if wrote is not None else 'nothing'}, expected {want} (every step's value appears)"


def _answer_shown(row: dict[str, Any] | None) -> str:
    """A run's answer as the reply wrote it where the row keeps that (a prompt file's answer format read
    ``2007.00``, not the number ``2007``), else as the row holds it; ``-`` for none."""
    if row is None:
        return "-"
    read = row.get("answer_read")
    written = read.get("text") if isinstance(read, dict) else None
    answer = written if written is not None else row.get("first_answer")
    return "-" if answer is None else str(answer)


def case_table(runs: Sequence[SuiteRun]) -> Table:
    """One line per case: procedure, case, inputs, expected answer, then per run its answer, verdict
    and where it first went wrong (module docstring)."""
    header = ["procedure", "case", "inputs", "expected"]
    for r in runs:
        header += [f"{r.agg.label}: answer", f"{r.agg.label}: verdict", f"{r.agg.label}: where it went wrong"]
    ids = sorted({i for r in runs for i in r.rows})
    lines = []
    for case_id in ids:
        first = next(r.rows[case_id] for r in runs if case_id in r.rows)
        expected = first.get("expected_answer")
        proc = _procedure(first)
        case = str(case_id).removeprefix(proc + "/")
        line = [f"`{proc}`", case, _inputs(first), "-" if expected is None else str(expected)]
        for r in runs:
            row = r.rows.get(case_id)
            line += [_answer_shown(row), _verdict(row, r.agg.mode), _where(row, r.agg.mode)]
        lines.append(line)
    sim = " (SIMULATED)" if any(r.agg.simulated for r in runs) else ""
    return Table(f"Per case: each run's answer, verdict and where it first went wrong{sim}", header, lines)


def plot_procedures(runs: Sequence[SuiteRun], path: Path) -> Path:
    """Grouped bars, one group per procedure (and one for all cases), one bar per run: its rate
    with the 95% Wilson interval as an error bar and ``k/n`` above it (raw: the answer right;
    guarded: verified completion). Categories on the x axis: one procedure is one group, not a point."""
    from stepguard.bench import plots

    names = procedures_of(runs)
    procs: list[str | None] = [*names, None] if len(names) > 1 else list(names)  # one procedure: its group is all cases
    width = 0.8 / max(1, len(runs))
    fig = plots.Figure(figsize=(max(6.0, 1.0 + 0.35 * len(procs) * max(1, len(runs)) + 0.6 * len(procs)), 5.2), layout="constrained")
    ax = fig.subplots()
    colours = {"raw": ("#c0392b", "#e67e22", "#8e44ad"), "guarded": ("#1f5fa8", "#16a085", "#2c3e50")}
    used = {"raw": 0, "guarded": 0}
    for j, r in enumerate(runs):
        palette = colours.get(r.agg.mode, colours["guarded"])
        colour = palette[used.get(r.agg.mode, 0) % len(palette)]
        used[r.agg.mode] = used.get(r.agg.mode, 0) + 1
        xs, ys, lo, hi, notes, na = [], [], [], [], [], []
        for i, proc in enumerate(procs):
            k, n = _count(r, proc)
            if not n:
                if any(proc is None or _procedure(row) == proc for row in r.rows.values()):  # rows, none measurable
                    na.append(i + (j - (len(runs) - 1) / 2) * width)
                continue
            m = rate(k, n)
            xs.append(i + (j - (len(runs) - 1) / 2) * width)
            ys.append(m["value"])
            lo.append(m["value"] - m["low"])
            hi.append(m["high"] - m["value"])
            notes.append(f"{k}/{n}")
        name = f"{r.agg.label}: {_RATE_NAME.get(r.agg.mode, 'right')}"
        ax.bar(xs or na, ys or [0] * len(na), width=width * 0.95, color=colour, label=name if xs else f"{name}: n/a (no bar)")
        for x in na:
            ax.annotate("n/a", (x, 0), textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7)
        ax.errorbar(xs, ys, yerr=[lo, hi], fmt="none", ecolor="black", capsize=3, linewidth=1)
        for x, y, h, note in zip(xs, ys, hi, notes, strict=True):
            ax.annotate(note, (x, y + h), textcoords="offset points", xytext=(0, 5), ha="center", fontsize=7,
                        bbox={"boxstyle": "square,pad=0.1", "facecolor": "white", "edgecolor": "none"})  # clear of the cap
    many = len(procs) > 4
    ax.set_xticks(range(len(procs)), [p or "all cases" for p in procs], rotation=30 if many else 0, ha="right" if many else "center")
    ax.set_ylim(0, 1.16)
    ax.set_xlim(-0.5, len(procs) - 0.5)  # every group's room, bars drawn or not (an n/a run draws none)
    ax.set_yticks([i / 10 for i in range(11)], [f"{10 * i}%" for i in range(11)])
    ax.set_xlabel("procedure")
    ax.set_ylabel("share of cases (95% Wilson interval)")
    ax.grid(axis="y", alpha=0.3)
    # below the axis and its labels, never over them: constrained layout makes room for an "outside" legend
    fig.legend(fontsize=7.5, loc="outside lower center", ncol=1, frameon=False)
    title = "Per procedure: raw answer right vs guarded verified completion"
    if any(r.agg.simulated for r in runs):
        title += f"\n{plots.SIM_NOTE}"
    fig.suptitle(title, fontsize=10)
    return plots._save(fig, path)
