"""Probe how the wording of a guard prompt changes what a real model writes (no guard, no retries).

Two probes, on the instances of a measurement folder (default runs/ladder/instances.jsonl):

--lines  For 23-step instances, ask chunks S6-S10, S11-S15, S16-S20 with every operand the
         chunk reads given as a known value, in two wordings: the first template's
         "Compute the steps in order, one line each, as" and the current one ("Write 5 lines,
         one for each step from S6 to S10, in order, each as"). Prints step lines written and
         right, of those asked.
--sums   Ask sums the embedded model got wrong in the guarded runs (171 + 168, 204 + 192,
         331 + 8, ...) as the chunk prompt writes them and with the operands swapped, as the
         ``commute`` rung asks them. Prints each reply.

Run: python benchmarks/probe_prompt_forms.py --lines --sums   (about 4 minutes on 2 cores)
"""

from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

from stepguard.adapters import load_model
from stepguard.bench.instances import load_instances
from stepguard.evaluator import compile_expression
from stepguard.guard._prompts import PromptSet
from stepguard.model import ChatMessage, GenerationSettings
from stepguard.procedure import Procedure

FIRST_WORDING = "Compute the steps in order, one line each, as"
# (as the chunk prompt's step reads once operands are substituted, as the commute rung asks it)
STICKY_SUMS = [("171 - (-168)", "168 + 171"), ("171 + 168", "168 + 171"), ("204 + 192", "192 + 204"), ("331 + 8", "8 + 331")]


def _chunk_messages(proc: Procedure, env: dict, idx: list[int], first_wording: bool) -> list[ChatMessage]:
    messages = PromptSet().chunk_messages(proc, idx, env)
    if first_wording:
        text = re.sub(r"^Write \d+ lines?, .*$", FIRST_WORDING, messages[-1]["content"], count=1, flags=re.M)
        messages = [messages[0], {"role": "user", "content": text}]
    return messages


def probe_lines(model, inst_file: Path, n_instances: int) -> None:
    insts = [i for i in load_instances(inst_file) if i.n_steps == 23][:n_instances]
    settings = GenerationSettings(temperature=0, seed=0, max_tokens=48 * 5 + 32)
    for first_wording in (True, False):
        asked = written = right = 0
        t0 = time.perf_counter()
        for inst in insts:
            proc = inst.to_procedure()
            env = {**inst.inputs, **inst.expected}
            for start in (5, 10, 15):
                idx = list(range(start, start + 5))
                reply = model.complete(_chunk_messages(proc, env, idx, first_wording), settings).text
                values = {}
                for line in reply.splitlines():
                    m = re.match(r"\s*(S\d+)\s*=.*=\s*(-?\d+)\s*$", line)
                    if m:
                        values[m.group(1)] = int(m.group(2))
                names = [proc.steps[i].var for i in idx]
                asked += len(names)
                written += sum(n in values for n in names)
                right += sum(values.get(n) == inst.expected[n] for n in names)
        label = "first wording " if first_wording else "current       "
        print(f"{label} step lines written {written}/{asked}, right {right}/{asked}, {time.perf_counter() - t0:.0f} s")


def probe_sums(model) -> None:
    system = PromptSet().system()
    settings = GenerationSettings(temperature=0, seed=0, max_tokens=40)
    for written, commuted in STICKY_SUMS:
        right = compile_expression(written).evaluate({})
        for label, expr in (("as written", written), ("commuted", commuted)):
            text = f"Known values:\n(none)\n\nSteps:\nt = {expr}\n\nWrite one line, for step t, as\nt = <result>\nWrite nothing else."
            reply = model.complete([{"role": "system", "content": system}, {"role": "user", "content": text}], settings).text
            print(f"right {right:<5} {label:<11} t = {expr:<14} -> {reply.strip()!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="local:qwen2.5-coder-1.5b")
    ap.add_argument("--instances", type=Path, default=Path("runs/ladder/instances.jsonl"))
    ap.add_argument("--n-instances", type=int, default=4)
    ap.add_argument("--lines", action="store_true")
    ap.add_argument("--sums", action="store_true")
    args = ap.parse_args()
    with load_model(args.model) as model:
        if args.lines:
            probe_lines(model, args.instances, args.n_instances)
        if args.sums:
            probe_sums(model)


if __name__ == "__main__":
    main()
