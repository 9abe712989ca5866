"""Time and peak memory of every hostile case (procedure files, model replies, the evaluator).

For each case: wall time (best of 3, without tracing) and peak traced memory (tracemalloc, a
separate run, since tracing slows Python several-fold), plus the process's maxrss growth.
Bounds: under 1 s and under 100 MB each; prints PASS/FAIL per case and a summary line.

    python benchmarks/bench_hostile.py
"""

from __future__ import annotations

import resource
import tempfile
import time
import tracemalloc
from pathlib import Path

from hostile_cases import BINARY, PROCEDURES, REPLIES  # beside this script (the tests read them too)

from stepguard.errors import StepguardError
from stepguard.procedure import Procedure, load_procedure
from stepguard.trace import parse_trace
from stepguard.verify import score_generation

TIME_BOUND_S, MEMORY_BOUND_MB = 1.0, 100.0
PROC = Procedure.model_validate({"name": "h", "inputs": ["x"], "steps": [{"var": "S1", "expr": "x"}, {"var": "S2", "expr": "S1 + 3"}]})
EXPECTED = PROC.expected_values({"x": 7})


def _measure(fn) -> tuple[float, float, float, str]:  # noqa: ANN001
    """(best wall seconds of 3, peak traced MB, maxrss growth MB, outcome) of calling ``fn``."""
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    best, outcome = float("inf"), ""
    for _ in range(3):
        t0 = time.perf_counter()
        try:
            fn()
            outcome = "ok"
        except StepguardError as exc:
            outcome = f"{type(exc).__name__}"
        best = min(best, time.perf_counter() - t0)
    rss = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss0) / 1024
    tracemalloc.start()
    try:
        try:
            fn()
        except StepguardError:
            pass
        peak = tracemalloc.get_traced_memory()[1] / 2**20
    finally:
        tracemalloc.stop()
    return best, peak, rss, outcome


def main() -> int:
    """Run every case, print a table, return 1 if any case is out of bounds."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (suffix, text, _) in PROCEDURES.items():
            path = Path(tmp) / f"{name}.{suffix}"
            path.write_text(text, encoding="utf-8")
            rows.append((f"procedure/{name}", *_measure(lambda p=path: load_procedure(p))))
        for name, data in BINARY.items():
            path = Path(tmp) / f"{name}.yaml"
            path.write_bytes(data)
            rows.append((f"procedure/{name}", *_measure(lambda p=path: load_procedure(p))))
    for name, text in REPLIES.items():
        rows.append((f"reply/{name}", *_measure(lambda t=text: score_generation((PROC, EXPECTED), t))))
        rows.append((f"parse/{name}", *_measure(lambda t=text: parse_trace(t)))) if name == "ten_megabytes" else None
    failed = 0
    print(f"{'case':48s} {'time ms':>9s} {'peak MB':>8s} {'rss+ MB':>8s}  outcome          bound")
    for name, t, peak, rss, outcome in rows:
        ok = t < TIME_BOUND_S and peak < MEMORY_BOUND_MB
        failed += not ok
        print(f"{name:48s} {t * 1000:9.1f} {peak:8.2f} {rss:8.1f}  {outcome:16s} {'PASS' if ok else 'FAIL'}")
    print(f"\n{len(rows) - failed}/{len(rows)} cases within {TIME_BOUND_S:g} s and {MEMORY_BOUND_MB:g} MB")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
