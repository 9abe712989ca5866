"""Controller overhead and token cost of the guard, on the simulated executor at zero latency.

Prints:
  * the controller's own time per step (wall time minus time inside the model), LangGraph
    included; target < 1 ms per step (issue 4);
  * prompt tokens of a guarded 95-step run as a ratio to the raw run's, at the default chunk
    size; target <= 2x (issue 4). Tokens are the simulated executor's estimate (characters / 4).

Run: python benchmarks/bench_guard.py [--instances 20] [--chunk-size K]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

from stepguard import Guard, GuardConfig
from stepguard.adapters.models.sim import SimulatedExecutor
from stepguard.bench.generate import generate_grid
from stepguard.guard import render_raw_prompt

warnings.filterwarnings("ignore")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--instances", type=int, default=20)
    ap.add_argument("--chunk-size", type=int, default=GuardConfig.chunk_size)
    ap.add_argument("--preset", default="perfect")
    args = ap.parse_args()
    model = SimulatedExecutor(preset=args.preset, seed=0)
    guard = Guard(model, GuardConfig(chunk_size=args.chunk_size, on_exhausted="flag"))
    per_step, ratios, totals = [], [], []
    for inst in generate_grid([95], [7], args.instances, 0):
        proc = inst.to_procedure()
        t0 = time.perf_counter()
        result = guard.run(proc, inst.inputs)
        wall = time.perf_counter() - t0
        per_step.append((wall - result.usage.model_s) / len(proc.steps) * 1e3)
        raw = model.complete(render_raw_prompt(proc, inst.inputs))
        ratios.append(result.usage.input_tokens / raw.usage.input_tokens)
        totals.append((result.usage.input_tokens + result.usage.output_tokens) / (raw.usage.input_tokens + raw.usage.output_tokens))
    print(f"guard controller time per step (95 steps, look-back 7, chunk {args.chunk_size}, sim:{args.preset}, {len(per_step)} runs)")
    print(f"  median {statistics.median(per_step):.3f} ms/step   mean {statistics.mean(per_step):.3f}   target < 1 ms   ratio to target {statistics.median(per_step) / 1.0:.2f}")
    print(f"prompt tokens guarded / raw: median {statistics.median(ratios):.2f}x   target <= 2x")
    print(f"all tokens guarded / raw:    median {statistics.median(totals):.2f}x")


if __name__ == "__main__":
    main()
