"""Model calls and modelled wall of the production suite, guarded, with the digit rungs asking one
sub-step a call (the default) and their independent sub-steps together (``GuardConfig.substeps_together``,
opt-in; issue 43.3; docs/policies.md, "Sub-steps asked together").

SIMULATED: the seeded simulator (``sim:paper``, ``sim:p=0.99``); every case of benchmarks/production
guarded with the benchmark's settings (the defaults by procedure, ``on_exhausted=flag``). *Off*: the
digit rungs' nested runs ask one sub-step a call (the default); *on*: with ``substeps_together``
(:data:`~stepguard.guard.rungs.arith._digits.DIGIT_CHUNK` a call at most, ``chunk_by="independent"``).
The sheets are the same in both, so the calls differ only by how many sub-steps a call asks. Modelled wall: 0.5 s a call plus
0.02 s an output token, calls in sequence (as ``benchmarks/cost_curve.py``).

    PYTHONPATH=. .venv/bin/python benchmarks/substeps_calls.py [--models sim:paper,sim:p=0.99] [--only loan_amortisation]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
from dataclasses import replace
from pathlib import Path
from typing import Any

from stepguard.adapters import load_model
from stepguard.bench.case import arun_case
from stepguard.bench.suites import ProcedureCase, load_suite
from stepguard.guard import Guard, GuardConfig
from stepguard.guard._options import GuardOptions
from stepguard.guard.rungs import get_rung

ROOT = Path(__file__).resolve().parents[1]
CALL_S = 0.5
"""Modelled seconds a call costs before its first output token."""
TOKEN_S = 0.02
"""Modelled seconds an output token costs."""


async def _measure(cases: list[ProcedureCase], spec: str, on: bool) -> dict[str, float]:
    """Mean calls, output tokens and modelled wall a case, and the share verified and right; ``on``:
    with ``substeps_together``."""
    rows = []
    for case in cases:
        config = replace(GuardOptions().resolve(case.procedure, benchmark=True), substeps_together=on)
        row = await arun_case(case, "guarded", load_model(spec, seed=0), guard_config=config)
        usage = row["usage"]
        rows.append({"calls": usage["model_calls"], "output": usage["output_tokens"],
                     "wall": CALL_S * usage["model_calls"] + TOKEN_S * usage["output_tokens"],
                     "right": float(row["status"] == "verified" and bool(row["correct"]))})
    return {k: statistics.fmean(r[k] for r in rows) for k in rows[0]}


def _sheets(cases: list[ProcedureCase]) -> list[tuple[Any, GuardConfig]]:
    """Every digit sheet the ``digits`` rung derives for a computed step of ``cases``, and, for a step of
    several operations (asked by ``chain``, one operation a sub-step), for each of its sub-steps; each
    with the parent configuration of its nested run."""
    rung, out = get_rung("digits"), []

    def sheets_of(proc: Any, env: dict[str, Any], config: GuardConfig, depth: int) -> None:
        for i, step in enumerate(proc.steps):
            sub = rung.derive(proc, i, env) if step.computes else None
            if sub is None:
                continue
            if sub.name.rsplit(":", 1)[-1] == "digits":
                out.append((sub, config))
            elif depth == 0:
                sheets_of(sub, {**env, **sub.expected_values({}, writable=False)}, config, 1)

    for case in cases:
        proc = case.procedure
        env: dict[str, Any] = {**case.inputs, **proc.expected_values(case.inputs, writable=False)}
        sheets_of(proc, env, GuardOptions().resolve(proc, benchmark=True), 0)
    return out


def _rung_runs(sheets: list[tuple[Any, GuardConfig]], spec: str, on: bool) -> dict[str, float]:
    """Mean calls and modelled wall of one digit rung's nested run, over ``sheets``, and the share
    verified; ``on``: with ``substeps_together``."""
    rows, rung = [], get_rung("digits")
    for sub, parent in sheets:
        config = rung.nested_config(replace(parent, substeps_together=on), 0, None, None, sub)
        result = Guard(load_model(spec, seed=0), replace(config, on_exhausted="flag")).run(sub, {})
        u = result.usage
        rows.append({"steps": len(sub.steps), "calls": u.model_calls, "wall": CALL_S * u.model_calls + TOKEN_S * u.output_tokens,
                     "right": float(result.status == "verified")})
    return {k: statistics.fmean(r[k] for r in rows) for k in rows[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="sim:paper,sim:p=0.99")
    ap.add_argument("--only", default="", help="procedure names, comma-separated (default: the loans, then the whole suite)")
    args = ap.parse_args()
    suite = load_suite(ROOT / "benchmarks" / "production")
    groups = {"loan_amortisation": [c for c in suite if c.procedure_name == "loan_amortisation"], "whole suite": suite}
    if args.only:
        names = set(args.only.split(","))
        groups = {", ".join(sorted(names)): [c for c in suite if c.procedure_name in names]}
    print("SIMULATED: the seeded simulator; modelled wall = 0.5 s a call + 0.02 s an output token; means a case")
    print("| cases | model | n | calls off | calls on | wall off s | wall on s | verified and right off / on |")
    print("|---|---|---|---|---|---|---|---|")
    for name, cases in groups.items():
        for spec in args.models.split(","):
            before, after = asyncio.run(_measure(cases, spec, False)), asyncio.run(_measure(cases, spec, True))
            print(f"| {name} | `{spec}` | {len(cases)} | {before['calls']:.1f} | {after['calls']:.1f} | {before['wall']:.1f} | "
                  f"{after['wall']:.1f} | {before['right']:.2f} / {after['right']:.2f} |", flush=True)
    print("\nOne digit rung run (the nested run of a sheet ``digits`` derives), for every computed step of the cases above "
          "and every sub-step of a step of several operations; means a run:")
    print("| cases | model | sheets | sub-steps | calls off | calls on | wall off s | wall on s | verified off / on |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, cases in groups.items():
        sheets = _sheets(cases)
        for spec in args.models.split(","):
            before, after = _rung_runs(sheets, spec, False), _rung_runs(sheets, spec, True)
            print(f"| {name} | `{spec}` | {len(sheets)} | {after['steps']:.1f} | {before['calls']:.1f} | {after['calls']:.1f} | "
                  f"{before['wall']:.1f} | {after['wall']:.1f} | {before['right']:.2f} / {after['right']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
