"""The refund and receipt agent workflows on a real model, over varied inputs (issue 18's must-show).

Runs ``examples/refund.yaml`` over 10 (SKU, amount) pairs and ``examples/receipt.yaml`` over 10
generated receipts, guarded, with the offline tools of ``examples/agent_tools.py``. For each run it
checks the outcome against values computed here, independently of the guard:

- refund: a verified run issued exactly one refund, to ``CATALOG[sku]``, of exactly ``amount``;
- receipt: a verified run's subtotal equals the receipt's printed total minus its printed VAT.

It prints per example: runs, verified, silent errors (verified but wrong), tool executions with a
wrong argument, calls, tokens and wall time per run. Timings depend on machine load.

Run: python benchmarks/agent_examples_real.py --model local:qwen2.5-coder-1.5b [--runs 10]
"""

from __future__ import annotations

import argparse
import sys
import time
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

import agent_tools  # noqa: E402

from stepguard import Guard, GuardConfig, load_procedure  # noqa: E402
from stepguard.adapters import load_model  # noqa: E402

SKUS = ["A-12", "B-40", "C-03"]
AMOUNTS = ["19.99", "5.00", "120.50", "7.25", "64.10", "0.99", "33.33", "250.00", "12.40", "88.88"]
ITEMS = [("Apples 1.2 kg", "3.48"), ("Bread", "2.95"), ("Olive oil 500 ml", "11.20"), ("Milk 1 l", "1.19"),
         ("Coffee beans", "8.75"), ("Eggs x12", "4.10"), ("Cheese 200 g", "3.65"), ("Rice 1 kg", "2.30")]


def receipt(i: int) -> tuple[str, Decimal]:
    """The i-th receipt text and its subtotal as printed (total minus VAT)."""
    items = [ITEMS[(i + k) % len(ITEMS)] for k in range(2 + i % 3)]
    sub = sum(Decimal(p) for _, p in items)
    vat = (sub * Decimal("0.07")).quantize(Decimal("0.01"), ROUND_HALF_UP)
    lines = [f"{name:<22}{price:>6}" for name, price in items]
    text = "\n".join(["CORNER GROCER", f"{10 + i} March 2026, 14:0{i % 10}", *lines,
                      f"{'Subtotal':<22}{sub:>6}", f"{'VAT 7%':<22}{vat:>6}", f"{'Total':<21}${sub + vat:>6}", "Thank you!"])
    return text, (sub + vat) - vat


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="local:qwen2.5-coder-1.5b")
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    refund, rec = load_procedure(ROOT / "examples/refund.yaml"), load_procedure(ROOT / "examples/receipt.yaml")
    with load_model(args.model) as model:
        for name in ("refund", "receipt"):
            procedure = refund if name == "refund" else rec  # each with its defaults by procedure
            guard = Guard(model, GuardConfig.for_procedure(procedure, on_exhausted="flag"), tools=agent_tools.TOOLS)
            n = verified = silent = wrong_exec = calls = tokens = 0
            t0 = time.perf_counter()
            for i in range(args.runs):
                before = len(agent_tools.REFUNDS)
                if name == "refund":
                    sku, amount = SKUS[i % 3], AMOUNTS[i % len(AMOUNTS)]
                    result = guard.run(refund, {"sku": sku, "amount": amount})
                    issued = agent_tools.REFUNDS[before:]
                    wrong_exec += sum(1 for order, amt in issued if (order, amt) != (agent_tools.CATALOG[sku], Decimal(amount)))
                    right = issued == [(agent_tools.CATALOG[sku], Decimal(amount))]
                else:
                    text, want = receipt(i)
                    result = guard.run(rec, {"receipt_text": text})
                    right = result.answer == want
                n += 1
                verified += result.status == "verified"
                silent += result.status == "verified" and not right
                calls += result.usage.model_calls
                tokens += result.usage.input_tokens + result.usage.output_tokens
                print(f"  {name} {i}: {result.status} answer={result.answer} right={right} calls={result.usage.model_calls}", flush=True)
            wall = time.perf_counter() - t0
            print(f"{name}: runs {n}, verified {verified}, silent errors {silent}, tool executions with a wrong argument "
                  f"{wrong_exec}, calls/run {calls / n:.1f}, tokens/run {tokens / n:.0f}, wall/run {wall / n:.0f} s", flush=True)


if __name__ == "__main__":
    main()
