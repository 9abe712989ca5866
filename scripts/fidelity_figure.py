"""Draw docs/fidelity.md's figure: raw first-answer accuracy and guarded verified completion vs
procedure length on one pair of axes (:func:`stepguard.bench.overlay.plot_overlay`, the figure that
leads ``stepguard bench report``), and print the paired table as Markdown.

Usage::

    # from run folders (the real-model runs, once they are on this machine)
    python scripts/fidelity_figure.py runs/ladder/raw runs/ladder/guarded --out docs/img/fidelity.png
    # from recorded cell counts
    python scripts/fidelity_figure.py --cells docs/data/fidelity_cells.json --out docs/img/fidelity.png
    # both: the committed raw curve store beside the recorded guarded cells
    python scripts/fidelity_figure.py benchmarks/stores/curve/raw --cells docs/data/fidelity_cells.json \
        --cells-mode guarded --out docs/img/fidelity.png

A figure from any simulated run says SIMULATED in its title and across the plot.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def _table(rows: list[tuple[str, str, int, int, int, int, int, float, str, str]]) -> str:
    head = ("| steps | look-back | pairs | both right | neither | only raw | only guarded | exact McNemar p | raw right | guarded verified |\n"
            "|---|---|---|---|---|---|---|---|---|---|\n")
    return head + "".join(f"| {s} | {lb} | {n} | {b} | {nn} | {r} | {g} | {p:.3g} | {rr} | {gg} |\n"
                          for s, lb, n, b, nn, r, g, p, rr, gg in rows)


def _measured(data: dict, mode: str | None) -> str:
    """The cells file's ``measured`` text, only the chosen mode's part of it where it names each mode
    (``"raw 2026-11-29, guarded 2026-11-30 (commit 8e919cfe)"`` -> ``"guarded 2026-11-30 (commit 8e919cfe)"``)."""
    text = str(data.get("measured", "?"))
    parts = [p for p in text.split(", ") if mode and p.startswith(mode)]
    return ", ".join(parts) or text


def _draw(args: argparse.Namespace) -> tuple[bool, list]:
    """Draw the figure; returns (simulated, paired rows)."""
    from stepguard.bench.overlay import curves_from_cells, curves_from_runs, paired_from_cells, plot_overlay

    curves, subtitles, rows, simulated, paper, runs = [], [], [], False, not args.rundirs, []
    if args.cells:
        try:
            data = json.loads(args.cells.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise ValueError(f"{args.cells}: not JSON ({exc})") from None
        if args.cells_mode:
            data = {**data, "runs": [r for r in data.get("runs") or () if r.get("mode") == args.cells_mode], "pairs": None}
            if not data["runs"]:
                raise ValueError(f"{args.cells}: no {args.cells_mode} runs recorded (--cells-mode {args.cells_mode})")
        simulated = bool(data.get("simulated"))
        curves += curves_from_cells(data)
        which = f"{args.cells_mode} " if args.cells_mode else ""
        subtitles.append(f"{data.get('model', '')}; measured {_measured(data, args.cells_mode)}; {which}cell counts from {args.cells.as_posix()}")
        rows = [(s, "all", b + nn + r + g, b, nn, r, g, p, f"{b + r}", f"{b + g}") for s, b, nn, r, g, p in paired_from_cells(data)]
    if args.rundirs:
        from stepguard.bench.aggregate import aggregate_run
        from stepguard.bench.compare import compare_runs

        runs = [aggregate_run(d) for d in args.rundirs]
        empty = [str(r.rundir) for r in runs if not r.overall.n]
        if empty:
            raise ValueError(f"no finished rows to draw in {', '.join(empty)}")
        simulated = simulated or any(r.simulated for r in runs)
        curves += curves_from_runs(runs)
        subtitles.append(", ".join(sorted({r.model for r in runs})) + ": " + ", ".join(d.as_posix() for d in args.rundirs))
        paper = paper or any(lb for r in runs for _, lb in r.configs)
        for raw in (r for r in runs if r.mode == "raw"):
            for guarded in (r for r in runs if r.mode == "guarded"):
                cmp = compare_runs(raw.rundir, guarded.rundir, "verified")
                for p in [*cmp.configs, cmp.overall]:
                    where = ("all", "all") if p.n_steps is None else (str(p.n_steps), str(p.lookback or "-"))
                    rows.append((*where, p.n, p.both_right, p.both_wrong, p.only_raw, p.only_guarded, p.p_value,
                                 str(p.raw_right), str(p.guarded_right)))
    # one source alone is one instance file (a cells file records runs on the same instances)
    same = not (args.cells and runs) and len({r.meta.get("instances_sha256") for r in runs}) <= 1
    plot_overlay(curves, args.out, simulated=simulated, subtitle="; ".join(subtitles), paper=paper, same_instances=same)
    return simulated, rows


def main(argv: list[str] | None = None) -> int:
    """Write the PNG and print the paired table; returns the exit status (2: an input cannot be used)."""
    from stepguard.errors import RunStoreError

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rundirs", nargs="*", type=Path, help="run folders (raw and guarded)")
    ap.add_argument("--cells", type=Path, help="recorded cell counts (docs/data/fidelity_cells.json), alone or beside run folders")
    ap.add_argument("--cells-mode", choices=("raw", "guarded"),
                    help="take only this mode's runs from --cells (their recorded pairs are then left out)")
    ap.add_argument("--out", type=Path, default=Path("docs/img/fidelity.png"), help="the PNG to write (a .png file)")
    args = ap.parse_args(argv)
    if not args.cells and not args.rundirs:
        ap.error("give run folders, --cells FILE, or both")
    if args.cells_mode and not args.cells:
        ap.error("--cells-mode needs --cells")
    if args.out.suffix.lower() != ".png" or args.out.is_dir():
        ap.error(f"--out: a .png file to write, got {args.out}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    try:
        simulated, rows = _draw(args)
    except (RunStoreError, ValueError, OSError) as exc:  # a JSON error is a ValueError
        print(f"fidelity_figure: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {args.out}" + (" (SIMULATED)" if simulated else ""))
    if rows:
        print("\nPaired (raw first answer right vs guarded verified completion):\n")
        print(_table(rows), end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
