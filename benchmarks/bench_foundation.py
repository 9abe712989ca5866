"""The deterministic half of the benchmark, timed: generate, parse and score, check one step.

1. generate the default grid (55,000 instances) and serialize it as JSONL, streamed;  target < 20 s
2. score 55,000 generations of 95-step traces (parse + taxonomy), with errors mixed in;  target < 60 s
3. one step check once parsed: a compiled expression evaluated and compared;  target < 20 us

Wall time and CPU time of this process are both printed: on a shared machine CPU time is the
fairer figure. ``--scale 0.1`` runs a tenth of each workload and extrapolates.

Usage: ``python benchmarks/bench_foundation.py [--scale 1.0] [--seed 0]``
"""

from __future__ import annotations

import argparse
import gc
import random
import time
from collections.abc import Callable

from stepguard.bench.generate import DEFAULT_LOOKBACKS, DEFAULT_PER_CONFIG, DEFAULT_STEPS, generate_grid
from stepguard.bench.instances import Instance
from stepguard.evaluator import compile_expression
from stepguard.trace import parse_trace
from stepguard.verify import score_generation

KINDS = ("exact", "exact", "exact", "chain", "chain", "arith", "skip", "stop", "extra", "premature", "selfcorr")
"""Trace kinds, one per generation of an instance (11 per 95-step instance: 5,000 x 11 = 55,000)."""


def synthesize(inst: Instance, kind: str, rng: random.Random) -> str:
    """A plausible 95-step raw-mode generation of ``kind`` (value-only or substituted lines)."""
    vals = dict(inst.expected)
    env = {**inst.inputs, **vals}
    bad = rng.randrange(3, inst.n_steps + 1)
    if kind == "arith":
        vals[f"S{bad}"] += rng.choice((-10, -1, 1, 2))
    lines = ["Let me execute the procedure step by step."]
    for k, step in enumerate(inst.steps, 1):
        if (kind == "skip" and k == bad) or (kind == "stop" and k > bad):
            continue
        if kind == "premature" and k == bad:
            lines.append(f"Final answer: {inst.answer}")
        if kind == "chain" and k >= 3:
            a, op, b = step.expr.split()
            sub = " ".join(str(env[t]) if t in env else t for t in (a, op, b))
            lines.append(f"S{k} = {step.expr} = {sub} = {vals[step.var]}")
        else:
            lines.append(f"S{k} = {vals[step.var]}")
    if kind == "extra":
        lines.append(f"S{inst.n_steps + 1} = 0")
    if kind == "selfcorr":
        lines.append(f"Final answer: {inst.answer + 1}\nWait, let me recheck.")
    if kind != "premature":
        lines.append(f"Final answer: {vals[inst.steps[-1].var]}")
    return "\n".join(lines)


def timed(fn: Callable[[], object]) -> tuple[object, float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    result = fn()
    return result, time.perf_counter() - wall, time.process_time() - cpu


def report(name: str, wall: float, cpu: float, scale: float, target: float, unit: str = "s") -> None:
    wall, cpu = wall / scale, cpu / scale
    print(f"{name:<46} wall {wall:8.2f} {unit}  cpu {cpu:8.2f} {unit}  target < {target:g} {unit}  "
          f"cpu/target {cpu / target:5.2f}  {'OK' if cpu < target else 'OVER'}")


def main() -> None:
    """Run the three measurements and print each with its ratio to the target."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--scale", type=float, default=1.0, help="fraction of each workload to run (results extrapolated)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", choices=("generate", "score", "check"), help="run one measurement")
    args = ap.parse_args()
    run = {"generate", "score", "check"} if args.only is None else {args.only}
    per_config = max(1, round(DEFAULT_PER_CONFIG * args.scale))
    scale = per_config / DEFAULT_PER_CONFIG

    # 1. the default grid, generated and serialized as JSONL, streamed as `stepguard bench generate` does
    def generate() -> int:
        return sum(len(inst.model_dump_json()) + 1 for inst in generate_grid(DEFAULT_STEPS, DEFAULT_LOOKBACKS, per_config, args.seed))

    if "generate" in run:
        size, wall, cpu = timed(generate)
        count = len(DEFAULT_STEPS) * len(DEFAULT_LOOKBACKS) * per_config
        report(f"generate + serialize {count:,} instances", wall, cpu, scale, 20)
        print(f"  JSONL size {size / scale / 1e6:.0f} MB")

    # 2. 55,000 generations of 95-step traces, parsed and scored one by one (nothing retained)
    if "score" in run:
        rng = random.Random(args.seed)
        long = list(generate_grid((95,), DEFAULT_LOOKBACKS, per_config, args.seed))
        work = [(inst, synthesize(inst, kind, rng)) for inst in long for kind in KINDS]
        gc.collect()
        _, wall, cpu = timed(lambda: sum(len(parse_trace(text).records) for _, text in work))
        report(f"parse {len(work):,} 95-step traces", wall, cpu, scale, 60)
        labels: dict[str, int] = {}

        def score() -> None:
            for inst, text in work:
                for label in score_generation(inst, text).labels:
                    labels[label] = labels.get(label, 0) + 1

        _, wall, cpu = timed(score)
        report(f"score {len(work):,} 95-step generations", wall, cpu, scale, 60)
        print("  labels:", ", ".join(f"{k} {v}" for k, v in sorted(labels.items())))

    # 3. one step check once parsed
    if "check" in run:
        compiled = compile_expression("S94 - S88")
        env = {f"S{k}": 7 * k - 300 for k in range(1, 96)}
        got, n = env["S94"] - env["S88"], 200_000

        def loop() -> int:
            ok = 0
            for _ in range(n):
                ok += compiled.evaluate(env) == got
            return ok

        _, wall, cpu = timed(loop)
        report("one step check (evaluate + compare)", wall / n * 1e6, cpu / n * 1e6, 1.0, 20, "us")


if __name__ == "__main__":
    main()
