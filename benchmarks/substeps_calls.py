"""Model calls and modelled wall of the production suite, guarded, before and after the digit rungs ask
their independent sub-steps together (issue 43.3; docs/policies.md, "Sub-steps asked together").

SIMULATED: the seeded simulator (``sim:paper``, ``sim:p=0.99``); every case of benchmarks/production
guarded with the benchmark's settings (the defaults by procedure, ``on_exhausted=flag``). *Before*: the
digit rungs' nested runs ask one sub-step a call (``chunk_size=1``, ``chunk_by="size"``, as they did);
*after*: as they do now (:data:`~stepguard.guard.rungs.arith._digits.DIGIT_CHUNK` a call at most,
``chunk_by="independent"``). The sheets are the same in both (products and columns first, then their
carries), so the calls differ only by how many sub-steps a call asks. Modelled wall: 0.5 s a call plus
0.02 s an output token, calls in sequence (as ``benchmarks/cost_curve.py``).

    PYTHONPATH=. .venv/bin/python benchmarks/substeps_calls.py [--models sim:paper,sim:p=0.99] [--only loan_amortisation]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from stepguard.adapters import load_model
from stepguard.bench.case import arun_case
from stepguard.bench.suites import ProcedureCase, load_suite
from stepguard.guard import Guard, GuardConfig
from stepguard.guard._options import GuardOptions
from stepguard.guard.rungs import get_rung
from stepguard.guard.rungs.arith._digits import DigitRung

ROOT = Path(__file__).resolve().parents[1]
CALL_S = 0.5
"""Modelled seconds a call costs before its first output token."""
TOKEN_S = 0.02
"""Modelled seconds an output token costs."""


@contextlib.contextmanager
def one_a_call() -> Iterator[None]:
    """The digit rungs' nested runs as they were before: one sub-step a call."""
    now = DigitRung.nested_config

    def before(self: DigitRung, *args: Any, **kw: Any) -> Any:
        return replace(now(self, *args, **kw), chunk_size=1, chunk_by="size")

    DigitRung.nested_config = before  # type: ignore[method-assign]
    try:
        yield
    finally:
        DigitRung.nested_config = now  # type: ignore[method-assign]


async def _measure(cases: list[ProcedureCase], spec: str) -> dict[str, float]:
    """Mean calls, output tokens and modelled wall a case, and the share verified and right."""
    rows = []
    for case in cases:
        config = GuardOptions().resolve(case.procedure, benchmark=True)
        row = await arun_case(case, "guarded", load_model(spec, seed=0), guard_config=config)
        usage = row["usage"]
        rows.append({"calls": usage["model_calls"], "output": usage["output_tokens"],
                     "wall": CALL_S * usage["model_calls"] + TOKEN_S * usage["output_tokens"],
                     "right": float(row["status"] == "verified" and bool(row["correct"]))})
    return {k: statistics.fmean(r[k] for r in rows) for k in rows[0]}


def _sheets(cases: list[ProcedureCase]) -> list[tuple[Any, GuardConfig]]:
    """Every digit sheet the ``digits`` rung derives for a computed step of ``cases``, and, for a step of
    several operations (asked by ``chain``, one operation a sub-step), for each of its sub-steps; each
    with its nested configuration."""
    rung, out = get_rung("digits"), []

    def sheets_of(proc: Any, env: dict[str, Any], config: GuardConfig, depth: int) -> None:
        for i, step in enumerate(proc.steps):
            sub = rung.derive(proc, i, env) if step.computes else None
            if sub is None:
                continue
            if sub.name.rsplit(":", 1)[-1] == "digits":
                out.append((sub, rung.nested_config(config, 0, None, None, sub)))
            elif depth == 0:
                sheets_of(sub, {**env, **sub.expected_values({}, writable=False)}, config, 1)

    for case in cases:
        proc = case.procedure
        env: dict[str, Any] = {**case.inputs, **proc.expected_values(case.inputs, writable=False)}
        sheets_of(proc, env, GuardOptions().resolve(proc, benchmark=True), 0)
    return out


def _rung_runs(sheets: list[tuple[Any, GuardConfig]], spec: str, before: bool) -> dict[str, float]:
    """Mean calls and modelled wall of one digit rung's nested run, over ``sheets``, and the share
    verified; ``before``: one sub-step a call (as :func:`one_a_call`)."""
    rows = []
    for sub, config in sheets:
        if before:
            config = replace(config, chunk_size=1, chunk_by="size")
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
    print("| cases | model | n | calls before | calls after | wall before s | wall after s | verified and right before / after |")
    print("|---|---|---|---|---|---|---|---|")
    for name, cases in groups.items():
        for spec in args.models.split(","):
            with one_a_call():
                before = asyncio.run(_measure(cases, spec))
            after = asyncio.run(_measure(cases, spec))
            print(f"| {name} | `{spec}` | {len(cases)} | {before['calls']:.1f} | {after['calls']:.1f} | {before['wall']:.1f} | "
                  f"{after['wall']:.1f} | {before['right']:.2f} / {after['right']:.2f} |", flush=True)
    print("\nOne digit rung run (the nested run of a sheet ``digits`` derives), for every computed step of the cases above "
          "and every sub-step of a step of several operations; means a run:")
    print("| cases | model | sheets | sub-steps | calls before | calls after | wall before s | wall after s | verified before / after |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, cases in groups.items():
        sheets = _sheets(cases)
        for spec in args.models.split(","):
            before, after = _rung_runs(sheets, spec, True), _rung_runs(sheets, spec, False)
            print(f"| {name} | `{spec}` | {len(sheets)} | {after['steps']:.1f} | {before['calls']:.1f} | {after['calls']:.1f} | "
                  f"{before['wall']:.1f} | {after['wall']:.1f} | {before['right']:.2f} / {after['right']:.2f} |", flush=True)


if __name__ == "__main__":
    main()
