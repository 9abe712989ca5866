"""Streamed against chunked mode on the same instances and model: verified runs, model calls and
prompt tokens an instance (the guard's cost when the model is right and when it is not).

    python benchmarks/streamed_vs_chunked.py --model sim:paper --steps 23,95 --per-config 10

A simulation measures the controller's cost, never a model's accuracy (labelled so in the output).
"""

from __future__ import annotations

import argparse

from stepguard import Guard, GuardConfig
from stepguard.adapters import load_model
from stepguard.bench.generate import generate_instance


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="sim:paper")
    ap.add_argument("--steps", default="23,95")
    ap.add_argument("--lookback", default="2,7")
    ap.add_argument("--per-config", type=int, default=10)
    args = ap.parse_args(argv)
    print(f"model {args.model}" + ("  (SIMULATED: the controller's cost, not a model's accuracy)" if args.model.startswith("sim") else ""))
    print("steps  mode      verified  calls/inst  prompt tokens/inst  output tokens/inst")
    for n in (int(s) for s in args.steps.split(",")):
        for mode in ("chunked", "streamed"):
            ok = calls = tin = tout = total = 0
            for lb in (int(x) for x in args.lookback.split(",")):
                for i in range(args.per_config):
                    inst = generate_instance(n, lb, seed=0, index=i)
                    proc = inst.to_procedure()
                    model = load_model(args.model, procedure=proc)
                    r = Guard(model, GuardConfig(streamed=mode == "streamed", on_exhausted="flag")).run(proc, inst.inputs)
                    total += 1
                    ok += r.status == "verified"
                    calls += r.usage.model_calls
                    tin += r.usage.input_tokens
                    tout += r.usage.output_tokens
            print(f"{n:5}  {mode:8}  {ok:3}/{total:<4}  {calls / total:10.1f}  {tin / total:18.0f}  {tout / total:18.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
