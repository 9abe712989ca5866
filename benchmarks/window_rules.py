"""How wide the next streamed window should be after a deviation: three rules on the same instances.

Not a test: it prints figures. Runs the guard in streamed mode on the seeded simulator
(``sim:paper``: SIMULATED, the controller's cost, not a model's accuracy) over generated instances,
with each rule for the window that follows a window:

- ``fixed``: always ``GuardConfig.window`` (``adaptive=False``);
- ``halve``: half the window after a deviation (at least 4), twice it after a clean one
  (``adaptive=True``: :func:`stepguard.guard._window.next_window`);
- ``run-length``: after a deviation, twice the run of right steps the model just wrote (at least 4),
  twice the window after a clean one (set here for the measurement only, in place of ``next_window``).

Printed an instance: runs verified, model calls, prompt tokens sent, and prompt tokens a one-slot
server evaluates (not shared with the previous request's prompt and reply; tokens as in
``benchmarks/prefix_forms.py``), and output tokens.

Usage: ``python benchmarks/window_rules.py [--steps 23,95] [--per-config 10] [--gguf PATH]``
"""

from __future__ import annotations

from collections.abc import Callable

import stepguard.guard._graph as graph
from benchmarks.prefix_forms import arguments, count, recorded_runs
from stepguard import GuardConfig
from stepguard.guard._window import MIN_WINDOW, next_window


def run_length(width: int, most: int, verified: int, deviated: bool) -> int:
    """The run-length rule (measured against :func:`next_window`)."""
    return max(1, min(most, max(MIN_WINDOW, 2 * verified) if deviated else 2 * width))


RULES: dict[str, tuple[bool, Callable[[int, int, int, bool], int]]] = {
    "fixed": (False, next_window), "halve": (True, next_window), "run-length": (True, run_length),
}


def main() -> None:
    args, tok, how = arguments(__doc__, 10)
    print(f"model {args.model} (SIMULATED: the controller's cost, not a model's accuracy); tokens: {how}")
    print("steps  rule        verified  calls/inst  sent/inst  eval one slot/inst  output/inst")
    for n in (int(s) for s in args.steps.split(",")):
        for name, (adaptive, rule) in RULES.items():
            graph.next_window = rule  # the rule commit uses (measurement only)
            ok = calls = sent = one = out = runs = 0
            cfg = GuardConfig(streamed=True, adaptive=adaptive, on_exhausted="flag")
            for _proc, _inputs, result, rec in recorded_runs(args.model, n, args.lookback, args.per_config, cfg):
                s, o, _ = count(rec.calls, tok)
                ok += result.status == "verified"
                calls += result.usage.model_calls
                sent, one, out, runs = sent + s, one + o, out + result.usage.output_tokens, runs + 1
            print(f"{n:5}  {name:<10}  {ok:3}/{runs:<4}  {calls / runs:10.1f}  {sent / runs:9.0f}  {one / runs:18.0f}  {out / runs:11.0f}")
    graph.next_window = next_window


if __name__ == "__main__":
    main()
