"""Whole benchmark runs on the embedded model, one server setting against another, side by side:
wall time a finished instance, generated tokens a wall second, and the outcomes, for the same
instances (issue 19, item 1: the guard's real workload end to end, not a replay of its requests).

Each variant is ``NAME=RUNTIME:SLOTS`` (``python:1``, the default server; ``native:4``, llama.cpp's
``llama-server`` with 4 slots) and runs every instance with as many in flight as it has slots, into
its own run store under ``--out`` (re-running resumes it; a store refuses other settings). Variants
run one after another on an otherwise idle machine: timings depend on load, tokens and outcomes do not.

Run:
    python benchmarks/bench_parallel_runs.py --instances benchmarks/stores/curve/instances.jsonl \\
        --configs 23x2,23x7 --limit 4 --mode guarded --out runs/parallel-runs \\
        --variant python=python:1 --variant native4=native:4
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _variant(text: str) -> tuple[str, str, int]:
    name, _, setting = text.partition("=")
    runtime, _, slots = setting.partition(":")
    if not name or runtime not in ("python", "native") or not slots.isdigit() or int(slots) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: give NAME=RUNTIME:SLOTS, e.g. native4=native:4")
    return name, runtime, int(slots)


def main(argv: list[str] | None = None) -> int:
    """Run every variant, then print one line each; returns the exit status."""
    from stepguard.adapters.models.local import LocalModel
    from stepguard.bench.run import run_benchmark
    from stepguard.bench.store import RESULTS, iter_rows
    from stepguard.guard import GuardConfig

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--instances", type=Path, required=True)
    ap.add_argument("--configs", required=True, help="e.g. 23x2,23x7")
    ap.add_argument("--limit", type=int, help="instances per configuration")
    ap.add_argument("--mode", choices=("raw", "guarded"), default="guarded")
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--variant", type=_variant, action="append", required=True, metavar="NAME=RUNTIME:SLOTS")
    args = ap.parse_args(argv)
    lines = []
    for name, runtime, slots in args.variant:
        rundir = args.out / name
        with LocalModel(args.model, runtime=runtime, parallel=slots, timeout=3600) as model:
            started = time.perf_counter()
            summary = run_benchmark(args.instances, args.mode, model, rundir, limit=args.limit, configs=args.configs,
                                    concurrency=slots, progress=False,
                                    guard_config=GuardConfig(on_exhausted="flag") if args.mode == "guarded" else None)
            wall = time.perf_counter() - started
        rows = list(iter_rows(rundir / RESULTS))
        new = summary.written
        key = "verified_correct" if args.mode == "guarded" else "correct"
        out_tokens = sum(r["usage"]["output_tokens"] for r in rows)
        lines.append({"variant": name, "runtime": runtime, "slots": slots, "new_rows": new, "rows": len(rows),
                      "wall_s": round(wall, 1), "s_per_new_instance": round(wall / new, 1) if new else None,
                      "out_tokens_per_s": round(out_tokens / wall, 2) if new == len(rows) and wall else None,
                      "succeeded": sum(bool(r.get(key)) for r in rows), "calls": sum(r["usage"]["model_calls"] for r in rows)})
        print(json.dumps(lines[-1]), flush=True)
    base = lines[0]
    for line in lines[1:]:
        if base["s_per_new_instance"] and line["s_per_new_instance"]:
            print(f"{line['variant']}: {base['s_per_new_instance'] / line['s_per_new_instance']:.2f}x the instances an hour of {base['variant']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
