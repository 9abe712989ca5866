"""How much of each streamed-mode request a server's prompt cache could reuse, for three prompt forms.

Not a test: it prints figures. Streamed mode asks a window of steps; at a wrong step the stream is
cut, the ladder re-asks that step (a derived rung runs sub-steps of its own), and a new window asks
the rest. A server reuses the longest prefix a new prompt shares with what it holds: llama.cpp's
slot holds the previous request's prompt and the tokens it generated (``cache_prompt``); vLLM's
automatic prefix caching and OpenAI's prompt caching hold many earlier prompts. This script runs
the guard in streamed mode on the seeded simulator (``sim:paper``: SIMULATED, the controller's
requests, not a model's accuracy) over generated instances, records every request and reply, and
renders the requests in each form as the server sees them (Qwen2.5's ChatML template), then counts:

- sent: prompt tokens of every request;
- evaluated, one slot: tokens not shared with the previous request's prompt and reply (llama.cpp);
- evaluated, many prefixes: tokens not shared with any earlier request's prompt and reply.

The forms:

- ``current``: each request states the known values and the steps it asks (``chunk.txt``, ``correction.txt``);
- ``continue``: a window after a cut continues the previous window's conversation: that window's
  messages, its reply as the guard read it as the assistant's turn (the tokens the model generated,
  which a slot holds), then a user turn with the values checked since the cut and what to write
  (re-asks as ``current``);
- ``conversation``: as ``continue``, and a ladder's re-ask (not a derived rung's sub-steps, which are
  a run of their own) continues the conversation too, so each request extends the one before;
- ``stable-head``: every request of the run (windows and re-asks) opens with the whole procedure's
  step list, the same text each time, then what ``current`` says.

Tokens are counted with the GGUF model's own tokenizer where ``llama_cpp`` is installed
(``--gguf``, vocabulary only: no weights are loaded), else estimated at 4 characters a token (said).

Usage: ``python benchmarks/prefix_forms.py [--steps 23,95] [--per-config 5] [--gguf PATH]``
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stepguard import Guard, GuardConfig
from stepguard.adapters import load_model
from stepguard.bench.generate import generate_instance
from stepguard.guard import GuardResult, NullObserver
from stepguard.guard._prompts import _step_line, render_raw_prompt
from stepguard.guard.rungs import get_rung
from stepguard.procedure import Procedure, format_value
from stepguard.trace import parse_trace

GGUF = Path.home() / ".cache/stepguard/models/qwen2.5-coder-1.5b.gguf"


@dataclass
class Call:
    """One recorded request: its messages, the reply as the guard read it, and what asked it."""

    messages: list[dict[str, str]]
    reply: str = ""
    role: str = "nested"  # "window" (a first try), "reask" (a ladder rung's request), "nested" (a derived rung's sub-step)
    start: int = 0
    end: int = 0


@dataclass
class Recorder(NullObserver):
    """An observer that keeps every model call of a run with the chunk that asked it."""

    calls: list[Call] = field(default_factory=list)
    _pending: tuple[str, int, int] | None = None

    def chunk_started(self, chunk: int, start: int, end: int, rung: str | None, attempt: int) -> None:
        derived = rung is not None and get_rung(rung).derives  # its calls are a nested run's sub-steps
        self._pending = None if derived else ("window" if rung is None else "reask", start, end)

    @contextlib.contextmanager
    def model_call(self, messages: list[Any], settings: Any) -> Iterator[Any]:
        role, start, end = self._pending or ("nested", 0, 0)
        self._pending = None  # a derived rung's nested calls come after its chunk_started, unannounced
        call = Call([dict(m) for m in messages], role=role, start=start, end=end)
        self.calls.append(call)

        class Record:
            def response(self, response: Any) -> None:
                call.reply = response.text

            def result(self, value: str) -> None:
                return None

        yield Record()


def chatml(messages: list[dict[str, str]], reply: str | None = None) -> str:
    """``messages`` as Qwen2.5's chat template writes them, with the generation prompt; then ``reply``."""
    text = "".join(f"<|im_start|>{m['role']}\n{m['content']}<|im_end|>\n" for m in messages) + "<|im_start|>assistant\n"
    return text + (reply or "")


def shared(a: list[int], b: list[int]) -> int:
    """Length of the common prefix of two token lists."""
    return len(os.path.commonprefix([a, b]))


def tokenizer(path: Path | None) -> tuple[Callable[[str], list[int]], str]:
    """A tokenize function and what it is: the GGUF's vocabulary, else 4 characters a token."""
    if path is not None and path.exists():
        try:
            import llama_cpp

            llm = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)
            return (lambda text: llm.tokenize(text.encode(), add_bos=False, special=True)), f"{path.name} tokenizer"
        except ImportError:
            pass
    return (lambda text: [hash(text[i:i + 4]) for i in range(0, len(text), 4)]), "estimated at 4 characters a token"


def committed_lines(procedure: Procedure, values: dict[str, Any], start: int, end: int) -> str:
    """The lines ``var = value`` of steps ``start..end-1`` as committed."""
    return "".join(f"{s.var} = {format_value(values[s.var])}\n" for s in procedure.steps[start:end])


def _rest(procedure: Procedure, values: dict[str, Any], window: Call, start: int, end: int) -> str:
    """The user turn that asks steps ``start..end-1`` after the conversation of ``window``: the values
    committed since its reply went wrong (its first line that is not the committed value), then what to write."""
    read = {r.var: r.value for r in parse_trace(window.reply, var_names=procedure.variables).records}
    cut = next((i for i in range(window.start, start) if read.get(procedure.steps[i].var) != values[procedure.steps[i].var]), start)
    fixed = committed_lines(procedure, values, cut, start)
    n, a, b = end - start, procedure.steps[start].var, procedure.steps[end - 1].var
    head = f"Checked values:\n{fixed}\n" if fixed else ""
    return f"{head}Go on: write the remaining {n} lines, one for each step from {a} to {b}, in order, as before. Write nothing else."


def continue_form(calls: list[Call], procedure: Procedure, values: dict[str, Any], reasks: bool = False) -> list[Call]:
    """``calls`` with each window after a cut continuing the conversation of the previous window: its
    messages, its reply as the guard read it (the assistant's own tokens), then a user turn with the
    values checked since and what to write. With ``reasks``, a ladder's re-ask continues it too."""
    out: list[Call] = []
    conv: list[dict[str, str]] | None = None
    window: Call | None = None
    last = ""  # the conversation's last reply
    for call in calls:
        if call.role == "window" and conv is not None and window is not None:
            ask = _rest(procedure, values, window, call.start, call.end)
            messages = conv + [{"role": "assistant", "content": last}, {"role": "user", "content": ask}]
            window = call
        elif call.role == "reask" and reasks and conv is not None:
            messages = conv + [{"role": "assistant", "content": last}, {"role": "user", "content": call.messages[-1]["content"]}]
        else:
            out.append(call)
            if call.role == "window":
                conv, window, last = call.messages, call, call.reply
            continue
        out.append(Call(messages, call.reply, call.role, call.start, call.end))
        conv, last = messages, call.reply
    return out


def stable_head_form(calls: list[Call], procedure: Procedure) -> list[Call]:
    """``calls`` with every guard request (not a derived rung's sub-steps) opening with the whole step list."""
    head = "Procedure (every step):\n" + "\n".join(_step_line(procedure, i) for i in range(len(procedure.steps))) + "\n\n"
    out = []
    for call in calls:
        if call.role == "nested":
            out.append(call)
            continue
        messages = [dict(m) for m in call.messages]
        messages[-1]["content"] = head + messages[-1]["content"]
        out.append(Call(messages, call.reply, call.role, call.start, call.end))
    return out


def count(calls: list[Call], tok: Callable[[str], list[int]], role: str | None = None) -> tuple[int, int, int]:
    """``(sent, evaluated with one slot, evaluated with many prefixes)`` prompt tokens over ``calls``
    (only those of ``role`` when given; the server holds every call's prompt and reply either way)."""
    sent = one = many = 0
    held: list[list[int]] = []  # each earlier request's prompt and reply, as the server held it
    for call in calls:
        prompt = tok(chatml(call.messages))
        if role is None or call.role == role:
            sent += len(prompt)
            one += len(prompt) - (shared(prompt, held[-1]) if held else 0)
            many += len(prompt) - max((shared(prompt, h) for h in held), default=0)
        held.append(tok(chatml(call.messages, call.reply)))
    return sent, one, many


def recorded_runs(model: str, steps: int, lookbacks: str, per_config: int,
                  config: GuardConfig) -> Iterator[tuple[Procedure, dict[str, Any], GuardResult, Recorder]]:
    """Run the guard (``config``) on ``per_config`` generated instances of ``steps`` steps a look-back
    in ``lookbacks`` (comma-separated); yields ``(procedure, inputs, result, its recorded calls)``."""
    for lb in (int(x) for x in lookbacks.split(",")):
        for i in range(per_config):
            inst = generate_instance(steps, lb, seed=0, index=i)
            proc = inst.to_procedure()
            rec = Recorder()
            result = Guard(load_model(model, procedure=proc), config, observer=rec).run(proc, inst.inputs)
            yield proc, inst.inputs, result, rec


def arguments(doc: str, per_config: int, extra: Callable[[argparse.ArgumentParser], None] | None = None,
              ) -> tuple[argparse.Namespace, Callable[[str], list[int]], str]:
    """The command line these measurements share (model, steps, look-backs, instances, tokenizer) and
    the options ``extra`` adds, read; with the tokenizer and what it is."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    if extra is not None:
        extra(parser)
    parser.add_argument("--model", default="sim:paper")
    parser.add_argument("--steps", default="23,95")
    parser.add_argument("--lookback", default="2,7")
    parser.add_argument("--per-config", type=int, default=per_config)
    parser.add_argument("--gguf", type=Path, default=GGUF)
    args = parser.parse_args()
    return args, *tokenizer(args.gguf)


def main() -> None:
    args, tok, how = arguments(__doc__, 5)
    print(f"model {args.model} (SIMULATED: the controller's requests, not a model's accuracy); tokens: {how}")
    print("steps  form          calls/inst  sent/inst  eval one slot/inst  eval many/inst  raw prompt  one slot/raw  many/raw")
    for n in (int(s) for s in args.steps.split(",")):
        totals: dict[str, list[int]] = {name: [0, 0, 0] for name in ("current", "continue", "conversation", "stable-head")}
        raw = calls_n = runs = 0
        config = GuardConfig(streamed=True, on_exhausted="flag")
        for proc, inputs, result, rec in recorded_runs(args.model, n, args.lookback, args.per_config, config):
            values = {s.var: s.value for s in result.steps}
            forms = {"current": rec.calls, "continue": continue_form(rec.calls, proc, values),
                     "conversation": continue_form(rec.calls, proc, values, reasks=True),
                     "stable-head": stable_head_form(rec.calls, proc)}
            for name, calls in forms.items():
                for k, v in enumerate(count(calls, tok)):
                    totals[name][k] += v
            raw += len(tok(chatml(render_raw_prompt(proc, inputs))))
            calls_n += len(rec.calls)
            runs += 1
        for name, (sent, one, many) in totals.items():
            print(f"{n:5}  {name:<12}  {calls_n / runs:10.1f}  {sent / runs:9.0f}  {one / runs:18.0f}  {many / runs:14.0f}"
                  f"  {raw / runs:10.0f}  {one / raw:11.2f}x  {many / raw:7.2f}x")


if __name__ == "__main__":
    main()
