"""The seeded, fault-injecting simulated executor behind ``sim:<preset>``.

It reads what a call asks from the call's :class:`~stepguard.model.PromptPlan` (``settings.plan``,
which the guard sets on each call it builds: the steps, their expressions as the prompt shows them,
the known values as written), else, for a call without one (a raw prompt, a user's own prompt file,
a request replayed or served over HTTP), from the **last user message**'s text (the system message
is ignored). Where the text reads as the plan says, both give the same reply. It executes the
procedure with stepguard's safe evaluator, and writes the reply a model would write, injecting the
failure modes named by Panda et al., "When LLMs Stop Following Steps" (arXiv 2605.00817): wrong
values, a wrong look-back operand, skipped steps, stopping early, a premature final answer,
invented extra steps, and self-correction after a wrong first answer. Errors propagate: later
steps use the (wrong) values already written, as a real model would.

Prompt contract, for a call without a plan (see ``stepguard/guard/prompts``)::

    raw mode      Inputs:        name = <number> lines, then a blank line
                  Procedure:     var = <expr> lines, then a blank line
                  -> "S1 = 7" lines, then "Final answer: <value>"
    chunk mode    Known values:  name = <number> lines, then a blank line
                  Steps:         var = <expr> lines, then a blank line
                  -> "S11 = S10 - S4 = -159 - (-12) = -147" lines; a final answer only if the
                     prompt contains "Final answer:"
    anything else -> a short non-answer, never an exception

A plan's role says the mode (``raw``, else chunk mode), its ``final_answer`` whether one is asked (the
answer step's value), each step's ``scale`` and ``rounding`` how it is rounded.

Randomness: one ``random.Random`` per call, seeded with sha256 of (executor seed, every message's
role and text, ``settings.seed``, ``settings.temperature``). The same request gives the same reply;
a different prompt (a correction, a smaller chunk), seed or temperature gives an independent draw
(``None`` and ``0`` count as different settings). Even at a temperature above 0, an identical
request gives the identical reply: vary ``settings.seed`` to sample again.

Step kinds: a step's value may be a number, a boolean (written ``true``/``false``) or a string
(``size = large``, from a conditional such as ``'large' if total >= 1000 else 'small'``); known
values are read back the same way. A step the prompt shows without an expression
(``tax = ?    (Apply the tax rate...)``, an instruction step) is written only when the executor
was given the procedure (``procedure=``, or ``load_model("sim:perfect", procedure=p)``): it then
stands in for a model that follows the instruction, taking the step's hidden expected-value
``check``, else the first candidate value (a choice, ``true``/``false``, a constant or a known
value) that satisfies its predicate, else a value of the step's type. Without the procedure, or
when no candidate satisfies the predicate, the step is left out, as a model that cannot read the
instruction would leave it. The oracle reads the procedure, never the guard's verdicts, so a
verified run on the simulator shows the wiring works, never that an instruction is clear.

Tool, extract and text steps (asked one at a time) are answered by :mod:`.sim_kinds`: the call with
its arguments' values, the value read from the source text, or a first sentence; no faults are
injected into them. A step kind of one's own registers its answer there
(:func:`~.sim_kinds.register_sim_answer`).

Simulated replies are never a model's accuracy: every response has ``simulated=True``.
"""

from __future__ import annotations

import ast
import asyncio
import hashlib
import operator
import random
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING, Any, NamedTuple

from stepguard.errors import EvaluationError, ModelSpecError
from stepguard.evaluator import DEFAULT_MAX_BITS, Number, check_size, compile_expression, format_number, normalize, parse_number
from stepguard.model import ChatMessage, ChatResponse, ClosableModel, GenerationSettings, PromptPlan, Usage, WrittenReply

from .sim_kinds import answer_kind, answer_planned

if TYPE_CHECKING:
    from stepguard.procedure import Procedure

__all__ = ["DEFAULT_PRESET", "PRESETS", "SimPreset", "SimulatedExecutor"]


@dataclass(frozen=True)
class SimPreset:
    """Fault rates of the simulated executor. Every rate is a probability in [0, 1].

    "Position" ``p`` is the number of step lines already written in the current reply (0 for the
    first line), so long replies err more than short ones; "distance" ``d`` is how many steps
    back (in the prompt's step order) the farthest operand of a step was defined.
    """

    name: str = "custom"
    """The preset's name; the executor's spec is ``f"sim:{name}"``."""
    arithmetic_base: float = 0.0
    """Per-step chance of a wrong value (off by 1-2, a carry slip of 10/100, one wrong digit, a
    dropped sign) at position 0; only steps with an operator, never plain copies like ``S1 = x``."""
    arithmetic_growth: float = 0.0
    """Added to the wrong-value chance per step line already written in this reply."""
    lookback_base: float = 0.0
    """Per-step chance, per unit of distance beyond 1, of reading a nearer variable's value instead
    of the far operand (``d = 7`` -> ``6 * rate``) at position 0."""
    lookback_growth: float = 0.0
    """Added to ``lookback_base`` per step line already written in this reply."""
    restated_confusion: float = 0.0
    """Per-step chance of misreading an operand restated as a number in ``Inputs:`` / ``Known
    values:`` (taking the previous result or a neighbouring known value); much lower than a look-back."""
    skip_rate: float = 0.0
    """Per-step chance that a step's line is left out (its value is still computed silently)."""
    stop_growth: float = 0.0
    """Hazard of stopping early before the next step, per step line already written (``p * rate``);
    in raw mode the reply then ends with a final answer taken from the last value reached."""
    premature_answer: float = 0.0
    """Per-reply chance of a ``Final answer:`` line after a random step before the last one; the
    trace then goes on and ends with a second final answer."""
    missing_answer: float = 0.0
    """Per-reply chance that no final answer is written at all."""
    extra_steps: float = 0.0
    """Per-reply chance (when a final answer is asked for) of 1-3 invented steps ``S_{N+1}...``
    after the last; the final answer is then the last invented value."""
    extra_steps_chunk: float = 0.0
    """The same, in chunk mode (no final answer asked for): invented lines the guard must reject."""
    self_correction: float = 0.0
    """Per-reply chance of a wrong first final answer, then "Wait, ..." and a corrected one."""
    max_step_rate: float = 0.5
    """Cap on any per-step probability after growth."""

    @classmethod
    def at_accuracy(cls, p: float, decay: float = 0.0) -> SimPreset:
        """A preset whose every computed step is right with probability ``p`` at the first line of a
        reply, and ``decay`` less for each step line already written in that reply (capped at a
        wrong-value chance of :attr:`max_step_rate`): ``arithmetic_base = 1 - p``,
        ``arithmetic_growth = decay``, no other fault. ``sim:p=0.99`` (``decay`` 0: independent of the
        position and of the prompt), ``sim:p=0.99,decay=0.01`` (a model that errs more deeper into a
        long reply). For cost curves (calls and tokens against ``p``), never a model's accuracy.

        Raises:
            ModelSpecError: ``p`` outside [0.5, 1] (the cap on a per-step rate is 0.5), or ``decay``
                outside [0, 0.5].
        """
        if isinstance(p, bool) or not isinstance(p, (int, float)) or not 0.5 <= p <= 1:
            raise ModelSpecError(f"a simulator's per-step accuracy p must be a number from 0.5 to 1, not {p!r}")
        if isinstance(decay, bool) or not isinstance(decay, (int, float)) or not 0 <= decay <= 0.5:
            raise ModelSpecError(f"a simulator's accuracy decay must be a number from 0 to 0.5 a step line, not {decay!r}")
        if not decay:
            return cls(name=f"p={p:g}", arithmetic_base=1 - p)
        return cls(name=f"p={p:g},decay={decay:g}", arithmetic_base=1 - p, arithmetic_growth=decay)


PRESETS: dict[str, SimPreset] = {
    "perfect": SimPreset(name="perfect"),
    # Tuned (benchmarks/calibrate_sim.py) so raw first-answer accuracy, averaged over look-backs
    # 1, 2, 3, 5, 7, falls from about 61% at 5 steps to about 20% at 95 steps: the paper's reported
    # means over 14 models (arXiv 2605.00817v1; its v3 reports 63% at 5 steps), and look-back 1 -> 7 costs about 18 points (paper:
    # 18.43). These rates were chosen to match those headline means; they are not measured from
    # any model. Calibration (200 per configuration, seed 0): 59% at 5 steps, 19% at 95, 18.6
    # points. In 5-step chunk replies with restated operands about 1% of steps go wrong.
    "paper": SimPreset(
        name="paper",
        arithmetic_base=0.003,
        arithmetic_growth=0.000015,
        lookback_base=0.002,
        lookback_growth=0.000015,
        restated_confusion=0.004,
        skip_rate=0.003,
        stop_growth=0.00008,
        premature_answer=0.12,
        missing_answer=0.14,
        extra_steps=0.09,
        extra_steps_chunk=0.01,
        self_correction=0.12,
    ),
    # Roughly a third of ``paper``'s rates: a stronger "model", not calibrated against anything.
    "mild": SimPreset(
        name="mild",
        arithmetic_base=0.001,
        arithmetic_growth=0.000005,
        lookback_base=0.0007,
        lookback_growth=0.000005,
        restated_confusion=0.0013,
        skip_rate=0.001,
        stop_growth=0.000027,
        premature_answer=0.04,
        missing_answer=0.045,
        extra_steps=0.03,
        extra_steps_chunk=0.003,
        self_correction=0.04,
    ),
}
"""The built-in presets by name: ``perfect`` (no faults), ``paper`` (calibrated), ``mild``."""

DEFAULT_PRESET = "paper"
"""The preset ``sim:`` with no name selects."""

_Value = Number | bool | str
_Env = dict[str, _Value]
_FAILED = (EvaluationError, KeyError, TypeError, ValueError)  # a step that cannot be computed is left out


def _at_accuracy(text: str) -> SimPreset:
    """The preset of a ``sim:p=<accuracy>[,decay=<per line>]`` spec (the part after ``p=``; checked by
    :meth:`SimPreset.at_accuracy`)."""
    head, _, rest = text.partition(",")
    decay = "0"
    if rest:
        key, _, decay = rest.partition("=")
        if key.strip() != "decay" or not decay:
            raise ModelSpecError(f"a simulator's accuracy spec is p=<accuracy> or p=<accuracy>,decay=<per step line>, not p={text!r}")
    try:
        p = float(head)
    except ValueError:
        raise ModelSpecError(f"a simulator's per-step accuracy p must be a number from 0.5 to 1, not {head!r}") from None
    try:
        per_line = float(decay)
    except ValueError:
        raise ModelSpecError(f"a simulator's accuracy decay must be a number from 0 to 0.5 a step line, not {decay!r}") from None
    return SimPreset.at_accuracy(p, per_line)


class _Expr(NamedTuple):
    fn: Callable[[_Env], Any]  # env -> exact value (raises EvaluationError)
    names: tuple[str, ...]  # variables read, first-use order
    has_op: bool  # an operator or call: arithmetic can go wrong (a plain copy cannot)
    parts: tuple[str, ...]  # source split around names: text, name, text, name, ..., text; () writes `var = value`


# One step: (var, src, expr or None when invalid, farthest step variable read 2+ steps back or
# None, its distance, an operand restated as a number in Inputs/Known values or None).
_Step = tuple[str, str, "_Expr | None", "str | None", int, "str | None"]


class _Prompt(NamedTuple):
    chunk: bool  # chunk mode (substitution lines) vs raw mode
    wants_final: bool
    known: tuple[tuple[str, _Value], ...]
    steps: tuple[_Step, ...]
    answer_var: str | None = None  # the prompt asks for this variable's value, not the last step's


_ANSWER_VAR = re.compile(r"final answer: <the value of ([A-Za-z_]\w*)>", re.IGNORECASE)


_HEAD = re.compile(r"^[ \t]*(inputs|known values|procedure|steps):[ \t]*\r?$\n?", re.IGNORECASE | re.MULTILINE)
_BLOCK = re.compile(r"(?:[ \t]*\S[^\n]*(?:\n|$))*")  # consecutive non-blank lines
_ASSIGN = re.compile(r"^[ \t]*(?:[-*][ \t]+)?([A-Za-z_]\w*)[ \t]*=[ \t]*(\S[^\n]*)", re.MULTILINE)
_NOTE = re.compile(r"[ \t]{2,}\(.*\)[ \t]*$")
_ROUND_NOTE = re.compile(r"round (half up|half to even) to (\d+) decimal places")
_NAME = re.compile(r"(?<![\w.])[A-Za-z_]\w*")
_NUMBERED = re.compile(r"(.*?)(\d+)$")
_FUNCS = frozenset({"abs", "min", "max", "round"})
_FAST_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}
_NON_ANSWERS = (
    "I could not find a procedure to execute. Please give the inputs and the steps.",
    "There are no steps here for me to compute. Could you share the procedure?",
    "I'm not sure what to calculate: no inputs or steps were given.",
)


def _exact(value: Any) -> Number:
    if type(value) is int and value.bit_length() <= DEFAULT_MAX_BITS:
        return value
    return normalize(check_size(value))


def _fast(node: ast.AST) -> Callable[[_Env], Any] | None:
    """A closure for ``name``, ``constant`` or ``a op b`` (op in + - *, a and b names or constants)."""
    if isinstance(node, ast.Name):
        name = node.id
        return lambda env: env[name]
    if isinstance(node, ast.Constant) and type(node.value) is not str:
        value = node.value
        return lambda env: value
    if not (isinstance(node, ast.BinOp) and type(node.op) in _FAST_OPS):
        return None
    op, lhs, rhs = _FAST_OPS[type(node.op)], node.left, node.right
    if isinstance(lhs, ast.Name) and isinstance(rhs, ast.Name):
        a, b = lhs.id, rhs.id
        return lambda env: _exact(op(env[a], env[b]))
    if isinstance(lhs, ast.Name) and isinstance(rhs, ast.Constant) and type(rhs.value) is not str:
        a, c = lhs.id, rhs.value
        return lambda env: _exact(op(env[a], c))
    if isinstance(lhs, ast.Constant) and type(lhs.value) is not str and isinstance(rhs, ast.Name):
        c, b = lhs.value, rhs.id
        return lambda env: _exact(op(c, env[b]))
    return None


@lru_cache(maxsize=8192)
def _compile(src: str) -> _Expr | None:
    """Compile ``src`` with the safe evaluator, once. Names, constants and ``a op b`` (+ - *) then
    run as a closure over the checked tree, bounded like the evaluator (1024 bits); everything
    else through ``CompiledExpression.evaluate``. ``None`` if ``src`` is not a valid expression."""
    try:
        ce = compile_expression(src)
    except EvaluationError:
        return None
    body = ce.tree.body
    fn = _fast(body) or ce.evaluate
    split: list[str] = []
    pos = 0
    for m in _NAME.finditer(src):
        split += [src[pos : m.start()], m.group()]
        pos = m.end()
    split.append(src[pos:])
    return _Expr(fn, ce.names, not isinstance(body, (ast.Name, ast.Constant)), tuple(split))


def _number(text: str) -> Number | None:
    try:
        return parse_number(text)
    except EvaluationError:
        pass
    expr = _compile(text)
    if expr is None or expr.names:
        return None
    try:
        value = expr.fn({})
    except (EvaluationError, KeyError):
        return None
    return value if type(value) is int or type(value) is Fraction else None


def _known(text: str) -> _Value:
    """A known value as the guard writes it: a number, ``true``/``false``, else the text as a string."""
    value = _number(text)
    if value is not None:
        return value
    word = text.strip()
    return {"true": True, "false": False}.get(word.lower(), word)


def _text(value: _Value) -> str:
    """A value as a model writes it: ``-12``, ``3.5``, ``true``, ``large``."""
    return value if isinstance(value, str) else format_number(value)


def _block(text: str, start: int) -> list[tuple[str, str]]:
    """The ``name = text`` lines of the block that starts at ``start`` and ends at a blank line."""
    m = _BLOCK.match(text, start)
    return [(a, b) for a, b in _ASSIGN.findall(m.group())] if m else []


def _strip_note(src: str) -> str:
    """Drop a step's trailing ``    (instruction)`` note, keeping the expression."""
    note = _NOTE.search(src)
    return src[: note.start()].rstrip() if note else src.rstrip()


def _rounding(src: str) -> tuple[int, str] | None:
    """``(places, ROUND_HALF_UP|ROUND_HALF_EVEN)`` from a step's rounding note, if it has one."""
    note = _NOTE.search(src)
    places = _ROUND_NOTE.search(note.group()) if note else None
    if places is None:
        return None
    return int(places.group(2)), "ROUND_HALF_UP" if places.group(1) == "half up" else "ROUND_HALF_EVEN"


def _rounded(expr: _Expr, rounding: tuple[int, str]) -> _Expr:
    from stepguard.procedure import round_to_scale

    fn = expr.fn
    return expr._replace(fn=lambda env: round_to_scale(fn(env), *rounding))


def _parse(text: str) -> _Prompt | None:
    """Read the value and step blocks of one user message (cached unless longer than 64 KiB)."""
    return _parse_cached(text) if len(text) <= 65536 else _read_prompt(text)


@lru_cache(maxsize=1024)
def _parse_cached(text: str) -> _Prompt | None:
    return _read_prompt(text)


def _read_prompt(text: str) -> _Prompt | None:
    """Read the value and step blocks of one user message; ``None`` when there is no step block."""
    heads = [(m.group(1).lower(), m.end()) for m in _HEAD.finditer(text)]
    at = next((i for i in range(len(heads) - 1, -1, -1) if heads[i][0] in ("procedure", "steps")), -1)
    if at < 0:
        return None
    values = next((heads[i] for i in range(at - 1, -1, -1) if heads[i][0] in ("inputs", "known values")), None)
    chunk = heads[at][0] == "steps" or (values is not None and values[0] == "known values")
    known: dict[str, _Value] = {}
    for name, txt in _block(text, values[1]) if values else ():
        known[name] = _known(txt)
    raw_steps = [(var, _strip_note(line), _rounding(line)) for var, line in _block(text, heads[at][1])]
    wants_final = not chunk or "final answer:" in text.lower()
    asked = _ANSWER_VAR.search(text)
    return _prompt(chunk, wants_final, known, raw_steps, asked.group(1) if asked else None)


def _planned(plan: PromptPlan) -> _Prompt | None:
    """The prompt ``plan`` describes, as :func:`_read_prompt` reads it from the text the plan's call
    shows; ``None`` when it asks no step. The final answer asked for is the answer step's value."""
    known = {name: _known(text) for name, text in plan.known.items()}
    raw_steps = [(s.var, s.expression.rstrip(), (s.scale, s.rounding) if s.scale is not None else None) for s in plan.steps]
    answer = next((s.var for s in plan.steps if s.answer), None) if plan.final_answer else None
    return _prompt(plan.role != "raw", plan.role == "raw" or plan.final_answer, known, raw_steps, answer)


def _prompt(chunk: bool, wants_final: bool, known: dict[str, _Value], raw_steps: list[tuple[str, str, tuple[int, str] | None]],
            answer_var: str | None) -> _Prompt | None:
    """The steps (``(var, expression text, rounding)``, in the prompt's order) compiled, each with its
    farthest look-back and a restated operand; ``None`` for no step."""
    if not raw_steps:
        return None
    index: dict[str, int] = {}
    for i, (var, _, _) in enumerate(raw_steps):
        index.setdefault(var, i)
    steps = []
    for i, (var, src, rounding) in enumerate(raw_steps):
        expr = _compile(src)
        if expr is not None and rounding is not None:
            expr = _rounded(expr, rounding)
        far, far_d, restated = None, 0, None
        for name in expr.names if expr else ():
            j = index.get(name, i)
            if j < i - 1 and i - j > far_d:
                far, far_d = name, i - j
            elif j >= i and name in known:
                restated = name
        steps.append((var, src, expr, far, far_d, restated))
    return _Prompt(chunk, wants_final, tuple(known.items()), tuple(steps), answer_var)


def _perturb(value: _Value, rng: random.Random) -> _Value:
    """A plausible arithmetic slip: off by 1-2 (45%), a carry of 10/100 (20%), one wrong digit (20%),
    a dropped or added sign (15%); a boolean flipped; a string with its last character dropped
    or doubled. Never returns ``value`` itself."""
    if type(value) is bool:
        return not value
    if isinstance(value, str):
        return value[:-1] if len(value) > 1 and rng.random() < 0.5 else value + value[-1:] + "s"
    if type(value) is not int:
        return normalize(value + rng.choice((-1, 1)))
    r = rng.random()
    new = value
    if r < 0.20:
        new = value + rng.choice((-1, 1)) * (100 if abs(value) >= 100 and rng.random() < 0.3 else 10)
    elif r < 0.40:
        digits = str(abs(value))
        k = rng.randrange(len(digits))
        choices = ("0123456789" if k or len(digits) == 1 else "123456789").replace(digits[k], "")
        new = int(digits[:k] + rng.choice(choices) + digits[k + 1 :]) * (-1 if value < 0 else 1)
    elif r < 0.55:
        new = -value
    if new == value:
        new = value + rng.choice((-2, -1, 1, 2))
    return new


def _oracle(procedure: Procedure, var: str) -> _Expr | None:
    """How a model that follows step ``var``'s instruction computes it (see the module docstring);
    ``None`` when the procedure has no such step. The value is written as ``var = value``."""
    from stepguard.procedure import apply_scale

    index = procedure.index_of.get(var)
    if index is None:
        return None
    step, check = procedure.steps[index], procedure.compiled_checks[index]
    hidden = procedure.compiled[index] or (check if procedure.check_is_expected[index] else None)

    def scaled(value: Any) -> _Value:
        return value if isinstance(value, (str, bool)) else apply_scale(normalize(value), step)

    if hidden is not None:
        return _Expr(lambda env: scaled(hidden.evaluate(env)), hidden.names, True, ())
    if step.type == "one_of":
        candidates: list[Any] = list(step.choices or ())
    elif step.type == "boolean":
        candidates = [True, False]
    else:
        consts = [n.value for n in ast.walk(check.tree) if isinstance(n, ast.Constant)] if check else []
        if step.type == "string":
            candidates = [c for c in consts if isinstance(c, str)] + ["done"]
        else:
            candidates = [c for c in consts if type(c) in (int, float)] + [0, 1]

    def solve(env: _Env) -> _Value:
        if check is None:
            return scaled(candidates[0])
        tries = list(candidates)
        if step.type not in ("one_of", "boolean", "string"):
            tries += [v for v in env.values() if type(v) in (int, Fraction)]
            tries += [t + d for t in list(tries) for d in (1, -1)]
        for candidate in tries:
            value = scaled(normalize(candidate) if type(candidate) is float else candidate)
            try:
                if check.evaluate({**env, "value": value}) is True:
                    return value
            except EvaluationError:
                continue
        raise EvaluationError(f"no candidate value satisfies the predicate of step {var!r}", step.check)

    return _Expr(solve, procedure.reads(index), False, ())


def _sub(value: _Value, before: str) -> str:
    """A substituted operand: negatives and fractions in parentheses unless first or inside ``(``/``,``;
    a string in quotes, a boolean as ``true``/``false``."""
    if isinstance(value, str):
        return repr(value)
    text = _text(value)
    if (text[0] == "-" or "/" in text) and before.rstrip()[-1:] not in ("", "(", ","):
        return f"({text})"
    return text


@dataclass
class _Writing:
    """One reply being written by :meth:`SimulatedExecutor._write`: the faults drawn for the whole
    reply, the values so far (wrong ones included: errors propagate), the lines, and the rates at
    the current position (``written`` step lines so far)."""

    p: SimPreset
    prompt: _Prompt
    rng: random.Random
    env: _Env
    missing: bool = False
    """The final answer is left out."""
    premature_at: int = -1
    """A final answer is written after this step (0-based), before the last one; -1 for none."""
    self_corr: bool = False
    """A wrong final answer comes first, then a double-check and the right one."""
    extra: bool = False
    """Invented steps follow the last one."""
    lines: list[str] = field(default_factory=list)
    written: int = 0
    last: tuple[str, _Value] | None = None
    """The last step reached: ``(var, value)``."""
    stopped: bool = False
    a_rate: float = 0.0
    lb_unit: float = 0.0
    stop_rate: float = 0.0


def _start(p: SimPreset, prompt: _Prompt, rng: random.Random) -> _Writing:
    """The reply's faults, drawn before any step in this order: a missing, a premature and a
    self-corrected final answer (when the prompt asks for one), then invented steps; the rates at
    position 0."""
    r = rng.random
    w = _Writing(p, prompt, rng, dict(prompt.known))
    if prompt.wants_final:
        w.missing = p.missing_answer > 0 and r() < p.missing_answer
        if p.premature_answer > 0 and r() < p.premature_answer and len(prompt.steps) >= 2:
            w.premature_at = rng.randrange(len(prompt.steps) - 1)
        w.self_corr = p.self_correction > 0 and r() < p.self_correction
        extra_rate = p.extra_steps
    else:
        extra_rate = p.extra_steps_chunk
    w.extra = extra_rate > 0 and r() < extra_rate
    w.a_rate, w.lb_unit, w.stop_rate = min(p.max_step_rate, p.arithmetic_base), p.lookback_base, 0.0
    return w


def _operands(w: _Writing, i: int) -> _Env:
    """The values step ``i`` computes with: the written ones, or with a look-back slip (its farthest
    operand taken from a nearer step) or a restated input confused (with the last step's value, or
    with a neighbouring input)."""
    _var, _src, _expr, far, far_d, restated = w.prompt.steps[i]
    env, cap, r = w.env, w.p.max_step_rate, w.rng.random
    if far is not None:
        rate = (far_d - 1) * w.lb_unit
        if rate and r() < (rate if rate < cap else cap):
            near = w.prompt.steps[i - w.rng.randint(1, far_d - 1)][0]
            if near in env:
                return {**env, far: env[near]}
    elif restated is not None and w.p.restated_confusion and r() < w.p.restated_confusion:
        known_names = [k for k, _ in w.prompt.known]
        if w.last is not None:
            return {**env, restated: w.last[1]}
        if len(known_names) > 1:
            k = known_names.index(restated)
            return {**env, restated: env[known_names[k - 1 if k else 1]]}
    return env


def _advance(w: _Writing) -> None:
    """One more step line written: the slip, look-back and stop rates grow with the position
    (slips and stops capped at ``max_step_rate``)."""
    p, cap = w.p, w.p.max_step_rate
    w.written += 1
    w.a_rate = p.arithmetic_base + p.arithmetic_growth * w.written
    w.lb_unit = p.lookback_base + p.lookback_growth * w.written
    w.stop_rate = p.stop_growth * w.written
    if w.a_rate > cap or w.stop_rate > cap:
        w.a_rate, w.stop_rate = min(cap, w.a_rate), min(cap, w.stop_rate)


def _final_lines(w: _Writing) -> list[str]:
    """The final answer's lines, when the prompt asks for one and it is not left out: the asked
    variable's value (else the last step's), after a wrong one and a double-check if self-corrected."""
    if not w.prompt.wants_final or w.missing or w.last is None:
        return []
    final = w.env[w.prompt.answer_var] if w.prompt.answer_var in w.env else w.last[1]
    lines = []
    if w.self_corr:
        lines += [f"Final answer: {_text(_perturb(final, w.rng))}", "", "Wait, let me double-check that."]
    lines.append(f"Final answer: {_text(final)}")
    return lines


class SimulatedExecutor(ClosableModel):
    """A :class:`~stepguard.model.ChatModel` that executes the prompt's procedure with injected faults.

    Args:
        preset: a preset name from :data:`PRESETS` (``""`` selects :data:`DEFAULT_PRESET`), ``p=<accuracy>``
            (:meth:`SimPreset.at_accuracy`: ``sim:p=0.99``; ``sim:p=0.99,decay=0.01`` for an accuracy that
            falls with each step line written in a reply) or a :class:`SimPreset` with your own rates.
        seed: executor seed, mixed into every call's random draw (different seeds: independent replies).
        latency_s: seconds each call waits before answering (default 0; ``time.sleep`` /
            ``asyncio.sleep``), to imitate a server in controller-overhead benchmarks.
        procedure: the procedure being run, or ``None``. Given, a step the prompt shows without
            an expression (an instruction step) is computed from it (module docstring); without
            it such a step is left out.

    Usage is estimated, not counted: ``len(text) // 4`` tokens for the input (every message's
    content) and for the output. A reply whose estimate exceeds ``settings.max_tokens`` is cut at
    ``4 * max_tokens`` characters with ``finish_reason == "length"``.

    Raises:
        ModelSpecError: an unknown preset name (the message lists the known ones).
    """

    provider = "stepguard.sim"
    simulated = True

    def __init__(
        self, preset: str | SimPreset = DEFAULT_PRESET, seed: int = 0, latency_s: float = 0.0, procedure: Procedure | None = None
    ) -> None:
        if isinstance(preset, SimPreset):
            self.preset = preset
        else:
            key = (preset or DEFAULT_PRESET).strip().lower()
            if key.startswith("p="):
                self.preset = _at_accuracy(key[2:])
            elif key not in PRESETS:
                raise ModelSpecError(f"unknown simulator preset {preset!r}; known presets: {', '.join(PRESETS)}, "
                                     "or p=<accuracy>[,decay=<per step line>]")
            else:
                self.preset = PRESETS[key]
        self.seed = int(seed)
        self.latency_s = float(latency_s)
        self.procedure = procedure
        self._oracles: dict[str, _Expr | None] = {}
        self.model_name = self.spec = f"sim:{self.preset.name}"

    def __repr__(self) -> str:
        return f"SimulatedExecutor(preset={self.preset.name!r}, seed={self.seed}, latency_s={self.latency_s})"

    def for_procedure(self, procedure: Procedure | None) -> SimulatedExecutor:
        """This executor (same preset, seed and latency: the same replies to the same prompts) given
        ``procedure``, so it computes the procedure's instruction steps as a model following them
        would. The benchmark harness runs each case's procedure through one of these."""
        return SimulatedExecutor(self.preset, self.seed, self.latency_s, procedure)

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        """Answer ``messages`` (see the module docstring for the prompt contract); never raises on odd text."""
        t0 = time.perf_counter()
        if self.latency_s > 0:
            time.sleep(self.latency_s)
        return self._respond(messages, settings, t0)

    async def acomplete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        """Async twin of :meth:`complete` (waits ``latency_s`` with ``asyncio.sleep``)."""
        t0 = time.perf_counter()
        if self.latency_s > 0:
            await asyncio.sleep(self.latency_s)
        return self._respond(messages, settings, t0)

    def stream(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> WrittenReply:
        """The reply of :meth:`complete`, served a line at a time; closed early, the rest is never written."""
        return WrittenReply(self.complete(messages, settings))

    def astream(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> WrittenReply:
        """Async twin of :meth:`stream` (the reply is computed at once; ``latency_s`` is not waited)."""
        return WrittenReply(self._respond(messages, settings, time.perf_counter()))

    def _respond(self, messages: list[ChatMessage], settings: GenerationSettings | None, t0: float) -> ChatResponse:
        settings = settings or GenerationSettings()
        contents = [str(m.get("content") or "") for m in messages]
        blob = "\x1e".join(f"{m.get('role')}\x1f{c}" for m, c in zip(messages, contents, strict=True))
        key = f"{self.seed}\x1d{settings.seed!r}\x1d{settings.temperature!r}\x1d{blob}".encode("utf-8", "replace")
        rng = random.Random(int.from_bytes(hashlib.sha256(key).digest()[:16], "big"))
        plan = settings.plan
        if plan is not None:  # the guard said what it asks: the prompt's wording is not read
            text = answer_planned(plan, self.procedure)
            prompt = _planned(plan) if text is None else None
        else:  # a raw prompt, a user's own prompt, a replayed request: the text is read
            user = next((c for m, c in zip(reversed(messages), reversed(contents), strict=True) if m.get("role") == "user"), "")
            text = answer_kind(user, self.procedure)  # a step asked alone: tool, extract, text, ... (.sim_kinds)
            prompt = _parse(user) if text is None else None
        if text is None:
            text = self._write(prompt, rng) if prompt is not None else rng.choice(_NON_ANSWERS)
        out_tokens, finish = len(text) // 4, "stop"
        if settings.max_tokens is not None and out_tokens > settings.max_tokens:
            out_tokens, finish = max(settings.max_tokens, 0), "length"
            text = text[: 4 * out_tokens]
        usage = Usage(input_tokens=sum(len(c) for c in contents) // 4, output_tokens=out_tokens)
        return ChatResponse(text, usage, finish, time.perf_counter() - t0, self.model_name, True)

    def _write(self, prompt: _Prompt, rng: random.Random) -> str:
        """Execute ``prompt``'s steps with this preset's faults; return the reply text.

        The draws are made in a fixed order (the reply's faults first, then each step's stop, look-back,
        slip and skip), so a request's reply never changes: :func:`_start`, :func:`_operands`,
        :func:`_advance`, :func:`_final_lines`.
        """
        w = _start(self.preset, prompt, rng)
        for i, (var, src, expr, _far, _d, _restated) in enumerate(prompt.steps):
            expr = expr if expr is not None else self._instruction(var)
            if expr is None:
                continue
            if w.stop_rate and rng.random() < w.stop_rate:
                w.stopped = True
                break
            use = _operands(w, i)
            try:
                value = expr.fn(use)
            except _FAILED:
                continue  # an unknown name, a value past the bound, a type misuse: the step is left out
            if w.a_rate and expr.has_op and rng.random() < w.a_rate:
                value = _perturb(value, rng)
            w.env[var] = value
            w.last = (var, value)
            if w.p.skip_rate and rng.random() < w.p.skip_rate:
                continue
            w.lines.append(self._line(var, src, expr, use, value, prompt.chunk))
            _advance(w)
            if i == w.premature_at:
                w.lines.append(f"Final answer: {_text(value)}")
        if w.extra and not w.stopped and w.last is not None:
            w.last = self._invent(w.last, w.env, w.lines, prompt.chunk, rng)
        w.lines += _final_lines(w)
        return "\n".join(w.lines)

    def _instruction(self, var: str) -> _Expr | None:
        """How the oracle computes instruction step ``var`` (cached), or ``None``: no procedure was
        given, or it has no such step (the step is then left out)."""
        if self.procedure is None:
            return None
        if var not in self._oracles:
            self._oracles[var] = _oracle(self.procedure, var)
        return self._oracles[var]

    def _invent(
        self, last: tuple[str, _Value], env: _Env, lines: list[str], chunk: bool, rng: random.Random
    ) -> tuple[str, _Value]:
        """Append 1-3 invented steps after ``last`` (``S96 = S95 + 4``, ...); return the last one."""
        m = _NUMBERED.match(last[0])
        if not m:
            return last
        for j in range(1, rng.randint(1, 3) + 1):
            src = f"{last[0]} {rng.choice('+-')} {rng.randint(1, 9)}"
            expr = _compile(src)
            if expr is None:
                break
            try:
                value = expr.fn(env)
            except _FAILED:
                break
            var = f"{m.group(1)}{int(m.group(2)) + j}"
            env[var] = value
            lines.append(self._line(var, src, expr, env, value, chunk))
            last = (var, value)
        return last

    @staticmethod
    def _line(var: str, src: str, expr: _Expr, env: _Env, value: _Value, chunk: bool) -> str:
        """Raw mode: ``S4 = -16``. Chunk mode: ``S4 = S3 * 4 = (-4) * 4 = -16``; a copy ``S1 = x = 7``."""
        result = _text(value)
        if not chunk or not expr.parts or isinstance(value, (str, bool)) or not expr.has_op and not expr.names:
            return f"{var} = {result}"
        parts = expr.parts
        if not expr.has_op or not expr.names:
            return f"{var} = {src} = {result}"
        subst = "".join(
            p if k % 2 == 0 or p in _FUNCS or p not in env else _sub(env[p], parts[k - 1]) for k, p in enumerate(parts)
        )
        return f"{var} = {src} = {subst} = {result}"
