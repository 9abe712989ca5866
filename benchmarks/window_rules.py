"""How wide the next streamed window should be after a deviation: rules compared on the same instances.

Not a test: it prints figures. Runs the guard in streamed mode over generated instances with each
rule for the window that follows a window:

- ``fixed``: always ``GuardConfig.window`` (``adaptive=False``);
- ``halve``: half the window after a deviation (at least 4), twice it after a clean one
  (``adaptive=True``: :func:`stepguard.guard._window.next_window`);
- ``run-length``: after a deviation, twice the run of right steps the model just wrote (at least 4),
  twice the window after a clean one;
- ``reset-K``: ``K`` steps after a deviation, twice the window after a clean one
  (the last two are set here for the measurement only, in place of ``next_window``).

Two sources of deviations:

- the seeded simulator (``--model sim:paper``, the default): SIMULATED, the controller's cost, not a
  model's accuracy; its errors are independent of the window;
- ``--replay STORE``: a real model's streamed run store (``stepguard bench run --streamed``). Each
  instance is run on ``sim:perfect`` made wrong, once each, at the steps where the recorded model's
  first try went wrong (a deviation at attempt 0), and right at the first re-ask. So the windows
  are cut where the real model's were, as if its errors did not depend on the window: the figures
  are what each rule's windows cost against that model's error positions (the ladder's own calls
  are a perfect model's, one re-ask a cut, and are printed apart). Only the rows' instances are run.

Printed per instance: runs verified, model calls, prompt tokens sent, and prompt tokens a one-slot
server evaluates (not shared with the previous request's prompt and reply; tokens as in
``benchmarks/prefix_forms.py``), all calls and the windows alone, and output tokens.

Usage: ``python benchmarks/window_rules.py [--steps 23,95] [--per-config 10] [--gguf PATH]``
``[--replay benchmarks/stores/curve/streamed-digits [--instances benchmarks/stores/curve/instances.jsonl]]``
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import stepguard.guard._graph as graph
from benchmarks.prefix_forms import Recorder, arguments, chatml, count, recorded_runs
from stepguard import Guard, GuardConfig
from stepguard.adapters import load_model
from stepguard.bench.instances import load_instances
from stepguard.evaluator import format_number
from stepguard.guard import GuardResult
from stepguard.guard._prompts import render_raw_prompt
from stepguard.guard._window import MIN_WINDOW, next_window
from stepguard.model import ChatMessage, ChatResponse, GenerationSettings
from stepguard.procedure import Procedure

Rule = Callable[[int, int, int, bool], int]


def run_length(width: int, most: int, verified: int, deviated: bool) -> int:
    """The run-length rule (measured against :func:`next_window`)."""
    return max(1, min(most, max(MIN_WINDOW, 2 * verified) if deviated else 2 * width))


def reset(k: int) -> Rule:
    """The rule that asks ``k`` steps after a deviation and twice the window after a clean one."""
    def rule(width: int, most: int, verified: int, deviated: bool) -> int:
        return max(1, min(most, k if deviated else 2 * width))
    return rule


RULES: dict[str, tuple[bool, Rule]] = {
    "fixed": (False, next_window), "halve": (True, next_window), "run-length": (True, run_length),
    "reset-8": (True, reset(8)), "reset-16": (True, reset(16)),
}


class Replayed:
    """``sim:perfect`` wrong, once each, at the given steps: the first reply line of each such step
    gets its value plus one (the guard finds an arithmetic error), and every later line of it is right.
    Has no ``stream``, so a streamed window is its whole reply served a line at a time."""

    stream = astream = None

    def __init__(self, procedure: Procedure, wrong: set[str]) -> None:
        self.inner = load_model("sim:perfect", procedure=procedure)
        self.left = set(wrong)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        reply = self.inner.complete(messages, settings)
        lines = reply.text.splitlines(keepends=True)
        for i, line in enumerate(lines):
            var = line.split("=", 1)[0].strip()
            if var in self.left:
                self.left.discard(var)
                head, _, value = line.rstrip("\n").rpartition("= ")
                lines[i] = f"{head}= {format_number(Fraction(value) + 1)}\n"
                break
        return dataclasses.replace(reply, text="".join(lines))


def replayed_runs(store: Path, instances: Path, config: GuardConfig) -> Iterator[tuple[Procedure, dict[str, Any], GuardResult, Recorder]]:
    """The rows of ``store`` replayed (:class:`Replayed`) on their instances from ``instances``."""
    by_id = {inst.id: inst for inst in load_instances(instances)}
    for line in (store / "results.jsonl").read_text().splitlines():
        row = json.loads(line)
        wrong = {d["step"] for d in row["guard"]["deviations"] if d["attempt"] == 0}
        inst = by_id[row["id"]]
        proc = inst.to_procedure()
        rec = Recorder()
        result = Guard(Replayed(proc, wrong), config, observer=rec).run(proc, inst.inputs)  # type: ignore[arg-type]
        yield proc, inst.inputs, result, rec


def main() -> None:
    args, tok, how = arguments(__doc__, 10, extra=_replay_options)
    source = f"replay of {args.replay} on sim:perfect (errors where the recorded model's first tries were)" if args.replay \
        else f"model {args.model} (SIMULATED: the controller's cost, not a model's accuracy)"
    print(f"{source}; tokens: {how}")
    print("steps  rule        verified  calls/inst  sent/inst  eval one slot/inst  windows: calls  eval one slot  raw prompt  output/inst")
    lengths = ["replay"] if args.replay else [int(s) for s in args.steps.split(",")]
    for n in lengths:
        for name, (adaptive, rule) in RULES.items():
            graph.next_window = rule  # the rule commit uses (measurement only)
            ok = calls = sent = one = out = runs = wins = wone = raw = 0
            cfg = GuardConfig(streamed=True, adaptive=adaptive, on_exhausted="flag")
            runs_of = replayed_runs(args.replay, args.instances, cfg) if args.replay \
                else recorded_runs(args.model, int(n), args.lookback, args.per_config, cfg)
            for proc, inputs, result, rec in runs_of:
                s, o, _ = count(rec.calls, tok)
                wins += sum(c.role == "window" for c in rec.calls)
                wone += count(rec.calls, tok, role="window")[1]
                raw += len(tok(chatml(render_raw_prompt(proc, inputs))))
                ok += result.status == "verified"
                calls += result.usage.model_calls
                sent, one, out, runs = sent + s, one + o, out + result.usage.output_tokens, runs + 1
            print(f"{n!s:>5}  {name:<10}  {ok:3}/{runs:<4}  {calls / runs:10.1f}  {sent / runs:9.0f}  {one / runs:18.0f}"
                  f"  {wins / runs:14.1f}  {wone / runs:13.0f}  {raw / runs:10.0f}  {out / runs:11.0f}")
    graph.next_window = next_window


def _replay_options(parser: Any) -> None:
    parser.add_argument("--replay", type=Path, default=None, help="a real model's streamed run store to replay")
    parser.add_argument("--instances", type=Path, default=Path("benchmarks/stores/curve/instances.jsonl"))


if __name__ == "__main__":
    sys.exit(main())
