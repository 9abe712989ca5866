"""A seeded generator of random one-step procedures over the whole expression language.

Each generated procedure has two to four number inputs (random values: whole and decimal, some
negative, now and then zero) and one computed step whose ``expr`` is drawn from a grammar over what
a procedure file may write for a number (:mod:`stepguard.evaluator._safe`): the operators
``+ - * / // % **``, a unary minus, ``abs``, ``min``/``max`` (two or three arguments), ``round`` (with
and without places), conditionals ``x if c else y`` over comparisons (chained ones too), ``and``,
``or`` and ``not``, comparison steps (``type: boolean``), a choice between two texts (``type:
one_of``), percentages (``a / b * 100``, ``a * r / 100``, ``a * (1 + r / 100)``, ``(a - b) / b * 100``),
and quotients anywhere (last, inside a product or a sum, inside a call, inside a conditional).
The step's ``type``, ``scale`` (0 to 4) and ``rounding`` (half to even, half up) are drawn where the
language allows them; a value with no finite decimal form (``1/3``) always gets a scale, as its
author must give one for any model to write it.

``len`` and ``words`` are left out: they count the characters or words of a text value, which no
arithmetic slip touches.

Every procedure is valid (``Procedure.model_validate``, what ``stepguard check`` runs). A draw the
evaluator refuses over its inputs (a division by zero, a power past the bit bound) is skipped and
counted by its reason (:attr:`Generated.skipped`). Deterministic: ``random.Random(seed)`` drives
every draw, and the same seed gives the same procedures on every machine.
"""

from __future__ import annotations

import ast
import random
from collections import Counter
from dataclasses import dataclass, field
from fractions import Fraction

from stepguard.errors import StepguardError
from stepguard.evaluator import Number, format_number
from stepguard.procedure import Procedure

__all__ = ["GeneratedStep", "Generated", "forms_of", "generate_steps"]

_NAMES = ("a", "b", "c", "d")
_CONSTANTS = ("2", "3", "7", "10", "12", "100", "365", "0.5", "0.15", "0.025", "1.08", "1000")
_OPS = ("+", "-", "*", "/", "//", "%", "**")
_OP_WEIGHTS = (5, 5, 5, 5, 1, 1, 1)
_CMP = ("<", "<=", ">", ">=", "==", "!=")
_PERCENT = ("{p} / {q} * 100", "{p} * {r} / 100", "{p} * (1 + {r} / 100)", "({p} - {q}) / {q} * 100", "{p} - {p} * {r} / 100")
_OP_NAMES = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**"}
_CMP_NAMES = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}


@dataclass(frozen=True)
class GeneratedStep:
    """One generated procedure: its one step, the inputs it runs on, and the forms it holds.

    Attributes:
        procedure: a valid procedure of one computed step (``v``) over the inputs ``a`` .. ``d``.
        inputs: the input values as text (``"-41.25"``), as a caller passes them.
        forms: the forms the step holds (:func:`forms_of`): ``op:*``, ``fn:min``, ``conditional``,
            ``percentage``, ``quotient:inside a product``, ``rounding:ROUND_HALF_UP``, ``scale:2``,
            ``sign:negative operand``, ...
    """

    procedure: Procedure
    inputs: dict[str, str]
    forms: tuple[str, ...]

    @property
    def expr(self) -> str:
        """The step's expression."""
        return self.procedure.steps[0].expression or ""


@dataclass
class Generated:
    """What :func:`generate_steps` drew: the valid steps, and the draws skipped by why."""

    steps: list[GeneratedStep] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)
    """``{reason: count}``: draws the procedure model or the evaluator refused (``division by zero``)."""


class _Grammar:
    """Draws expression texts; every binary operation is written in parentheses (the tree is the
    same as without them where precedence agrees, and ``a / b * 100`` is drawn as such)."""

    def __init__(self, rng: random.Random, names: tuple[str, ...]) -> None:
        self.rng, self.names = rng, names

    def leaf(self) -> str:
        r = self.rng.random()
        if r < 0.7:
            return self.rng.choice(self.names)
        if r < 0.8:
            return f"-{self.rng.choice(self.names)}"
        return self.rng.choice(_CONSTANTS)

    def number(self, depth: int, top: bool = False) -> str:
        """A number-valued expression of at most ``depth`` levels of operations (at least one where ``top``)."""
        rng = self.rng
        if depth <= 0 or (not top and rng.random() < 0.2):
            return self.leaf()
        kind = rng.choices(("binop", "percent", "call", "conditional", "neg"), (10, 2, 3, 2, 1))[0]
        if kind == "binop":
            op = rng.choices(_OPS, _OP_WEIGHTS)[0]
            if op == "**":
                return f"({self.number(depth - 1)} ** {rng.choice(('2', '2', '3', '-1'))})"
            return f"({self.number(depth - 1)} {op} {self.number(depth - 1)})"
        if kind == "percent":
            p, q = self.number(depth - 1), self.leaf()
            return "(" + rng.choice(_PERCENT).format(p=p, q=q, r=self.rate()) + ")"
        if kind == "call":
            fn = rng.choice(("abs", "min", "max", "round", "round"))
            if fn in ("min", "max"):
                args = [self.number(depth - 1) for _ in range(rng.choice((2, 2, 2, 3)))]
                return f"{fn}({', '.join(args)})"
            if fn == "round":
                places = rng.choice(("", ", 0", ", 1", ", 2", ", 3"))
                return f"round({self.number(depth - 1)}{places})"
            return f"abs({self.number(depth - 1)})"
        if kind == "conditional":
            return f"({self.number(depth - 1)} if {self.condition(depth - 1)} else {self.number(depth - 1)})"
        return f"-({self.number(depth - 1)})"

    def rate(self) -> str:
        """A percentage rate: a constant or an input."""
        return self.rng.choice(("15", "7.5", "20", *self.names[2:]))

    def condition(self, depth: int) -> str:
        """A boolean expression: a comparison, a chained one, ``and``/``or``/``not`` of them."""
        rng = self.rng
        kind = rng.choices(("compare", "chained", "and", "or", "not"), (8, 1, 1, 1, 1))[0]
        if kind == "compare":
            return f"{self.number(depth)} {rng.choice(_CMP)} {self.number(max(depth - 1, 0))}"
        if kind == "chained":
            return f"0 <= {self.number(depth)} <= {rng.choice(('100', '1000', 'a', 'b'))}"
        if kind == "not":
            return f"not ({self.condition(max(depth - 1, 0))})"
        word = kind
        return f"({self.condition(max(depth - 1, 0))}) {word} ({self.condition(max(depth - 1, 0))})"


def _input_value(rng: random.Random) -> Fraction:
    r = rng.random()
    if r < 0.04:
        return Fraction(0)
    magnitude = 10 ** rng.randint(0, 4)
    whole = rng.randint(1, 9 * magnitude)
    places = rng.choice((0, 0, 0, 1, 2, 2, 3))
    value = Fraction(whole * 10**places + rng.randint(0, 10**places - 1), 10**places) if places else Fraction(whole)
    return -value if rng.random() < 0.2 else value


def _finite(value: object) -> bool:
    if not isinstance(value, (int, Fraction)) or isinstance(value, bool):
        return False
    d = Fraction(value).denominator
    for p in (2, 5):
        while d % p == 0:
            d //= p
    return d == 1


def _step_fields(rng: random.Random, value: Number | str) -> dict[str, object]:
    """The step's ``type``, ``scale`` and ``rounding`` for its value, drawn where the language allows a choice."""
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, str):
        return {}  # a one_of step's fields are set with its choices
    scale = rng.choice((None, None, 0, 1, 2, 2, 3, 4))
    if scale is None and not _finite(value):
        scale = rng.randint(0, 4)  # an author must give a scale for an endless quotient
    if scale is None:
        return {"type": "integer"} if isinstance(value, int) and rng.random() < 0.3 else {}
    fields: dict[str, object] = {"type": rng.choice(("decimal", "number")), "scale": scale}
    fields["rounding"] = rng.choice(("ROUND_HALF_EVEN", "ROUND_HALF_UP"))
    return fields


def _draw(rng: random.Random, index: int) -> tuple[dict[str, object], dict[str, object], dict[str, str]]:
    """One draw: the procedure's fields, its one step's fields (inside the first), and the input values."""
    names = _NAMES[: rng.randint(2, 4)]
    grammar = _Grammar(rng, names)
    inputs = {n: format_number(_input_value(rng)) for n in names}
    kind = rng.choices(("number", "boolean", "one_of", "percent"), (14, 2, 1, 3))[0]
    step: dict[str, object] = {"var": "v"}
    if kind == "boolean":
        step.update(expr=grammar.condition(rng.randint(1, 2)), type="boolean")
    elif kind == "one_of":
        step.update(expr=f"'high' if {grammar.condition(rng.randint(1, 2))} else 'low'", type="one_of", choices=["high", "low"])
    elif kind == "percent":
        p, q = grammar.number(rng.randint(0, 1)), grammar.leaf()
        step["expr"] = rng.choice(_PERCENT).format(p=p, q=q, r=grammar.rate())
    else:
        step["expr"] = grammar.number(rng.randint(1, 3), top=True)
    spec: dict[str, object] = {"name": f"gen-{index}", "inputs": dict.fromkeys(names, "number"), "steps": [step]}
    return spec, step, inputs


def generate_steps(n: int, seed: int = 0, max_draws: int | None = None) -> Generated:
    """``n`` valid one-step procedures drawn with ``seed``, and the draws skipped on the way.

    Args:
        n: how many valid procedures to return (at least 0).
        seed: the seed of every draw.
        max_draws: most draws in all (default ``20 * n + 20``); fewer than ``n`` steps come back
            where the draws run out first.

    Raises:
        ValueError: ``n`` is negative.
    """
    if n < 0:
        raise ValueError(f"n must be at least 0, not {n}")
    rng = random.Random(seed)
    out = Generated()
    for draw in range(max_draws if max_draws is not None else 20 * n + 20):
        if len(out.steps) >= n:
            break
        spec, step, inputs = _draw(rng, draw)
        try:
            probe = Procedure.model_validate(spec)
            value = probe.expected_values({k: Fraction(v) for k, v in inputs.items()}, writable=False)["v"]  # a scale follows
        except StepguardError as exc:  # refused by the evaluator over these inputs
            out.skipped[_reason(str(exc))] += 1
            continue
        except ValueError as exc:  # refused by the procedure model (a pydantic ValidationError)
            out.skipped[f"procedure refused: {_reason(str(exc))}"] += 1
            continue
        if not isinstance(value, (str, bool)):
            step.update(_step_fields(rng, value))
        proc = Procedure.model_validate(spec)
        out.steps.append(GeneratedStep(proc, inputs, forms_of(proc, inputs)))
    return out


def _reason(message: str) -> str:
    """A refusal's message without the expression it names (``division by zero``)."""
    line = message.splitlines()[-1]
    if line.startswith("steps[") and "): " in line:
        line = line.split("): ", 1)[1]
    return line.split(" in '")[0].strip()[:80]


def forms_of(procedure: Procedure, inputs: dict[str, str]) -> tuple[str, ...]:
    """The forms step 0 of ``procedure`` holds, sorted: ``op:<operator>``, ``fn:<function>``
    (``fn:min/3`` for three arguments), ``conditional``, ``compare:<op>``, ``compare:chained``,
    ``bool:and|or|not``, ``unary:-``, ``percentage`` (a ``* 100`` or ``/ 100``), ``quotient:<position>``
    (``last``, ``inside a product``, ``inside a sum``, ``inside a call``, ``inside a conditional``,
    ``inside a comparison``), ``type:<type>``, ``scale:<n>`` or ``scale:none``, ``rounding:<mode>``,
    ``sign:negative operand``, ``value:text``."""
    step, compiled = procedure.steps[0], procedure.compiled[0]
    if compiled is None:
        return ()
    forms: set[str] = {f"type:{step.type}", f"scale:{'none' if step.scale is None else step.scale}"}
    if step.scale is not None:
        forms.add(f"rounding:{step.rounding}")
    if any(inputs[name].startswith("-") for name in compiled.names if name in inputs):
        forms.add("sign:negative operand")
    body = compiled.tree.body
    _walk(body, [], forms)
    return tuple(sorted(forms))


def _walk(node: ast.AST, parents: list[ast.AST], forms: set[str]) -> None:
    if isinstance(node, ast.BinOp):
        forms.add(f"op:{_OP_NAMES[type(node.op)]}")
        if isinstance(node.op, (ast.Div, ast.Mult)) and any(
            isinstance(side, ast.Constant) and side.value == 100 for side in (node.left, node.right)
        ):
            forms.add("percentage")
        if isinstance(node.op, (ast.Div, ast.FloorDiv, ast.Mod)):
            forms.add(f"quotient:{_position(parents)}")
    elif isinstance(node, ast.UnaryOp):
        forms.add({ast.USub: "unary:-", ast.UAdd: "unary:+", ast.Not: "bool:not"}.get(type(node.op), "unary"))
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        forms.add(f"fn:{node.func.id}" + (f"/{len(node.args)}" if len(node.args) > 2 else ""))
    elif isinstance(node, ast.IfExp):
        forms.add("conditional")
    elif isinstance(node, ast.Compare):
        forms.add("compare:chained" if len(node.ops) > 1 else f"compare:{_CMP_NAMES.get(type(node.ops[0]), 'in')}")
    elif isinstance(node, ast.BoolOp):
        forms.add(f"bool:{'and' if isinstance(node.op, ast.And) else 'or'}")
    elif isinstance(node, ast.Constant) and isinstance(node.value, str):
        forms.add("value:text")
    for child in ast.iter_child_nodes(node):
        _walk(child, [*parents, node], forms)


def _position(parents: list[ast.AST]) -> str:
    """Where a quotient sits: ``last`` (the step's value, or only signs and roundings above it), else
    inside the nearest enclosing operation that is not a sign."""
    for parent in reversed(parents):
        if isinstance(parent, ast.UnaryOp):
            continue
        if isinstance(parent, ast.BinOp):
            return "inside a product" if isinstance(parent.op, (ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)) else "inside a sum"
        if isinstance(parent, ast.Call):
            return "inside a call"
        if isinstance(parent, ast.IfExp):
            return "inside a conditional"
        if isinstance(parent, (ast.Compare, ast.BoolOp)):
            return "inside a comparison"
    return "last"
