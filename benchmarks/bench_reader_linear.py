"""Is the reader linear in the length of hostile text? Time of ``parse_trace`` and ``numbers_in``
on each hostile corpus at 1x, 2x and 4x its size; prints seconds and the ratio to 1x (a linear
reader doubles: about 2 and 4; a quadratic one goes 4 and 16). CPU time of this process
(``time.process_time``), best of 3, so other work on the machine moves the figures less.

    python benchmarks/bench_reader_linear.py
"""

from __future__ import annotations

import time

from stepguard.trace import numbers_in, parse_trace

NAMES = ("S1", "S2", "S3")
UNITS = {
    "separators": "S1 = 7 | S2 = 10 → S1 = 7 <br> S2 = 10 & S3 = 1 • S2 = 3\n",
    "chain of links": "S3 = " + "S1 + S2 = " * 20 + "7\n",
    "line breaks": "S1 = 7\u2028S2 = 10\rS3 = 7\x85S1 = 1\x0b",
    "signs and parentheses": "S1 = (7)\nS2 = \u201310\nS3 = 1 176.50\nFinal answer: (10)\n",
    "open parentheses": "(" * 40 + "= ",
    "prose numbers": "so the total is \u201342, or (42.00), or 12 000, or 12'000; ",
    "two results": "S3 = " + "12 = " * 30 + "13\n",
    "glued names": "S1 = _5_S2 = 8 false_ok2 5\\_S3 = 1 " + "x_" * 30 + "S2 = 3\n",
    "brackets, comparisons": "S3 = " + "(1 if S1 == 1 else (2 <= 3)) = [" * 10 + "2\n",
    "other letters": "S1 = 5 \uff332 = 8 \u03c0 = 6.28 " + "\u00e9 " * 40 + "= 1\n",
    "signs apart": "is - 42, -$42, --42, -(-42), 1e-5, 10^-3, 3 / 4, _-42_; ",
}


def _best(fn, text: str) -> float:
    best = float("inf")
    for _ in range(3):
        t0 = time.process_time()
        fn(text)
        best = min(best, time.process_time() - t0)
    return best


def main() -> None:
    print(f"{'corpus':<24}{'reader':<12}{'chars (1x)':>12}{'1x s':>9}{'2x/1x':>8}{'4x/1x':>8}")
    for name, unit in UNITS.items():
        base = unit * max(1, 200_000 // len(unit))
        for label, fn in (("parse_trace", lambda t: parse_trace(t, var_names=NAMES, max_records=10**7)), ("numbers_in", numbers_in)):
            t1, t2, t4 = (_best(fn, base * k) for k in (1, 2, 4))
            print(f"{name:<24}{label:<12}{len(base):>12,}{t1:>9.3f}{t2 / t1:>8.2f}{t4 / t1:>8.2f}")


if __name__ == "__main__":
    main()
