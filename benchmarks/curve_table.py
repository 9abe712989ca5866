"""The raw decline curve's table (docs/fidelity.md, "The raw decline curve") from a run store:
raw first-answer accuracy per step count and look-back with 95% Wilson intervals, pooled, and the
mean reply length in tokens. Reads the store only; prints Markdown.

Run: python benchmarks/curve_table.py benchmarks/stores/curve/raw [--planned 6]

``--planned N``: the instances planned per look-back; a cell with fewer rows says how many are still
to run, and a step count with none says "not yet run".
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(ROOT))

from benchmarks.measure_ladder import share_text  # noqa: E402
from stepguard.bench.store import RESULTS, iter_rows, read_meta  # noqa: E402
from stepguard.errors import RunStoreError  # noqa: E402


def curve_table(rundir: Path, steps: list[int], planned: int | None = None) -> str:
    """The Markdown table of a raw run store's rows (one table row per step count in ``steps``, a
    column per look-back in the store; a torn last line, a live run's, is skipped as the store does).

    Raises:
        RunStoreError: no run.json (not a run store), or a corrupt line (names file and line).
        ValueError: a guarded store or row (the curve is raw first-answer accuracy), or a row without
            a look-back or usage (names file and line).
    """
    meta = read_meta(rundir)
    if meta.get("mode") != "raw":
        raise ValueError(f"{rundir}: a {meta.get('mode')} run; the curve is read from a raw run store")
    cells: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for i, row in enumerate(iter_rows(rundir / RESULTS), 1):
        if row.get("mode") != "raw" or row.get("lookback") is None or "output_tokens" not in (row.get("usage") or {}):
            raise ValueError(f"{rundir / RESULTS}:{i}: not a raw benchmark row with a look-back and usage")
        cells[(row["n_steps"], row["lookback"])].append(row)
    lookbacks = sorted({lb for _, lb in cells}) or [2, 7]
    head = " | ".join(f"look-back {lb}" + (" [95% Wilson]" if i == 0 else "") for i, lb in enumerate(lookbacks))
    out = [f"| steps | {head} | pooled | mean reply tokens |", "|---|" + "---|" * (len(lookbacks) + 2)]
    if meta.get("simulated") or any(r.get("simulated") for rs in cells.values() for r in rs):
        out.insert(0, "SIMULATED: the seeded simulated executor, not a model's accuracy\n")
    for n in steps:
        rows = [r for lb in lookbacks for r in cells[(n, lb)]]
        if not rows:
            out.append(f"| {n} steps |" + " - |" * len(lookbacks) + " not yet run | |")
            continue
        shown = []
        for lb in lookbacks:
            rs = cells[(n, lb)]
            text = share_text(sum(bool(r["correct"]) for r in rs), len(rs))
            if planned and len(rs) < planned:
                text += f" ({planned - len(rs)} still to run)"
            shown.append(text)
        pooled = share_text(sum(bool(r["correct"]) for r in rows), len(rows))
        tokens = sum(r["usage"]["output_tokens"] for r in rows) / len(rows)
        out.append(f"| {n} steps | {' | '.join(shown)} | **{pooled}** | {tokens:,.0f} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print the table; returns the exit status (2: the store or the arguments cannot be used)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rundir", type=Path, help="a raw run store (benchmarks/stores/curve/raw)")
    ap.add_argument("--steps", default="5,14,23,32,50,95", help="step counts, comma-separated")
    ap.add_argument("--planned", type=int, help="instances planned per look-back")
    args = ap.parse_args(argv)
    try:
        steps = [int(s) for s in args.steps.split(",")]
    except ValueError:
        ap.error(f"--steps: whole numbers separated by commas, got {args.steps!r}")
    try:
        print(curve_table(args.rundir, steps, args.planned), end="")
    except (RunStoreError, ValueError, OSError) as exc:
        print(f"curve_table: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
