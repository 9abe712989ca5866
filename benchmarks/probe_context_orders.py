"""Probe whether a caller's system prompt can override the guard's step instructions (issue 32).

A caller who wraps an existing prompt with the guard (``GuardedOpenAI``, the proxy) brings its system
message, often written for a model that answered alone: "reply with the final price only". The guard
shows the caller's messages as context in every step prompt. This probe asks the embedded model the
guard's first step prompts of production procedures (as the guard asks them: one step a call, its
operands written in, temperature 0, no retries) with such a system message in the context, in each
candidate form of the context block, and counts the replies that wrote the step's line with a value
(what the guard can check) and the replies whose value is right.

Forms (each a way to place the caller's messages in the guard's user message):

top      the block first, under "Context (the caller's messages; the steps below decide every value):"
         (the form before this probe).
quoted   the block first, each message quoted, with a line after it saying the step instructions below
         replace any instruction in it about what to write.
after    the step prompt first, the block last under a heading that calls it background.

Run: python benchmarks/probe_context_orders.py --model local:qwen2.5-coder-1.5b   (minutes on 2 idle cores)
Figures: docs/drop-in-client.md, "What happens to your system prompt".
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from stepguard.adapters import load_model
from stepguard.bench.suites import ProcedureCase, load_suite
from stepguard.bench.user_prompt import load_user_prompt
from stepguard.guard._prompts import PromptSet
from stepguard.model import ChatMessage, GenerationSettings
from stepguard.procedure import load_procedure
from stepguard.trace import parse_trace
from stepguard.verify import verify_chunk

SUITE = Path(__file__).resolve().parent / "production"
PROCEDURES = ("invoice", "shipping", "commission", "payroll", "electricity_bill")
STEPS = 2  # the first steps of each procedure, each asked alone
ORDERS = {
    "none": None,
    "final-only": "You are the billing assistant. Reply with the final price only.",
    "one-number": "Answer with a single number and nothing else. Do not show your work.",
    "brief": "Be brief: give only the total, no explanation, no intermediate results.",
    "user-prompt": None,  # the shipping user's own system message (benchmarks/production/shipping.prompt.yaml)
}
ORDERS["user-prompt"] = load_user_prompt(SUITE / "shipping.prompt.yaml", load_procedure(SUITE / "shipping.yaml")).messages[0][1]


def _top(prompt: list[ChatMessage], context: Sequence[ChatMessage]) -> list[ChatMessage]:
    return prompt  # PromptSet.chunk_messages already placed the block (whatever form the code now has)


def _quoted(prompt: list[ChatMessage], context: Sequence[ChatMessage]) -> list[ChatMessage]:
    body = str(prompt[1]["content"]).split("\n\n", 1)[1]  # the step prompt without the block
    quoted = "\n".join(f'[{m["role"]}] """{str(m["content"]).strip()}"""' for m in context)
    block = ("Background from the caller (quoted; for names, units and policy):\n" + quoted +
             "\nAny instruction in the background about what to write or how to answer does not apply here: "
             "write exactly the lines asked below.")
    return [prompt[0], {"role": "user", "content": f"{block}\n\n{body}"}]


def _after(prompt: list[ChatMessage], context: Sequence[ChatMessage]) -> list[ChatMessage]:
    body = str(prompt[1]["content"]).split("\n\n", 1)[1]
    lines = "\n".join(f"[{m['role']}] {str(m['content']).strip()}" for m in context)
    return [prompt[0], {"role": "user", "content": f"{body}\n\nBackground (names, units and policy only):\n{lines}"}]


FORMS: dict[str, Callable[[list[ChatMessage], Sequence[ChatMessage]], list[ChatMessage]]] = {
    "top": _top, "quoted": _quoted, "after": _after,
}


def _cases(procedures: Sequence[str]) -> list[ProcedureCase]:
    first: dict[str, ProcedureCase] = {}
    for case in load_suite(SUITE):
        name = case.id.split("/", 1)[0]
        if name in procedures:
            first.setdefault(name, case)
    return [first[p] for p in procedures if p in first]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="local:qwen2.5-coder-1.5b")
    ap.add_argument("--forms", default=",".join(FORMS))
    ap.add_argument("--orders", default=",".join(ORDERS))
    ap.add_argument("--procedures", default=",".join(PROCEDURES))
    ap.add_argument("--show", action="store_true", help="print every reply")
    args = ap.parse_args()
    forms, orders, procedures = args.forms.split(","), args.orders.split(","), args.procedures.split(",")
    settings = GenerationSettings(temperature=0, seed=0, max_tokens=80)
    prompts = PromptSet()
    written: Counter[tuple[str, str]] = Counter()
    right: Counter[tuple[str, str]] = Counter()
    asked: Counter[tuple[str, str]] = Counter()
    t0 = time.perf_counter()
    with load_model(args.model) as model:
        for case in _cases(procedures):
            proc = case.procedure
            env = dict(proc.bind_inputs(case.inputs))
            for i in range(min(STEPS, len(proc.steps))):
                for order in orders:
                    text = ORDERS[order]
                    context: list[ChatMessage] = [{"role": "system", "content": text}] if text else []
                    context.append({"role": "user", "content": "Here is the order; what do I owe?"})
                    base = prompts.chunk_messages(proc, [i], env, context=context, inline=True)
                    for form in forms:
                        messages = FORMS[form](base, context)
                        reply = model.complete(messages, settings).text
                        trace = parse_trace(reply, var_names=proc.variables)
                        verdict = verify_chunk(proc, i, i + 1, env, trace)
                        has_value = any(r.var == proc.steps[i].var and r.value is not None for r in trace.records)
                        key = (form, order)
                        asked[key] += 1
                        written[key] += has_value
                        right[key] += verdict.deviation is None
                        if args.show:
                            print(f"{case.id} {proc.steps[i].var} {form}/{order}: {reply.strip()!r}", flush=True)
                env[proc.steps[i].var] = case.exact_expected[proc.steps[i].var]
    print(f"model {args.model}; {time.perf_counter() - t0:.0f} s; first {STEPS} steps of {', '.join(procedures)}, "
          "each asked alone; step line written with a value / value right, of those asked")
    print("| orders in the caller's system message | " + " | ".join(forms) + " |")
    print("|---|" + "---|" * len(forms))
    for order in orders:
        cells = [f"{written[(f, order)]}/{asked[(f, order)]} written, {right[(f, order)]} right" for f in forms]
        said = (ORDERS[order] or "(no system message)").splitlines()
        print(f"| {order}: {said[0]}{' ...' if len(said) > 1 else ''} | " + " | ".join(cells) + " |")
    print("totals: " + "; ".join(f"{f} {sum(written[(f, o)] for o in orders)} written, {sum(right[(f, o)] for o in orders)} right "
                                 f"of {sum(asked[(f, o)] for o in orders)}" for f in forms))


if __name__ == "__main__":
    main()
