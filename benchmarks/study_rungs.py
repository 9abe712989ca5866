"""Study the derived rungs (commute, decompose, bridge) on the steps a real model got wrong.

Each step below is one the embedded Qwen2.5-Coder-1.5B got wrong at temperature 0 in the
guarded 5/23/95-step runs of docs/lab/fidelity-history.md (its committed operand values, as the chunk asked
it). For every rung that applies, the script builds the rung's sub-procedure exactly as the guard
does and runs it through the guard's nested settings (commute: one resampled retry; decompose and
bridge: narrow then resample), seeded as on the rung's place in the default ladder. It prints,
per step and rung, whether the step verified, the first wrong sub-step, and the model calls.

Run: python benchmarks/study_rungs.py   (about 5 minutes on 2 cores)
"""

from __future__ import annotations

import argparse
import time

from stepguard.adapters import load_model
from stepguard.guard import Guard, GuardConfig, get_rung
from stepguard.procedure import Procedure

# (left operand value, operator, right operand value, what the model answered in the chunk)
STEPS = [
    (-219, "-", -21, -208), (6, "-", 504, -508), (-280, "-", 14, -304), (20, "-", 715, -705),
    (2, "-", -492, 504), (504, "+", -416, 8), (-316, "+", 72, 406), (-520, "-", -510, 10),
    (171, "-", -168, 349), (204, "+", 192, 406), (331, "+", 8, 349),
]
# the three sums no rung fixed in the 2026-11-30 measurement (docs/lab/fidelity-history.md, residual errors)
RESIDUAL = [(468, "+", 228, 796), (-280, "-", 14, -304), (365, "-", -633, 1008)]


def study(model, rungs: list[str], steps: list[tuple[int, str, int, int]]) -> None:
    """Print one line per (step, rung) and a total per rung."""
    totals = {r: [0, 0, 0] for r in rungs}  # applied, verified, calls
    for a, op, b, wrong in steps:
        proc = Procedure.model_validate({"name": "study", "inputs": {"x": "integer", "y": "integer"},
                                         "steps": [{"var": "S1", "expr": f"x {op} y"}]})
        for attempt, rung in enumerate(rungs, start=1):
            sub = get_rung(rung).derive(proc, 0, {"x": a, "y": b})  # the guard's own nested settings below
            if sub is None:
                print(f"{a} {op} {b:<6} {rung:<9} does not apply")
                continue
            cfg = get_rung(rung).nested_config(GuardConfig(), attempt, None, None)
            t0 = time.perf_counter()
            result = Guard(model, cfg).run(sub, {})
            first = [f"{d.step}: {d.got}" for d in result.deviations][:2]
            ok = result.status == "verified"
            t = totals[rung]
            t[0], t[1], t[2] = t[0] + 1, t[1] + ok, t[2] + result.usage.model_calls
            steps = "; ".join(f"{s.var} = {s.expr}" for s in sub.steps)
            print(f"{a} {op} {b:<6} (chunk said {wrong}) {rung:<9} {'VERIFIED' if ok else 'failed  '} "
                  f"calls {result.usage.model_calls} {time.perf_counter() - t0:4.0f} s  [{steps}]  {first}")
    for rung, (n, ok, calls) in totals.items():
        print(f"{rung:<9} verified {ok}/{n} where it applies, {calls} model calls")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="local:qwen2.5-coder-1.5b")
    ap.add_argument("--rungs", default="commute,bridge,decompose", help="rungs in ladder order (sets each one's seed)")
    ap.add_argument("--residual", action="store_true", help="the three sums no rung fixed on 2026-11-30, not the 11 of the study")
    args = ap.parse_args()
    with load_model(args.model) as model:
        study(model, args.rungs.split(","), RESIDUAL if args.residual else STEPS)


if __name__ == "__main__":
    main()
