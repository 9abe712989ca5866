"""Load-independent figures behind docs/speed.md: what prompt-lookup drafting and prompt-prefix reuse
could save on the guard's recorded requests, and what a batch of k tokens costs relative to one.

1. Acceptance (exact, no timing): for every request of the cassette, the recorded reply is the
   greedy continuation, so llama-cpp-python's generate loop with ``LlamaPromptLookupDecoding``
   (max n-gram 2, ``num_pred_tokens`` K) is replayed token by token: each step evaluates one
   sampled token plus its draft as one batch and keeps the draft's matching head. Printed per K:
   decode steps, mean batch, tokens per step.
2. Prefix reuse (exact): tokens of each prompt shared with the previous request's prompt and
   reply (what the server's single Llama object reuses now), and with the best earlier one (the
   most a ``LlamaRAMCache`` could add).
3. Batch cost (timed, in one process, batch sizes interleaved, median of ``--repeats``): seconds
   to decode a batch of k tokens at the guard's context length, with ``logits_all`` as the server
   sets it, relative to k = 1. With 1 and 2 the predicted generation speed-up per K is
   ``tokens / sum(cost(batch))``.

Usage: ``python benchmarks/speed_model.py [--cassette FILE] [--repeats 5] [--threads 1 --clock cpu] [--no-timing]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CASSETTE = ROOT / "tests" / "data" / "guarded_qwen.cassette.jsonl"


def chat_prompt(messages: list[dict[str, str]]) -> str:
    """Qwen2.5's chat template (the GGUF's own) as the server renders it, generation prompt added."""
    text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages)
    return text + "<|im_start|>assistant\n"


def draft(ids: list[int], ngram: int, k: int) -> list[int]:
    """``LlamaPromptLookupDecoding.find_candidate_pred_tokens``, in plain Python."""
    n = len(ids)
    for size in range(min(ngram, n - 1), 0, -1):
        tail = ids[-size:]
        for i in range(n - size + 1):
            if ids[i:i + size] == tail:
                end = min(i + size + k, n)
                if i + size < end:
                    return ids[i + size:end]
    return []


def steps_with_drafts(prompt: list[int], reply: list[int], k: int) -> list[int]:
    """Batch sizes of the decode calls that generate ``reply`` after ``prompt`` (its first token
    comes from the prompt's own evaluation), as llama-cpp-python's ``generate`` does them."""
    ids = prompt + reply[:1]
    done, batches = 1, []
    while done < len(reply):
        d = draft(ids, 2, k) if k else []
        batches.append(1 + len(d))
        accepted = 0
        while accepted < len(d) and done + accepted < len(reply) and d[accepted] == reply[done + accepted]:
            accepted += 1
        produced = min(accepted + 1, len(reply) - done)
        ids += reply[done:done + produced]
        done += produced
    return batches


def common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def batch_costs(llm, sizes: list[int], repeats: int, context: int, clock=time.perf_counter) -> dict[int, float]:  # type: ignore[no-untyped-def]
    """Median seconds (of ``clock``) to decode a batch of each size after ``context`` tokens, sizes interleaved."""
    base = [llm.token_bos()] + [100 + i % 500 for i in range(context - 1)]
    llm.reset()
    llm.eval(base)
    samples: dict[int, list[float]] = {k: [] for k in sizes}
    for r in range(repeats):
        for k in (sizes if r % 2 == 0 else sizes[::-1]):
            llm.n_tokens = context
            started = clock()
            llm.eval([200 + i for i in range(k)])
            samples[k].append(clock() - started)
    return {k: statistics.median(v) for k, v in samples.items()}


def main() -> None:
    """Print the three tables."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cassette", type=Path, default=DEFAULT_CASSETTE)
    ap.add_argument("--model", default="qwen2.5-coder-1.5b")
    ap.add_argument("--ks", default="0,1,2,3,4,6,10", help="num_pred_tokens values (0 = no drafting)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="cpu",
                    help="cpu: this process's CPU seconds (with --threads 1, little disturbed by other work)")
    args = ap.parse_args()

    import llama_cpp

    from stepguard.adapters.models.local import resolve_model

    path, _ = resolve_model(args.model)
    rows = [json.loads(line) for line in args.cassette.read_text().splitlines() if line.strip()]
    tok = llama_cpp.Llama(str(path), vocab_only=True, verbose=False)
    end = tok.tokenize(b"<|im_end|>", add_bos=False, special=True)
    reqs = []
    for row in rows:
        prompt = tok.tokenize(chat_prompt(row["request"]["messages"]).encode(), add_bos=False, special=True)
        reply = tok.tokenize(row["response"]["text"].encode(), add_bos=False, special=False)
        if row["response"].get("finish_reason") == "stop":
            reply += end
        reqs.append((prompt, reply, row["response"]["usage"]))
    mismatch = sum(len(p) != u["input_tokens"] for p, _, u in reqs)
    print(f"{len(reqs)} requests; prompt tokens as recorded by the server: {len(reqs) - mismatch}/{len(reqs)}")

    ks = [int(k) for k in args.ks.split(",")]
    print("\n1. prompt-lookup drafting (max n-gram 2) replayed on the recorded replies")
    print("   K   decode steps   reply tokens   tokens/step   mean batch   max batch")
    plans = {}
    for k in ks:
        batches = [b for p, r, _ in reqs for b in steps_with_drafts(p, r, k)]
        gen = sum(len(r) - 1 for _, r, _ in reqs)
        plans[k] = batches
        print(f"  {k:2d}   {len(batches):12d}   {gen:12d}   {gen / len(batches):11.2f}   "
              f"{statistics.mean(batches):10.2f}   {max(batches):9d}")

    print("\n2. prompt tokens already evaluated before (reusable)")
    prev: list[int] = []
    seen: list[list[int]] = []
    last_total = best_total = prompt_total = 0
    for p, r, _ in reqs:
        last = common_prefix(prev, p)
        best = max((common_prefix(s, p) for s in seen), default=0)
        last_total, best_total, prompt_total = last_total + last, best_total + best, prompt_total + len(p)
        prev = p + r
        seen.append(prev)
    print(f"   prompt tokens {prompt_total}; shared with the previous request (reused now) {last_total} "
          f"({last_total / prompt_total:.0%}); with the best earlier request (a RAM cache's most) {best_total} "
          f"({best_total / prompt_total:.0%})")

    if args.no_timing:
        return
    llm = llama_cpp.Llama(str(path), n_ctx=2048, n_threads=args.threads, n_threads_batch=args.threads,
                          logits_all=True, verbose=False)
    sizes = sorted({1, *(1 + k for k in ks if k)})
    load0 = os.getloadavg()[0]
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    costs = batch_costs(llm, sizes, args.repeats, context=180, clock=clock)
    print(f"\n3. decode cost ({args.clock} s) of a batch of k tokens after 180 (logits_all=True, {args.threads} threads; "
          f"load {load0:.1f}-{os.getloadavg()[0]:.1f})")
    for k in sizes:
        print(f"   k={k:2d}  {costs[k] * 1000:8.1f} ms  {costs[k] / costs[1]:5.2f}x one token")
    base = len(plans[0]) * costs[1] if 0 in plans else None
    print("\n   predicted generation time relative to no drafting (same cost table)")
    for k in ks:
        t = sum(costs[b] if b in costs else costs[1] * b for b in plans[k])
        if base:
            print(f"   K={k:2d}  {t:7.1f} s  speed-up {base / t:4.2f}x")


if __name__ == "__main__":
    main()
