"""Does closing a stream stop the server's generation? The next request's wait, on a real server.

Three rounds on the embedded llama.cpp server (one slot): a long reply is streamed and closed after
a few deltas, then a short request is timed; and, for comparison, the same short request after a
long reply that was left to finish, and alone. If closing stops the generation, the short request
after a close is served about as fast as alone; if the server kept generating the abandoned reply,
it waits for it. Not a test: it prints figures (docs/speed.md, "Closing a stream").

    python benchmarks/stream_close.py [--model local:smollm2-135m] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

from stepguard.adapters import load_model
from stepguard.model import GenerationSettings, open_stream

LONG = [{"role": "user", "content": "Write a long story about a lighthouse keeper, at least two thousand words, in many paragraphs."}]
SHORT = [{"role": "user", "content": "Say OK."}]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="local:smollm2-135m")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    long_s, short_s = GenerationSettings(temperature=0, max_tokens=1200), GenerationSettings(temperature=0, max_tokens=8)
    alone, after_close, after_full, full = [], [], [], []
    with load_model(args.model) as model:
        model.complete(SHORT, short_s)  # warm: the server started, the prompt path cached
        for _ in range(args.rounds):
            t = time.perf_counter()
            model.complete(SHORT, short_s)
            alone.append(time.perf_counter() - t)

            stream = open_stream(model, LONG, long_s)
            for i, _delta in enumerate(stream):
                if i >= 5:
                    break
            stream.close()
            t = time.perf_counter()
            model.complete(SHORT, short_s)
            after_close.append(time.perf_counter() - t)

            t = time.perf_counter()
            stream = open_stream(model, LONG, long_s)
            for _delta in stream:
                pass
            full.append(time.perf_counter() - t)
            t = time.perf_counter()
            model.complete(SHORT, short_s)
            after_full.append(time.perf_counter() - t)
    med = statistics.median
    print(f"model {args.model}, {args.rounds} rounds (median seconds)")
    print(f"  short request alone:                         {med(alone):.3f}")
    print(f"  short request right after a closed stream:  {med(after_close):.3f}")
    print(f"  short request after a finished long reply:   {med(after_full):.3f}  (the long reply itself: {med(full):.2f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
