"""``stepguard bench run | report | compare | demo``: run the benchmark, report it, compare runs.

Module-level commands, added to the ``bench`` sub-app by :func:`register` (see :mod:`stepguard.cli.bench`).

Exit codes (:class:`stepguard.cli._exit.ExitCode`): 0 done; 2 bad arguments; 6 the model cannot
be loaded or started, or some instances ended in model errors (run again to retry them); 7 an
unusable run store or instances file; 130 interrupted (finished rows are kept).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from stepguard.cli._deferred import Deferred
from stepguard.cli._exit import ExitCode, exit_for_error, fail
from stepguard.cli._guard_options import build_guard_config, by_procedure_notes, guard_command, guard_option_defaults, guard_options
from stepguard.cli._open_model import ModelSpec, Timeout, open_model, with_local_hint
from stepguard.cli._telemetry import OtelOption, TraceFileOption, traced
from stepguard.errors import LocalServerError, StepguardError

__all__ = ["compare_command", "demo_command", "register", "report_command", "run_command"]

def _fail(error: BaseException | str, code: int | None = None) -> typer.Exit:
    """Print ``error``; the exit code is ``code``, else the error's (a message: usage)."""
    if code is None:
        code = ExitCode.USAGE if isinstance(error, str) else exit_for_error(error)
    return fail(str(error), code)


def _describe(summary: Any) -> str:
    s = summary
    return (f"{s.mode}: {s.written} new rows ({s.correct} correct), {s.skipped} already done ({s.skipped_correct} correct), "
            f"{s.errors} errors, {s.wall_s:.1f} s -> {s.rundir}")


def _run_guarded(fn: Any) -> Any:
    """Call ``fn()``; map store/model errors and Ctrl-C to exit codes."""
    try:
        return fn()
    except KeyboardInterrupt:
        typer.echo("\ninterrupted: every finished row is on disk; run the same command again to resume", err=True)
        raise typer.Exit(130) from None
    except LocalServerError as exc:
        raise fail(with_local_hint(exc), ExitCode.MODEL) from None
    except (StepguardError, ValueError) as exc:
        raise _fail(exc) from None


def _bench_guard_defaults(by_procedure: bool = False) -> Deferred:
    """The guard options' defaults in the benchmark: GuardConfig's, with the benchmark's
    (:func:`stepguard.guard.defaults_for` ``(benchmark=True)``: ``--on-exhausted flag``) over them, said in the help."""
    from stepguard.guard import GuardConfig, defaults_for

    GUARDED_DEFAULTS = defaults_for(benchmark=True)
    deferred = guard_option_defaults(GUARDED_DEFAULTS, by_procedure=by_procedure)
    why = (f"The benchmark's default is {GUARDED_DEFAULTS['on_exhausted']}, not GuardConfig's {GuardConfig.on_exhausted}: "
           "a step whose re-prompts are spent keeps the model's value and the run goes on, so its row has an answer "
           "to score; a spent --max-total-tokens or --max-wall-s budget stops the run where it is, and its row has "
           "no answer (status failed, scored not correct).")
    return Deferred(deferred.defaults, {**deferred.notes, "on_exhausted": f"{deferred.notes['on_exhausted']} {why}"})


def _run_defaults() -> Deferred:
    from stepguard.bench.run import RAW_TOKENS_PER_STEP

    guard = _bench_guard_defaults(by_procedure=True)  # None for those: chosen in run_command
    return Deferred({**guard.defaults, "raw_tokens": RAW_TOKENS_PER_STEP},
                    by_procedure_notes(guard.notes, "For procedure files (not generated instances): "))


def _mixed_suite_note(instances: Path) -> None:
    """Say so when a suite mixes integer sums with other procedures: one configuration serves the
    run, the one for the other procedures (:func:`stepguard.guard.defaults_for`)."""
    from stepguard.bench.suites import is_suite, load_suite
    from stepguard.guard import beyond_integer_sums

    if not is_suite(instances):
        return
    kinds = {c.procedure.name: beyond_integer_sums(c.procedure) for c in load_suite(instances)}
    sums = sorted(name for name, beyond in kinds.items() if not beyond)
    if sums and any(kinds.values()):
        typer.echo(f"note: {', '.join(sums)} {'is' if len(sums) == 1 else 'are'} integer sums; the run uses one "
                   "configuration, the one for the other procedures (docs/policies.md#defaults-by-procedure)", err=True)


def run_command(
    instances: Annotated[Path, typer.Option("--instances", metavar="PATH", help="Instances JSONL file (stepguard bench generate), or a procedure file with its NAME.inputs.yaml, or a folder of them.")],
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Run directory (created; an existing one with the same settings is resumed).")],
    mode: Annotated[str, typer.Option("--mode", metavar="MODE", help="raw (one prompt, the paper's setting) | guarded | reask (Instructor's re-ask loop, generated instances; pip install stepguard[instructor])")] = "raw",
    model: ModelSpec = "local",
    limit: Annotated[Optional[int], typer.Option("--limit", metavar="N", help="At most N instances per configuration.")] = None,
    configs: Annotated[Optional[str], typer.Option("--configs", metavar="STEPSxLOOKBACK,...", help="Only these configurations, e.g. 95x7,23x2.")] = None,
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", metavar="N", help="Instances in flight at once.")] = 4,
    raw_tokens: Annotated[Optional[int], typer.Option("--raw-tokens-per-step", metavar="N", help="Raw: max_tokens = N x steps + 64.")] = None,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
    timeout: Timeout = None,
    otel: OtelOption = False,
    trace_file: TraceFileOption = None,
) -> None:
    """Execute instances in raw, guarded or reask mode into a resumable run directory (one row per instance).

    The guard options (--chunk-size to --follow) apply to --mode guarded, and so do --otel and
    --trace-file: one trace per instance (raw mode makes no spans).
    """
    from stepguard.bench.run import RAW_TOKENS_PER_STEP, check_selection, run_benchmark

    if mode not in ("raw", "guarded", "reask"):
        raise _fail(f"--mode must be raw, guarded or reask, not {mode!r}")
    if not instances.exists():
        raise _fail(f"instances file or folder not found: {instances}", ExitCode.DATA)
    try:  # before the model is loaded (a local one takes minutes to start)
        check_selection(instances, configs, limit)
    except (StepguardError, ValueError) as exc:
        raise _fail(exc) from None
    options = guard_options() if mode == "guarded" else None  # resolved by run_benchmark, as from Python: defaults by procedure, then the benchmark's
    if mode == "guarded" and options is not None and not set(options.given()) >= {"chunk_size", "ladder", "inline_known"}:
        try:
            _mixed_suite_note(instances)
        except (StepguardError, ValueError) as exc:  # a suite that cannot load: as run_benchmark would say it
            raise _fail(exc) from None
    if mode == "raw" and (otel or trace_file is not None):
        typer.echo("note: --otel and --trace-file trace guarded runs; raw mode makes no spans", err=True)
    with traced(otel and mode == "guarded", trace_file if mode == "guarded" else None) as observer, \
            open_model(model, timeout) as chat:
        if chat.simulated:
            typer.echo(f"note: {model} is the SIMULATED executor: its numbers are not a model's accuracy", err=True)
        summary = _run_guarded(lambda: run_benchmark(
            instances, mode, chat, out, limit=limit, configs=configs, concurrency=concurrency,  # type: ignore[arg-type]  # mode and configs are checked by run_benchmark, which names a bad one
            guard_config=options, raw_tokens_per_step=RAW_TOKENS_PER_STEP if raw_tokens is None else raw_tokens,
            progress=progress, observer=observer))
    for torn in summary.torn:
        typer.echo(f"note: {torn}", err=True)
    typer.echo(_describe(summary))
    if summary.errors:
        typer.echo(f"{summary.errors} instances ended in model errors (see {out}/errors.jsonl); run again to retry them", err=True)
        raise typer.Exit(ExitCode.MODEL)


def report_command(
    rundirs: Annotated[list[Path], typer.Argument(metavar="RUNDIR...", help="Run directories (raw and/or guarded).", show_default=False)],
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Output folder for report.html, report.md, summary.json, PNGs.")],
) -> None:
    """Build summary.json, report.md, a self-contained report.html and PNG plots from run directories."""
    from stepguard.bench.report import build_report

    rep = _run_guarded(lambda: build_report(rundirs, out))
    typer.echo(f"report: {rep.report_html}\n        {rep.report_md}\nsummary: {rep.summary_json}")


def compare_command(
    raw: Annotated[Path, typer.Argument(metavar="RAW_RUNDIR", help="The raw run directory.", show_default=False)],
    guarded: Annotated[Path, typer.Argument(metavar="GUARDED_RUNDIR", help="The guarded run directory.", show_default=False)],
    metric: Annotated[str, typer.Option("--metric", metavar="METRIC", help="correct (raw: the first answer right; guarded: ended verified with the right answer) | exact (exact-step) | "
                                                                           "verified (raw first answer vs guarded verified completion: every value model-verified and right).")] = "correct",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="Print the report's paired table in Markdown: rates with 95% Wilson intervals.")] = False,
) -> None:
    """Paired comparison on shared instances: both / only guarded / only raw / neither right, exact McNemar test."""
    from stepguard.bench.compare import compare_runs

    if as_json and markdown:
        raise _fail("--json and --markdown: choose one")
    result = _run_guarded(lambda: compare_runs(raw, guarded, metric))  # type: ignore[arg-type]  # metric: compare_runs names a bad one
    if markdown:
        from stepguard.bench.report import paired_table

        typer.echo(paired_table(result, str(raw), str(guarded)).markdown(), nl=False)
        return
    typer.echo(json.dumps(result.as_dict(), indent=2) if as_json else result.table())


def demo_command(
    model: ModelSpec = "local",
    out: Annotated[Path, typer.Option("--out", metavar="DIR", help="Demo folder.")] = Path("stepguard-demo"),
    sizes: Annotated[Optional[str], typer.Option("--sizes", metavar="STEPS:COUNT,...", help=(
        "Instances to generate per length. Default 5:3,23:1 on a real model (about 8 minutes raw and guarded on 2 idle "
        "CPU cores; it prints its own estimate first); 5:3,23:2,95:1 on sim: (and for the 95-step headline on a real "
        "model: about 20 minutes more)."))] = None,
    lookback: Annotated[int, typer.Option("--lookback", metavar="N", help="Look-back depth of every instance.")] = 2,
    concurrency: Annotated[Optional[int], typer.Option("--concurrency", "-c", metavar="N", help="Default: 1 for a local model, 8 otherwise.")] = None,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show progress bars.")] = True,
    timeout: Timeout = None,
) -> None:
    """Generate a small instance set, run it raw and guarded, and write the report (the README's first command).

    The guard options (--chunk-size to --follow) apply to the guarded half.
    """
    from stepguard.bench.demo import DEFAULT_SIZES, SIM_SIZES, estimate_seconds, parse_sizes, run_demo
    from stepguard.guard import defaults_for

    try:
        plan = parse_sizes(sizes) if sizes else None
    except ValueError as exc:
        raise _fail(exc) from None
    config = build_guard_config(defaults=defaults_for(benchmark=True))
    with open_model(model, timeout) as chat:
        plan = plan or (SIM_SIZES if chat.simulated else DEFAULT_SIZES)
        low, high = estimate_seconds(plan, chat.simulated)
        when = f"{low:.0f}-{high:.0f} seconds" if high < 120 else f"{low / 60:.0f}-{high / 60:.0f} minutes"
        where = "" if chat.simulated else " on 2 idle CPU cores (longer on a busy machine; less with more cores or a GPU endpoint)"
        typer.echo(f"stepguard demo: model {model}; expected duration about {when}{where}.")
        if chat.simulated:
            typer.echo("note: SIMULATED executor: the numbers measure the harness, not a model.")
        result = _run_guarded(lambda: run_demo(
            chat, out, sizes=plan, lookback=lookback, concurrency=concurrency or (8 if chat.simulated else 1),
            guard_config=config, progress=progress, echo=typer.echo))
    rep = result.report
    typer.echo("\n" + rep.headline.markdown())
    typer.echo(f"report: {rep.report_html.resolve()}\n        {rep.report_md.resolve()}")
    typer.echo(f"paired comparison: stepguard bench compare {result.raw.rundir} {result.guarded.rundir}")


def register(bench_app: typer.Typer) -> None:
    """Add ``run``, ``report``, ``compare`` and ``demo`` (the ``*_command`` functions here) to ``bench_app``."""
    bench_app.command("run", cls=guard_command(_run_defaults, after="concurrency"))(run_command)
    bench_app.command("report")(report_command)
    bench_app.command("compare")(compare_command)
    bench_app.command("demo", cls=guard_command(_bench_guard_defaults, after="concurrency"))(demo_command)
