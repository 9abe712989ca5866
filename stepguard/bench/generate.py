"""The instance generator: benchmark.md, "Generator (ours)".

Panda et al. (arXiv 2605.00817) confirm the frame (S1 = x, S2 = y, later steps simple arithmetic
on earlier variables; 5 to 95 steps; look-back 1 to 7; 55 configurations x 1,000) but published
neither generator nor data. Everything here is this project's reconstruction:

* step k >= 3 is ``S_k = S_{k-1} op S_{k-L}`` (index clamped to 1) for L >= 2, and
  ``S_k = S_{k-1} op c`` with c in 1..9 for L = 1; the two operands in random order;
* ``op`` from {+, -, *}, redrawn while the result would have ``|value| >= bound``; ``*`` only when
  an operand has ``|v| <= 12``;
* deterministic on every machine: ``random.Random`` seeded with the first 8 bytes of
  ``sha256("seed|N|L|index")``, and only ``Random.random()`` is drawn (the one method whose
  sequence Python guarantees across versions for a given seed).

Draw order per instance: x, y; then per step: [c if L = 1], operand order (one draw), op order
(one draw: a uniform permutation of the three ops; the first that fits is taken, which is the
same distribution as redrawing until one fits).

Fallback when no op fits: there is none, because one is never needed. With ``|a|, |b| < bound``,
either a and b have opposite signs (or one is 0) and ``|a + b| < bound``, or they have the same
sign and ``|a - b| < bound``. The parameters are checked so that every operand is below the bound.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Iterable, Iterator
from functools import lru_cache
from itertools import permutations

from stepguard.bench.instances import Instance, InstanceStep
from stepguard.evaluator import CompiledExpression, compile_expression

__all__ = [
    "DEFAULT_BOUND",
    "DEFAULT_INPUT_RANGE",
    "DEFAULT_LOOKBACKS",
    "DEFAULT_PER_CONFIG",
    "DEFAULT_STEPS",
    "generate_grid",
    "generate_instance",
    "instance_id",
]

DEFAULT_STEPS: tuple[int, ...] = (5, 14, 23, 32, 41, 50, 59, 68, 77, 86, 95)
"""Procedure lengths N: 11 evenly spaced from the paper's end points 5 and 95 (the spacing is ours)."""
DEFAULT_LOOKBACKS: tuple[int, ...] = (1, 2, 3, 5, 7)
"""Look-back depths L: the paper's end points 1 and 7; the middle values are ours."""
DEFAULT_PER_CONFIG = 1_000
"""Instances per (N, L) configuration (the paper: 1,000; 55 configurations = 55,000)."""
DEFAULT_BOUND = 1_000
"""Every value satisfies ``|S_k| < bound`` (ours)."""
DEFAULT_INPUT_RANGE: tuple[int, int] = (2, 20)
"""Inputs x and y are drawn from this inclusive range (ours)."""

_OP_ORDERS = tuple(permutations("+-*"))
_DIGITS = tuple(str(c) for c in range(10))
_SMALL_FACTOR = 12  # '*' only when an operand has |v| <= 12 (ours: products a person does in their head)


@lru_cache(maxsize=65_536)
def _step(k: int, expr: str) -> tuple[InstanceStep, CompiledExpression]:
    """Step k with its compiled expression. Steps are immutable, so instances share them (the grid
    has about 7,000 distinct ones) and each expression is compiled once per process."""
    return InstanceStep(f"S{k}", expr), compile_expression(expr)


def instance_id(n_steps: int, lookback: int, seed: int, index: int) -> str:
    """The instance id, e.g. ``"n95-l7-s0-i17"``."""
    return f"n{n_steps}-l{lookback}-s{seed}-i{index}"


def _rng(seed: int, n_steps: int, lookback: int, index: int) -> random.Random:
    digest = hashlib.sha256(f"{seed}|{n_steps}|{lookback}|{index}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _check(n_steps: int, lookback: int, bound: int, input_range: tuple[int, int]) -> None:
    lo, hi = input_range
    if n_steps < 2:
        raise ValueError(f"n_steps must be at least 2 (S1 = x, S2 = y), got {n_steps}")
    if lookback < 1:
        raise ValueError(f"lookback must be at least 1, got {lookback}")
    if lo > hi:
        raise ValueError(f"input range {input_range} is empty")
    if max(abs(lo), abs(hi), 9) >= bound:
        raise ValueError(f"bound {bound} must exceed every input and the constants 1..9")


def generate_instance(
    n_steps: int,
    lookback: int,
    *,
    seed: int = 0,
    index: int = 0,
    bound: int = DEFAULT_BOUND,
    input_range: tuple[int, int] = DEFAULT_INPUT_RANGE,
) -> Instance:
    """Generate one instance; the same arguments give the same instance everywhere.

    Args:
        n_steps: N, counting S1 = x and S2 = y (so N = 5 means S1..S5, answer S5); at least 2.
        lookback: L >= 1; L = 1 combines the previous variable with a constant 1..9.
        seed: the grid seed.
        index: the instance's index within its (N, L) configuration.
        bound: every value satisfies ``|S_k| < bound``.
        input_range: inclusive range of x and y.

    Returns:
        An :class:`Instance` whose ``expected`` values were computed by the safe evaluator.

    Raises:
        ValueError: parameters out of range (see the module docstring).
    """
    _check(n_steps, lookback, bound, input_range)
    rng = _rng(seed, n_steps, lookback, index)
    rand = rng.random
    lo, span = input_range[0], input_range[1] - input_range[0] + 1
    x, y = lo + int(rand() * span), lo + int(rand() * span)
    env: dict[str, int] = {"x": x, "y": y}
    values = [x, y]  # values[k - 1] is S_k; the plain-int twin of env, used to pick ops
    steps = [_step(1, "x"), _step(2, "y")]
    names = _names(n_steps)
    for k in range(3, n_steps + 1):
        a_name, a = names[k - 1], values[k - 2]
        if lookback == 1:
            c = 1 + int(rand() * 9)
            b_name, b = _DIGITS[c], c
        else:
            j = max(1, k - lookback)
            b_name, b = names[j], values[j - 1]
        if rand() < 0.5:
            a_name, a, b_name, b = b_name, b, a_name, a
        for op in _OP_ORDERS[int(rand() * 6)]:
            if op == "+":
                result = a + b
            elif op == "-":
                result = a - b
            elif min(abs(a), abs(b)) <= _SMALL_FACTOR:
                result = a * b
            else:
                continue
            if abs(result) < bound:
                break
        else:  # pragma: no cover - unreachable, see the module docstring
            raise AssertionError(f"no operator fits {a} and {b} under bound {bound}")
        steps.append(_step(k, f"{a_name} {op} {b_name}"))
        values.append(result)
    expected = _evaluate(steps, env)
    if list(expected.values()) != values:  # pragma: no cover - the evaluator and the op choice agree
        raise AssertionError(f"evaluator disagrees with the generator on {instance_id(n_steps, lookback, seed, index)}")
    return Instance(
        id=instance_id(n_steps, lookback, seed, index),
        n_steps=n_steps,
        lookback=lookback,
        seed=seed,
        index=index,
        inputs={"x": x, "y": y},
        steps=tuple(step for step, _ in steps),
        expected=expected,
        answer=expected[f"S{n_steps}"],
    )


def _evaluate(steps: list[tuple[InstanceStep, CompiledExpression]], env: dict[str, int]) -> dict[str, int]:
    """Expected values, in step order, by the safe evaluator."""
    out: dict[str, int] = {}
    for step, compiled in steps:
        out[step.var] = env[step.var] = compiled.evaluate(env)  # type: ignore[assignment]  # the generator writes integer arithmetic only
    return out


@lru_cache(maxsize=256)
def _names(n: int) -> tuple[str, ...]:
    """``("", "S1", ..., "Sn")``: variable names by index, built once per length."""
    return ("", *(f"S{k}" for k in range(1, n + 1)))


def generate_grid(
    steps: Iterable[int] = DEFAULT_STEPS,
    lookbacks: Iterable[int] = DEFAULT_LOOKBACKS,
    per_config: int = DEFAULT_PER_CONFIG,
    seed: int = 0,
    *,
    bound: int = DEFAULT_BOUND,
    input_range: tuple[int, int] = DEFAULT_INPUT_RANGE,
) -> Iterator[Instance]:
    """Yield ``per_config`` instances for each (N, L), N outer, L inner, index innermost.

    The defaults give benchmark.md's grid: 11 lengths x 5 look-backs x 1,000 = 55,000 instances.

    Raises:
        ValueError: a parameter out of range (checked before the first instance is yielded).
    """
    steps, lookbacks = tuple(steps), tuple(lookbacks)
    if per_config < 0:
        raise ValueError(f"per_config must be >= 0, got {per_config}")
    for n in steps:
        for lb in lookbacks:
            _check(n, lb, bound, input_range)
    for n in steps:
        for lb in lookbacks:
            for index in range(per_config):
                yield generate_instance(n, lb, seed=seed, index=index, bound=bound, input_range=input_range)
