"""How much time the OpenAI-compatible adapter adds to one chat call, milliseconds.

Runs the tests' stub server on 127.0.0.1 and times N calls of
:meth:`stepguard.adapters.OpenAICompatibleModel.complete` against N raw ``httpx`` POSTs of the
same JSON body (JSON decode included), interleaved in small rounds so machine noise hits both
sides alike. Two clocks:

- wall: ``time.perf_counter`` per call (the round trip as a caller sees it);
- caller CPU: ``time.thread_time`` of the calling thread per call. The stub server runs in
  other threads, so this is the client side's own work, and it is robust to a busy machine.

The difference of the medians is the adapter's own overhead (request building, the ``openai``
client's machinery, reply parsing); target < 2 ms.

Usage: ``python benchmarks/bench_adapter_overhead.py [--calls 600] [--prompt-chars 3000]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the repository root, for tests/
from stepguard.adapters.openai_compat import OpenAICompatibleModel  # noqa: E402
from tests._stub_server import StubServer  # noqa: E402


def _time(fn: Callable[[], object], calls: int, wall: list[float], cpu: list[float]) -> None:
    for _ in range(calls):
        w, c = time.perf_counter(), time.thread_time()
        fn()
        cpu.append((time.thread_time() - c) * 1e3)
        wall.append((time.perf_counter() - w) * 1e3)


def main() -> None:
    """Run the benchmark; print mean / median milliseconds per call on both clocks, and the overhead."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=600, help="timed calls per side")
    ap.add_argument("--prompt-chars", type=int, default=3000, help="size of the user message")
    ap.add_argument("--rounds", type=int, default=20, help="interleaved rounds")
    args = ap.parse_args()
    messages = [
        {"role": "system", "content": "Execute the procedure one step per line."},
        {"role": "user", "content": "s1 = 3 + 4\n" * (args.prompt_chars // 11)},
    ]
    results: dict[str, tuple[list[float], list[float]]] = {
        "adapter.complete": ([], []),
        "raw httpx POST": ([], []),
    }
    with StubServer() as stub:
        model = OpenAICompatibleModel("ok", base_url=stub.base_url, api_key_env=None)
        body = {"model": "ok", "messages": messages, "temperature": 0.0, "seed": 0}
        url = stub.base_url + "/chat/completions"
        with httpx.Client(trust_env=False) as client:
            sides: dict[str, Callable[[], object]] = {
                "adapter.complete": lambda: model.complete(messages),
                "raw httpx POST": lambda: client.post(url, json=body).json(),
            }
            for fn in sides.values():  # warm up connections and caches
                _time(fn, 50, [], [])
            per_round = max(1, args.calls // args.rounds)
            for _ in range(args.rounds):
                for name, fn in sides.items():
                    _time(fn, per_round, *results[name])
        model.close()
    print(f"{args.calls} calls per side, {args.prompt_chars}-character prompt")
    print(f"{'':18}{'wall mean':>10}{'median':>9}{'cpu mean':>10}{'median':>9}   (ms per call)")
    for name, (wall, cpu) in results.items():
        print(f"{name:18}{statistics.mean(wall):10.3f}{statistics.median(wall):9.3f}"
              f"{statistics.mean(cpu):10.3f}{statistics.median(cpu):9.3f}")
    (aw, ac), (rw, rc) = results.values()
    d = [statistics.mean(aw) - statistics.mean(rw), statistics.median(aw) - statistics.median(rw),
         statistics.mean(ac) - statistics.mean(rc), statistics.median(ac) - statistics.median(rc)]
    verdict = "ok" if d[3] < 2.0 else "OVER TARGET"
    print(f"{'overhead':18}{d[0]:10.3f}{d[1]:9.3f}{d[2]:10.3f}{d[3]:9.3f}   "
          f"(target < 2 ms, caller CPU median: {verdict})")


if __name__ == "__main__":
    main()
