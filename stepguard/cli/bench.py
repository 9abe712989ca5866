"""``stepguard bench``: the sub-app; here ``generate``, ``score`` and ``summarize``, and from
:mod:`stepguard.cli.bench_run` ``run``, ``report``, ``compare`` and ``demo``.

Files (all JSONL, one object per line):

* instances: :class:`stepguard.bench.instances.Instance` (schema: docs/schemas/instance.schema.json);
* generations: ``{"id": "...", "text": "..."}`` (other keys are ignored);
* scores: :class:`stepguard.verify.Score`, one per generation, in generation order.

Exit codes (:class:`stepguard.cli._exit.ExitCode`): 0 done; 2 usage; 7 a file is unreadable,
invalid or cannot be written, or generations name unknown ids.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

from stepguard.cli import bench_run
from stepguard.cli._deferred import Deferred, deferred_defaults
from stepguard.cli._exit import ExitCode, fail
from stepguard.errors import RunStoreError, StepguardError

if TYPE_CHECKING:
    from stepguard.bench.stats import Rate

__all__ = ["app", "generate_command", "score_command", "summarize_command"]

app = typer.Typer(
    name="bench",
    help="The procedural-execution benchmark: generate instances, run them raw or guarded, score raw "
    "generations, summarize scores, report and compare runs; demo does it all on a small set.\n\n"
    "Exit codes: 0 done; 2 usage; 6 model or server error (bench run: on some instances, run again to retry them); "
    "7 a file is unreadable, invalid or cannot be written; 130 interrupted (finished rows are kept).",
    no_args_is_help=True,
    rich_markup_mode=None,
)

GENERATION_LINE_CHARS = 64_000_000
"""Longest line read from a generations file (a reply is capped at 1,000,000 characters when parsed)."""


def _ints(text: str, option: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise typer.BadParameter(f"expected comma-separated integers, got {text!r}", param_hint=option) from None
    if not values:
        raise typer.BadParameter("expected at least one integer", param_hint=option)
    return values


def _fail(message: str) -> typer.Exit:
    return fail(message, ExitCode.DATA)


# --------------------------------------------------------------------------------------- generate
def _generate_defaults() -> Deferred:
    """The grid's defaults, from :mod:`stepguard.bench.generate`."""
    from stepguard.bench.generate import DEFAULT_LOOKBACKS, DEFAULT_PER_CONFIG, DEFAULT_STEPS

    return Deferred({"steps": ",".join(map(str, DEFAULT_STEPS)), "lookback": ",".join(map(str, DEFAULT_LOOKBACKS)),
                     "per_config": DEFAULT_PER_CONFIG})


def generate_command(
    out: Annotated[Path, typer.Option("--out", metavar="FILE", help="Instances file to write (JSONL).")],
    steps: Annotated[Optional[str], typer.Option("--steps", metavar="N,...", help="Procedure lengths N, comma-separated.")] = None,
    lookback: Annotated[Optional[str], typer.Option("--lookback", metavar="L,...", help="Look-back depths L, comma-separated.")] = None,
    per_config: Annotated[Optional[int], typer.Option("--per-config", metavar="N", min=0, help="Instances per (N, L).")] = None,
    seed: Annotated[int, typer.Option("--seed", metavar="N", help="Grid seed.")] = 0,
) -> None:
    """Write the benchmark grid (default: 11 lengths x 5 look-backs x 1,000 = 55,000 instances).

    The file is byte-identical for the same options on any machine.
    """
    from tqdm import tqdm

    from stepguard.bench.generate import DEFAULT_LOOKBACKS, DEFAULT_PER_CONFIG, DEFAULT_STEPS, generate_grid
    from stepguard.bench.instances import write_instances

    steps = steps if steps is not None else ",".join(map(str, DEFAULT_STEPS))
    lookback = lookback if lookback is not None else ",".join(map(str, DEFAULT_LOOKBACKS))
    per_config = DEFAULT_PER_CONFIG if per_config is None else per_config
    ns, ls = _ints(steps, "--steps"), _ints(lookback, "--lookback")
    total = len(ns) * len(ls) * per_config
    try:
        grid = tqdm(generate_grid(ns, ls, per_config, seed), total=total, unit="inst", disable=None, leave=False)
        count = write_instances(grid, out)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None
    except OSError as exc:
        raise _fail(f"{out}: cannot write ({exc.strerror or exc})") from None
    typer.echo(f"wrote {count} instances ({len(ns)} lengths x {len(ls)} look-backs x {per_config}) to {out}")


# ------------------------------------------------------------------------------------------ score
def score_command(
    instances: Annotated[Path, typer.Argument(metavar="INSTANCES", help="Instances file (JSONL).", show_default=False)],
    generations: Annotated[Path, typer.Argument(
        metavar="GENERATIONS", help='Generations file (JSONL of {"id", "text"}).', show_default=False)],
    out: Annotated[Path, typer.Option("--out", metavar="FILE", help="Scores file to write (JSONL).")],
) -> None:
    """Score raw-mode generations with the failure taxonomy (one score per generation id)."""
    from tqdm import tqdm

    from stepguard.bench.instances import load_instances, read_jsonl
    from stepguard.verify import score_generation

    try:
        by_id = {inst.id: inst for inst in load_instances(instances)}
    except StepguardError as exc:
        raise _fail(str(exc)) from None
    unknown: list[tuple[int, str]] = []
    duplicates: list[tuple[int, str]] = []
    scored: set[str] = set()
    try:
        with out.open("w", encoding="utf-8", newline="\n") as fh:
            rows = read_jsonl(generations, max_line_chars=GENERATION_LINE_CHARS, error=RunStoreError)
            for number, row in tqdm(rows, unit="gen", disable=None, leave=False):
                if not isinstance(row, dict) or not isinstance(row.get("id"), str) or not isinstance(row.get("text"), str):
                    raise RunStoreError(f'{generations}:{number}: expected {{"id": string, "text": string}}')
                gid = row["id"]
                if gid not in by_id:
                    unknown.append((number, gid))
                elif gid in scored:
                    duplicates.append((number, gid))
                else:
                    scored.add(gid)
                    fh.write(score_generation(by_id[gid], row["text"]).model_dump_json() + "\n")
    except StepguardError as exc:
        raise _fail(str(exc)) from None
    except OSError as exc:
        raise _fail(f"{out}: cannot write ({exc.strerror or exc})") from None
    typer.echo(f"scored {len(scored)} generations to {out}; {len(by_id) - len(scored)} instances have none")
    if duplicates:
        listed = ", ".join(f"{gid} (line {n})" for n, gid in duplicates[:5])
        typer.echo(f"warning: {len(duplicates)} repeated ids were skipped (the first is scored): {listed}", err=True)
    if unknown:
        listed = ", ".join(f"{gid!r} (line {n})" for n, gid in unknown[:5])
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise _fail(f"{len(unknown)} generations name ids not in {instances}: {listed}{more}")


# -------------------------------------------------------------------------------------- summarize
def summarize_command(
    scores: Annotated[Path, typer.Argument(metavar="SCORES", help="Scores file (JSONL, from `bench score`).", show_default=False)],
    instances: Annotated[Optional[Path], typer.Option(
        "--instances", metavar="FILE", help="Instances file: configurations and missing counts from it.")] = None,
    json_out: Annotated[Optional[Path], typer.Option("--json", metavar="FILE", help="Also write the rows as JSON to this file.")] = None,
    intervals: Annotated[bool, typer.Option("--intervals/--no-intervals", help="Show the 95% Wilson intervals.")] = True,
) -> None:
    """Print per-configuration rates with 95% Wilson intervals (percent)."""
    from stepguard.bench.instances import load_instances, read_jsonl
    from stepguard.bench.summary import render_table, summarize
    from stepguard.verify import Score

    try:
        rows = list(read_jsonl(scores, max_line_chars=1_000_000, error=RunStoreError))
        parsed = []
        for number, row in rows:
            try:
                parsed.append(Score.model_validate(row))
            except ValueError as exc:
                raise RunStoreError(f"{scores}:{number}: not a score ({str(exc).splitlines()[0]})") from None
        table = summarize(parsed, load_instances(instances) if instances is not None else None)
    except StepguardError as exc:
        raise _fail(str(exc)) from None
    except ValueError as exc:
        raise _fail(str(exc)) from None
    typer.echo(render_table(table, intervals=intervals), nl=False)
    if json_out is not None:
        data = [
            {
                "n_steps": r.n_steps, "lookback": r.lookback, "count": r.count, "missing": r.missing,
                "accuracy": _rate_json(r.accuracy), "exact": _rate_json(r.exact), "step_accuracy": _rate_json(r.step_accuracy),
                "labels": {k: _rate_json(v) for k, v in r.labels.items()}, "first_error_mean": r.first_error_mean,
                "lookback_confusion": _rate_json(r.lookback_confusion),
            }
            for r in table
        ]
        json_out.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def _rate_json(r: Rate | None) -> dict[str, float] | None:
    return r._asdict() if r is not None and r.n else None


# ------------------------------------------------------------------------------------ registration
app.command("generate", cls=deferred_defaults(_generate_defaults))(generate_command)
app.command("score")(score_command)
app.command("summarize")(summarize_command)
bench_run.register(app)  # run, report, compare, demo
