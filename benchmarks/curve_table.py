"""The raw decline curve's table (docs/fidelity.md, "The raw decline curve") from a run store:
raw first-answer accuracy per step count and look-back with 95% Wilson intervals, pooled, and the
mean reply length in tokens. Reads the store only; prints Markdown.

Run: python benchmarks/curve_table.py benchmarks/stores/curve/raw [--planned 6]

``--planned N``: the instances planned per look-back; a cell with fewer rows says how many are still
to run, and a step count with none says "not yet run".
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(ROOT))

from stepguard.bench.stats import wilson_interval  # noqa: E402

LOOKBACKS = (2, 7)


def _pct(k: int, n: int) -> str:
    lo, hi = wilson_interval(k, n)
    return f"{k}/{n} {100 * k / n:.0f}% [{100 * lo:.0f}-{100 * hi:.0f}]"


def curve_table(rundir: Path, steps: list[int], planned: int | None = None) -> str:
    """The Markdown table of a raw run store's ``results.jsonl`` (one row per step count in ``steps``).

    Raises:
        FileNotFoundError: no results.jsonl in ``rundir``.
        ValueError: a row that is not a raw row (the curve is raw first-answer accuracy).
    """
    cells: dict[tuple[int, int], list[dict]] = defaultdict(list)
    for i, line in enumerate((rundir / "results.jsonl").read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            row = json.loads(line)
            if row.get("mode") != "raw":
                raise ValueError(f"{rundir / 'results.jsonl'}:{i}: mode {row.get('mode')!r}, not a raw row")
            cells[(row["n_steps"], row["lookback"])].append(row)
    out = ["| steps | look-back 2 [95% Wilson] | look-back 7 | pooled | mean reply tokens |", "|---|---|---|---|---|"]
    for n in steps:
        rows = [r for lb in LOOKBACKS for r in cells[(n, lb)]]
        if not rows:
            out.append(f"| {n} steps | - | - | not yet run | |")
            continue
        shown = []
        for lb in LOOKBACKS:
            rs = cells[(n, lb)]
            text = _pct(sum(bool(r["correct"]) for r in rs), len(rs)) if rs else "-"
            if planned and len(rs) < planned:
                text += f" ({planned - len(rs)} still to run)"
            shown.append(text)
        pooled = _pct(sum(bool(r["correct"]) for r in rows), len(rows))
        tokens = sum(r["usage"]["output_tokens"] for r in rows) / len(rows)
        out.append(f"| {n} steps | {shown[0]} | {shown[1]} | **{pooled}** | {tokens:,.0f} |")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print the table; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rundir", type=Path, help="a raw run store (benchmarks/stores/curve/raw)")
    ap.add_argument("--steps", default="5,14,23,32,50,95")
    ap.add_argument("--planned", type=int, help="instances planned per look-back")
    args = ap.parse_args(argv)
    print(curve_table(args.rundir, [int(s) for s in args.steps.split(",")], args.planned), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
