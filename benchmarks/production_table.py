"""Per-procedure table of a production-suite measurement: raw first answer vs guarded verified completion.

Reads two run stores of ``stepguard bench run --instances benchmarks/production`` (raw and guarded,
same model) and prints, per procedure and in total: raw first answers right (and how many raw
replies were cut at the token allowance with no wrong value before the cut), guarded runs verified
with the right answer, flagged, silent errors (a wrong value marked model-verified) and repaired
values, calls, tokens and wall time per case; then the rungs used and the steps they fixed, and the
first unverified step of every guarded run that did not verify. Wilson 95% intervals on the totals.

Run: python benchmarks/production_table.py runs/prod-raw runs/prod-guarded
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

from stepguard.bench.stats import wilson_interval
from stepguard.guard import GuardResult


def _rows(rundir: Path) -> dict[str, dict]:
    path = rundir / "results.jsonl"
    return {r["id"]: r for r in (json.loads(line) for line in path.read_text().splitlines() if line.strip())}


def _ci(k: int, n: int) -> str:
    if not n:
        return "-"
    lo, hi = wilson_interval(k, n)
    return f"{k}/{n} {100 * k / n:.0f}% [{100 * lo:.0f}-{100 * hi:.0f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", type=Path)
    ap.add_argument("guarded", type=Path)
    args = ap.parse_args()
    raw, guarded = _rows(args.raw), _rows(args.guarded)
    by_proc: dict[str, list[str]] = defaultdict(list)
    for case in guarded:
        by_proc[case.split("/")[0]].append(case)
    print("| procedure | cases | raw right | raw cut, nothing wrong yet | guarded verified | flagged | silent errors | repaired | calls / case | tokens / case | wall s / case |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    tot: Counter[str] = Counter()
    used: Counter[str] = Counter()
    fixed: Counter[str] = Counter()
    unverified: list[str] = []
    for proc, cases in sorted(by_proc.items()):
        c: Counter[str] = Counter()
        for case in cases:
            g, r = guarded[case], raw.get(case)
            u = g["usage"]
            result = GuardResult.model_validate(g["guard"])
            c["n"] += 1
            c["paired"] += r is not None
            c["raw"] += bool(r and r.get("correct"))
            c["cut_clean"] += bool(r and not r.get("correct") and r.get("finish_reason") == "length" and r.get("first_error_step") is None)
            c["verified"] += bool(g.get("verified_correct"))
            c["flagged"] += g.get("status") == "flagged"
            c["silent"] += g["steps_model_verified"] - g["step_values_correct"]
            c["repaired"] += g.get("repaired", 0)
            c["calls"] += u["model_calls"]
            c["tokens"] += u["input_tokens"] + u["output_tokens"]
            c["wall"] += u["wall_s"]
            used.update(d.rung for d in result.deviations if d.rung)
            fixed.update(result.rung_fixes())
            if not g.get("verified_correct"):
                last = [d for d in result.deviations if d.step == result.first_unverified]
                unverified.append(f"{case}: {result.status} at {result.first_unverified}"
                                  + (f", last line `{last[-1].got}`" if last and last[-1].got else ""))
        tot.update(c)
        n = c["n"]
        print(f"| `{proc}` | {n} | {c['raw']}/{c['paired']} | {c['cut_clean']} | {c['verified']}/{n} | {c['flagged']} | {c['silent']} | "
              f"{c['repaired']} | {c['calls'] / n:.0f} | {c['tokens'] / n:,.0f} | {c['wall'] / n:.0f} |")
    n = tot["n"]
    print(f"| **all** | {n} | **{_ci(tot['raw'], tot['paired'])}** | {tot['cut_clean']} | **{_ci(tot['verified'], n)}** | {tot['flagged']} | "
          f"{tot['silent']} | {tot['repaired']} | {tot['calls'] / max(n, 1):.0f} | {tot['tokens'] / max(n, 1):,.0f} | {tot['wall'] / max(n, 1):.0f} |")
    print(f"\nrungs (used, then fixed the step): {', '.join(f'{k} {used[k]}/{fixed[k]}' for k in sorted(used))}")
    print("\nnot verified:")
    for line in unverified:
        print(f"- {line}")


if __name__ == "__main__":
    main()
