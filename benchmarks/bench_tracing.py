"""What tracing adds to a guarded run: controller time per step with and without ``OtelObserver``.

A 95-step generated instance (look-back 5) runs under the guard with the simulated executor
``sim:perfect`` (no faults, no latency) at chunk size 5: 19 chunks, 19 model calls, 95
evaluation events. Three sides, interleaved round by round so machine noise hits them alike:

- ``none``: no observer (the default ``NullObserver``);
- ``traced``: ``OtelObserver`` on an SDK ``TracerProvider`` with a ``BatchSpanProcessor`` into an
  exporter that drops every batch, and a ``MeterProvider`` with an in-memory reader;
- ``traced-deviations``: the same with ``step_events="deviations"`` (no event for a passing step);
- ``traced+content``: ``traced`` with ``capture_content=True`` (prompts and replies as attributes).

"Controller time" is the time of the whole ``Guard.run`` call (the observer's run start and end
included) less the time inside the model: the guard's own work, which tracing adds to. It is
reported as process CPU time (all threads, so the batch exporter's thread counts too), which a
busy shared machine disturbs far less than wall time, and as wall time. Target: ``traced`` adds
< 10 % controller CPU time.

Usage: ``python benchmarks/bench_tracing.py [--runs 30] [--steps 95] [--chunk-size 5]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from stepguard import Guard, GuardConfig
from stepguard.adapters import load_model
from stepguard.bench.generate import generate_instance
from stepguard.telemetry import OtelObserver


class DropExporter(SpanExporter):
    """Accepts every batch and keeps nothing (counts spans, to show the spans were made)."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


class CpuTimedModel:
    """Forwards to a ChatModel and adds up the process CPU seconds spent inside ``complete``."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.cpu_s = inner, 0.0
        self.spec, self.provider, self.model_name, self.simulated = inner.spec, inner.provider, inner.model_name, inner.simulated

    def complete(self, messages: Any, settings: Any = None) -> Any:
        t = time.process_time()
        try:
            return self.inner.complete(messages, settings)
        finally:
            self.cpu_s += time.process_time() - t

    async def acomplete(self, messages: Any, settings: Any = None) -> Any:
        return self.complete(messages, settings)


def _observer(capture: bool, step_events: str = "all") -> tuple[OtelObserver, DropExporter, TracerProvider]:
    exporter = DropExporter()
    tp = TracerProvider()
    tp.add_span_processor(BatchSpanProcessor(exporter))
    mp = MeterProvider(metric_readers=[InMemoryMetricReader()])
    return OtelObserver(tp, mp, capture_content=capture, step_events=step_events), exporter, tp  # type: ignore[arg-type]


def main() -> None:
    """Run the benchmark; print controller CPU and wall microseconds per step for each side, and the ratio."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=30, help="timed runs per side")
    ap.add_argument("--steps", type=int, default=95)
    ap.add_argument("--chunk-size", type=int, default=5)
    args = ap.parse_args()
    inst = generate_instance(args.steps, 5, seed=0)
    proc, inputs = inst.to_procedure(), inst.inputs
    model = CpuTimedModel(load_model("sim:perfect"))
    config = GuardConfig(chunk_size=args.chunk_size)
    sides: dict[str, tuple[Guard, DropExporter | None, TracerProvider | None]] = {"none": (Guard(model, config), None, None)}
    for name, capture, events in (("traced", False, "all"), ("traced-deviations", False, "deviations"), ("traced+content", True, "all")):
        obs, exp, tp = _observer(capture, events)
        sides[name] = (Guard(model, config, observer=obs), exp, tp)
    ctrl: dict[str, list[float]] = {k: [] for k in sides}
    wall: dict[str, list[float]] = {k: [] for k in sides}
    for guard, _, _ in sides.values():  # warm-up: imports, caches, first compile
        guard.run(proc, inputs)
    for _ in range(args.runs):
        for name, (guard, _, _) in sides.items():
            model.cpu_s = 0.0
            c0, t0 = time.process_time(), time.perf_counter()
            u = guard.run(proc, inputs).usage
            cpu, seconds = time.process_time() - c0, time.perf_counter() - t0  # run_started .. run_finished
            ctrl[name].append((cpu - model.cpu_s) / args.steps * 1e6)
            wall[name].append((seconds - u.model_s) / args.steps * 1e6)
    for _, exp, tp in sides.values():
        if tp is not None:
            tp.shutdown()
    base = statistics.median(ctrl["none"])
    print(f"{args.steps} steps, chunk size {args.chunk_size}, sim:perfect, {args.runs} runs per side (medians)")
    print(f"{'side':<18} {'controller CPU us/step':>23} {'controller wall us/step':>24} {'CPU ratio':>10} {'spans':>7}")
    for name, (_, exp, _) in sides.items():
        c = statistics.median(ctrl[name])
        spans = f"{exp.spans}" if exp else "-"
        print(f"{name:<18} {c:>23.1f} {statistics.median(wall[name]):>24.1f} {c / base:>10.3f} {spans:>7}")
    added = statistics.median(ctrl["traced"]) / base - 1
    wall_added = statistics.median(wall["traced"]) / statistics.median(wall["none"]) - 1
    print(f"tracing adds {added:+.1%} controller CPU time per step (target < 10%); wall time {wall_added:+.1%}")


if __name__ == "__main__":
    main()
