"""CPU seconds of short ``stepguard`` commands, start-up included: what a person waits for.

Each command runs as a fresh process ``--runs`` times; the figure is the median of the CPU time
(user + system) the child used, from ``resource.getrusage(RUSAGE_CHILDREN)``, so a busy machine
changes it far less than wall time. Targets: ``stepguard --help`` and ``stepguard check
examples/invoice.yaml`` under 0.3 s each. ``python -c pass`` is printed as the floor.

The import checks (no LangGraph, matplotlib or OpenTelemetry SDK at start-up) are tests:
``tests/cli/test_imports.py``.

Usage: ``python benchmarks/bench_cli_startup.py [--runs 7]``
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET_S = 0.3
"""CPU seconds ``stepguard --help`` and ``stepguard check`` should stay under (issue 15, item 5)."""


def cpu_seconds(argv: list[str], runs: int) -> float:
    """The median CPU seconds (user + system) of ``runs`` fresh runs of ``argv``.

    Raises:
        subprocess.CalledProcessError: the command exited non-zero.
    """
    samples = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        samples.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return statistics.median(samples)


def main() -> None:
    """Print one line per command: median CPU seconds, and the target where there is one."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7, help="fresh processes per command (median)")
    runs = parser.parse_args().runs
    cli = [sys.executable, "-m", "stepguard"]
    with tempfile.TemporaryDirectory() as tmp:
        starter = str(Path(tmp) / "p.yaml")
        commands = [
            ("python -c pass", [sys.executable, "-c", "pass"], None),
            ("stepguard --help", [*cli, "--help"], TARGET_S),
            ("stepguard check examples/invoice.yaml", [*cli, "check", "examples/invoice.yaml"], TARGET_S),
            ("stepguard init FILE --force", [*cli, "init", starter, "--force"], None),
            ("stepguard bench --help", [*cli, "bench", "--help"], None),
            ("stepguard run --help", [*cli, "run", "--help"], None),
        ]
        print(f"median CPU seconds of {runs} fresh runs ({sys.executable} -m stepguard)")
        for label, argv, target in commands:
            try:
                cpu = cpu_seconds(argv, runs)
            except subprocess.CalledProcessError as exc:
                print(f"{label:<40} failed (exit {exc.returncode})")
                continue
            verdict = "" if target is None else f"  target < {target:.1f} s: {'met' if cpu < target else 'MISSED'}"
            print(f"{label:<40} {cpu:6.3f} s{verdict}")


if __name__ == "__main__":
    main()
