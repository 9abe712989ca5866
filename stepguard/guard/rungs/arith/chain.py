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
(``t4 = 0 if False else 0.15``) with the first value on every try (docs/lab/2026-11-30-production-suite.md, "The suite
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

The rung does not apply (the ladder asks the step alone) to a step of fewer than two operations,
one that reads a text value, or one with an intermediate value that is not a finite decimal in
the step as written and in that rewrite (a model could not write ``1/3`` exactly): that is said
in the re-prompt's event.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from stepguard.errors import StepguardError
from stepguard.evaluator import CompiledExpression, Number, format_number
from stepguard.guard.rungs import Rung, register
from stepguard.guard.rungs.arith._arith import decimal_places, derived
from stepguard.guard.rungs.arith._ladders import SUB_STEP_LADDER
from stepguard.procedure import Procedure

__all__ = ["Chain", "chain_steps", "quotient_last"]

_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**"}
_LEAVES = (ast.Constant, ast.Name, ast.UnaryOp)
"""A branch a whole step keeps its choice sub-step over: a constant, a name, or a unary sign (``-5``, ``-x``), not a binary operation."""
_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


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


class _Unsplittable(Exception):
    """The expression holds something the chain cannot write as single operations."""


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, (int, Fraction)):
        text = format_number(value)
        if "/" in text:  # not a finite decimal: no exact way to write it
            raise _Unsplittable
        return f"({text})" if text.startswith("-") else text
    raise _Unsplittable  # a text value: not arithmetic


class _Writer:
    """Writes an expression tree as sub-steps ``t1 .. tn`` over literal values, in evaluation order."""

    def __init__(self, env: Mapping[str, Number | str], prefix: str, compiled: CompiledExpression | None = None,
                 root: ast.AST | None = None) -> None:
        self.env, self.prefix, self.compiled = env, prefix, compiled
        self.exprs: list[str] = []
        self.kinds: list[str] = []
        self.root: ast.AST | None = root if root is not None or compiled is None else compiled.tree.body
        """The node whose value is the step's: the expression, or the branch a conditional there takes."""
        self.chose = False
        """Whether the step's value is a branch a conditional took (one operation then differs from the step)."""

    def _outcome(self, node: ast.IfExp) -> ast.expr:
        """The branch a conditional ends in, through the conditionals its branches taken are."""
        taken = node.body if self._truth(node.test) else node.orelse
        return self._outcome(taken) if isinstance(taken, ast.IfExp) else taken

    def _truth(self, node: ast.expr) -> bool:
        """A condition's value over the committed values (the evaluator's); unsplittable where it is not a boolean."""
        if self.compiled is None:
            raise _Unsplittable
        try:
            value = CompiledExpression(self.compiled.source, (), ast.Expression(body=node), self.compiled.limits).evaluate(self.env)
        except StepguardError:
            raise _Unsplittable from None
        if not isinstance(value, bool):
            raise _Unsplittable
        return value

    def _new(self, expr: str, kind: str = "number") -> str:
        self.exprs.append(expr)
        self.kinds.append(kind)
        return f"{self.prefix}{len(self.exprs)}"

    def emit(self, node: ast.AST) -> str:
        if isinstance(node, ast.Constant):
            return _literal(node.value)
        if isinstance(node, ast.Name):
            if node.id not in self.env:
                raise _Unsplittable
            return _literal(self.env[node.id])
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)) and isinstance(node.operand, ast.Constant):
            value: Any = node.operand.value  # a number: the evaluator's constants may be Fractions too
            return _literal(-value if isinstance(node.op, ast.USub) else value)
        if isinstance(node, ast.UnaryOp):
            a = self.emit(node.operand)
            if isinstance(node.op, ast.Not):
                return self._new(f"not {a}", "boolean")
            return self._new(f"{'-' if isinstance(node.op, ast.USub) else '+'}{a}")
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            a, b = self.emit(node.left), self.emit(node.right)
            return self._new(f"{a} {_OPS[type(node.op)]} {b}")
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            args = [self.emit(x) for x in node.args]
            return self._new(f"{node.func.id}({', '.join(args)})")
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP:
            a, b = self.emit(node.left), self.emit(node.comparators[0])
            return self.compare(a, type(node.ops[0]), b)
        if isinstance(node, ast.BoolOp):
            word = "and" if isinstance(node.op, ast.And) else "or"
            parts = [self.emit(v) for v in node.values]
            return self._new(f" {word} ".join(parts), "boolean")
        if isinstance(node, ast.IfExp):
            if node is self.root and isinstance(self._outcome(node), _LEAVES):  # a whole step ending in a bare value
                cond, then, other = self.emit(node.test), self.emit(node.body), self.emit(node.orelse)
                return self._new(f"{then} if {cond} else {other}")
            self.emit(node.test)
            taken = node.body if self._truth(node.test) else node.orelse
            if node is self.root:
                self.root = taken  # the branch taken is the step's value too
                self.chose = True
            return self.emit(taken)  # the branch the verified condition chose, its sub-steps after the condition's
        raise _Unsplittable


    def compare(self, a: str, op: type[ast.cmpop], b: str) -> str:
        """``a < b`` and its kin as a choice, the larger of the two, then an equality over the
        value chosen: ``a >= b`` is ``max(a, b) == a``, ``a > b`` is ``max(a, b) != b``.

        The embedded model names the larger of two decimals more reliably than it writes a
        comparison's truth (``59.97 >= 500 = True``; figures: docs/lab/2026-11-30-production-suite.md).
        """
        if op in (ast.Eq, ast.NotEq):
            return self._new(f"{a} {_CMP[op]} {b}", "boolean")
        larger = self._new(f"max({a}, {b})")
        test = {ast.GtE: f"{larger} == {a}", ast.LtE: f"{larger} == {b}", ast.Gt: f"{larger} != {b}", ast.Lt: f"{larger} != {a}"}[op]
        return self._new(test, "boolean")


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
    compiled = procedure.compiled[index]
    if compiled is None:
        return None
    sub = _chain(procedure, index, env, compiled, compiled.tree.body)
    if sub is None and (rewritten := quotient_last(compiled.tree.body)) is not None:
        sub = _chain(procedure, index, env, compiled, rewritten)
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


def _hoist(node: ast.expr) -> ast.expr:
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Div)):
        a, b = _hoist(node.left), _hoist(node.right)
        return _mul(a, b) if isinstance(node.op, ast.Mult) else _div(a, b)
    if isinstance(node, ast.BinOp):
        return ast.BinOp(left=_hoist(node.left), op=node.op, right=_hoist(node.right))
    if isinstance(node, ast.IfExp):  # each branch on its own; the condition as written
        return ast.IfExp(test=node.test, body=_hoist(node.body), orelse=_hoist(node.orelse))
    return node  # a name, a constant, a call (its arguments are values of their own), a comparison


def quotient_last(node: ast.expr) -> ast.expr | None:
    """An exact rewrite of an expression tree with every product's and quotient's divisions moved to
    one last division, or ``None`` where it would not change the tree.

    Over exact numbers ``a / b * c`` is ``a * c / b``, ``c * (a / b)`` is ``c * a / b``, ``a / b / c``
    is ``a / (b * c)`` and ``a / (b / c)`` is ``a * c / b``; the divisors are the ones the expression
    divides by, so no division by zero is added. Sums, calls and conditions are kept as written (a
    conditional's branches are rewritten each). ``tax / income * 100`` becomes ``tax * 100 / income``:
    a percentage as one division.

    Args:
        node: the expression tree (``CompiledExpression.tree.body``); it is not changed.

    Returns:
        A new tree, or ``None`` where the expression has no quotient to move.
    """
    rewritten = _hoist(node)
    return None if ast.dump(rewritten) == ast.dump(node) else rewritten


def _chain(procedure: Procedure, index: int, env: Mapping[str, Number | str], compiled: CompiledExpression,
           body: ast.AST) -> Procedure | None:
    """:func:`chain_steps` over the tree ``body``: the step's expression or an exact rewrite of it."""
    step = procedure.steps[index]
    writer = _Writer(env, "t", compiled, body)
    try:
        last = writer.emit(body)
    except _Unsplittable:
        return None
    n = len(writer.exprs)
    if n == 0 or last != f"t{n}":
        return None
    try:
        exact = compiled.evaluate(env)
    except StepguardError:  # a division by zero over these values: nothing to ask
        return None
    rounds, finite = _rounds(step.scale, exact), _finite(exact)
    if n < 2 and not rounds and not writer.chose:
        return None
    steps: list[dict[str, Any]] = [
        {"var": f"t{i}", "expr": e, **({"type": "boolean"} if k == "boolean" else {})}
        for i, (e, k) in enumerate(zip(writer.exprs, writer.kinds, strict=True), start=1)
    ]
    if rounds and finite:  # the rounding rule as its own last sub-step, over the exact value
        steps.append({"var": f"t{n + 1}", "expr": f"t{n}"})
    # else a last operation with no finite exact value (``75.8 / 3.61``) carries the rounding itself: the
    # model writes the quotient to the step's places, as the ``divide`` and ``long_divide`` rungs ask it
    if (len(steps) < 2 and not writer.chose) or not (finite or rounds):
        return None  # the step itself again (one operation, its rounding folded in), or a last value no model can write
    if step.choices is not None:
        steps[-1]["choices"] = list(step.choices)
    sub = derived(procedure, index, steps, "chain")
    if sub is None or not all(_finite(v) for var, v in sub.expected_values({}).items() if var != step.var):
        return None
    return sub
