"""Speed of the embedded model's server settings on the guard's real requests, side by side.

The workload is a cassette of the guard's own model calls (:mod:`stepguard.adapters.models.replay`): by
default ``tests/data/guarded_qwen.cassette.jsonl``, 23 calls recorded from guarded runs of 5-, 14-
and 23-step instances on Qwen2.5-Coder-1.5B (first tries, re-prompts and derived rungs); ``--record
SIZES`` records a fresh one first (``benchmarks/record_guarded_cassette.py``'s instances). Each
server configuration (a *variant*) replays the same requests, with their own temperature, seed and
``max_tokens``, on its own ``python -m llama_cpp.server`` (one at a time), and the variants are
interleaved round by round (A, B, A, B ...) so a change of load on a shared machine falls on all of
them alike. A small warm-up request precedes each pass.

Printed per variant: the wall seconds of the pass, generated tokens per wall second, the server
process's CPU seconds (less disturbed by other work than wall time), the paired wall ratio to the
baseline (the first variant) within each round, and how many temperature-0 replies are identical
to the baseline's first pass (and the baseline's own repeat, the floor). ``--out FILE`` writes
every reply, timing and the load average as JSON.

Usage:
    python benchmarks/bench_embedded_speed.py --rounds 2 \
        --variant 'base=' --variant 'pld3=--draft_model prompt-lookup-decoding --draft_model_num_pred_tokens 3'

A variant is ``NAME=ARGS``: ``llama_cpp.server`` arguments added after the plain command
(``LocalServer(..., draft_tokens=0).command()``: ``--n_ctx 8192 --n_threads 2 --seed 0``, no
drafting); ``@default`` as the first argument starts from stepguard's default command instead
(``draft_tokens`` from ``$STEPGUARD_DRAFT_TOKENS`` or its default); ``@native`` serves with llama.cpp's
own ``llama-server`` (``runtime="native"``, the same settings; the ARGS after it are its own, e.g.
``--spec-type ngram-simple --spec-draft-n-max 3``); ``@parallelN`` (with ``@native``) serves N slots with
continuous batching (``parallel=N``) and keeps N requests in flight, as N guarded runs side by side
would. Results: docs/speed.md.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CASSETTE = ROOT / "tests" / "data" / "guarded_qwen.cassette.jsonl"
_PERF = re.compile(r"(prompt eval|\beval) time =\s+([\d.]+) ms /\s+(\d+) (?:tokens|runs)")
_PREFIX = re.compile(r"Llama\.generate: (\d+) prefix-match hit, remaining (\d+) prompt tokens")


@dataclass
class Pass:
    """One variant's replay of the whole request list."""

    variant: str
    round: int
    wall_s: float = 0.0
    cpu_s: float = 0.0
    load: tuple[float, float] = (0.0, 0.0)
    texts: list[str] = field(default_factory=list)
    walls: list[float] = field(default_factory=list)
    out_tokens: list[int] = field(default_factory=list)
    in_tokens: list[int] = field(default_factory=list)
    prompt_ms: float = 0.0
    prompt_n: int = 0
    gen_ms: float = 0.0
    gen_n: int = 0
    prefix_hits: list[int] = field(default_factory=list)


def load_requests(path: Path) -> list[dict[str, Any]]:
    """The requests of a cassette, in recorded order: ``[{messages, settings}]``."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            req = json.loads(line)["request"]
            out.append({"messages": req["messages"], "settings": req.get("settings") or {}})
    return out


def record(model_spec: str, sizes: str, cassette: Path) -> None:
    """Run the guard on generated instances (``steps:count,...`` at look-back 2), recording its calls."""
    from stepguard import Guard, GuardConfig
    from stepguard.adapters import RecordingModel, load_model
    from stepguard.bench.generate import generate_instance

    cassette.unlink(missing_ok=True)
    with load_model(model_spec) as inner:
        model = RecordingModel(inner, cassette)
        guard = Guard(model, GuardConfig(on_exhausted="flag"))
        for part in sizes.split(","):
            n, count = (int(v) for v in part.split(":"))
            for index in range(count):
                inst = generate_instance(n, 2, index=index)
                result = guard.run(inst.to_procedure(), inst.inputs, thread_id=inst.id)
                print(f"recorded {inst.id}: {result.status}, {result.usage.model_calls} calls", flush=True)


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _body(alias: str, req: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"model": alias, "messages": req["messages"]}
    for key in ("temperature", "seed", "max_tokens"):
        if req["settings"].get(key) is not None:
            body[key] = req["settings"][key]
    return body


def run_pass(path: Path, alias: str, variant: str, args: list[str], rnd: int, requests: list[dict[str, Any]],
             log_dir: Path) -> Pass:
    """Start a server with ``args``, replay ``requests``, stop it; timings from the client and the log."""
    from stepguard.adapters.models.local import LocalServer

    draft: int | None = 0
    runtime, parallel = "python", 1
    while args and (args[0] in ("@default", "@native") or args[0].startswith("@parallel")):
        if args[0] == "@default":
            draft = None
        elif args[0] == "@native":
            runtime = "native"
        else:
            parallel = int(args[0].removeprefix("@parallel"))
        args = args[1:]
    log = log_dir / f"{variant}-{rnd}.log"
    log.unlink(missing_ok=True)
    server = LocalServer(path, alias=alias, n_ctx=8192, n_threads=2, seed=0, log_path=log,
                         extra_args=tuple(args), draft_tokens=draft, runtime=runtime, parallel=parallel)
    result = Pass(variant, rnd)
    with server, httpx.Client(trust_env=False, timeout=3600) as client:
        url = f"{server.base_url}/chat/completions"
        client.post(url, json={"model": alias, "messages": [{"role": "user", "content": "Hi"}],
                               "max_tokens": 1, "temperature": 0}).raise_for_status()
        assert server.pid is not None
        mark = log.stat().st_size
        cpu0, load0, t0 = _cpu_seconds(server.pid), os.getloadavg()[0], time.perf_counter()
        def one(req: dict[str, Any]) -> tuple[float, dict[str, Any]]:
            started = time.perf_counter()
            r = client.post(url, json=_body(alias, req))
            r.raise_for_status()
            return time.perf_counter() - started, r.json()

        # with N slots, N requests in flight at once (as N guarded runs side by side), in list order
        with ThreadPoolExecutor(max_workers=parallel) as pool:
            for wall, data in pool.map(one, requests):
                result.walls.append(wall)
                result.texts.append(data["choices"][0]["message"]["content"] or "")
                result.out_tokens.append(int(data["usage"]["completion_tokens"]))
                result.in_tokens.append(int(data["usage"]["prompt_tokens"]))
        result.wall_s = time.perf_counter() - t0
        result.cpu_s = _cpu_seconds(server.pid) - cpu0
        result.load = (load0, os.getloadavg()[0])
    with log.open("rb") as f:
        f.seek(mark)
        text = f.read().decode("utf-8", "replace")
    for kind, ms, n in _PERF.findall(text):
        if kind == "prompt eval":
            result.prompt_ms += float(ms)
            result.prompt_n += int(n)
        else:
            result.gen_ms += float(ms)
            result.gen_n += int(n)
    result.prefix_hits = [int(h) for h, _ in _PREFIX.findall(text)]
    return result


def main() -> None:
    """Replay the cassette on every variant, interleaved; print the table; optionally write JSON."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b", help="a known local model name or a .gguf path")
    ap.add_argument("--cassette", type=Path, default=DEFAULT_CASSETTE)
    ap.add_argument("--record", metavar="SIZES", help="first record a fresh cassette, e.g. 5:2,23:1")
    ap.add_argument("--select", help="request indices to replay, e.g. 0,3,7-9 (default: all)")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=ARGS")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()

    from stepguard.adapters.models.local import resolve_model

    if args.record:
        record(f"local:{args.model}", args.record, args.cassette)
    requests = load_requests(args.cassette)
    for i, req in enumerate(requests):
        req["index"] = i
    if args.select:
        keep: list[int] = []
        for part in args.select.split(","):
            a, _, b = part.partition("-")
            keep += list(range(int(a), int(b or a) + 1))
        requests = [requests[i] for i in keep]
    variants = [(v.partition("=")[0], shlex.split(v.partition("=")[2])) for v in args.variant or ["base="]]
    path, alias = resolve_model(args.model)
    log_dir = Path(os.environ.get("TMPDIR", "/tmp")) / "stepguard-speed"
    log_dir.mkdir(exist_ok=True)
    print(f"{len(requests)} requests from {args.cassette}; {len(variants)} variants x {args.rounds} rounds; "
          f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs", flush=True)
    passes: list[Pass] = []
    for rnd in range(args.rounds):
        order = variants if rnd % 2 == 0 else variants[::-1]  # A B, B A: neither always goes first
        for name, vargs in order:
            p = run_pass(path, alias, name, vargs, rnd, requests, log_dir)
            passes.append(p)
            print(f"  round {rnd} {name:12s} wall {p.wall_s:7.1f} s  out {sum(p.out_tokens):5d} tok  "
                  f"{sum(p.out_tokens) / p.wall_s:5.2f} tok/s  cpu {p.cpu_s:7.1f} s  load {p.load[0]:.1f}-{p.load[1]:.1f}",
                  flush=True)
    report(passes, variants, requests, args.out)


def report(passes: list[Pass], variants: list[tuple[str, list[str]]], requests: list[dict[str, Any]],
           out: Path | None) -> None:
    """Print the per-variant summary: absolute figures, paired ratios, identical replies."""
    base_name = variants[0][0]
    by = {(p.variant, p.round): p for p in passes}
    rounds = sorted({p.round for p in passes})
    greedy = [i for i, r in enumerate(requests) if not r["settings"].get("temperature")]
    ref = by[(base_name, 0)]
    print("\n(prompt and gen tok/s: llama.cpp's own log, where checked draft tokens count as prompt)")
    print(f"variant       wall s/pass  tok/s  s/request  cpu s  prompt tok/s  gen tok/s  wall ratio vs {base_name}"
          f"  cpu ratio  T=0 identical to {base_name}#0")
    summary = {}
    for name, vargs in variants:
        ps = [by[(name, r)] for r in rounds]
        wall = statistics.mean(p.wall_s for p in ps)
        toks = statistics.mean(sum(p.out_tokens) / p.wall_s for p in ps)
        per_req = statistics.mean(statistics.mean(p.walls) for p in ps)
        cpu = statistics.mean(p.cpu_s for p in ps)
        prompt_tps = sum(p.prompt_n for p in ps) / max(1e-9, sum(p.prompt_ms for p in ps) / 1000)
        gen_tps = sum(p.gen_n for p in ps) / max(1e-9, sum(p.gen_ms for p in ps) / 1000)
        ratios = [by[(base_name, r)].wall_s / by[(name, r)].wall_s for r in rounds]
        cpu_ratios = [by[(base_name, r)].cpu_s / by[(name, r)].cpu_s for r in rounds]
        same = [sum(p.texts[i] == ref.texts[i] for i in greedy) for p in ps]
        summary[name] = {"args": vargs, "wall_s": wall, "tokens_per_s": toks, "s_per_request": per_req, "cpu_s": cpu,
                         "prompt_tps_log": prompt_tps, "gen_tps_log": gen_tps, "wall_ratios": ratios,
                         "cpu_ratios": cpu_ratios, "identical_t0": same, "n_t0": len(greedy)}
        print(f"{name:12s} {wall:10.1f} {toks:6.2f} {per_req:9.2f} {cpu:7.1f} {prompt_tps:11.1f} {gen_tps:10.1f}  "
              f"{' '.join(f'{x:.2f}x' for x in ratios):>18s}  {' '.join(f'{x:.2f}x' for x in cpu_ratios):>12s}  "
              f"{', '.join(f'r{r}: {n}' for r, n in zip(rounds, same))} of {len(greedy)}")
    for name, _ in variants:
        for p in (by[(name, r)] for r in rounds):
            diffs = [i for i in greedy if p.texts[i] != ref.texts[i]]
            for i in diffs[:3]:
                label = requests[i].get("index", i)
                print(f"  differs: {name} round {p.round}, cassette request {label}: {ref.texts[i]!r} -> {p.texts[i]!r}")
    hits = by[(base_name, 0)].prefix_hits
    if hits:
        print(f"\nprefix reuse ({base_name}#0): {len(hits)} of {len(requests)} requests reused a cached prefix, "
              f"median {statistics.median(hits):.0f} tokens of a median {statistics.median(ref.in_tokens):.0f}-token prompt")
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M"), "cpus": os.cpu_count(),
                                   "argv": sys.argv, "summary": summary,
                                   "passes": [p.__dict__ for p in passes]}, indent=1) + "\n")
        print(f"wrote {out}")


if __name__ == "__main__":
    main()
