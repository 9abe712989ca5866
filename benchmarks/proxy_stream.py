"""A streamed guarded request through the proxy against the unguarded request, on a streaming upstream.

Not a test: it prints figures. The upstream is the scripted stub (``tests/_stub_server.py``, model
``lines``, in a process of its own) writing its reply one line an event: the first line after
``--first-ms`` (its time to first token), then one line every ``--line-ms``. Its reply is always the
six step lines of ``benchmarks/production/invoice.yaml`` on the first input set, right, as a model
that executes the procedure exactly would write them, guarded or not.

Three requests, ``--runs`` times each, interleaved, one at a time, every one streamed (SSE):

1. unguarded, straight to the stub: the request the user had before;
2. unguarded through ``stepguard serve`` (pass-through);
3. guarded through the proxy with the default settings (``{"stepguard": {"inputs": ...}}``: following the
   model), or in plain streamed mode with ``--settings streamed`` (``"streamed": true``): one streamed
   upstream call for the six steps, each step's event sent as its line verifies.

(Chunked mode is not timed here: the stub writes all six lines to every call, where a model asked
one step writes one.)

Printed, medians and 90th percentiles over the runs, ms: total time (request sent to ``[DONE]``),
time to the first content delta (unguarded), time to the first verified step's event (guarded);
then the two ratios issue #29 sets: the guarded total over the unguarded total (target at most
1.3), and the first verified step over the unguarded time to first token plus one line
(``--line-ms``; target at most 1.2). Both ratios are taken against the direct request, the
stricter baseline. The guard judges a step once the next step's line has started, so its first
verified step cannot come before the upstream's second line.

Usage: ``python benchmarks/proxy_stream.py [--runs 20] [--first-ms 200] [--line-ms 20] [--settings default|streamed]``
"""

from __future__ import annotations

import argparse
import json
import time
from contextlib import AbstractContextManager
from pathlib import Path
from statistics import median
from tempfile import TemporaryDirectory
from typing import Any

import httpx

from benchmarks.proxy_load import pct, proxy, stub_process

ROOT = Path(__file__).resolve().parent.parent
PROCEDURE = ROOT / "benchmarks/production/invoice.yaml"

_STUB = """
import sys
sys.path.insert(0, sys.argv[1])
from tests._stub_server import StubServer
text, first_s, line_s = sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
with StubServer() as stub:
    stub.script = lambda last: text
    stub.first_s, stub.line_s = first_s, line_s
    print(stub.base_url, flush=True)
    sys.stdin.read()  # until the parent closes it
"""


def reply_text() -> tuple[str, dict[str, Any], str]:
    """``(the six step lines, the inputs, the answer)``: the procedure on its first input set, exactly."""
    import yaml

    from stepguard.procedure import format_value, load_procedure

    procedure = load_procedure(PROCEDURE)
    inputs = yaml.safe_load(PROCEDURE.with_name("invoice.inputs.yaml").read_text())[0]["inputs"]
    values = procedure.expected_values(procedure.bind_inputs(inputs))
    text = "".join(f"{s.var} = {format_value(values[s.var])}\n" for s in procedure.steps)
    return text, inputs, format_value(values[procedure.answer_var])


def lines_stub(text: str, first_s: float, line_s: float) -> AbstractContextManager[str]:
    """The stub upstream in its own process, its ``lines`` model writing ``text``; yields its base URL."""
    return stub_process(_STUB, text, str(first_s), str(line_s))


def timed_stream(client: httpx.Client, url: str, body: dict[str, Any]) -> dict[str, float | str | None]:
    """Send ``body`` (a streamed chat request) and read its events.

    Returns:
        ``{"total", "first_content", "first_step"}`` in ms from the request (``None`` where the stream
        had none), and ``"status"``: the guarded result's status, where the stream carried one.
    """
    out: dict[str, float | str | None] = {"first_content": None, "first_step": None, "status": None}
    t0 = time.perf_counter()
    with client.stream("POST", url, json=body) as resp:
        resp.raise_for_status()
        for line in resp.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            now = (time.perf_counter() - t0) * 1000
            event = json.loads(line[6:])
            report = event.get("stepguard") or {}
            if report.get("event") == "step" and out["first_step"] is None:
                out["first_step"] = now
            if "status" in report:
                out["status"] = report["status"]
            delta = (event.get("choices") or [{}])[0].get("delta") or {}
            if delta.get("content") and out["first_content"] is None:
                out["first_content"] = now
    out["total"] = (time.perf_counter() - t0) * 1000
    return out


def summary(name: str, values: list[float]) -> str:
    """``name: median, p90`` in ms."""
    return f"{name:<44} median {median(values):7.1f} ms   p90 {pct(values, 90):7.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--first-ms", type=float, default=200.0, help="the upstream's time to first token")
    parser.add_argument("--line-ms", type=float, default=20.0, help="the upstream's time per line")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--settings", choices=["default", "streamed"], default="default",
                        help="the guarded request's settings: the defaults (following the model) or plain streamed mode")
    args = parser.parse_args()
    text, inputs, answer = reply_text()
    prompt = [{"role": "user", "content": f"Execute the invoice procedure on {json.dumps(inputs)}, one step a line."}]
    plain = {"model": "lines", "messages": prompt, "stream": True}
    guarded = {"model": "stepguard/invoice", "messages": [], "stream": True,
               "stepguard": {"inputs": inputs, **({"streamed": True} if args.settings == "streamed" else {})}}
    got: dict[str, list[dict[str, Any]]] = {"direct": [], "pass-through": [], "guarded": []}
    with TemporaryDirectory() as folder, lines_stub(text, args.first_ms / 1000, args.line_ms / 1000) as stub_url:
        (Path(folder) / "invoice.yaml").write_text(PROCEDURE.read_text())
        with proxy(f"{stub_url}#lines", procedures=Path(folder)) as (base, _pid), httpx.Client(timeout=60) as client:
            urls = {"direct": f"{stub_url}/chat/completions", "pass-through": f"{base}/chat/completions",
                    "guarded": f"{base}/chat/completions"}
            bodies = {"direct": plain, "pass-through": plain, "guarded": guarded}
            for name in got:  # a warm-up each: connections, the proxy's first guard
                timed_stream(client, urls[name], bodies[name])
            for _ in range(args.runs):
                for name in got:
                    got[name].append(timed_stream(client, urls[name], bodies[name]))
    bad = [r["status"] for r in got["guarded"] if r["status"] != "verified"]
    if bad:
        raise SystemExit(f"a guarded run did not verify: {bad}")
    total = {name: [float(r["total"]) for r in runs] for name, runs in got.items()}
    ttft = {name: [float(r["first_content"]) for r in got[name]] for name in ("direct", "pass-through")}
    first_step = [float(r["first_step"]) for r in got["guarded"]]
    print(f"proxy streaming ({args.settings} settings): upstream {args.first_ms:.0f} ms to first token, {args.line_ms:.0f} ms a line, 6 steps "
          f"(answer {answer}); {args.runs} runs each, one at a time")
    for name in got:
        print(summary(f"total, {name}", total[name]))
    for name in ttft:
        print(summary(f"time to first token, unguarded {name}", ttft[name]))
    print(summary("first verified step, guarded", first_step))
    ratio_total = median(total["guarded"]) / median(total["direct"])
    base_first = median(ttft["direct"]) + args.line_ms
    ratio_first = median(first_step) / base_first
    print(f"guarded total / unguarded total (direct): {ratio_total:.2f}x (target <= 1.3x); "
          f"vs pass-through: {median(total['guarded']) / median(total['pass-through']):.2f}x")
    print(f"first verified step / (unguarded time to first token + one line) (direct): {ratio_first:.2f}x (target <= 1.2x)")
    if args.json:
        figures = {"runs": args.runs, "first_ms": args.first_ms, "line_ms": args.line_ms,
                   "median_ms": {f"total {k}": round(median(v), 1) for k, v in total.items()}
                   | {f"ttft {k}": round(median(v), 1) for k, v in ttft.items()}
                   | {"first verified step": round(median(first_step), 1)},
                   "ratio_total": round(ratio_total, 3), "ratio_first_step": round(ratio_first, 3)}
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
