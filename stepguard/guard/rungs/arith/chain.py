"""The ``chain`` rung: a step of two or more operations re-asked as checked single operations.

Production steps mix operations: ``max(0, min(income, 50000) - 12000) * 0.25``. A model that gets
the whole line wrong is asked the same expression over the committed values, one operation a
sub-step, in evaluation order::

    t1 = min(61000, 50000)
    t2 = t1 - 12000
    t3 = max(0, t2)
    band2 = t3 * 0.25

Every sub-step is checked by the evaluator; the step verifies only when all do. The sub-steps'
names and values are the guard's own, derived from the expression (the operands are the values the
model already has), so no expected value is shown. A conditional ``a if c else b`` becomes its
condition's sub-steps, then the branch it takes: the sub-steps are asked one at a time, so that branch
is the one the model's verified condition chose, as a digit sheet's later literals are the values the
model verified before them. The embedded model answered a choice sub-step over a literal condition
(``t4 = 0 if False else 0.15``) with the first value on every try (docs/lab/production-suite-history.md, "The suite
with the digit rungs"). A whole step that is a conditional taking a bare value (``5.00 if w <= 1 else
...``, or one whose branch taken is such a conditional) keeps the choice sub-step, over both
branches, so that the step ends in a sub-step of its own.
Comparisons and ``and``/``or`` are sub-steps of type boolean. The last sub-step carries the step's own type, scale
and rounding, so the rounding rule is applied once, at the end, as the procedure says.

Where an intermediate value is not a finite decimal, the step is asked in an exact rewrite that
moves its quotients last (:func:`quotient_last`): a product before a quotient, so a percentage is one
division. ``effective_rate_pct = tax / income * 100`` (2 places, half to even) has the endless
``19060 / 71400`` before its ``* 100``; it is asked as::

    t1 = 19060 * 100
    effective_rate_pct = t1 / 71400      (half to even to 2 places: 26.69)

The rewrite changes no value (over exact numbers ``a / b * c`` is ``a * c / b`` and ``a / b / c`` is
``a / (b * c)``), and steps whose plain chain applies are asked as before.

The same rewrite takes in the other exact identities of the language where the step as written
has a value no model can write (:func:`quotient_last`: a sum over one divisor, a power as its
product, a remainder by its floor quotient, a comparison times its divisor's square, ``min``/``max``
of three two at a time and of a quotient as a conditional). A text compared or chosen is written
as a literal (``t1 = 'gold' == 'gold'``), a chained comparison as ``and`` of its links, and
``round(x / y, 2)`` with an endless quotient as the one quotient asked to 2 places half to even.

The rung does not apply (the ladder asks the step alone) to a step of fewer than two operations,
one that does arithmetic on a text value, or one with an intermediate value that is not a finite
decimal in the step as written and in that rewrite (a model could not write ``1/3`` exactly): the
re-prompt's event says which (:func:`chain_refusal`).
"""

from __future__ import annotations

import ast
import copy
import re
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from stepguard.errors import StepguardError
from stepguard.evaluator import CompiledExpression, Number, format_number
from stepguard.guard.rungs import Rung, register
from stepguard.guard.rungs.arith._arith import decimal_places, derived
from stepguard.guard.rungs.arith._ladders import SUB_STEP_LADDER
from stepguard.procedure import Procedure, Step

__all__ = ["Chain", "chain_refusal", "chain_steps", "quotient_last"]

_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**"}
_LEAVES = (ast.Constant, ast.Name, ast.UnaryOp)
"""A branch a whole step keeps its choice sub-step over: a constant, a name, or a unary sign (``-5``, ``-x``), not a binary operation."""
_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_TEXT = 200
"""Longest text a sub-step writes as a literal (the evaluator's cap on a string literal)."""


def _reader(expr: str) -> str:
    """The operation of a sub-step's expression in words: ``max()``, ``a product``, ``a comparison``."""
    try:
        node = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return "a later sub-step"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return f"{node.func.id}()"
    if isinstance(node, ast.BinOp):
        return {ast.Add: "a sum", ast.Sub: "a difference", ast.Mult: "a product", ast.Div: "a quotient", ast.FloorDiv: "a floor quotient",
                ast.Mod: "a remainder", ast.Pow: "a power"}.get(type(node.op), "an operation")
    if isinstance(node, ast.Compare):
        return "a comparison"
    if isinstance(node, ast.IfExp):
        return "a choice"
    return "a later sub-step"


def _unwritable(node: ast.AST) -> str:
    """What the chain cannot write as one operation over literals, named."""
    if isinstance(node, ast.Compare):
        return "a membership test (in, not in)"
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return f"{node.func.id}() of a text"
    return f"{type(node).__name__} is not an operation of the chain"


@register
class Chain(Rung):
    """``chain``: the failing step as one checked sub-step per operation (:func:`chain_steps`)."""

    name = "chain"
    derives = True
    nested_ladder = SUB_STEP_LADDER  # a failing sub-step through the rung for its operation, then resampled
    nested_tries = len(SUB_STEP_LADDER)
    one_at_a_time = True

    def derive(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
        """See :func:`chain_steps`."""
        return chain_steps(procedure, index, env)

    def refusal(self, procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> str:
        """See :func:`chain_refusal`."""
        return chain_refusal(procedure, index, env) or "applies"


class _Unsplittable(Exception):
    """The expression holds something the chain cannot write as single operations; the message names it."""


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (int, Fraction)):
        text = format_number(value)
        if "/" in text:  # not a finite decimal: no exact way to write it
            raise _Unsplittable("a value it reads is not a finite decimal")
        return f"({text})" if text.startswith("-") else text
    if isinstance(value, str) and len(value) <= _TEXT:
        return repr(value)  # a text compared or chosen (``zone == 'EU'``, ``'high' if t2 else 'low'``)
    raise _Unsplittable(f"a value read is not a number or a short text ({type(value).__name__})")


class _Writer:
    """Writes an expression tree as sub-steps ``t1 .. tn`` over literal values, in evaluation order."""

    def __init__(self, env: Mapping[str, Number | str], prefix: str, compiled: CompiledExpression | None = None,
                 root: ast.AST | None = None) -> None:
        self.env, self.prefix, self.compiled = env, prefix, compiled
        self.exprs: list[str] = []
        self.kinds: list[str] = []
        self.extras: list[dict[str, Any]] = []
        """Each sub-step's own ``scale`` and ``rounding`` (a ``round(x / y, 2)`` asked as one quotient to 2 places), or ``{}``."""
        self.rewrote = False
        """Whether a sub-step asks an operation other than the step's (``round(x / y, 2)`` as ``x / y`` to 2 places)."""
        self.root: ast.AST | None = root if root is not None or compiled is None else compiled.tree.body
        """The node whose value is the step's: the expression, or the branch a conditional there takes."""
        self.chose = False
        """Whether the step's value is a branch a conditional took (one operation then differs from the step)."""
        self.decided: list[int] = []
        """How many sub-steps were written each time a condition's value (the evaluator's) decided what
        follows (the branch taken, or how a branch not taken is shown), in order."""

    def _outcome(self, node: ast.IfExp) -> ast.expr:
        """The branch a conditional ends in, through the conditionals its branches taken are."""
        taken = node.body if self._truth(node.test) else node.orelse
        return self._outcome(taken) if isinstance(taken, ast.IfExp) else taken

    def _truth(self, node: ast.expr) -> bool:
        """A condition's value over the committed values (the evaluator's); unsplittable where it is not a boolean."""
        if self.compiled is None:
            raise _Unsplittable("a conditional with no expression to evaluate its condition")
        try:
            value = CompiledExpression(self.compiled.source, (), ast.Expression(body=node), self.compiled.limits).evaluate(self.env)
        except StepguardError as exc:
            raise _Unsplittable(f"a condition does not evaluate ({exc.args[0] if exc.args else exc})") from None
        if not isinstance(value, bool):
            raise _Unsplittable("a conditional whose condition is not true or false")
        return value

    def _decide(self) -> None:
        """Record that a condition's value decides the sub-steps written from here on (:attr:`decided`)."""
        if not self.decided or self.decided[-1] != len(self.exprs):
            self.decided.append(len(self.exprs))

    def written_from(self, n: int) -> dict[str, list[str]]:
        """``{sub-step: the sub-steps before the last decision before it}`` for each of ``t1 .. tn`` written
        after a condition decided what follows (:attr:`decided`): that it is asked at all, and its
        literals, show the condition's value, so no call asks it with the sub-steps that value was
        written from (:meth:`~stepguard.procedure.Procedure.after`)."""
        out: dict[str, list[str]] = {}
        for i in range(1, n + 1):
            before = [d for d in self.decided if d < i]
            if before:
                out[f"{self.prefix}{i}"] = [f"{self.prefix}{j}" for j in range(1, before[-1] + 1)]
        return out

    def _new(self, expr: str, kind: str = "number", **extra: Any) -> str:
        self.exprs.append(expr)
        self.kinds.append(kind)
        self.extras.append(extra)
        return f"{self.prefix}{len(self.exprs)}"

    def _value(self, node: ast.expr) -> Any:
        """A sub-expression's value over the committed values, or ``None`` where it does not evaluate."""
        if self.compiled is None:
            return None
        try:
            return CompiledExpression(self.compiled.source, (), ast.Expression(body=node), self.compiled.limits).evaluate(self.env)
        except StepguardError:
            return None

    def _rounded_quotient(self, node: ast.Call) -> str | None:
        """``round(x / y, k)`` whose quotient is no finite decimal, as one sub-step ``x / y`` to ``k`` places
        half to even (what ``round`` does, exactly), since no model can write the quotient itself."""
        if not isinstance(node.func, ast.Name) or node.func.id != "round" or not node.args or len(node.args) > 2:
            return None
        inner, places = node.args[0], node.args[1] if len(node.args) == 2 else None
        k = 0 if places is None else places.value if isinstance(places, ast.Constant) and type(places.value) is int else -1
        if not (isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Div)) or not 0 <= k <= 30 or _finite(self._value(inner)):
            return None
        a, b = self.emit(inner.left), self.emit(inner.right)
        self.rewrote = True
        return self._new(f"{a} / {b}", scale=k, rounding="ROUND_HALF_EVEN")

    def _over_literals(self, node: ast.expr) -> str:
        """``node``'s source with the values it reads written in (a branch not taken, kept as it is written)."""
        def put(n: ast.AST) -> ast.AST:
            if isinstance(n, ast.Name) and n.id in self.env and n.id not in ("min", "max", "abs", "round"):
                return ast.Name(id=_literal(self.env[n.id]))
            if isinstance(n, ast.Constant) and not isinstance(n.value, (str, bool)):
                return ast.Name(id=_literal(n.value))
            for field, value in ast.iter_fields(n):
                if isinstance(value, list):
                    setattr(n, field, [put(v) if isinstance(v, ast.AST) else v for v in value])
                elif isinstance(value, ast.AST):
                    setattr(n, field, put(value))
            return n
        return f"({ast.unparse(put(copy.deepcopy(node)))})"

    def _branch(self, node: ast.expr, taken: bool) -> str:
        """A branch of a whole step's choice sub-step: its sub-steps, or, where it is not taken and has
        a value no model can write (``d / c``, endless), its expression over the values, unasked."""
        if taken:
            return self.emit(node)
        mark = len(self.exprs)
        try:
            if _finite(self._value(node)):
                return self.emit(node)
        except _Unsplittable:
            pass
        del self.exprs[mark:], self.kinds[mark:], self.extras[mark:]
        return self._over_literals(node)

    def emit(self, node: ast.AST) -> str:
        """The sub-steps computing ``node`` (each one operation over literals and earlier sub-steps),
        written by the first of :data:`_FORMS` that is ``node``'s kind; returns the name of the last
        sub-step, or the literal a constant or a committed name is.

        Raises:
            _Unsplittable: a name with no committed value, a condition that does not evaluate, or a
                node no form writes (:func:`_unwritable` says which).
        """
        for kind, write in _FORMS:
            if isinstance(node, kind):
                written = write(self, node)
                if written is not None:
                    return written
                break
        raise _Unsplittable(_unwritable(node))

    def _constant(self, node: ast.Constant) -> str:
        """A constant, as a literal."""
        return _literal(node.value)

    def _name(self, node: ast.Name) -> str:
        """A name, as the literal of its committed value."""
        if node.id not in self.env:
            raise _Unsplittable("a name it reads has no committed value")
        return _literal(self.env[node.id])

    def _unary(self, node: ast.UnaryOp) -> str:
        """A signed constant as a literal (``-3``); ``not``, ``-`` or ``+`` of anything else as a sub-step."""
        if isinstance(node.op, (ast.USub, ast.UAdd)) and isinstance(node.operand, ast.Constant):
            value: Any = node.operand.value  # a number: the evaluator's constants may be Fractions too
            return _literal(-value if isinstance(node.op, ast.USub) else value)
        a = self.emit(node.operand)
        if isinstance(node.op, ast.Not):
            return self._new(f"not {a}", "boolean")
        return self._new(f"{'-' if isinstance(node.op, ast.USub) else '+'}{a}")

    def _binop(self, node: ast.BinOp) -> str | None:
        """An arithmetic operation of :data:`_OPS` over its operands' sub-steps; ``None`` for another operator."""
        if type(node.op) not in _OPS:
            return None
        a, b = self.emit(node.left), self.emit(node.right)
        return self._new(f"{a} {_OPS[type(node.op)]} {b}")

    def _call(self, node: ast.Call) -> str | None:
        """A call of a named function over its arguments' sub-steps (an endless rounded quotient as one
        rounded sub-step, :meth:`_rounded_quotient`); ``None`` for a call of anything else."""
        if not isinstance(node.func, ast.Name):
            return None
        if (quotient := self._rounded_quotient(node)) is not None:
            return quotient
        args = [self.emit(x) for x in node.args]
        return self._new(f"{node.func.id}({', '.join(args)})")

    def _comparison(self, node: ast.Compare) -> str | None:
        """A comparison as choices (:meth:`compare`), a chained one ``0 <= x <= 10`` as ``0 <= x and x <= 10``
        with each side's sub-steps once; ``None`` for an operator not in :data:`_CMP` (``in``, ``is``)."""
        if not all(type(op) in _CMP for op in node.ops):
            return None
        sides = [self.emit(node.left), *(self.emit(c) for c in node.comparators)]
        tests = [self.compare(a, type(op), b) for op, a, b in zip(node.ops, sides[:-1], sides[1:], strict=True)]
        return tests[0] if len(tests) == 1 else self._new(" and ".join(tests), "boolean")

    def _boolop(self, node: ast.BoolOp) -> str:
        """``and`` / ``or`` over its operands' sub-steps, as one boolean sub-step."""
        word = "and" if isinstance(node.op, ast.And) else "or"
        parts = [self.emit(v) for v in node.values]
        return self._new(f" {word} ".join(parts), "boolean")

    def _conditional(self, node: ast.IfExp) -> str:
        """A conditional: its condition's sub-steps, then the branch it takes; a whole step ending in a
        bare value keeps its choice as a sub-step over both branches (:meth:`_branch`)."""
        if node is self.root and isinstance(self._outcome(node), _LEAVES):  # a whole step ending in a bare value
            cond = self.emit(node.test)
            self._decide()
            truth = self._truth(node.test)
            then, other = self._branch(node.body, truth), self._branch(node.orelse, not truth)
            return self._new(f"{then} if {cond} else {other}")
        self.emit(node.test)
        self._decide()
        taken = node.body if self._truth(node.test) else node.orelse
        if node is self.root:
            self.root = taken  # the branch taken is the step's value too
            self.chose = True
        return self.emit(taken)  # the branch the verified condition chose, its sub-steps after the condition's

    def compare(self, a: str, op: type[ast.cmpop], b: str) -> str:
        """``a < b`` and its kin as a choice, the larger of the two, then an equality over the
        value chosen: ``a >= b`` is ``max(a, b) == a``, ``a > b`` is ``max(a, b) != b``.

        The embedded model names the larger of two decimals more reliably than it writes a
        comparison's truth (``59.97 >= 500 = True``; figures: docs/lab/production-suite-history.md).
        """
        if op in (ast.Eq, ast.NotEq):
            return self._new(f"{a} {_CMP[op]} {b}", "boolean")
        larger = self._new(f"max({a}, {b})")
        test = {ast.GtE: f"{larger} == {a}", ast.LtE: f"{larger} == {b}", ast.Gt: f"{larger} != {b}", ast.Lt: f"{larger} != {a}"}[op]
        return self._new(test, "boolean")


_FORMS: tuple[tuple[type[ast.AST], Callable[[_Writer, Any], str | None]], ...] = (
    (ast.Constant, _Writer._constant), (ast.Name, _Writer._name), (ast.UnaryOp, _Writer._unary),
    (ast.BinOp, _Writer._binop), (ast.Call, _Writer._call), (ast.Compare, _Writer._comparison),
    (ast.BoolOp, _Writer._boolop), (ast.IfExp, _Writer._conditional),
)
"""The node kinds :meth:`_Writer.emit` writes, each with its writer (``None``: not a form it writes)."""


def _finite(value: Any) -> bool:
    if isinstance(value, (bool, int)):
        return True
    if not isinstance(value, Fraction):
        return False
    d = value.denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    return d == 1


def _rounds(scale: int | None, exact: Any) -> bool:
    """Whether the step's exact value has more places than its ``scale``, so its rounding rule changes it."""
    if scale is None or isinstance(exact, bool) or not isinstance(exact, (int, Fraction)):
        return False
    places = decimal_places(exact)
    return places is None or places > scale


def chain_steps(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | None:
    """A sub-procedure computing step ``index`` one operation a sub-step, over the committed values.

    Args:
        procedure: the procedure.
        index: 0-based index of the failing step.
        env: committed values (every name the step reads must be there).

    Returns:
        A :class:`Procedure` with no inputs whose last step has the failing step's variable, type,
        scale and rounding, or ``None`` when the step has fewer than two operations and no rounding
        that changes its value to a finite decimal (the sub-procedure would be the step itself),
        reads a text value, has an intermediate value that is not a finite decimal, or has such a
        value and no scale (no model could write it), as written and in the exact rewrite
        :func:`quotient_last` (tried only where the step as written does not apply). Where the
        step's rounding changes its exact value, the rounding is a sub-step of its own
        (``band2 = t4``, rounded half up to 2 places), after the exact one; where that exact value
        is not a finite decimal (``bmi = 75.8 / (1.9 * 1.9)``), the last operation carries the
        rounding instead (``bmi = 75.8 / t1``, rounded half up to 1 place).
    """
    sub = _chain_or_why(procedure, index, env)
    return None if isinstance(sub, str) else sub


def chain_refusal(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> str:
    """Why :func:`chain_steps` returns ``None`` for step ``index`` over ``env``, named (as written,
    and in the exact rewrite where one was tried); ``""`` where it applies."""
    sub = _chain_or_why(procedure, index, env)
    return sub if isinstance(sub, str) else ""


def _chain_or_why(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> Procedure | str:
    compiled = procedure.compiled[index]
    if compiled is None:
        return "the step has no expression"
    sub = _chain(procedure, index, env, compiled, compiled.tree.body)
    if isinstance(sub, str) and (rewritten := quotient_last(compiled.tree.body)) is not None:
        again = _chain(procedure, index, env, compiled, rewritten, rewritten=True)
        sub = again if not isinstance(again, str) else f"{sub}; in its exact rewrite (quotient_last): {again}"
    return sub


def _mul(a: ast.expr, b: ast.expr) -> ast.expr:
    """``a * b`` with a quotient in either factor moved out: ``(x / y) * b`` is ``(x * b) / y``."""
    if isinstance(a, ast.BinOp) and isinstance(a.op, ast.Div) and isinstance(b, ast.BinOp) and isinstance(b.op, ast.Div):
        return _div(_mul(a.left, b.left), _mul(a.right, b.right))  # (w / x) * (y / z) is (w * y) / (x * z)
    if isinstance(a, ast.BinOp) and isinstance(a.op, ast.Div):
        return _div(_mul(a.left, b), a.right)
    if isinstance(b, ast.BinOp) and isinstance(b.op, ast.Div):
        return _div(_mul(a, b.left), b.right)
    return ast.BinOp(left=a, op=ast.Mult(), right=b)


def _div(a: ast.expr, b: ast.expr) -> ast.expr:
    """``a / b`` as one quotient: ``(x / y) / b`` is ``x / (y * b)``, ``a / (x / y)`` is ``(a * y) / x``."""
    if isinstance(a, ast.BinOp) and isinstance(a.op, ast.Div):
        return _div(a.left, _mul(a.right, b))
    if isinstance(b, ast.BinOp) and isinstance(b.op, ast.Div):
        return _div(_mul(a, b.right), b.left)
    return ast.BinOp(left=a, op=ast.Div(), right=b)


_POWER = 4
"""The largest whole exponent (either sign) a power is rewritten as a product (``b ** 2`` as ``b * b``) for."""


def _exponent(node: ast.expr) -> int | None:
    """A power's exponent where it is a whole constant from -:data:`_POWER` to :data:`_POWER`, not 0."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        sign, node = -1, node.operand
    if isinstance(node, ast.Constant) and type(node.value) is int and 0 < node.value <= _POWER:
        return sign * node.value
    return None


def _sum(a: ast.expr, op: ast.operator, b: ast.expr) -> ast.expr:
    """``a + b`` or ``a - b`` over one last division: ``x / y - z`` is ``(x - z * y) / y``,
    ``x / y + u / v`` is ``(x * v + u * y) / (y * v)``."""
    qa = isinstance(a, ast.BinOp) and isinstance(a.op, ast.Div)
    qb = isinstance(b, ast.BinOp) and isinstance(b.op, ast.Div)
    if qa and qb:
        assert isinstance(a, ast.BinOp) and isinstance(b, ast.BinOp)
        top = ast.BinOp(left=_mul(a.left, b.right), op=op, right=_mul(b.left, a.right))
        return _div(top, _mul(a.right, b.right))
    if qa:
        assert isinstance(a, ast.BinOp)
        return _div(ast.BinOp(left=a.left, op=op, right=_mul(b, a.right)), a.right)
    if qb:
        assert isinstance(b, ast.BinOp)
        return _div(ast.BinOp(left=_mul(a, b.right), op=op, right=b.left), b.right)
    return ast.BinOp(left=a, op=op, right=b)


def _floordiv(a: ast.expr, b: ast.expr) -> ast.expr:
    """``a // b`` with a quotient in either side moved into the one division: ``(x / y) // b`` is
    ``x // (y * b)`` and ``a // (x / y)`` is ``(a * y) // x`` (the same quotient, then its floor)."""
    if isinstance(a, ast.BinOp) and isinstance(a.op, ast.Div):
        return _floordiv(a.left, _mul(a.right, b))
    if isinstance(b, ast.BinOp) and isinstance(b.op, ast.Div):
        return _floordiv(_mul(a, b.right), b.left)
    return ast.BinOp(left=a, op=ast.FloorDiv(), right=b)


def _hoist(node: ast.expr) -> ast.expr:
    """:func:`quotient_last`'s rewrite of ``node`` (a new tree), by the first of :data:`_HOISTS` that
    is its kind; a name or a constant is itself."""
    for kind, rewrite in _HOISTS:
        if isinstance(node, kind):
            return rewrite(node)
    return node  # a name, a constant


def _hoist_operation(node: ast.BinOp) -> ast.expr:
    """An arithmetic operation with its sides rewritten and their quotients moved out (:func:`_mul`,
    :func:`_div`, :func:`_floordiv`, :func:`_sum`); a power with a small whole exponent as its product,
    a remainder by its definition."""
    if isinstance(node.op, (ast.Mult, ast.Div)):
        a, b = _hoist(node.left), _hoist(node.right)
        return _mul(a, b) if isinstance(node.op, ast.Mult) else _div(a, b)
    if isinstance(node.op, ast.Pow) and (k := _exponent(node.right)) is not None:
        return _power(_hoist(node.left), k)
    if isinstance(node.op, ast.FloorDiv):
        return _floordiv(_hoist(node.left), _hoist(node.right))
    if isinstance(node.op, ast.Mod):  # a % b is a - b * (a // b), by Python's definition
        a, b = _hoist(node.left), _hoist(node.right)
        return ast.BinOp(left=a, op=ast.Sub(), right=_mul(b, _floordiv(a, b)))
    if isinstance(node.op, (ast.Add, ast.Sub)):
        return _sum(_hoist(node.left), node.op, _hoist(node.right))
    return ast.BinOp(left=_hoist(node.left), op=node.op, right=_hoist(node.right))


def _power(base: ast.expr, k: int) -> ast.expr:
    """``base ** k`` (``k`` a whole number, not 0) as ``base * base ...``, over ``1 /`` where ``k`` is negative."""
    product = base
    for _ in range(abs(k) - 1):
        product = _mul(product, base)
    return product if k > 0 else _div(ast.Constant(value=1), product)


def _hoist_unary(node: ast.UnaryOp) -> ast.expr:
    """A unary operation over its rewritten operand; ``-(x / y)`` as ``(-x) / y``."""
    if isinstance(node.op, ast.USub):
        inner = _hoist(node.operand)
        if isinstance(inner, ast.BinOp) and isinstance(inner.op, ast.Div):  # -(x / y) is (-x) / y
            return _div(ast.UnaryOp(op=ast.USub(), operand=inner.left), inner.right)
        return ast.UnaryOp(op=node.op, operand=inner)
    return ast.UnaryOp(op=node.op, operand=_hoist(node.operand))


def _hoist_conditional(node: ast.IfExp) -> ast.expr:
    """A conditional: each branch on its own, and the condition."""
    return ast.IfExp(test=_hoist(node.test), body=_hoist(node.body), orelse=_hoist(node.orelse))


def _hoist_boolean(node: ast.BoolOp) -> ast.expr:
    """``and`` / ``or``: each operand on its own."""
    return ast.BoolOp(op=node.op, values=[_hoist(v) for v in node.values])


def _hoist_call(node: ast.Call) -> ast.expr:
    """A call, each argument a value of its own; ``min`` / ``max`` of more than two values two at a
    time, and of two where one is a quotient as the conditional it is."""
    args = [_hoist(a) for a in node.args]
    if isinstance(node.func, ast.Name) and node.func.id in ("min", "max") and len(args) > 2:
        # min(a, b, c) is min(min(a, b), c): two values a choice
        nested = ast.Call(func=node.func, args=args[:2], keywords=[])
        for more in args[2:]:
            nested = ast.Call(func=node.func, args=[nested, more], keywords=[])
        return _hoist(nested)
    if isinstance(node.func, ast.Name) and node.func.id in ("min", "max") and len(args) == 2 and any(
            isinstance(a, ast.BinOp) and isinstance(a.op, ast.Div) for a in args):
        # max(x / y, z) is x / y if x / y >= z else z: the comparison's quotient cleared, the quotient last
        op: ast.cmpop = ast.GtE() if node.func.id == "max" else ast.LtE()
        test = _compare(ast.Compare(left=args[0], ops=[op], comparators=[args[1]]))
        return ast.IfExp(test=test, body=args[0], orelse=args[1])
    return ast.Call(func=node.func, args=args, keywords=[])


def _times_square(x: ast.expr, y: ast.expr) -> ast.expr:
    """``x * (y * y)``, where ``x`` is ``w / y``: ``w * y``."""
    if isinstance(x, ast.BinOp) and isinstance(x.op, ast.Div) and ast.dump(x.right) == ast.dump(y):
        return _mul(x.left, y)
    return _mul(x, ast.BinOp(left=y, op=ast.Mult(), right=y))


def _compare(node: ast.Compare) -> ast.expr:
    """A comparison with its sides' quotients cleared: ``x / y < z`` is ``x * y < z * (y * y)``, both
    sides times the divisor's square (positive, so the comparison holds as it did, whatever the
    divisor's sign); a chained comparison first as ``and`` of its links."""
    sides = [_hoist(side) for side in (node.left, *node.comparators)]
    links: list[ast.expr] = []
    for op, a, b in zip(node.ops, sides[:-1], sides[1:], strict=True):
        for _ in range(2):  # each side's one quotient (after _hoist a side has at most one, outermost)
            divided = next((x for x in (a, b) if isinstance(x, ast.BinOp) and isinstance(x.op, ast.Div)), None)
            if divided is None or isinstance(op, (ast.In, ast.NotIn)):
                break
            divisor = divided.right
            a, b = (_times_square(x, divisor) for x in (a, b))
        links.append(ast.Compare(left=a, ops=[op], comparators=[b]))
    return links[0] if len(links) == 1 else ast.BoolOp(op=ast.And(), values=links)


_HOISTS: tuple[tuple[type[ast.expr], Callable[[Any], ast.expr]], ...] = (
    (ast.BinOp, _hoist_operation), (ast.UnaryOp, _hoist_unary), (ast.IfExp, _hoist_conditional),
    (ast.Compare, _compare), (ast.BoolOp, _hoist_boolean), (ast.Call, _hoist_call),
)
"""The node kinds :func:`_hoist` rewrites, each with its rewrite."""


def quotient_last(node: ast.expr) -> ast.expr | None:
    """An exact rewrite of an expression tree with every product's and quotient's divisions moved to
    one last division, or ``None`` where it would not change the tree.

    Over exact numbers ``a / b * c`` is ``a * c / b``, ``c * (a / b)`` is ``c * a / b``, ``a / b / c``
    is ``a / (b * c)`` and ``a / (b / c)`` is ``a * c / b``; the divisors are the ones the expression
    divides by, so no division by zero is added. A power with a whole exponent from -4 to 4 is its
    product (``b ** 2`` is ``b * b``, ``b ** -1`` is ``1 / b``), a floor quotient takes its sides'
    quotients into its one division (``(x / y) // b`` is ``x // (y * b)``), and a remainder is
    ``a - b * (a // b)``, Python's own definition of ``%``. A sum or difference takes its sides'
    quotients over one divisor (``x / y - z`` is ``(x - z * y) / y``), a comparison is multiplied
    through by its divisors' squares (``x / y < z`` is ``x * y < z * (y * y)``: a square is positive,
    so the comparison's truth is kept), a chained comparison is ``and`` of its links, and ``min`` or
    ``max`` of more than two values nests two at a time (``max(a, b, c)`` is ``max(max(a, b), c)``);
    a ``min`` or ``max`` with a quotient is the conditional it is (``max(x / y, z)`` is ``x / y if
    x * y >= z * (y * y) else z``). A call's
    arguments and a conditional's condition and branches are rewritten each, as values of their own. ``tax / income * 100`` becomes
    ``tax * 100 / income``: a percentage as one division.

    Args:
        node: the expression tree (``CompiledExpression.tree.body``); it is not changed.

    Returns:
        A new tree, or ``None`` where the expression has nothing to rewrite.
    """
    rewritten = _hoist(node)
    return None if ast.dump(rewritten) == ast.dump(node) else rewritten


def _chain(procedure: Procedure, index: int, env: Mapping[str, Number | str], compiled: CompiledExpression,
           body: ast.AST, rewritten: bool = False) -> Procedure | str:
    """:func:`chain_steps` over the tree ``body``: the step's expression or, ``rewritten``, an exact
    rewrite of it (whose one operation may differ from the step's: ``b ** 2`` as ``b * b``); where the
    chain does not apply, why, named."""
    step = procedure.steps[index]
    writer = _Writer(env, "t", compiled, body)
    try:
        last = writer.emit(body)
    except _Unsplittable as exc:
        return str(exc)
    n = len(writer.exprs)
    if n == 0 or last != f"t{n}":
        return "the step is one value (a copy or a constant), no operation"
    try:
        exact = compiled.evaluate(env)
    except StepguardError as exc:  # a division by zero over these values: nothing to ask
        return f"the step does not evaluate ({exc})"
    rounds, finite = _rounds(step.scale, exact), _finite(exact) or isinstance(exact, str)
    rewritten = rewritten or writer.rewrote
    if n < 2 and not rounds and not writer.chose and not rewritten:
        return "fewer than two operations (one operation is single's)"
    steps = _sub_steps(writer, step, rounds and finite)
    if len(steps) < 2 and not writer.chose and not rewritten:
        return "one operation, its rounding folded in: the step itself again (single's)"
    if not (finite or rounds):
        return "its value is not a finite decimal and it has no scale to round it to"
    if step.choices is not None:
        steps[-1]["choices"] = list(step.choices)
    sub = derived(procedure, index, steps, "chain", writer.written_from(len(steps)))
    if sub is None:
        return "a sub-step does not evaluate or our limits refuse the sub-procedure"
    endless = _endless_intermediate(sub, step.var)
    return endless if endless is not None else sub


def _sub_steps(writer: _Writer, step: Step, rounds_finite: bool) -> list[dict[str, Any]]:
    """The writer's sub-steps as a procedure's steps ``t1 .. tn``, and the rounding as a sub-step of its
    own where the step's rule changes a finite exact value (``rounds_finite``) or the last sub-step is
    rounded another way than the step."""
    n = len(writer.exprs)
    steps: list[dict[str, Any]] = [
        {"var": f"t{i}", "expr": e, **({"type": "boolean"} if k == "boolean" else {}), **x}
        for i, (e, k, x) in enumerate(zip(writer.exprs, writer.kinds, writer.extras, strict=True), start=1)
    ]
    own = {"scale": step.scale, "rounding": step.rounding} if step.scale is not None else {}
    if rounds_finite or (writer.extras[-1] and writer.extras[-1] != own):
        # the rounding rule as its own last sub-step, over the exact value (or over a sub-step rounded its own way)
        steps.append({"var": f"t{n + 1}", "expr": f"t{n}"})
    # else a last operation with no finite exact value (``75.8 / 3.61``) carries the rounding itself: the
    # model writes the quotient to the step's places, as the ``divide`` and ``long_divide`` rungs ask it
    return steps


def _endless_intermediate(sub: Procedure, var: str) -> str | None:
    """Why ``sub`` cannot be asked where a sub-step before the last (``var``'s) has a value that is not a
    finite decimal (naming the sub-step that reads it), else ``None``."""
    for name, v in sub.expected_values({}, writable=False).items():
        if name != var and not _finite(v):
            reader = next((s for s in sub.steps if re.search(rf"\b{name}\b", s.expression or "")), None)
            return ("an intermediate value is not a finite decimal (no model can write it exactly)"
                    + (f", and {_reader(reader.expression or '')} reads it" if reader is not None else ""))
    return None
