"""Calibrate a ``sim:<preset>`` against the paper's headline raw-mode means.

Builds raw-mode prompts from ``stepguard/guard/prompts/raw.txt`` for N in {5, 14, ..., 95} x
L in {1, 2, 3, 5, 7}, asks the simulated executor, scores the first ``Final answer:`` and prints
first-answer accuracy per length (mean over look-backs) next to the paper's reported means
(61% at 5 steps, 20% at 95; Panda et al., arXiv 2605.00817v1, means over 14 models), and per
look-back (the paper reports L 1 -> 7 costing 18.43 points).

Instances come from ``stepguard.bench.generate.generate_grid`` when it is importable, else from a
small local generator that follows the generator rules in shared/spec/benchmark.md.

    python benchmarks/calibrate_sim.py --preset paper --per-config 100 --seed 0
"""

from __future__ import annotations

import argparse
import hashlib
import random
import re
import sys
import time
from pathlib import Path
from string import Template
from typing import Any

from stepguard.adapters.models.sim import SimulatedExecutor

LENGTHS = (5, 14, 23, 32, 41, 50, 59, 68, 77, 86, 95)
LOOKBACKS = (1, 2, 3, 5, 7)
TARGETS = {5: 0.61, 95: 0.20}  # the paper's mean first-answer accuracy (v1), raw mode
LOOKBACK_GAP = 0.1843  # the paper's reported mean cost of L 1 -> 7 (v1)
_RAW = Path(__file__).resolve().parents[1] / "stepguard" / "guard" / "prompts" / "raw.txt"
_ANSWER = re.compile(r"final answer:\s*([-+]?\d[\d,]*(?:\.\d+)?)", re.IGNORECASE)


def _local_instance(n: int, lookback: int, seed: int, index: int, bound: int = 1000) -> dict[str, Any]:
    """One instance by benchmark.md's rules: S1 = x, S2 = y, S_k = S_{k-1} op S_{k-L} (or op c for L = 1)."""
    digest = hashlib.sha256(f"{seed}|{n}|{lookback}|{index}".encode()).digest()
    rng = random.Random(int.from_bytes(digest[:8], "big"))
    inputs = {"x": rng.randint(2, 20), "y": rng.randint(2, 20)}
    vals = {"S1": inputs["x"], "S2": inputs["y"]}
    steps = [{"var": "S1", "expr": "x"}, {"var": "S2", "expr": "y"}]
    for k in range(3, n + 1):
        a = f"S{k - 1}"
        for _ in range(1000):
            b = str(rng.randint(1, 9)) if lookback == 1 else f"S{max(1, k - lookback)}"
            av, bv = vals[a], int(b) if lookback == 1 else vals[b]
            op = rng.choice("+-*")
            if op == "*" and min(abs(av), abs(bv)) > 12:
                continue
            (left, lv), (right, rv) = ((a, av), (b, bv)) if rng.random() < 0.5 else ((b, bv), (a, av))
            value = lv + rv if op == "+" else lv - rv if op == "-" else lv * rv
            if abs(value) < bound:
                break
        steps.append({"var": f"S{k}", "expr": f"{left} {op} {right}"})
        vals[f"S{k}"] = value
    return {"inputs": inputs, "steps": steps, "answer": vals[f"S{n}"]}


def generator_name() -> str:
    """Which generator :func:`instances` uses."""
    try:
        from stepguard.bench.generate import generate_grid  # noqa: F401
    except ImportError:
        return "local fallback generator (benchmarks/calibrate_sim.py)"
    return "stepguard.bench.generate.generate_grid"


def instances(n: int, lookback: int, per_config: int, seed: int) -> list[dict[str, Any]]:
    """``per_config`` instances of one configuration, as dicts with inputs, steps, answer."""
    try:
        from stepguard.bench.generate import generate_grid
    except ImportError:
        return [_local_instance(n, lookback, seed, i) for i in range(per_config)]
    out = []
    for inst in generate_grid([n], [lookback], per_config, seed):
        steps = [s if isinstance(s, dict) else {"var": s.var, "expr": s.expr} for s in inst.steps]
        out.append({"inputs": dict(inst.inputs), "steps": steps, "answer": inst.answer})
    return out


def raw_prompt(inst: dict[str, Any], template: Template) -> str:
    """The raw-mode prompt for one instance (``inputs``, ``steps`` and ``last`` substituted)."""
    return template.substitute(
        inputs="\n".join(f"{k} = {v}" for k, v in inst["inputs"].items()),
        steps="\n".join(f"{s['var']} = {s['expr']}" for s in inst["steps"]),
        last=inst["steps"][-1]["var"],
    )


def first_answer_correct(text: str, answer: Any) -> bool:
    """True when the first ``Final answer:`` in ``text`` equals ``answer``."""
    m = _ANSWER.search(text)
    return bool(m) and float(m.group(1).replace(",", "")) == float(answer)


def measure(model: Any, per_config: int, seed: int, lengths=LENGTHS, lookbacks=LOOKBACKS) -> dict[tuple[int, int], float]:
    """First-answer accuracy of ``model`` (a ChatModel) per (N, L) configuration, raw mode."""
    template = Template(_RAW.read_text())
    acc = {}
    for n in lengths:
        for lb in lookbacks:
            insts = instances(n, lb, per_config, seed)
            hits = 0
            for inst in insts:
                reply = model.complete([{"role": "user", "content": raw_prompt(inst, template)}])
                hits += first_answer_correct(reply.text, inst["answer"])
            acc[n, lb] = hits / len(insts)
    return acc


def main(argv: list[str] | None = None) -> int:
    """Print the calibration table; exit 1 when an end point misses its target by more than ``--tolerance``."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="paper")
    ap.add_argument("--per-config", type=int, default=100)
    ap.add_argument("--seed", type=int, default=0, help="instance and executor seed")
    ap.add_argument("--tolerance", type=float, default=0.05)
    args = ap.parse_args(argv)
    model = SimulatedExecutor(preset=args.preset, seed=args.seed)
    t0 = time.perf_counter()
    acc = measure(model, args.per_config, args.seed)
    calls = len(acc) * args.per_config
    elapsed = time.perf_counter() - t0
    print(f"sim:{args.preset}  seed={args.seed}  {args.per_config} instances per configuration  "
          f"({calls} calls, {elapsed:.1f} s, prompt building included)")
    print(f"instances: {generator_name()}")
    print("first-answer accuracy, raw mode (simulated, never a model's accuracy)\n")
    print("  N   " + "".join(f"  L={lb:<4}" for lb in LOOKBACKS) + "  mean   paper")
    for n in LENGTHS:
        mean = sum(acc[n, lb] for lb in LOOKBACKS) / len(LOOKBACKS)
        target = f"{TARGETS[n]:.0%}" if n in TARGETS else ""
        print(f"  {n:<3} " + "".join(f"  {acc[n, lb]:6.0%}" for lb in LOOKBACKS) + f"  {mean:5.0%}  {target:>5}")
    by_lb = {lb: sum(acc[n, lb] for n in LENGTHS) / len(LENGTHS) for lb in LOOKBACKS}
    print("\n  mean " + "".join(f"  {by_lb[lb]:6.0%}" for lb in LOOKBACKS))
    gap = by_lb[1] - by_lb[7]
    print(f"\n  look-back 1 -> 7 costs {gap * 100:.1f} points (paper: {LOOKBACK_GAP * 100:.2f})")
    ok = True
    for n, target in TARGETS.items():
        mean = sum(acc[n, lb] for lb in LOOKBACKS) / len(LOOKBACKS)
        miss = abs(mean - target) > args.tolerance
        ok &= not miss
        print(f"  N={n}: {mean:.1%} vs paper {target:.0%}  {'MISS' if miss else 'ok'} (tolerance {args.tolerance:.0%})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
