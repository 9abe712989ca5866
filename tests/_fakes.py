"""The tests' shared fakes: scripted ChatModels (chunk prompts computed exactly, faults on demand), fixed
and streamed replies, and the small procedures many test files run them on."""

from __future__ import annotations

import re
from collections import defaultdict

from stepguard.errors import ModelError
from stepguard.evaluator import compile_expression, format_number, parse_number
from stepguard.guard import NullObserver
from stepguard.guard.rungs.arith._digits import MAX_SUB_STEPS
from stepguard.model import ChatMessage, ChatResponse, GenerationSettings, Usage
from stepguard.procedure import Procedure, parse_procedure

_NOTE = re.compile(r"[ \t]{2,}\((.*)\)[ \t]*$")
_ROUND = re.compile(r"round (half up|half to even) to (\d+) decimal places")
_BLOCK = re.compile(r"^(Known values|Steps):\n(.*?)(?:\n\n|\Z)", re.S | re.M)


DIGIT_SUB_STEPS = frozenset(f"d{i}" for i in range(1, MAX_SUB_STEPS + 1))
"""The digit rungs' sub-steps (``d1 .. dn``): put them in ``always_wrong`` for a model wrong on every try,
since ``digits``, the last rung of the default ladders, asks a step as these."""


CHAIN_INPUTS = {"x": 7, "y": 3}
"""The inputs of :func:`chain_procedure` and :func:`sum_chain_procedure`."""


def chain_procedure(n: int = 12) -> Procedure:
    """``S1 = x``, ``S2 = y``, then ``n - 2`` steps of ``+``, ``-`` and ``* 2`` looking back up to three steps."""
    steps = [{"var": "S1", "expr": "x"}, {"var": "S2", "expr": "y"}]
    ops = ["+", "-", "*"]
    for k in range(3, n + 1):
        back = max(1, k - 3)
        op = ops[k % 3] if k % 3 != 2 else "+"
        steps.append({"var": f"S{k}", "expr": f"S{k - 1} {op} S{back}" if op != "*" else f"S{k - 1} * 2"})
    return Procedure.model_validate({"name": "t", "inputs": ["x", "y"], "steps": steps})


def chain_expected(proc: Procedure) -> dict[str, object]:
    """The evaluator's exact values of ``proc`` on :data:`CHAIN_INPUTS` (the result's typed values compare equal to them)."""
    return dict(proc.expected_values(CHAIN_INPUTS))


def sum_chain_procedure(n: int = 12, name: str = "telemetry_demo") -> Procedure:
    """``S1 = x``, ``S2 = y``, then ``n - 2`` sums looking back up to three steps; the procedure is called ``name``."""
    steps = [{"var": "S1", "expr": "x"}, {"var": "S2", "expr": "y"}]
    steps += [{"var": f"S{k}", "expr": f"S{k - 1} + S{max(1, k - 3)}"} for k in range(3, n + 1)]
    return Procedure.model_validate({"name": name, "inputs": ["x", "y"], "steps": steps})


REFUND = parse_procedure("""
name: refund
inputs: {sku: string, amount: decimal}
steps:
  - {var: order_id, kind: tool, tool: catalog_lookup, args: {sku: sku}, type: string}
  - {var: refund_ref, kind: tool, tool: issue_refund, args: {order_id: order_id, amount: amount}, type: string}
""")
"""Two tool steps: ``catalog_lookup(sku)`` gives the order, ``issue_refund(order_id, amount)`` refunds it."""

REFUND_INPUTS = {"sku": "A-12", "amount": "19.99"}


class ChunksAsked(NullObserver):
    """An observer that keeps ``(start, end, rung)`` of every chunk the guard asks, in order."""

    def __init__(self) -> None:
        self.asked: list[tuple[int, int, str | None]] = []

    def chunk_started(self, chunk: int, start: int, end: int, rung: str | None, attempt: int) -> None:
        self.asked.append((start, end, rung))


DIGIT_PRODUCT = Procedure.model_validate({"name": "d", "inputs": ["a", "b"], "steps": [
    {"var": "x", "expr": "a"}, {"var": "y", "expr": "b"}, {"var": "r", "expr": "x * y"}]})
"""``r = a * b``: one product, for the digit rungs."""


def asked_steps(messages: list[dict[str, str]]) -> list[str]:
    """The variables a prompt asks for (its ``Steps:`` block)."""
    block = str(messages[-1]["content"]).split("Steps:\n", 1)[-1].split("\n\n", 1)[0]
    return [line.split(" = ", 1)[0] for line in block.splitlines() if " = " in line]


def _fmt(v) -> str:
    s = format_number(v)
    return f"({s})" if s.startswith("-") else s


class ScriptedModel:
    """Answers the guard's chunk prompts; ``faults[var]`` is a list of faults, one per time the var is asked.

    Faults: ``"wrong"`` (value + 1), ``"operand"`` (first operand replaced by 999), ``"skip"``
    (omit the line), ``"code"`` (reply with a code block only), ``None`` (correct).
    """

    spec = "scripted"
    provider = "test"
    model_name = "scripted"
    simulated = True

    def __init__(self, faults: dict[str, list[str | None]] | None = None, always_wrong: set[str] | None = None) -> None:
        self.faults = {k: list(v) for k, v in (faults or {}).items()}
        self.always_wrong = always_wrong or set()
        self.calls: list[list[ChatMessage]] = []
        self.settings: list[GenerationSettings | None] = []
        self.asked: dict[str, int] = defaultdict(int)

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        self.calls.append(messages)
        self.settings.append(settings)
        text = messages[-1]["content"]
        blocks = dict(_BLOCK.findall(text))
        env = {}
        for line in blocks.get("Known values", "").splitlines():
            if " = " in line:
                k, v = line.split(" = ", 1)
                env[k.strip()] = parse_number(v)
        out = []
        for line in blocks.get("Steps", "").splitlines():
            var, expr = (p.strip() for p in line.split(" = ", 1))
            note = _NOTE.search(expr)
            rounding = _ROUND.search(note.group(1)) if note else None
            expr = expr[: note.start()].strip() if note else expr
            c = compile_expression(expr)
            value = c.evaluate(env)
            if rounding:
                from stepguard.procedure import round_to_scale

                mode = "ROUND_HALF_UP" if rounding.group(1) == "half up" else "ROUND_HALF_EVEN"
                value = round_to_scale(value, int(rounding.group(2)), mode)
            fault = None
            queue = self.faults.get(var)
            if queue:
                fault = queue.pop(0)
            if var in self.always_wrong:
                fault = "wrong"
            self.asked[var] += 1
            if fault == "code":
                return self._reply("```python\nprint(1)\n```\nOutput: 1")
            if fault == "skip":
                env[var] = value
                continue
            operands = [_fmt(env[n]) for n in c.names]
            if fault == "operand":
                operands[-1] = "999"
                value = value + 1
            if fault == "wrong":
                value = value + 1
            env[var] = value
            sub = expr
            for n, o in zip(c.names, operands):
                sub = re.sub(rf"\b{n}\b", o, sub)
            out.append(f"{var} = {expr} = {sub} = {format_number(value)}")
        return self._reply("\n".join(out))

    def _reply(self, text: str) -> ChatResponse:
        return ChatResponse(text=text, usage=Usage(100, len(text) // 4), model="scripted", simulated=True,
                            response_id=f"scripted-{len(self.calls)}")

    async def acomplete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        return self.complete(messages, settings)


class FailsAt(ScriptedModel):
    """A scripted model whose ``at``-th call (1-based) raises :class:`ModelError`, as a server that went
    away; that call is counted in ``calls``, and the calls after it are answered again."""

    def __init__(self, at: int, **kw) -> None:
        super().__init__(**kw)
        self.at = at

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        if len(self.calls) + 1 == self.at:
            self.calls.append(messages)
            raise ModelError("the server went away")
        return super().complete(messages, settings)


class ReplyModel:
    """A ChatModel that returns the given replies in order (text, or a ``ChatResponse`` for native
    tool calls); records every prompt. Runs out -> an empty reply."""

    spec = "replies"
    provider = "test"
    model_name = "replies"
    simulated = True

    def __init__(self, replies: list[str | ChatResponse]) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []
        self.settings: list[GenerationSettings | None] = []

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        self.prompts.append(messages[-1]["content"])
        self.settings.append(settings)
        reply = self.replies.pop(0) if self.replies else ""
        return reply if isinstance(reply, ChatResponse) else ChatResponse(reply, Usage(10, 5), model="replies", simulated=True)

    async def acomplete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        return self.complete(messages, settings)


class SameReply:
    """A ChatModel that gives ``replies`` in order and the last one to every later call (one reply: the
    same to every prompt); ``calls`` counts the calls."""

    spec = provider = model_name = "script"
    simulated = True

    def __init__(self, *replies: str) -> None:
        self.replies, self.calls = list(replies), 0

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        """The next scripted reply, or the last one again."""
        self.calls += 1
        return ChatResponse(self.replies[min(self.calls, len(self.replies)) - 1], Usage(10, 10), "stop", 0.0, "script", True)

    async def acomplete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        """Async twin of :meth:`complete`."""
        return self.complete(messages, settings)


class FixedReplies:
    """A ChatModel that answers with ``replies`` in order, recording each prompt's last message."""

    spec = "fixed-replies"

    def __init__(self, replies: list[str]) -> None:
        self.replies = list(replies)
        self.prompts: list[str] = []

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        self.prompts.append(str(messages[-1]["content"]))
        if not self.replies:
            raise AssertionError(f"no reply left for prompt {self.prompts[-1][-300:]!r}")
        return ChatResponse(self.replies.pop(0), Usage(1, 1))

    async def acomplete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        return self.complete(messages, settings)


class _TrackedStream:
    """A reply served a line at a time, recording how far it was read and whether it was closed."""

    def __init__(self, text: str, log: list[dict]) -> None:
        from stepguard.model import WrittenReply

        self.inner = WrittenReply(ChatResponse(text, Usage(10, max(1, len(text) // 4))))
        self.entry = {"lines_served": 0, "closed": False, "text": text}
        log.append(self.entry)

    @property
    def response(self) -> ChatResponse | None:
        return self.inner.response

    def __iter__(self):
        for line in self.inner:
            self.entry["lines_served"] += 1
            yield line

    def __aiter__(self):
        return self._aiter()

    async def _aiter(self):
        for line in self:
            yield line

    def close(self) -> None:
        self.entry["closed"] = True
        self.inner.close()

    async def aclose(self) -> None:
        self.close()


class StreamingReplies(FixedReplies):
    """A streaming ChatModel answering with ``replies`` in order; ``streams`` records each stream's reading."""

    spec = "streaming-replies"

    def __init__(self, replies: list[str]) -> None:
        super().__init__(replies)
        self.streams: list[dict] = []

    def stream(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> _TrackedStream:
        return _TrackedStream(self.complete(messages, settings).text, self.streams)

    def astream(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> _TrackedStream:
        return self.stream(messages, settings)
