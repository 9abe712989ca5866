"""A step's form in words, for the rungs' refusals (``re-asks a sum only, not a product with a
decimal operand``), and the number a leaf of an expression stands for. Part of the public rung API:
any rung, stepguard's own or a plugin's, names the forms it refuses in the same words."""

from __future__ import annotations

import ast
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from stepguard.evaluator import Number, decimal_places
from stepguard.procedure import Procedure

__all__ = ["form_of", "leaf_value"]


def leaf_value(node: ast.AST, env: Mapping[str, Number | str]) -> Number | None:
    """The number a leaf of an expression stands for (a name's committed value, a constant, a negated
    constant), or ``None`` for anything else: an operation, a boolean, a text value."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
        operand: Any = node.operand.value  # a number: the evaluator's constants may be Fractions too
        v: object = -operand
    elif isinstance(node, ast.Name):
        v = env.get(node.id)
    elif isinstance(node, ast.Constant):
        v = node.value
    else:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, Fraction)):
        return None
    return v


_FORMS = {ast.Add: "a sum", ast.Sub: "a difference", ast.Mult: "a product", ast.Div: "a quotient", ast.FloorDiv: "a floor quotient",
          ast.Mod: "a remainder", ast.Pow: "a power"}


def form_of(procedure: Procedure, index: int, env: Mapping[str, Number | str]) -> str:
    """Step ``index``'s form in words, for a refusal that a table groups by: ``a sum with a decimal
    operand``, ``an integer product``, ``abs() of one value``, ``a chained comparison``, ``several operations``."""
    compiled = procedure.compiled[index]
    if compiled is None:
        return "a step with no expression"
    node = compiled.tree.body
    while isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.UAdd):
        node = node.operand
    if _operations(node) > 1:
        return "several operations"
    if isinstance(node, ast.BinOp):
        return _operation_form(node, env)
    return _one_form(node)


def _operations(node: ast.AST) -> int:
    """How many operations ``node``'s tree holds (a negated constant is a value, not one)."""
    return sum(isinstance(n, (ast.BinOp, ast.Call, ast.Compare, ast.BoolOp, ast.IfExp)) or
               (isinstance(n, ast.UnaryOp) and not isinstance(n.operand, ast.Constant)) for n in ast.walk(node))


def _operation_form(node: ast.BinOp, env: Mapping[str, Number | str]) -> str:
    """One arithmetic operation in words, with its operands' kind where both are numbers: ``an integer
    sum``, ``a product with a decimal operand``, ``... with an operand that is not a finite decimal``."""
    values = [leaf_value(side, env) for side in (node.left, node.right)]
    if any(v is None for v in values):
        return _FORMS[type(node.op)]
    kinds = {decimal_places(Fraction(v)) for v in values if v is not None}
    if None in kinds:
        return f"{_FORMS[type(node.op)]} with an operand that is not a finite decimal"
    return f"{_FORMS[type(node.op)]} with a decimal operand" if kinds - {0} else f"an integer {_FORMS[type(node.op)][2:]}"


def _one_form(node: ast.AST) -> str:
    """A step of at most one operation that is not arithmetic, in words: a call, a sign change or
    ``not``, a comparison, and/or, a conditional, or one value."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return f"{node.func.id}() of one value" if len(node.args) == 1 else f"{node.func.id}() of {len(node.args)} values"
    if isinstance(node, ast.UnaryOp):
        return "not of a value" if isinstance(node.op, ast.Not) else "a sign change"
    if isinstance(node, ast.Compare):
        if len(node.ops) > 1:
            return "a chained comparison"
        return "an equality test" if isinstance(node.ops[0], (ast.Eq, ast.NotEq)) else "a comparison"
    if isinstance(node, ast.BoolOp):
        return "and/or of values"
    if isinstance(node, ast.IfExp):
        return "a conditional"
    return "one value (a copy or a constant)"
