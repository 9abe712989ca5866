"""Load test of the guarding proxy (``stepguard serve``): errors, added latency, memory.

Not a test: it prints figures. Three phases, each at ``--concurrency`` requests in flight, from one
asyncio client (httpx) in this process; the proxy runs as its own ``stepguard serve`` process, so
its RSS (``/proc/PID/status`` VmRSS) is the proxy's alone:

1. guarded: ``--requests`` guarded runs of ``examples/invoice.yaml`` on the upstream ``sim:perfect``;
2. direct: ``--requests`` plain chat requests straight to the stub upstream (``tests/_stub_server.py``,
   in a process of its own);
3. pass-through: the same requests through a proxy whose upstream is that stub.

The added latency of a pass-through request is phase 3's latency percentile minus phase 2's.
RSS is read after a warm-up, in the middle and at the end of each proxy phase (flat = no leak).

Usage: ``python benchmarks/proxy_load.py [--requests 2000] [--concurrency 32]``
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
_STUB = """
import sys, time
sys.path.insert(0, sys.argv[1])
from tests._stub_server import StubServer
with StubServer() as stub:
    print(stub.base_url, flush=True)
    sys.stdin.read()  # until the parent closes it
"""

INPUTS = {"subtotal": "100.10", "rate": "0.1"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_mib(pid: int) -> float:
    """Resident set size of process ``pid``, MiB (Linux ``/proc``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@contextmanager
def stub_process(code: str = _STUB, *args: str) -> Iterator[str]:
    """The stub upstream (tests/_stub_server.py) in a process of its own, so it shares no GIL with the
    client; yields its base URL. ``code`` runs it (``sys.argv[1]`` the repository, then ``args``) and
    prints the base URL."""
    proc = subprocess.Popen([sys.executable, "-c", code, str(ROOT), *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


@contextmanager
def proxy(upstream: str, env: dict[str, str] | None = None, procedures: Path = ROOT / "examples") -> Iterator[tuple[str, int]]:
    """``stepguard serve`` on a free port, serving the procedures in ``procedures``: yields ``(base URL,
    pid)``; stopped on the way out."""
    port = _free_port()
    cmd = [sys.executable, "-m", "stepguard", "serve", "--upstream", upstream, "--procedures", str(procedures),
           "--port", str(port), "--max-runs", "32"]
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(600):
            try:
                httpx.get(f"{base}/models", timeout=2)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        else:
            raise RuntimeError("the proxy did not start")
        yield base, proc.pid
    finally:
        proc.terminate()
        proc.wait(timeout=30)


async def load(url: str, body: dict, n: int, concurrency: int, pid: int | None = None,
               check: str | None = None) -> tuple[list[float], Counter[str], list[float]]:
    """POST ``body`` to ``url`` ``n`` times, ``concurrency`` at once.

    Returns:
        ``(latencies in ms, error counts by kind, RSS MiB at start/middle/end)``; ``check`` is the
        content a good answer has (a wrong one counts as an error).
    """
    latencies: list[float] = []
    errors: Counter[str] = Counter()
    rss: list[float] = []
    next_i = 0
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        async def worker() -> None:
            nonlocal next_i
            while next_i < n:
                i = next_i
                next_i += 1
                if pid is not None and i in (0, n // 2):
                    rss.append(rss_mib(pid))
                t0 = time.perf_counter()
                try:
                    resp = await client.post(url, json=body)
                    ok = resp.status_code == 200
                    if ok and check is not None:
                        ok = resp.json()["choices"][0]["message"]["content"] == check
                    if not ok:
                        errors[f"HTTP {resp.status_code}" if resp.status_code != 200 else "wrong content"] += 1
                except httpx.HTTPError as exc:
                    errors[type(exc).__name__] += 1
                latencies.append((time.perf_counter() - t0) * 1000)

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    if pid is not None:
        rss.append(rss_mib(pid))
    return latencies, errors, rss


def pct(values: list[float], p: float) -> float:
    """The ``p``-th percentile (0-100), nearest rank."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(p / 100 * len(ordered)) - 1))]


def line(name: str, lat: list[float], errors: Counter[str], wall_s: float, rss: list[float] | None = None) -> str:
    """One result line: requests, errors, requests/s, p50/p99 ms, RSS start/middle/end."""
    text = (f"{name:<22} {len(lat):>5} req  errors {sum(errors.values()):>3}{' ' + str(dict(errors)) if errors else ''}  "
            f"{len(lat) / wall_s:6.0f} req/s  p50 {pct(lat, 50):7.2f} ms  p99 {pct(lat, 99):7.2f} ms")
    if rss:
        text += "  RSS MiB " + " / ".join(f"{r:.1f}" for r in rss)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    n, c = args.requests, args.concurrency
    guarded_body = {"model": "stepguard/invoice", "messages": [], "stepguard": {"inputs": INPUTS}}
    plain_body = {"model": "ok", "messages": [{"role": "user", "content": "hello"}], "max_tokens": 16}
    figures: dict[str, dict] = {}
    print(f"proxy load test: {n} requests per phase, concurrency {c}, {os.cpu_count()} CPUs")

    def phase(name: str, url: str, body: dict, count: int, conc: int, pid: int | None = None,
              check: str | None = None) -> tuple[list[float], Counter[str], list[float]]:
        asyncio.run(load(url, body, args.warmup, conc))
        t0 = time.perf_counter()
        lat, err, rss = asyncio.run(load(url, body, count, conc, pid, check))
        print(line(name, lat, err, time.perf_counter() - t0, rss), flush=True)
        figures[name] = {"requests": count, "concurrency": conc, "errors": sum(err.values()), "p50_ms": round(pct(lat, 50), 3),
                         "p99_ms": round(pct(lat, 99), 3), "rss_mib": [round(r, 1) for r in rss]}
        return lat, err, rss

    with proxy("sim:perfect") as (base, pid):
        phase(f"guarded c={c}", f"{base}/chat/completions", guarded_body, n, c, pid, "104.60")

    with stub_process() as stub_url:
        direct_url = f"{stub_url}/chat/completions"
        with proxy(f"{stub_url}#ok") as (base, pid):
            for conc, count in ((1, max(200, n // 4)), (c, n)):
                direct, _, _ = phase(f"direct stub c={conc}", direct_url, plain_body, count, conc, None, "reply to: hello")
                through, _, _ = phase(f"pass-through c={conc}", f"{base}/chat/completions", plain_body, count, conc, pid,
                                      "reply to: hello")
                added = {p: pct(through, p) - pct(direct, p) for p in (50, 99)}
                print(f"  added latency per pass-through request at c={conc}: p50 {added[50]:+.2f} ms, p99 {added[99]:+.2f} ms")
                figures[f"added c={conc}"] = {"p50_ms": round(added[50], 3), "p99_ms": round(added[99], 3)}
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
