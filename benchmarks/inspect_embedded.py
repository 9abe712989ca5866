"""`inspect eval stepguard/procedural` on the embedded model beside `stepguard bench run` on the same
instances and the same server: each sample's score against the run's row, raw and guarded.

    python benchmarks/inspect_embedded.py --steps 5 --lookbacks 2 --per-config 3 [--model qwen2.5-coder-1.5b]

Serves the local model once (`stepguard model serve`), points Inspect's `openai-api` provider and
`bench run`'s endpoint spec at it, and prints a Markdown table (docs/inspect.md, "On the embedded
model"). The two harnesses send the same requests; a difference is the server's (llama-cpp-python
is not always deterministic at temperature 0: docs/speed.md), and the table names it.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(url: str, seconds: float = 300) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(url, timeout=5):
                return
        except OSError:
            time.sleep(1)
    raise SystemExit(f"the model server at {url} did not answer within {seconds:g} s")


def _inspect(base_url: str, model: str, mode: str, args: argparse.Namespace, logs: Path) -> dict[str, dict]:
    """Scores by sample id, and the sample's model calls, of one `inspect eval` run."""
    from inspect_ai.log import read_eval_log

    out = logs / mode
    cmd = [str(BIN / "inspect"), "eval", "stepguard/procedural", "-T", f"steps={args.steps}", "-T", f"lookbacks={args.lookbacks}",
           "-T", f"per_config={args.per_config}", "--solver", f"stepguard/{mode}", "--model", f"openai-api/local/{model}",
           "--model-base-url", base_url, "--log-dir", str(out), "--display", "none", "--max-connections", "1"]
    env = {**os.environ, "LOCAL_API_KEY": "unused", "INSPECT_LOG_FORMAT": "eval"}
    t0 = time.monotonic()
    subprocess.run(cmd, env=env, check=True, timeout=7200)
    (log_file,) = out.glob("*.eval")
    log = read_eval_log(str(log_file))
    scores = {}
    for sample in log.samples or []:
        score = sample.scores["fidelity"] if sample.scores else None
        calls = sum(1 for e in sample.events if e.event == "model")
        scores[str(sample.id)] = {"score": score.value if score else None, "calls": calls}
    print(f"inspect {mode}: {len(scores)} samples in {time.monotonic() - t0:.0f} s ({log_file})", file=sys.stderr)
    return scores


def _bench(base_url: str, model: str, mode: str, instances: Path, work: Path) -> dict[str, dict]:
    from stepguard.bench.case import row_outcomes

    out = work / f"bench-{mode}"
    subprocess.run([str(BIN / "stepguard"), "bench", "run", "--instances", str(instances), "--mode", mode, "--model",
                    f"{base_url}#{model}", "--out", str(out), "--concurrency", "1", "--no-progress"], check=True, timeout=7200)
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]
    return {r["id"]: {"score": row_outcomes(r), "calls": r["usage"]["model_calls"]} for r in rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--steps", default="5")
    ap.add_argument("--lookbacks", default="2")
    ap.add_argument("--per-config", type=int, default=3)
    ap.add_argument("--modes", default="raw,guarded")
    ap.add_argument("--work", type=Path, default=None, help="folder for the logs and runs (default: a temporary one)")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="inspect-embedded-"))
    work.mkdir(parents=True, exist_ok=True)
    instances = work / "instances.jsonl"
    subprocess.run([str(BIN / "stepguard"), "bench", "generate", "--out", str(instances), "--steps", args.steps,
                    "--lookback", args.lookbacks, "--per-config", str(args.per_config)], check=True, capture_output=True)
    port = _free_port()
    server = subprocess.Popen([str(BIN / "stepguard"), "model", "serve", args.model, "--port", str(port), "--seed", "0"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait(f"{base_url}/models")
        print("| mode | sample | harness | correct | first answer | exact | verified | calls |")
        print("|---|---|---|---|---|---|---|---|")
        agree = total = 0
        for mode in args.modes.split(","):
            seen = _inspect(base_url, args.model, mode, args, work / "logs")
            rows = _bench(base_url, args.model, mode, instances, work)
            for sid in sorted(rows):
                for who, got in (("inspect", seen.get(sid)), ("bench run", rows[sid])):
                    s = (got or {}).get("score") or {}
                    print(f"| {mode} | {sid} | {who} | {s.get('correct', '-')} | {s.get('first_answer', '-')} | "
                          f"{s.get('exact', '-')} | {s.get('verified', '-')} | {(got or {}).get('calls', '-')} |")
                total += 1
                agree += seen.get(sid, {}).get("score") == rows[sid]["score"]
        print(f"\n{agree} of {total} samples scored the same by both harnesses (work folder {work})")
        return 0
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    raise SystemExit(main())
