"""The locked-down evaluator: simpleeval restricted by an AST whitelist, with exact, bounded numbers.

Allowed: number literals, short string literals (for ``one_of`` checks), variable names, the
operators ``+ - * / // % **``, unary ``- + not``, comparisons, ``and``/``or``, ``x if c else y``,
and the functions ``abs``, ``min``, ``max``, ``round``, ``len`` (characters of a string, items of a list, keys of a mapping) and
``words`` (its whitespace-separated words, for text steps' predicates). Everything else (attributes, subscripts,
calls of anything else, lambdas, comprehensions, f-strings, shifts, bit operators) is refused
when the expression is compiled, before anything runs.
"""

from __future__ import annotations

import ast
import operator
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import simpleeval

from stepguard.errors import EvaluationError
from stepguard.evaluator._numbers import DEFAULT_MAX_BITS, Number, check_size, normalize

__all__ = ["DEFAULT_LIMITS", "CompiledExpression", "Limits", "compile_expression", "evaluate"]


class Limits(NamedTuple):
    """Caps that bound the work of compiling and evaluating one expression."""

    max_chars: int = 2_000
    """Longest accepted source text, characters."""
    max_nodes: int = 200
    """Most AST nodes in one expression."""
    max_bits: int = DEFAULT_MAX_BITS
    """Largest intermediate integer (or fraction part), bits; checked before a power or product is computed."""
    max_string: int = 200
    """Longest string literal, characters (strings exist only for ``one_of`` style checks)."""


DEFAULT_LIMITS = Limits()

_ALLOWED_NODES: tuple[type[ast.AST], ...] = (
    ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.IfExp, ast.Call,
    ast.Name, ast.Load, ast.Constant, ast.Tuple,
    ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow,
    ast.USub, ast.UAdd, ast.Not, ast.And, ast.Or,
    ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt, ast.GtE, ast.In, ast.NotIn,
)
_FUNCTIONS = frozenset({"abs", "min", "max", "round", "len", "words"})


def _is_num(v: object) -> bool:
    return type(v) is int or type(v) is Fraction or type(v) is bool


def _arith(name: str, fn: Callable[[Any, Any], Any], max_bits: int) -> Callable[[Any, Any], Any]:
    def op(a: Any, b: Any) -> Any:
        if not (_is_num(a) and _is_num(b)):
            raise EvaluationError(f"operator {name} needs numbers, got {type(a).__name__} and {type(b).__name__}")
        if name == "*" and _bits(a) + _bits(b) > max_bits + 2:
            raise EvaluationError(f"product exceeds the {max_bits}-bit bound")
        try:
            return normalize(check_size(fn(a, b), max_bits))
        except ZeroDivisionError:
            raise EvaluationError("division by zero") from None

    return op


def _bits(v: Any) -> int:
    if type(v) is Fraction:
        return max(v.numerator.bit_length(), v.denominator.bit_length())
    return int(v).bit_length()


def _true_div(a: Any, b: Any) -> Any:
    return Fraction(a) / Fraction(b)


def _power(max_bits: int) -> Callable[[Any, Any], Any]:
    def op(a: Any, b: Any) -> Any:
        if not (_is_num(a) and _is_num(b)):
            raise EvaluationError("operator ** needs numbers")
        if type(b) is not int and type(b) is not bool:
            raise EvaluationError("operator ** needs an integer exponent")
        if abs(b) > max_bits or _bits(a) * abs(b) > max_bits + abs(b):
            if _bits(a) > 1:  # 0, 1, -1 to any power stay small
                raise EvaluationError(f"power exceeds the {max_bits}-bit bound")
        if b < 0:
            if a == 0:
                raise EvaluationError("division by zero")
            return normalize(check_size(Fraction(a) ** b, max_bits))
        return normalize(check_size(a**b, max_bits))

    return op


def _round(value: Any, places: Any = None) -> Any:
    if not _is_num(value) or (places is not None and type(places) is not int):
        raise EvaluationError("round() takes a number and an integer count of places")
    if places is not None and abs(places) > 100:
        raise EvaluationError("round() places must be within -100..100")
    # Fraction.__round__ rounds half to even, exactly (never through binary floats).
    return normalize(round(Fraction(value), places) if places is not None else round(Fraction(value)))


def _minmax(fn: Callable[..., Any], name: str) -> Callable[..., Any]:
    def f(*args: Any) -> Any:
        if not args or len(args) > 64 or not all(_is_num(a) for a in args):
            raise EvaluationError(f"{name}() takes 1 to 64 numbers")
        return fn(args)

    return f


def _len(v: Any) -> int:
    if not isinstance(v, (str, tuple, list, Mapping)):
        raise EvaluationError("len() takes a text, a list or a mapping (a text step's value)")
    return len(v)


def _words(v: Any) -> int:
    if not isinstance(v, str):
        raise EvaluationError("words() takes a string (a text step's value)")
    return len(v.split())


def _abs(v: Any) -> Any:
    if not _is_num(v):
        raise EvaluationError("abs() takes a number")
    return abs(v)


if TYPE_CHECKING:
    class _SimpleEval:
        """The part of ``simpleeval.SimpleEval`` this module uses (simpleeval ships no type information)."""

        names: Mapping[str, Any]
        expr: str
        nodes: dict[type[ast.AST], Callable[[Any], object]]

        def __init__(self, operators: Mapping[type[ast.AST], Callable[..., object]], functions: Mapping[str, Callable[..., object]],
                     names: Mapping[str, Any]) -> None: ...

        def _eval(self, node: ast.AST) -> object: ...
else:
    _SimpleEval = simpleeval.SimpleEval


class _Evaluator(_SimpleEval):
    """simpleeval with our operators and functions; names are swapped in per evaluation."""

    def __init__(self, max_bits: int) -> None:
        ops: dict[type[ast.AST], Callable[..., object]] = {
            ast.Add: _arith("+", operator.add, max_bits),
            ast.Sub: _arith("-", operator.sub, max_bits),
            ast.Mult: _arith("*", operator.mul, max_bits),
            ast.Div: _arith("/", _true_div, max_bits),
            ast.FloorDiv: _arith("//", operator.floordiv, max_bits),
            ast.Mod: _arith("%", operator.mod, max_bits),
            ast.Pow: _power(max_bits),
            ast.USub: operator.neg, ast.UAdd: operator.pos, ast.Not: operator.not_,
            ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
            ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b,
        }
        funcs: dict[str, Callable[..., object]] = {"abs": _abs, "min": _minmax(min, "min"), "max": _minmax(max, "max"),
                                                   "round": _round, "len": _len, "words": _words}
        super().__init__(operators=ops, functions=funcs, names={})
        self.nodes[ast.Tuple] = lambda node: tuple(self._eval(e) for e in node.elts)

    def _check_disallowed_items(self, item: Any) -> None:  # the AST whitelist already did this
        return None


_local = threading.local()


def _evaluator(max_bits: int) -> _Evaluator:
    cache: dict[int, _Evaluator] | None = getattr(_local, "cache", None)
    if cache is None:
        cache = _local.cache = {}
    ev = cache.get(max_bits)
    if ev is None:
        ev = cache[max_bits] = _Evaluator(max_bits)
    return ev


@dataclass(frozen=True)
class CompiledExpression:
    """An expression parsed and checked once, evaluated many times.

    Attributes:
        source: the expression text, e.g. ``"S3 - S1"``.
        names: the variable names it reads (functions excluded), in first-use order.
        tree: the checked AST (numbers already exact ``int``/``Fraction`` constants).
        limits: the caps it was compiled under.
    """

    source: str
    names: tuple[str, ...]
    tree: ast.Expression
    limits: Limits = DEFAULT_LIMITS

    def evaluate(self, env: Mapping[str, Number | str | None]) -> Number | str:
        """Evaluate with variables from ``env``.

        Args:
            env: variable name -> exact number (or short string, for set-membership checks; None for a
                text step's JSON ``null``, which a check reads as None).

        Returns:
            An ``int``, ``Fraction`` (exact) or ``bool``; a string only if the expression is a bare string.

        Raises:
            EvaluationError: an unknown name, a value past the bit bound, division by zero, a type misuse.
        """
        ev = _evaluator(self.limits.max_bits)
        ev.names = env
        ev.expr = self.source
        try:
            # the checked tree holds exact constants and this module's operators only
            return cast("Number | str", ev._eval(self.tree.body))
        except EvaluationError as exc:
            if exc.expression is None:
                raise EvaluationError(str(exc), self.source) from None
            raise
        except simpleeval.NameNotDefined as exc:
            raise EvaluationError(f"unknown variable {exc.name!r}", self.source) from None
        except (simpleeval.InvalidExpression, TypeError, ValueError, OverflowError) as exc:
            raise EvaluationError(f"cannot evaluate: {exc}", self.source) from None
        finally:
            ev.names = {}


def _exact_constant(node: ast.Constant, source: str, limits: Limits) -> object:
    value = node.value
    if type(value) is bool:
        return value
    if type(value) is int:
        return check_size(value, limits.max_bits)
    if type(value) is float:
        text = ast.get_source_segment(source, node) or repr(value)
        mantissa, _, exponent = text.lower().partition("e")
        if exponent and (len(exponent) > 5 or abs(int(exponent)) > limits.max_bits // 3):
            raise EvaluationError(f"number {text!r} exceeds the {limits.max_bits}-bit bound", source)
        try:
            return normalize(check_size(Fraction(text.replace("_", "")), limits.max_bits))
        except EvaluationError as exc:
            raise EvaluationError(str(exc), source) from None
        except ValueError:
            raise EvaluationError(f"unreadable number {text!r}", source) from None
    if type(value) is str:
        if len(value) > limits.max_string:
            raise EvaluationError(f"string literal longer than {limits.max_string} characters", source)
        return value
    raise EvaluationError(f"literal of type {type(value).__name__} is not allowed", source)


def compile_expression(source: str, limits: Limits = DEFAULT_LIMITS) -> CompiledExpression:
    """Parse and check ``source`` once; the result evaluates many times.

    Args:
        source: an expression such as ``"S3 - S1"``, ``"round(subtotal * 0.2, 2)"``, ``"0 <= value <= 10"``.
        limits: length, node-count and number-size caps.

    Raises:
        EvaluationError: too long, too many nodes, a syntax error, or a construct outside the whitelist
            (attribute access, subscripts, lambdas, comprehensions, unknown functions, shifts, ...).
    """
    if not isinstance(source, str):
        raise EvaluationError(f"expression must be text, got {type(source).__name__}")
    if len(source) > limits.max_chars:
        raise EvaluationError(f"expression longer than {limits.max_chars} characters", source)
    if source.count("(") > limits.max_nodes:
        raise EvaluationError(f"expression nests deeper than {limits.max_nodes}", source)
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise EvaluationError(f"not a valid expression ({type(exc).__name__})", source) from None
    names: list[str] = []
    count = 0
    for node in ast.walk(tree):
        count += 1
        if count > limits.max_nodes:
            raise EvaluationError(f"expression has more than {limits.max_nodes} nodes", source)
        if not isinstance(node, _ALLOWED_NODES):
            raise EvaluationError(f"{type(node).__name__} is not allowed", source)
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name) or node.func.id not in _FUNCTIONS or node.keywords:
                raise EvaluationError("only abs(), min(), max() and round() may be called", source)
        elif isinstance(node, ast.Name):
            if node.id.startswith("_"):
                raise EvaluationError(f"name {node.id!r} is not allowed", source)
            if node.id not in _FUNCTIONS and node.id not in names:
                names.append(node.id)
        elif isinstance(node, ast.Constant):
            # an exact int or Fraction: ast's stubs allow Python literals only, the evaluator reads any value
            node.value = cast(Any, _exact_constant(node, source.strip(), limits))
    called = _called_names(tree)
    for node in ast.walk(tree):  # a function name used as a value (``abs + 1``) is refused
        if isinstance(node, ast.Name) and node.id in _FUNCTIONS and id(node) not in called:
            raise EvaluationError(f"function {node.id!r} used as a value", source)
    return CompiledExpression(source, tuple(names), tree, limits)


def _called_names(tree: ast.AST) -> set[int]:
    return {id(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}


def evaluate(source: str, env: Mapping[str, Number | str | None] | None = None, limits: Limits = DEFAULT_LIMITS) -> Number | str:
    """Compile and evaluate ``source`` in one call (see :func:`compile_expression`).

    Raises:
        EvaluationError: as :func:`compile_expression` and :meth:`CompiledExpression.evaluate`.
    """
    return compile_expression(source, limits).evaluate(env or {})
