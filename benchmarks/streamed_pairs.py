"""Streamed against chunked and raw on the same instances of a run store (the committed 95-step
pairs: ``benchmarks/stores/curve``): verified, silent errors, calls, tokens and wall an instance.

    python benchmarks/streamed_pairs.py [benchmarks/stores/curve] [--sides raw,guarded,streamed] \
        [--server-log streamed=FILE]

Prints a Markdown table over the instances all three sides have finished (docs/fidelity.md,
"Streamed mode at 95 steps"); prompt tokens of a cut stream are estimated (the server sends no
usage for a reply it did not finish: 4 characters a token).
"""

from __future__ import annotations

import argparse
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


def evaluated_by_call(log: Path) -> list[int]:
    """Prompt tokens the llama-cpp-python server evaluated for each request, in order, from its log
    (``Llama.generate: N prefix-match hit, remaining M prompt tokens to eval``: M; a request with no
    prefix line evaluates its whole prompt, its ``prompt eval time ... / M tokens`` line)."""
    out: list[int] = []
    pending = False
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if m := re.search(r"remaining (\d+) prompt tokens to eval", line):
            out.append(int(m.group(1)))
            pending = True
        elif m := re.search(r"prompt eval time = .* / +(\d+) tokens", line):
            if not pending:
                out.append(int(m.group(1)))
            pending = False
    return out


def _evaluated(rows: dict[str, dict], log: Path | None) -> dict[str, int]:
    """Evaluated prompt tokens per instance: the log's requests split by each row's calls, in the
    order the rows were written (a run at concurrency 1 from an empty store); empty where the log's
    requests and the rows' calls do not add up (the mapping would be a guess)."""
    if log is None:
        return {}
    calls = evaluated_by_call(log)
    order = list(rows)
    if sum(rows[i]["usage"]["model_calls"] for i in order) != len(calls):
        print(f"{log}: {len(calls)} requests, the rows made {sum(rows[i]['usage']['model_calls'] for i in order)} calls: "
              "not mapped", file=sys.stderr)
        return {}
    out, at = {}, 0
    for i in order:
        n = rows[i]["usage"]["model_calls"]
        out[i], at = sum(calls[at:at + n]), at + n
    return out


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
    print("| side | verified / right | silent errors | calls | prompt tokens sent | evaluated | output tokens | wall s |")
    print("|---|---|---|---|---|---|---|---|")
    for name, rows in runs.items():
        rs = [rows[i] for i in ids]
        raw = name == sides[0]
        ok = sum(bool(r.get("correct" if raw else "verified_correct")) for r in rs)
        silent = "-" if raw else sum(r.get("steps_model_verified", 0) - r.get("step_values_correct", 0) for r in rs)
        def mean(key: str, rs: list[dict] = rs) -> float:
            return sum(r["usage"][key] for r in rs) / len(rs)

        evaluated = _evaluated(rows, Path(logs[name])) if name in logs else {}
        ev = f"{sum(evaluated[i] for i in ids) / len(ids):.0f}" if evaluated else "-"
        print(f"| {name} | {ok}/{len(rs)} | {silent} | {mean('model_calls'):.1f} | {mean('input_tokens'):.0f} | {ev} | "
              f"{mean('output_tokens'):.0f} | {mean('wall_s'):.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
