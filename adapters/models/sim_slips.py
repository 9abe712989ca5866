"""SIMULATED: a model that slips on digits where the embedded 1.5B model measurably does.

:class:`SlippingExecutor` answers the guard's prompts as ``sim:perfect`` does (the same reading of the
prompt, the same reply lines), except for digit-level slips on the forms the embedded
Qwen2.5-Coder-1.5B gets wrong (docs/production.md, "Digit rungs"; docs/fidelity.md): a product
whose long multiplication carries, a sum or difference whose columns carry or borrow, a quotient
(its digits; a divisor that is a power of ten shifts the point and is no quotient), and a
comparison of two numbers (``<``, ``<=``, ``>``, ``>=``, and ``min``/``max`` of different values).

- The first step line it is asked (a generated procedure's whole step, asked first) is wrong
  whenever the step holds such a form; with ``whole_step="always"``, every line that asks the
  procedure's own step again (a resample of it: its variable, and its expression's operations over
  the values written in) is wrong too, so that only a rung's sub-steps can verify the step.
- Every later step line (a resample of the whole step, a rung's sub-step, a digit sheet's column)
  that holds such a form slips with probability ``slip_rate``, drawn from a random number seeded by
  the executor's seed and the request (as ``sim:``: the same request, the same reply).

A slip is one weak operation's value gone wrong: a number one digit off by one (a carry dropped or
added), a comparison's truth flipped; the rest of the step is computed from it, then rounded as the
step says. Where that leaves the step's value unchanged (a slip inside a ``min`` that is not
chosen), the value's own last digit slips instead, so that a slip is always a wrong value.

It stands in for the embedded model's weak forms in the rung-coverage benchmark
(benchmarks/rung_coverage.py): a verified run here shows a rung can re-ask a form, never a model's
accuracy (every reply has ``simulated=True``).
"""

from __future__ import annotations

import ast
import copy
import random
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Literal

from stepguard.errors import StepguardError
from stepguard.evaluator import CompiledExpression, compile_expression, format_number
from stepguard.model import ChatMessage, ChatResponse, GenerationSettings

from .sim import SimulatedExecutor

if TYPE_CHECKING:
    from stepguard.procedure import Procedure

__all__ = ["WEAK_FORMS", "SlippingExecutor", "weak_forms"]

WEAK_FORMS: tuple[str, ...] = ("product with carries", "column with carries", "quotient digits", "comparison")
"""The forms the executor slips on, as :func:`weak_forms` names them."""

_ORDER = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)


def _digits(n: int) -> list[int]:
    return [int(c) for c in reversed(str(n))]


def _scaled(a: Fraction, b: Fraction) -> tuple[int, int] | None:
    """``|a|`` and ``|b|`` as whole numbers at their common decimal places; ``None`` for an endless decimal."""
    places = 0
    for v in (a, b):
        d = v.denominator
        k = 0
        while d % 10 == 0 or d % 2 == 0 or d % 5 == 0:
            if d % 10 == 0:
                d //= 10
            elif d % 2 == 0:
                d //= 2
            else:
                d //= 5
            k += 1
        if d != 1:
            return None
        places = max(places, k)
    return int(abs(a) * 10**places), int(abs(b) * 10**places)


def product_carries(a: Fraction, b: Fraction) -> bool:
    """Whether long multiplication of ``|a|`` by ``|b|`` (their digits, points ignored) carries: a
    column of digit products that sums to 10 or more (``19060 * 100`` does not; ``12 * 9`` does)."""
    pair = _scaled(a, b)
    if pair is None:
        return True
    columns: dict[int, int] = {}
    for i, x in enumerate(_digits(pair[0])):
        for j, y in enumerate(_digits(pair[1])):
            columns[i + j] = columns.get(i + j, 0) + x * y
    return any(v >= 10 for v in columns.values())


def columns_carry(a: Fraction, b: Fraction, subtract: bool) -> bool:
    """Whether the column sum (or difference) of ``a`` and ``b`` carries (or borrows) in some column."""
    pair = _scaled(a, b)
    if pair is None:
        return True
    x, y = pair
    if (a >= 0) == ((b < 0) if subtract else (b >= 0)):  # magnitudes add
        carry = 0
        for i in range(max(len(str(x)), len(str(y)))):
            s = x // 10**i % 10 + y // 10**i % 10 + carry
            if s >= 10:
                return True
            carry = 0
        return False
    big, small = max(x, y), min(x, y)
    return any(big // 10**i % 10 < small // 10**i % 10 for i in range(len(str(big))))


def _power_of_ten(v: Fraction) -> bool:
    v = abs(v)
    if v == 0:
        return False
    while v >= 10:
        v /= 10
    while v < 1:
        v *= 10
    return v == 1


def _value(compiled: CompiledExpression, node: ast.expr, env: Mapping[str, Any]) -> Any:
    return CompiledExpression(compiled.source, (), ast.Expression(body=node), compiled.limits).evaluate(env)


def _is_num(v: object) -> bool:
    return isinstance(v, (int, Fraction)) and not isinstance(v, bool)


def _binop_form(compiled: CompiledExpression, node: ast.BinOp, env: Mapping[str, Any]) -> str | None:
    """The weak form of one arithmetic operation over ``env``, or None (its operands not both numbers)."""
    a, b = _value(compiled, node.left, env), _value(compiled, node.right, env)
    if not (_is_num(a) and _is_num(b)):
        return None
    a, b = Fraction(a), Fraction(b)
    if isinstance(node.op, ast.Mult):
        return "product with carries" if product_carries(a, b) else None
    if isinstance(node.op, (ast.Add, ast.Sub)):
        return "column with carries" if columns_carry(a, b, isinstance(node.op, ast.Sub)) else None
    if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)):
        return "quotient digits" if a != 0 and not _power_of_ten(b) else None
    if isinstance(node.op, ast.Pow) and (b < 0 or (abs(a) > 1 and b >= 2)):
        return "quotient digits" if b < 0 else "product with carries"
    return None


def _node_form(compiled: CompiledExpression, node: ast.AST, env: Mapping[str, Any]) -> str | None:
    """The weak form of one node of the expression over ``env`` (:data:`WEAK_FORMS`), or None."""
    if isinstance(node, ast.BinOp):
        return _binop_form(compiled, node, env)
    if isinstance(node, ast.Compare) and any(isinstance(op, _ORDER) for op in node.ops):
        return "comparison"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("min", "max"):
        args = [_value(compiled, x, env) for x in node.args]
        return "comparison" if len({Fraction(x) for x in args if _is_num(x)}) > 1 else None
    return None


def weak_forms(compiled: CompiledExpression, env: Mapping[str, Any]) -> list[tuple[ast.expr, str]]:
    """The operations of ``compiled`` over ``env`` that are weak forms (:data:`WEAK_FORMS`), as
    ``(node, form)`` in tree order; an operation that fails to evaluate is left out."""
    out: list[tuple[ast.expr, str]] = []
    for node in ast.walk(compiled.tree.body):
        try:
            form = _node_form(compiled, node, env)
        except StepguardError:
            continue
        if form is not None and isinstance(node, ast.expr):  # a BinOp, a Compare or a Call
            out.append((node, form))
    return out


def _digit_slip(value: Fraction, rng: random.Random) -> Fraction:
    """``value`` with one written digit off by one (to 4 places where it has more): ``± 10**k``."""
    text = format_number(value if _scaled(value, Fraction(0)) is not None else round(value, 4)).lstrip("-")
    whole, _, frac = text.partition(".")
    ks = list(range(-len(frac), len(whole.lstrip("0")) or 1))
    return value + rng.choice((-1, 1)) * Fraction(10) ** rng.choice(ks)


def _slipped(compiled: CompiledExpression, env: Mapping[str, Any], weak: list[tuple[ast.expr, str]], rng: random.Random) -> Any:
    """The step's value with one weak operation's value slipped (numbers a digit off, a truth flipped)."""
    node, _ = rng.choice(weak)
    right = _value(compiled, node, env)
    wrong: Any = (not right) if isinstance(right, bool) else _digit_slip(Fraction(right), rng)
    tree = copy.deepcopy(compiled.tree)
    path = _path(compiled.tree, node)
    target: Any = tree
    for field, i in path[:-1]:
        target = getattr(target, field) if i is None else getattr(target, field)[i]
    field, i = path[-1]
    replacement = ast.Constant(value=wrong)
    if i is None:
        setattr(target, field, replacement)
    else:
        getattr(target, field)[i] = replacement
    return CompiledExpression(compiled.source, compiled.names, tree, compiled.limits).evaluate(env)


def _path(tree: ast.AST, node: ast.AST) -> list[tuple[str, int | None]]:
    """The fields (and list indexes) from ``tree`` down to ``node``."""
    for field, child in ast.iter_fields(tree):
        kids = child if isinstance(child, list) else [child]
        for i, kid in enumerate(kids):
            if kid is node:
                return [(field, i if isinstance(child, list) else None)]
            if isinstance(kid, ast.AST):
                below = _path(kid, node)
                if below:
                    return [(field, i if isinstance(child, list) else None), *below]
    return []


class SlippingExecutor(SimulatedExecutor):
    """SIMULATED: ``sim:perfect`` with digit-level slips on the embedded model's weak forms (module docstring).

    Args:
        seed: the executor's seed (mixed into every request's draw).
        slip_rate: the chance, in [0, 1], that a step line asked after the first slips where it holds
            a weak form.
        whole_step: ``first``: the first step line asked is wrong where it holds a weak form, later
            ones slip at ``slip_rate``; ``always``: every ask of one of ``procedure``'s own steps is
            wrong where it holds a weak form (the module docstring).
        procedure: the procedure being run (as :class:`~stepguard.adapters.models.sim.SimulatedExecutor`).

    Attributes:
        slips: ``{form: count}`` of the slips written so far, by the weak form that slipped first.

    Raises:
        ValueError: ``slip_rate`` outside [0, 1].
    """

    def __init__(self, seed: int = 0, slip_rate: float = 0.25, procedure: Procedure | None = None,
                 whole_step: Literal["first", "always"] = "first") -> None:
        if not 0 <= slip_rate <= 1:
            raise ValueError(f"slip_rate must be a probability from 0 to 1, not {slip_rate!r}")
        if whole_step not in ("first", "always"):
            raise ValueError(f"whole_step must be 'first' or 'always', not {whole_step!r}")
        self.whole_step = whole_step
        super().__init__("perfect", seed, 0.0, procedure)
        self.slip_rate = float(slip_rate)
        self.model_name = self.spec = "sim:slips"
        self._asked = False
        self._user = ""
        self.slips: dict[str, int] = {}

    def __repr__(self) -> str:
        return f"SlippingExecutor(seed={self.seed}, slip_rate={self.slip_rate}, whole_step={self.whole_step!r})"

    def for_procedure(self, procedure: Procedure | None) -> SlippingExecutor:
        """A fresh executor (its first step line not yet asked) with the same seed and rate, given ``procedure``."""
        return SlippingExecutor(self.seed, self.slip_rate, procedure, self.whole_step)

    def _respond(self, messages: list[ChatMessage], settings: GenerationSettings | None, t0: float) -> ChatResponse:
        self._user = next((str(m.get("content") or "") for m in reversed(messages) if m.get("role") == "user"), "")
        return super()._respond(messages, settings, t0)

    def _write(self, prompt: Any, rng: random.Random) -> str:  # the parent's parsed prompt (known values, step lines)
        text = super()._write(prompt, rng)
        first, self._asked = not self._asked, True
        env: dict[str, Any] = dict(prompt.known)
        lines = text.split("\n")
        for var, src, *_ in prompt.steps:
            try:
                compiled = compile_expression(src)
                exact = compiled.evaluate(env)
            except StepguardError:
                continue
            env[var] = exact
            weak = weak_forms(compiled, env)
            whole = first or (self.whole_step == "always" and self._is_own_step(var, compiled))
            if not weak or not (whole or rng.random() < self.slip_rate):
                continue
            at = next((k for k, line in enumerate(lines) if re.match(rf"{re.escape(var)}\s*=", line)), None)
            if at is None:
                continue
            written = lines[at].rsplit("=", 1)[1].strip()
            wrong = self._wrong(compiled, env, weak, rng, _rounding_of(self._user, var), written)
            lines[at] = lines[at][: lines[at].rfind("=")] + "= " + wrong
            self.slips[weak[0][1]] = self.slips.get(weak[0][1], 0) + 1
        return "\n".join(lines)

    def _is_own_step(self, var: str, compiled: CompiledExpression) -> bool:
        """Whether the line ``var = <compiled>`` asks one of the procedure's own steps as written (its
        operations over any values), not a rung's sub-step."""
        procedure = self.procedure
        index = None if procedure is None else procedure.index_of.get(var)
        if procedure is None or index is None or procedure.compiled[index] is None:
            return False
        own = procedure.compiled[index]
        return own is not None and _skeleton(own.tree.body) == _skeleton(compiled.tree.body)

    @staticmethod
    def _wrong(compiled: CompiledExpression, env: Mapping[str, Any], weak: list[tuple[ast.expr, str]], rng: random.Random,
               rounding: tuple[int, str] | None, written: str) -> str:
        from stepguard.procedure import round_to_scale

        try:
            value: Any = _slipped(compiled, env, weak, rng)
        except StepguardError:
            value = None
        if _is_num(value):
            places, mode = rounding if rounding is not None else (4, "ROUND_HALF_EVEN")
            if rounding is not None or _scaled(Fraction(value), Fraction(0)) is None:
                value = round_to_scale(Fraction(value), places, mode)
        out = None if value is None else _text_of(value)
        if out is None or out == written or _same(out, written):
            right = _number(written)
            if right is None:
                return "true" if written.lower() == "false" else "false" if written.lower() == "true" else written + "s"
            out = format_number(_digit_slip(right, rng))
        return out


def _skeleton(node: ast.AST) -> str:
    """The operations of an expression tree with every name, constant and sign as one leaf."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return _skeleton(node.operand)
    if isinstance(node, (ast.Name, ast.Constant)):
        return "_"
    return f"{type(node).__name__}(" + ",".join(_skeleton(c) for c in ast.iter_child_nodes(node)) + ")"


def _number(text: str) -> Fraction | None:
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def _same(a: str, b: str) -> bool:
    x, y = _number(a), _number(b)
    return x is not None and x == y


_ROUND_NOTE = re.compile(r"\(round (half up|half to even) to (\d+) decimal places\)")


def _rounding_of(user: str, var: str) -> tuple[int, str] | None:
    """The rounding note of step ``var``'s line in the prompt ``user`` (``(round half up to 2 decimal
    places)``, as the guard writes it), as ``(places, rounding)``, if it gives one."""
    m = re.search(rf"^[ \t]*{re.escape(var)}[ \t]*=[^\n]*", user, re.MULTILINE)
    note = _ROUND_NOTE.search(m.group()) if m else None
    if note is None:
        return None
    return int(note.group(2)), "ROUND_HALF_UP" if note.group(1) == "half up" else "ROUND_HALF_EVEN"


def _text_of(value: Any) -> str:
    """A value as a model writes it: ``-12``, ``3.5``, ``true``, ``high``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value if isinstance(value, str) else format_number(value)
