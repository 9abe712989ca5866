"""The benchmark report: summary.json, report.md, a self-contained report.html and PNG plots.

``build_report([raw_dir, guarded_dir], out)`` reads the run stores (streamed), folds them into
per-configuration metrics with 95% Wilson intervals (:mod:`stepguard.bench.aggregate`), draws the
plots (:mod:`stepguard.bench.plots`) and writes::

    out/summary.json     every number in the report, machine-readable
    out/report.md        led by the overlay figure; the headline table, the paired tables (each raw
                         run against each guarded run on the instances both ran: the 2x2 counts,
                         Wilson intervals, exact McNemar p), per-run tables (guarded runs: the
                         deviations caught, by kind and how each ended), links to the other PNGs
    out/report.html      the same, one file: PNGs embedded as base64, no outside resource
    out/overlay.png      raw first-answer accuracy and guarded verified completion vs steps on one
                         pair of axes (:mod:`stepguard.bench.overlay`); runs of several models get
                         out/models.png instead: the decline curve of each model on one figure
                         (:func:`~stepguard.bench.overlay.plot_models`), and a paired table per model
    out/accuracy.png, out/labels.png, out/guard_cost.png (when a guarded run is present)

Every table and plot title says SIMULATED when its run's model is the simulated executor.
The benchmark is this project's reconstruction of Panda et al. (arXiv 2605.00817); its numbers
are never the paper's.

Runs of a user's suite (procedure files with input sets: every row without a look-back) get a
report laid out by what a suite varies (:mod:`stepguard.bench.suite_report`): the headline over
every case, rates per procedure with Wilson intervals, a per-case table (inputs, each run's answer,
verdict and where it first went wrong), the paired tables, and ``procedures.png`` (grouped bars per
procedure) instead of the figures over step counts; no paper framing.
"""

from __future__ import annotations

import base64
import html
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stepguard.bench._table import Table
from stepguard.bench.aggregate import LABEL_HEADINGS, Cell, RunAggregate, aggregate_run, distinct_labels
from stepguard.bench.compare import METRIC_HEADINGS, Comparison, NoSharedInstances, compare_runs
from stepguard.bench.overlay import MODELS_CAPTION, curves_from_runs, plot_models, plot_overlay
from stepguard.bench.plots import plot_accuracy, plot_guard_cost, plot_labels
from stepguard.bench.rows import ENDINGS
from stepguard.bench.suite_report import SUITE_NOTE, case_table, check_same_cases, is_suite_run, plot_procedures, procedure_table, suite_run
from stepguard.verify import DEVIATION_KINDS, FAILURE_LABELS

__all__ = ["Report", "Table", "build_report", "headline_steps", "paired_table"]

NOTE = ("Benchmark: stepguard's reconstruction of the procedural-execution benchmark of Panda et al. "
        "(arXiv 2605.00817); generator, prompt and scoring rules are ours, so these are not the paper's numbers.")
SIM_BANNER = "SIMULATED: at least one run used the simulated executor; its numbers measure the harness, not a model."


@dataclass
class Report:
    """Paths written by :func:`build_report`."""

    outdir: Path
    summary_json: Path
    report_md: Path
    report_html: Path
    plots: list[Path]
    """Every PNG, the overlay figure first."""
    headline: Table
    """The headline table (raw vs guarded at the largest step count), for printing."""
    paired: list[Comparison]
    """Each raw run against each guarded run that shares instances with it (metric ``verified``)."""


def _pct(m: dict[str, Any] | None) -> str:
    if not m or m.get("value") is None:
        return "-"
    return f"{100 * m['value']:.1f}% [{100 * m['low']:.1f}, {100 * m['high']:.1f}] ({m['k']}/{m['n']})"


def _num(x: float | None, digits: int = 1) -> str:
    return "-" if x is None else f"{x:,.{digits}f}"


def headline_steps(runs: Sequence[RunAggregate]) -> int | None:
    """The step count of the headline table: the largest present in any run (95 on the default grid)."""
    steps = {n for r in runs for n in r.by_steps}
    return max(steps) if steps else None


def _sim(runs: Sequence[RunAggregate]) -> str:
    return " (SIMULATED)" if any(r.simulated for r in runs) else ""


def _headline(runs: Sequence[RunAggregate], n_steps: int | None, *, suite: bool = False) -> tuple[Table, list[dict[str, Any]]]:
    header = ["run", "n", "answer right [95% CI] (raw: first answer; guarded: verified)", "exact-step rate [95% CI]", "tokens / inst",
              "calls / inst", "wall s / inst", "re-prompts / inst", "repaired / inst", "unresolved errors"]
    rows, data = [], []
    for r in runs:
        cell = r.overall if suite else r.by_steps.get(n_steps) if n_steps is not None else None
        m = cell.metrics(r.mode) if cell else None
        per = m["per_instance"] if m else {}
        guarded = r.mode == "guarded"
        rows.append([r.label, str(m["n"]) if m else "0", _pct(m and m["first_answer_accuracy"]), _pct(m and m["exact_step_rate"]),
                     _num(per.get("total_tokens"), 0), _num(per.get("model_calls")), _num(per.get("wall_s"), 2),
                     _num(per.get("reprompts")) if guarded else "-", _num(per.get("repaired"), 2) if guarded else "-",
                     str(r.unresolved_errors)])
        data.append({"rundir": str(r.rundir), "label": r.label, "mode": r.mode, "model": r.model, "simulated": r.simulated,
                     "metrics": m})
    where = f"at {n_steps} steps, all look-backs pooled" if n_steps is not None else "(no rows yet)"
    if suite:
        where = "over every case"
    title = f"Headline: raw vs guarded {where}{_sim(runs)}"
    return Table(title, header, rows), data


def _ci(k: int, n: int, interval: list[float] | None) -> str:
    if not n or interval is None:
        return "-"
    return f"{k}/{n} {100 * k / n:.0f}% [{100 * interval[0]:.0f}, {100 * interval[1]:.0f}]"


def paired_table(cmp: Comparison, raw_label: str, guarded_label: str) -> Table:
    """The paired table of one comparison: per group (a configuration, steps and look-back, of generated
    instances; a procedure of a user's suite) and over all pairs, the pairs, raw right and guarded right
    (what counts as right is ``cmp.metric``'s, :data:`METRIC_HEADINGS`) with 95% Wilson intervals, the
    2x2 counts and the exact McNemar p."""
    raw_heading, guarded_heading = METRIC_HEADINGS[cmp.metric]
    by_procedure = any(p.procedure for p in cmp.configs)
    header = ["procedure" if by_procedure else "steps", "steps" if by_procedure else "look-back", "pairs",
              f"{raw_heading} [95% CI]", f"{guarded_heading} [95% CI]", "both", "neither", "only raw", "only guarded",
              "exact McNemar p"]
    rows = []
    for p in [*cmp.configs, cmp.overall]:
        d = p.as_dict()
        if p.n_steps is None:
            where = ["**all**" if by_procedure else "all", "-" if by_procedure else "all"]
        elif p.procedure:
            where = [f"`{p.procedure}`", str(p.n_steps)]
        else:
            where = [str(p.n_steps), str(p.lookback) if p.lookback else "-"]
        rows.append([*where, str(p.n), _ci(p.raw_right, p.n, d["raw_interval"]), _ci(p.guarded_right, p.n, d["guarded_interval"]),
                     str(p.both_right), str(p.both_wrong), str(p.only_raw), str(p.only_guarded), f"{p.p_value:.3g}"])
    unpaired = (f"; left out, ran in one mode only: {cmp.only_in_raw} raw, {cmp.only_in_guarded} guarded"
                if cmp.only_in_raw or cmp.only_in_guarded else "")
    sim = " (SIMULATED)" if cmp.simulated else ""
    warned = "".join(f"; WARNING: {w}" for w in cmp.warnings)
    title = (f"Paired: {raw_label} vs {guarded_label}, on the instances both ran ({raw_heading.replace('raw ', 'raw: ', 1)}; "
             f"{guarded_heading.replace('guarded ', 'guarded: ', 1)}; exact McNemar test on the discordant pairs){unpaired}{sim}{warned}")
    return Table(title, header, rows)


def _paired(runs: Sequence[RunAggregate]) -> list[tuple[Comparison, Table]]:
    """Each raw run against each guarded run of the same model (:attr:`RunAggregate.model_label`) on the
    instances both ran; with one raw and one guarded run only, those two whatever their models (the
    table then carries :func:`compare_runs`' warning that the models differ)."""
    out = []
    raws, guardeds = [r for r in runs if r.mode in ("raw", "reask")], [r for r in runs if r.mode == "guarded"]
    one_each = len(raws) == 1 and len(guardeds) == 1
    for raw in raws:
        for guarded in guardeds:
            if not one_each and raw.model_label != guarded.model_label:
                continue  # several models: the guard's effect is measured on one model at a time
            try:
                cmp = compare_runs(raw.rundir, guarded.rundir, "verified")
            except NoSharedInstances:
                continue  # nothing to pair: each run keeps its own tables
            out.append((cmp, paired_table(cmp, raw.label, guarded.label)))
    return out


def _run_table(run: RunAggregate) -> Table:
    guarded = run.mode == "guarded"
    header = ["steps", "look-back", "n", "first-answer [95% CI]", "exact-step [95% CI]", "step values", "1st error at"]
    header += [] if guarded else [f"{LABEL_HEADINGS[lb]} %" for lb in FAILURE_LABELS]
    header += ["cut at max tokens %", "tokens / inst", "calls / inst"]
    header += ["re-prompts / inst", "repaired", "values by grade"] if guarded else []
    rows = []
    for (n, lb), cell in sorted(run.configs.items()):
        m = cell.metrics(run.mode)
        per = m["per_instance"]
        sva = m["step_value_accuracy"]["value"]
        row = [str(n), str(lb) if lb else "-", str(m["n"]), _pct(m["first_answer_accuracy"]), _pct(m["exact_step_rate"]),
               "-" if sva is None else f"{100 * sva:.1f}%", _num(m["mean_first_error_position"])]
        row += [] if guarded else [f"{100 * m['labels'][lb2]['value']:.1f}" for lb2 in FAILURE_LABELS]
        row += [f"{100 * m['truncated']['value']:.1f}", _num(per["total_tokens"], 0), _num(per["model_calls"])]
        row += [_num(per["reprompts"]), str(cell.repaired), _grades(cell)] if guarded else []
        rows.append(row)
    what = "outcomes; the deviations caught are in the next table" if guarded else "failure labels as % of instances"
    return Table(f"{run.label}: per configuration ({what})", header, rows)


def _grades(cell: Cell) -> str:
    """A guarded cell's committed values by grade (``exact 460, bounded 5``), or ``-``."""
    return ", ".join(f"{g} {k}" for g, k in sorted(cell.grades.items(), key=lambda x: (-x[1], x[0]))) or "-"


def _deviation_table(run: RunAggregate, by_procedure: dict[str, Cell] | None = None) -> Table:
    """A guarded run's caught deviations per configuration (or, given ``by_procedure``, per procedure of
    a suite): per instance by kind, and how each ended."""
    kinds = [k for k in DEVIATION_KINDS if run.overall.caught[k]]
    keys = ["procedure"] if by_procedure is not None else ["steps", "look-back"]
    header = [*keys, "n", "instances with one [95% CI]", "caught / inst"]
    header += [f"{k} / inst" for k in kinds] + ["actions"] + [f"ended {e}" for e in ENDINGS]
    rows = []
    groups: list[tuple[list[str], Cell]] = (
        [([f"`{p}`"], c) for p, c in sorted(by_procedure.items())] if by_procedure is not None
        else [([str(n), str(lb) if lb else "-"], c) for (n, lb), c in sorted(run.configs.items())])
    for where, cell in groups:
        d = cell.deviation_metrics()
        row = [*where, str(cell.n), _pct(d["instances_with"]), _num(d["per_instance"], 2)]
        row += [_num(d["by_kind"][k], 2) for k in kinds]
        row += [", ".join(f"{a} {k}" for a, k in d["by_action"].items() if k) or "-"]
        row += [f"{cell.endings[e]}" + (f" ({100 * d['ended'][e]['value']:.0f}%)" if d["caught"] else "") for e in ENDINGS]
        rows.append(row)
    per = "procedure" if by_procedure is not None else "configuration"
    title = (f"{run.label}: deviations the guard caught, per {per} (by kind, per instance; "
             f"how each ended: the step's value then verified, was repaired or flagged, or the run stopped)")
    return Table(title, header, rows)


OVERLAY_CAPTION = ("Raw first-answer accuracy and guarded verified completion vs procedure length: a solid line per run "
                   "(all look-backs pooled, k/n at each point, 95% Wilson interval shaded) and a thin line per look-back; "
                   "stars: the paper's reported raw means (61% at 5 steps, 20% at 95; arXiv 2605.00817, on its data, "
                   "not this reconstruction).")


def _write_md(path: Path, runs: Sequence[RunAggregate], tables: list[Table], plots: list[Path], note: str = NOTE,
              caption: str = OVERLAY_CAPTION) -> None:
    parts = ["# stepguard benchmark report" + _sim(runs), "", note, ""]
    if any(r.simulated for r in runs):
        parts += [f"**{SIM_BANNER}**", ""]
    parts += ["Runs:", ""] + [f"- `{r.rundir}`: {r.label}, {r.overall.n} rows" for r in runs] + [""]
    lead, rest = plots[0], plots[1:]
    parts += [f"![{lead.stem}]({lead.name})", "", caption + _sim(runs), ""]
    parts += [t.markdown() for t in tables]
    parts += [f"![{p.stem}]({p.name})\n" for p in rest]
    path.write_text("\n".join(parts), encoding="utf-8")


_CSS = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:1400px}table{border-collapse:collapse;margin-bottom:1.5em;"
        "font-size:13px}th,td{border:1px solid #ccc;padding:3px 7px;text-align:right}th{background:#f3f3f3}td:first-child"
        "{text-align:left}.sim{background:#fff3cd;border:1px solid #d39e00;padding:.6em 1em;font-weight:bold}img{max-width:100%}")


def _img(p: Path) -> str:
    data = base64.b64encode(p.read_bytes()).decode("ascii")
    return f"<h3>{html.escape(p.stem)}</h3><img alt='{html.escape(p.stem)}' src='data:image/png;base64,{data}'>"


def _write_html(path: Path, runs: Sequence[RunAggregate], tables: list[Table], plots: list[Path], note: str = NOTE,
                caption: str = OVERLAY_CAPTION) -> None:
    title = "stepguard benchmark report" + _sim(runs)
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>",
             f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1><p>{html.escape(note)}</p>"]
    if any(r.simulated for r in runs):
        parts.append(f"<p class='sim'>{html.escape(SIM_BANNER)}</p>")
    parts.append("<ul>" + "".join(f"<li><code>{html.escape(str(r.rundir))}</code>: {html.escape(r.label)}, {r.overall.n} rows</li>"
                                  for r in runs) + "</ul>")
    lead, rest = plots[0], plots[1:]
    parts += [_img(lead), f"<p>{html.escape(caption + _sim(runs))}</p>"]
    parts += [t.html() for t in tables]
    parts += [_img(p) for p in rest]
    parts.append("</body></html>\n")
    path.write_text("\n".join(parts), encoding="utf-8")


def _refuse_repeats(rundirs: Sequence[str | Path]) -> None:
    """ValueError when one run folder is given twice (it would be shown, and paired, twice)."""
    first: dict[Path, int] = {}
    for k, d in enumerate(rundirs, 1):
        key = Path(d).resolve()
        if key in first:
            raise ValueError(f"run directory {d} is given twice (arguments {first[key]} and {k}); give each run once")
        first[key] = k


def build_report(rundirs: Sequence[str | Path], outdir: str | Path) -> Report:
    """Read run folders and write summary.json, report.md, report.html and the PNG plots into ``outdir``.

    Args:
        rundirs: run store folders (raw and/or guarded, any models), in the order to show them.
        outdir: the output folder (created; files in it are overwritten).

    Returns:
        A :class:`Report` with the paths written.

    Raises:
        RunStoreError: a folder is not a run store, or holds a corrupt line, a duplicate id or a row
            without a usable field (names file and line).
        InstancesDiffer: a raw and a guarded run share ids whose instances differ, or two runs of a
            user's suite do (their per-case table would show two cases as one; a ValueError).
        ValueError: no run folders given, or one given twice.

    Nothing is created in ``outdir`` (nor ``outdir`` itself) before every run folder has been read.
    """
    if not rundirs:
        raise ValueError("give at least one run directory")
    _refuse_repeats(rundirs)
    runs = [aggregate_run(d) for d in rundirs]
    distinct_labels(runs)
    if all(is_suite_run(r) for r in runs):
        return _build_suite_report(runs, Path(outdir))
    n_head = headline_steps(runs)
    head_table, head_data = _headline(runs, n_head)
    paired = _paired(runs)
    out = Path(outdir)  # created only now: every input has been read and checked
    out.mkdir(parents=True, exist_ok=True)
    tables = [head_table] + [t for _, t in paired]
    for r in runs:
        tables += [_run_table(r), _deviation_table(r)] if r.mode == "guarded" else [_run_table(r)]
    simulated = any(r.simulated for r in runs)
    models = list(dict.fromkeys(r.model_label for r in runs))
    paper = any(lb for r in runs for _, lb in r.configs)
    if len(models) > 1:  # several models: the decline curve of each on one figure leads
        lead, caption = plot_models(runs, out / "models.png", paper=paper), MODELS_CAPTION
    else:
        lead = plot_overlay(curves_from_runs(runs), out / "overlay.png", simulated=simulated,
                            subtitle=", ".join(sorted({r.model for r in runs})), paper=paper,
                            same_instances=len({r.meta.get("instances_sha256") for r in runs}) == 1)
        caption = OVERLAY_CAPTION
    plots = [lead, plot_accuracy(runs, out / "accuracy.png"), plot_labels(runs, out / "labels.png")]
    cost = plot_guard_cost(runs, out / "guard_cost.png")
    plots += [cost] if cost else []
    summary = {
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "note": NOTE,
        "simulated": simulated,
        "models": models,
        "headline": {"n_steps": n_head, "runs": head_data},
        "paired": [c.as_dict() for c, _ in paired],
        "runs": [r.summary() for r in runs],
    }
    summary_path = out / "summary.json"
    summary_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    md, page = out / "report.md", out / "report.html"
    _write_md(md, runs, tables, plots, caption=caption)
    _write_html(page, runs, tables, plots, caption=caption)
    return Report(out, summary_path, md, page, plots, head_table, [c for c, _ in paired])


SUITE_CAPTION = ("Per procedure (and over all cases): raw, the share of cases whose answer is right; guarded, the share "
                 "verified with every value model-verified and right and nothing repaired; k/n above each bar, 95% Wilson "
                 "interval as its error bar.")


def _build_suite_report(runs: Sequence[RunAggregate], out: Path) -> Report:
    """:func:`build_report` for runs of a user's suite (:mod:`stepguard.bench.suite_report`): the headline over
    every case, the paired tables, rates per procedure, the per-case table and the per-procedure figure;
    no paper framing and no figure over step counts."""
    suite_runs = [suite_run(r) for r in runs]
    check_same_cases(suite_runs)
    head_table, head_data = _headline(runs, None, suite=True)
    paired = _paired(runs)
    out.mkdir(parents=True, exist_ok=True)
    cases = case_table(suite_runs)
    tables = [head_table, procedure_table(suite_runs), cases] + [t for _, t in paired]
    tables += [_deviation_table(r, sr.by_procedure) for r, sr in zip(runs, suite_runs, strict=True) if r.mode == "guarded"]
    plots = [plot_procedures(suite_runs, out / "procedures.png")]
    simulated = any(r.simulated for r in runs)
    summary = {
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "note": SUITE_NOTE, "suite": True,
        "simulated": simulated,
        "headline": {"n_steps": None, "runs": head_data},
        "paired": [c.as_dict() for c, _ in paired],
        "runs": [{**r.summary(), "procedures": {p: c.metrics(r.mode) for p, c in sorted(sr.by_procedure.items())}}
                 for r, sr in zip(runs, suite_runs, strict=True)],
        "cases": [dict(zip(cases.header, line, strict=True)) for line in cases.rows],
    }
    summary_path = out / "summary.json"
    summary_path.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    md, page = out / "report.md", out / "report.html"
    _write_md(md, runs, tables, plots, SUITE_NOTE, SUITE_CAPTION)
    _write_html(page, runs, tables, plots, SUITE_NOTE, SUITE_CAPTION)
    return Report(out, summary_path, md, page, plots, head_table, [c for c, _ in paired])
