"""Streamed against chunked and raw on the same instances of a run store (the committed 95-step
pairs: ``benchmarks/stores/curve``): verified, silent errors, calls, tokens and wall an instance.
Any run folders pair the same way (``--sides`` are paths under the store), a re-ask run too:
raw and re-ask rows count a right answer, guarded rows a verified right one.

    python benchmarks/streamed_pairs.py [benchmarks/stores/curve] [--sides raw,guarded,streamed] \
        [--server-log streamed=FILE]   # e.g. streamed-digits=benchmarks/stores/curve/streamed-digits/server.log.gz

Prints a Markdown table over the instances every side has finished (docs/fidelity.md,
"Streamed mode at 95 steps"). The rows' token counts are the replies' usage, which the embedded
llama-cpp-python server does not send in a stream (the adapter then estimates 4 characters a
token); given the server's log of a side's run (``--server-log``), the prompt tokens each request
sent and the server evaluated are read from it, exactly.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
from pathlib import Path


def _rows(folder: Path) -> dict[str, dict]:
    out = {}
    path = folder / "results.jsonl"
    for line in path.read_text(encoding="utf-8").splitlines() if path.exists() else ():
        try:
            row = json.loads(line)
        except ValueError:  # a line torn by a stopped measurement
            continue
        out[row["id"]] = row
    return out


def evaluated_by_call(log: Path) -> list[tuple[int, int]]:
    """``(sent, evaluated)`` prompt tokens of each request the llama-cpp-python server served, in
    order, from its log: ``Llama.generate: N prefix-match hit, remaining M prompt tokens to eval``
    gives ``(N + M, M)``; a request with no such line evaluates its whole prompt, its ``prompt eval
    time ... / M tokens`` line: ``(M, M)``. Exact, with the model's tokenizer and chat template,
    where a streamed reply's usage is not: that server sends none in a stream, and the adapter
    then estimates 4 characters a token."""
    out: list[tuple[int, int]] = []
    pending = False
    text = gzip.open(log, "rt", encoding="utf-8", errors="replace").read() if log.suffix == ".gz" else \
        log.read_text(encoding="utf-8", errors="replace")
    for line in text.splitlines():
        if m := re.search(r"(\d+) prefix-match hit, remaining (\d+) prompt tokens to eval", line):
            out.append((int(m.group(1)) + int(m.group(2)), int(m.group(2))))
            pending = True
        elif m := re.search(r"prompt eval time = .* / +(\d+) tokens", line):
            if not pending:
                out.append((int(m.group(1)), int(m.group(1))))
            pending = False
    return out


def _evaluated(rows: dict[str, dict], log: Path | None) -> tuple[float, float] | None:
    """Mean ``(sent, evaluated)`` prompt tokens an instance over all of a side's rows, from the log of
    the run that wrote them all (``None`` where the log's requests and the rows' calls do not add
    up: a resumed run, or one still going). Means over the whole side, not per instance: the server
    writes a streamed request's log line when it gets to it, so the order does not map requests to
    instances."""
    if log is None or not rows:
        return None
    calls = evaluated_by_call(log)
    made = sum(r["usage"]["model_calls"] for r in rows.values())
    if abs(len(calls) - made) > 2:  # a request or two the log did not name, or served before the first instance
        print(f"{log}: {len(calls)} requests, the rows made {made} calls: not read", file=sys.stderr)
        return None
    if len(calls) != made:
        print(f"{log}: {len(calls)} requests for the rows' {made} calls", file=sys.stderr)
    return sum(c[0] for c in calls) / len(rows), sum(c[1] for c in calls) / len(rows)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("store", nargs="?", type=Path, default=Path("benchmarks/stores/curve"))
    ap.add_argument("--sides", default="raw,guarded,streamed", help="run folders in the store, raw first (default raw,guarded,streamed)")
    ap.add_argument("--server-log", action="append", default=[], metavar="SIDE=FILE",
                    help="the embedded server's log of a side's run, for the prompt tokens it evaluated")
    args = ap.parse_args(argv)
    sides = args.sides.split(",")
    logs = dict(item.split("=", 1) for item in args.server_log)
    runs = {side: _rows(args.store / side) for side in sides}
    ids = sorted(set.intersection(*(set(rows) for rows in runs.values())))
    if not ids:
        print("no instance finished on every side yet")
        return 1
    print(f"{len(ids)} instances on every side ({args.store}: {', '.join(sides)})\n")
    print("| side | verified / right | silent errors | calls | prompt tokens (usage) | sent, server log | evaluated, server log "
          "| output tokens (usage) | wall s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name, rows in runs.items():
        rs = [rows[i] for i in ids]
        guarded = all(r.get("mode", "guarded") == "guarded" for r in rs)  # raw and re-ask rows: the answer right
        ok = sum(bool(r.get("verified_correct" if guarded else "correct")) for r in rs)
        silent = sum(r.get("steps_model_verified", 0) - r.get("step_values_correct", 0) for r in rs) if guarded else "-"
        def mean(key: str, rs: list[dict] = rs) -> float:
            return sum(r["usage"][key] for r in rs) / len(rs)

        evaluated = _evaluated(rows, Path(logs[name])) if name in logs else None
        whole = evaluated is not None and len(ids) == len(rows)  # the log's means are over the whole side
        sent = f"{evaluated[0]:.0f}" if whole and evaluated else "-"
        ev = f"{evaluated[1]:.0f}" if whole and evaluated else "-"
        print(f"| {name} | {ok}/{len(rs)} | {silent} | {mean('model_calls'):.1f} | {mean('input_tokens'):.0f} | {sent} | {ev} | "
              f"{mean('output_tokens'):.0f} | {mean('wall_s'):.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
