"""Streamed against chunked and raw on the same instances of a run store (the committed 95-step
pairs: ``benchmarks/stores/curve``): verified, silent errors, calls, tokens and wall an instance.

    python benchmarks/streamed_pairs.py [benchmarks/stores/curve]

Prints a Markdown table over the instances all three sides have finished (docs/fidelity.md,
"Streamed mode at 95 steps"); prompt tokens of a cut stream are estimated (the server sends no
usage for a reply it did not finish: 4 characters a token).
"""

from __future__ import annotations

import json
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


def main(argv: list[str]) -> int:
    store = Path(argv[0] if argv else "benchmarks/stores/curve")
    raw, chunked, streamed = (_rows(store / side) for side in ("raw", "guarded", "streamed"))
    ids = sorted(set(raw) & set(chunked) & set(streamed))
    if not ids:
        print("no instance finished on all three sides yet")
        return 1
    print(f"{len(ids)} instances on all three sides ({store})\n")
    print("| side | verified / right | silent errors | calls | prompt tokens | output tokens | wall s |")
    print("|---|---|---|---|---|---|---|")
    for name, rows in (("raw", raw), ("chunked", chunked), ("streamed", streamed)):
        rs = [rows[i] for i in ids]
        ok = sum(bool(r.get("correct" if name == "raw" else "verified_correct")) for r in rs)
        silent = sum(r.get("steps_model_verified", 0) - r.get("step_values_correct", 0) for r in rs) if name != "raw" else "-"
        mean = lambda key: sum(r["usage"][key] for r in rs) / len(rs)  # noqa: E731
        print(f"| {name} | {ok}/{len(rs)} | {silent} | {mean('model_calls'):.1f} | {mean('input_tokens'):.0f} | "
              f"{mean('output_tokens'):.0f} | {mean('wall_s'):.0f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
