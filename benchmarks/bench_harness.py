"""The benchmark harness's own cost: overhead per instance, and peak memory as the instance count grows.

Overhead, against the zero-latency ``sim:perfect`` executor at concurrency 16, two ways:

* own share (the verdict; target < 5%): :func:`stepguard.bench.run.run_benchmark` with the run
  store's public methods timed from outside (open / append / fsync / close), as a share of the
  run's wall time (run.json, the instances file's hash and progress-bar ticks are once per run or
  microseconds, and show in the A/B);
* A/B (a cross-check): the same instances by a bare loop at the same concurrency doing only the
  per-instance work (render the prompt, call the model, score or guard, build and serialise the row);
  overhead = (harness - bare) / harness, fastest run of each side. On a shared machine the load of
  other jobs moves this by +-20%, more than the harness costs.

A third row repeats raw mode with the store's strict setting (an inline fsync per row) to show
what the disk alone costs.

Memory: for growing instance counts, a fresh process runs raw mode at concurrency 16 against a
zero-latency model with one canned reply (:class:`ConstantModel`: no caches of its own) and reports
the peak of ``tracemalloc`` (Python allocations during the run) and ``ru_maxrss`` (whole process).
Instances are streamed and rows dropped once written; what grows is the set of finished ids (kept
to skip them on resume), about 0.15 KB an instance.

Usage: ``python benchmarks/bench_harness.py [--instances 400] [--rounds 9] [--sizes 200,800,3200]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from contextlib import redirect_stderr
from pathlib import Path
from typing import Any

import stepguard.bench.run as run_mod
from stepguard.adapters import load_model
from stepguard.bench.generate import generate_grid
from stepguard.bench.instances import iter_instances, write_instances
from stepguard.bench.rows import guarded_row, raw_row
from stepguard.bench.run import raw_max_tokens, run_benchmark
from stepguard.bench.store import RunStore
from stepguard.guard import Guard, GuardConfig, render_raw_prompt
from stepguard.model import ChatResponse, GenerationSettings, Usage
from stepguard.verify import score_generation

CONCURRENCY = 16


def _instances(path: Path, count: int) -> Path:
    """``count`` instances, half 5-step and half 23-step, look-back 2 (deterministic)."""
    write_instances(generate_grid([5, 23], [2], count // 2, seed=7), path)
    return path


async def _bare(path: Path, mode: str) -> tuple[float, float]:
    """The per-instance work alone, at the same concurrency (a semaphore and tasks, nothing else):
    render, call, score or guard, build and serialise the row. ``(wall s, CPU s)``."""
    model = load_model("sim:perfect")
    guard = Guard(model, GuardConfig(on_exhausted="flag")) if mode == "guarded" else None
    sem = asyncio.Semaphore(CONCURRENCY)

    async def one(inst: Any) -> None:
        try:
            if guard is None:
                t = time.perf_counter()
                settings = GenerationSettings(temperature=0.0, seed=0, max_tokens=raw_max_tokens(inst.n_steps))
                resp = await model.acomplete(render_raw_prompt(inst.to_procedure(), inst.inputs), settings)
                json.dumps(raw_row(inst, resp, score_generation(inst, resp.text), time.perf_counter() - t))
            else:
                result = await guard.arun(inst.to_procedure(), inst.inputs, thread_id=inst.id)
                json.dumps(guarded_row(inst, result))
        finally:
            sem.release()

    t0, c0 = time.perf_counter(), time.process_time()
    async with asyncio.TaskGroup() as tg:
        for inst in iter_instances(path):
            await sem.acquire()
            tg.create_task(one(inst))
    return time.perf_counter() - t0, time.process_time() - c0


def _harness(path: Path, mode: str, rundir: Path) -> tuple[float, float, float]:
    """run_benchmark at concurrency 16, progress bar on (to /dev/null): ``(wall s, CPU s, own s)``,
    ``own`` being the time spent inside the harness's own code (see :func:`_instrument`)."""
    own = [0.0]
    undo = _instrument(own)
    try:
        t0, c0 = time.perf_counter(), time.process_time()
        with open(os.devnull, "w") as null, redirect_stderr(null):
            run_benchmark(path, mode, load_model("sim:perfect"), rundir, concurrency=CONCURRENCY, progress=True)  # type: ignore[arg-type]
        return time.perf_counter() - t0, time.process_time() - c0, own[0]
    finally:
        undo()


def _instrument(acc: list[float]) -> Any:
    """Time the run store's public methods into ``acc[0]``: open, add_result, add_error, close
    (fsync included). Returns an undo function. (Not timed: the semaphore and task per instance,
    a few microseconds.)"""
    targets = [(RunStore, "open"), (RunStore, "add_result"), (RunStore, "add_error"), (RunStore, "close")]
    saved = [(obj, name, obj.__dict__[name]) for obj, name in targets]
    for obj, name, orig in saved:
        fn = getattr(obj, name)

        def timed(*a: Any, _fn: Any = fn, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return _fn(*a, **k)
            finally:
                acc[0] += time.perf_counter() - t

        setattr(obj, name, timed if not isinstance(orig, classmethod) else staticmethod(timed))

    def undo() -> None:
        for obj, name, orig in saved:
            setattr(obj, name, orig)

    return undo


def overhead(count: int, rounds: int) -> None:
    """Print the harness's own time per instance and as a share of wall time (the verdict: robust to
    other load), and the A/B against the bare loop (a cross-check: noisy on a shared machine)."""
    with tempfile.TemporaryDirectory() as tmp:
        default = run_mod.SYNC_INTERVAL_S
        print(f"overhead: {count} instances (5 and 23 steps), sim:perfect (zero latency), concurrency {CONCURRENCY}")
        print(f"{'mode':9}{'wall ms/inst':>13}{'own ms/inst':>12}{'own share':>10}   "
              f"{'bare ms/inst':>12}{'A/B wall':>9}{'A/B CPU':>9}")
        for mode, interval in (("raw", 0.05), ("guarded", 0.05), ("raw", None)):
            run_mod.SYNC_INTERVAL_S = interval  # None: the strict variant, an inline fsync per row
            n = count if mode == "raw" else max(40, count // 4)
            sub = _instances(Path(tmp) / f"{mode}.jsonl", n)
            name = mode if interval is not None else f"{mode}*"
            hs, bs = [], []
            for r in range(rounds):  # alternate the order so warm-up and machine noise hit both sides
                if r % 2:
                    bs.append(asyncio.run(_bare(sub, mode)))
                hs.append(_harness(sub, mode, Path(tmp) / f"{name}-{r}"))
                if not r % 2:
                    bs.append(asyncio.run(_bare(sub, mode)))
            share = statistics.median(h[2] / h[0] for h in hs)
            own = statistics.median(h[2] for h in hs)
            (hw, hc), (bw, bc) = (min(h[0] for h in hs), min(h[1] for h in hs)), (min(b[0] for b in bs), min(b[1] for b in bs))
            verdict = "ok" if share < 0.05 else "OVER TARGET"
            print(f"{name:9}{1e3 * hw / n:13.3f}{1e3 * own / n:12.3f}{100 * share:9.1f}%   {1e3 * bw / n:12.3f}"
                  f"{100 * (hw - bw) / hw:8.1f}%{100 * (hc - bc) / hc:8.1f}%   (target < 5%: {verdict}; {n} instances)")
        run_mod.SYNC_INTERVAL_S = default
        print("own: time inside the harness's own steps (median of rounds); A/B: fastest harness run vs fastest bare run.")
        print("* the store's strict setting: an inline fsync per row instead of group commit (the disk's cost).")


class ConstantModel:
    """A zero-latency ChatModel with one canned reply and no caches: the memory measured is the harness's.

    (``sim:perfect`` keeps a bounded cache of the last 1,024 prompts, which would show as growth up
    to that many instances.)
    """

    spec = model_name = "constant"
    provider = "bench"
    simulated = True
    TEXT = "S1 = 7\nS2 = 3\nS3 = 10\nS4 = 13\nS5 = 23\nFinal answer: 23"

    async def acomplete(self, messages: Any, settings: Any = None) -> ChatResponse:
        """Return the canned reply at once."""
        return ChatResponse(self.TEXT, Usage(len(messages[-1]["content"]) // 4, 12), "stop", 0.0, "constant", True)

    def complete(self, messages: Any, settings: Any = None) -> ChatResponse:
        """Sync twin."""
        return ChatResponse(self.TEXT, Usage(len(messages[-1]["content"]) // 4, 12), "stop", 0.0, "constant", True)


def _memory_child(count: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = _instances(Path(tmp) / "inst.jsonl", count)
        model = ConstantModel()
        tracemalloc.start()
        t0 = time.perf_counter()
        run_benchmark(path, "raw", model, Path(tmp) / "run", concurrency=CONCURRENCY, progress=False)  # type: ignore[arg-type]
        wall = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux -> MiB
    print(json.dumps({"count": count, "peak_mib": peak / 2**20, "rss_mib": rss, "wall_s": wall}))


def memory(sizes: list[int]) -> None:
    """Print tracemalloc and RSS peaks of a raw run per instance count (fresh process each)."""
    print(f"\nmemory: raw mode, a zero-latency constant-reply model, concurrency {CONCURRENCY}, fresh process per size (tracemalloc on)")
    print(f"{'instances':>10}{'tracemalloc peak MiB':>22}{'max RSS MiB':>13}{'wall s':>8}")
    for count in sizes:
        out = subprocess.run([sys.executable, __file__, "--memory-child", str(count)], capture_output=True, text=True, check=True)
        d = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{d['count']:>10}{d['peak_mib']:>22.2f}{d['rss_mib']:>13.1f}{d['wall_s']:>8.1f}")


def main() -> None:
    """Parse arguments and run both measurements."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--instances", type=int, default=400, help="instances for the overhead measurement (raw; guarded uses a quarter)")
    ap.add_argument("--rounds", type=int, default=9, help="alternating rounds (fastest of each side compared)")
    ap.add_argument("--sizes", default="200,800,3200", help="instance counts for the memory measurement")
    ap.add_argument("--memory-child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.memory_child:
        _memory_child(args.memory_child)
        return
    overhead(args.instances, args.rounds)
    memory([int(s) for s in args.sizes.split(",")])


if __name__ == "__main__":
    main()
