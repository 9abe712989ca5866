"""Fidelity on a real model: raw vs guarded (the escalation ladder), same instances, per rung.

Runs the benchmark raw and guarded on one model over a fixed grid (default: 5, 23, 50 and 95
steps x look-back 2 and 7, N instances per cell, the same instances for every variant), smallest
cells first so that an interrupted measurement still has whole cells; re-running resumes. Then
prints, per cell: raw first-answer accuracy, guarded verified completion (correct with no
repaired value), Wilson 95% intervals, re-prompts, calls and tokens per instance, wall time;
and per rung: times used and times it fixed the step. Writes the report (plots) to OUT/report.

Run: python benchmarks/measure_ladder.py --model local:qwen2.5-coder-1.5b --out runs/ladder --per-cell 5
"""

from __future__ import annotations

import argparse
import json
import platform
from collections import Counter, defaultdict
from pathlib import Path

from stepguard.bench.generate import generate_grid
from stepguard.bench.instances import write_instances
from stepguard.bench.report import build_report
from stepguard.bench.run import run_benchmark
from stepguard.bench.stats import wilson_interval
from stepguard.guard import GuardConfig


def _rows(rundir: Path) -> list[dict]:
    path = rundir / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def share_text(k: int, n: int) -> str:
    """``k/n`` with its percentage and 95% Wilson interval (``2/12 17% [5-45]``), ``-`` for no rows."""
    if not n:
        return "-"
    lo, hi = wilson_interval(k, n)
    return f"{k}/{n} {100 * k / n:.0f}% [{100 * lo:.0f}-{100 * hi:.0f}]"


def rescore_raw(rundir: Path, inst_file: Path) -> int:
    """Re-score raw rows from their stored text with the current parser (atomic rewrite); returns rows changed."""
    from stepguard.bench.instances import iter_instances
    from stepguard.verify import score_generation

    path = rundir / "results.jsonl"
    if not path.exists():
        return 0
    insts = {i.id: i for i in iter_instances(inst_file)}
    changed, out = 0, []
    for row in _rows(rundir):
        fields = score_generation(insts[row["id"]], row["text"]).model_dump(mode="json")
        new = {**row, **{k: v for k, v in fields.items() if k not in ("id", "n_steps", "lookback")}}
        changed += new != row
        out.append(json.dumps(new, separators=(",", ":")))
    tmp = path.with_suffix(".rescored")
    tmp.write_text("\n".join(out) + "\n")
    tmp.replace(path)
    return changed


def rung_table(rows: list[dict]) -> dict[str, tuple[int, int]]:
    """``{rung: (times used, times the step then verified on that rung)}`` over guarded rows."""
    from stepguard.guard import GuardResult

    used: Counter[str] = Counter()
    fixed: Counter[str] = Counter()
    for row in rows:
        if not row.get("guard"):
            continue
        result = GuardResult.model_validate(row["guard"])
        used.update(d.rung for d in result.deviations if d.rung)
        fixed.update(result.rung_fixes())
    return {r: (used[r], fixed[r]) for r in used}


def _print_token_ratio(guarded: list[dict], raw: list[dict]) -> None:
    """Guarded / raw tokens (input + output) per step count, over the instances both variants ran."""
    def toks(r: dict) -> int:
        return r["usage"]["input_tokens"] + r["usage"]["output_tokens"]

    raw_by_id = {r["id"]: r for r in raw}
    for n in sorted({r["n_steps"] for r in guarded}):
        pairs = [(toks(g), toks(raw_by_id[g["id"]])) for g in guarded if g["n_steps"] == n and g["id"] in raw_by_id]
        if pairs:
            g_sum, r_sum = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
            print(f"  tokens guarded/raw at {n} steps ({len(pairs)} paired instances): {g_sum / max(r_sum, 1):.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="local:qwen2.5-coder-1.5b")
    ap.add_argument("--out", type=Path, default=Path("runs/ladder"))
    ap.add_argument("--steps", default="5,23,50,95")
    ap.add_argument("--lookback", default="2,7")
    ap.add_argument("--per-cell", type=int, default=5)
    ap.add_argument("--variants", default="raw,guarded", help="raw, guarded (default ladder), naive (restate x4 at temperature 0), split (split, resample, resample), streamed (the default ladder, one streamed call a window)")
    ap.add_argument("--limit", default="", help="fewer instances for some step counts, e.g. 95:2 (per look-back)")
    ap.add_argument("--n-ctx", type=int, default=8192,
                    help="server context window; a raw 95-step instance needs ~900 prompt + 3,864 reply tokens")
    ap.add_argument("--timeout", type=float, default=1800.0,
                    help="seconds per model call; a raw 95-step reply took over 600 s on 2 cores")
    ap.add_argument("--concurrency", type=int, default=1,
                    help="instances in flight at once: 1 on the default server (one slot); N with "
                         "STEPGUARD_RUNTIME=native STEPGUARD_PARALLEL=N (docs/speed.md, 'Parallel slots')")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    steps = [int(s) for s in args.steps.split(",")]
    limits = {int(k): int(v) for k, v in (p.split(":") for p in args.limit.split(",") if p)}
    lookbacks = [int(s) for s in args.lookback.split(",")]
    args.out.mkdir(parents=True, exist_ok=True)
    inst_file = args.out / "instances.jsonl"
    if not inst_file.exists():
        write_instances(generate_grid(steps, lookbacks, args.per_cell, 0), inst_file)
    variants = {
        "raw": ("raw", None),
        "guarded": ("guarded", GuardConfig(on_exhausted="flag")),
        "naive": ("guarded", GuardConfig(on_exhausted="flag", ladder=("restate",), max_reprompts_per_step=4)),
        "split": ("guarded", GuardConfig(on_exhausted="flag", ladder=("split", "resample", "resample"))),
        "streamed": ("guarded", GuardConfig(on_exhausted="flag", streamed=True)),
    }
    chosen = [v for v in args.variants.split(",") if v]
    if not args.report_only:
        from stepguard.adapters import load_model

        options = {"n_ctx": args.n_ctx, "timeout": args.timeout} if args.model.startswith("local:") else {"timeout": args.timeout}
        with load_model(args.model, **options) as model:
            (args.out / "model.json").write_text(json.dumps({
                "spec": args.model, "repr": repr(model), "python": platform.python_version(),
                "server": getattr(model, "server_info", lambda: None)() if callable(getattr(model, "server_info", None)) else None,
            }, indent=2, default=str))
            for n in steps:
                for name in chosen:
                    mode, cfg = variants[name]
                    run_benchmark(inst_file, mode, model, args.out / name, configs=[(n, lb) for lb in lookbacks],
                                  concurrency=args.concurrency, guard_config=cfg, limit=limits.get(n))
    if "raw" in chosen and not args.report_only:
        # only here, after this process's runs: rewriting results.jsonl beside a live run (another
        # process appending to it) loses that run's rows
        print(f"raw rows re-scored with the current parser: {rescore_raw(args.out / 'raw', inst_file)} changed")
    print(f"model {args.model}   instances {inst_file}")
    print(f"{'cell':<10}" + "".join(f"{v:>34}" for v in chosen))
    data = {v: _rows(args.out / v) for v in chosen}
    for n in steps:
        for lb in lookbacks:
            cells = []
            for v in chosen:
                rows = [r for r in data[v] if r["n_steps"] == n and r["lookback"] == lb]
                key = "correct" if v == "raw" else "verified_correct"
                cells.append(share_text(sum(bool(r.get(key)) for r in rows), len(rows)))
            print(f"{n}x{lb:<7}" + "".join(f"{c:>34}" for c in cells))
    for v in chosen:
        rows = data[v]
        per: dict[int, list[dict]] = defaultdict(list)
        for r in rows:
            per[r["n_steps"]].append(r)
        print(f"\n{v}: per step count (mean per instance)")
        for n, rs in sorted(per.items()):
            u = [r["usage"] for r in rs]
            k = len(rs)
            toks = sum(x["input_tokens"] + x["output_tokens"] for x in u) / k
            print(f"  {n:>3} steps  n={k}  calls {sum(x['model_calls'] for x in u) / k:.1f}  tokens {toks:.0f}  "
                  f"re-prompts {sum(r.get('reprompts', 0) for r in rs) / k:.1f}  repaired {sum(r.get('repaired', 0) for r in rs)}  "
                  f"wall {sum(x['wall_s'] for x in u) / k:.0f}s")
        if v != "raw":
            print(f"  rungs (used, fixed): {rung_table(rows)}")
            print(f"  deviations by kind: {dict(Counter(d['kind'] for r in rows for d in (r.get('guard') or {}).get('deviations', [])))}")
            if "raw" in data:
                _print_token_ratio(rows, data["raw"])
            # a step marked model_verified whose value is not the expected one would be a silent error
            wrong_verified = sum(r["steps_model_verified"] - r["step_values_correct"] for r in rows)
            print(f"  silent errors (a wrong value marked model_verified): {wrong_verified}")
    report = build_report([args.out / v for v in chosen], args.out / "report")
    print(f"\nreport: {report.report_html}")


if __name__ == "__main__":
    main()
