"""The instance generator (benchmark.md, "Generator (ours)"): determinism, shape, bounds, rules."""

from __future__ import annotations

import hashlib
import re

import pytest

from stepguard.bench.generate import (
    DEFAULT_LOOKBACKS,
    DEFAULT_PER_CONFIG,
    DEFAULT_STEPS,
    generate_grid,
    generate_instance,
    instance_id,
)

PINNED_N5_L2 = (
    '{"id":"n5-l2-s0-i0","n_steps":5,"lookback":2,"seed":0,"index":0,"inputs":{"x":12,"y":12},'
    '"steps":[{"var":"S1","expr":"x"},{"var":"S2","expr":"y"},{"var":"S3","expr":"S1 - S2"},'
    '{"var":"S4","expr":"S2 * S3"},{"var":"S5","expr":"S3 * S4"}],'
    '"expected":{"S1":12,"S2":12,"S3":0,"S4":0,"S5":0},"answer":0}'
)
PINNED_N6_L1 = (
    '{"id":"n6-l1-s0-i1","n_steps":6,"lookback":1,"seed":0,"index":1,"inputs":{"x":8,"y":8},'
    '"steps":[{"var":"S1","expr":"x"},{"var":"S2","expr":"y"},{"var":"S3","expr":"S2 + 8"},'
    '{"var":"S4","expr":"S3 * 1"},{"var":"S5","expr":"4 * S4"},{"var":"S6","expr":"9 - S5"}],'
    '"expected":{"S1":8,"S2":8,"S3":16,"S4":16,"S5":64,"S6":-55},"answer":-55}'
)
# sha256 of the JSONL of generate_grid((5, 14), (1, 7), 3, seed=0): any change to the generator shows here.
PINNED_SMALL_GRID_SHA256 = "325c2fdb3de05d8ae43c29688803ba336a0b2633f5fe4fa960fb424b64366421"

_OPERAND = re.compile(r"^(\S+) ([-+*]) (\S+)$")


@pytest.fixture(scope="module")
def sample() -> list:
    return list(generate_grid((5, 23, 95), DEFAULT_LOOKBACKS, 20, seed=3))


def test_pinned_instances_are_literal() -> None:
    assert generate_instance(5, 2, seed=0, index=0).model_dump_json() == PINNED_N5_L2
    assert generate_instance(6, 1, seed=0, index=1).model_dump_json() == PINNED_N6_L1


def test_small_grid_is_byte_identical_to_the_pinned_hash() -> None:
    text = "".join(inst.model_dump_json() + "\n" for inst in generate_grid((5, 14), (1, 7), 3, seed=0))
    assert hashlib.sha256(text.encode()).hexdigest() == PINNED_SMALL_GRID_SHA256


def test_deterministic_and_seed_sensitive() -> None:
    a = generate_instance(95, 7, seed=4, index=11)
    assert generate_instance(95, 7, seed=4, index=11) == a
    assert generate_instance(95, 7, seed=5, index=11) != a
    assert generate_instance(95, 7, seed=4, index=12) != a
    assert a.id == instance_id(95, 7, 4, 11) == "n95-l7-s4-i11"


def test_grid_order_and_count() -> None:
    grid = list(generate_grid((5, 14), (1, 2, 3), 4, seed=0))
    assert len(grid) == 2 * 3 * 4
    assert [(i.n_steps, i.lookback, i.index) for i in grid[:5]] == [(5, 1, 0), (5, 1, 1), (5, 1, 2), (5, 1, 3), (5, 2, 0)]
    assert len({i.id for i in grid}) == len(grid)


def test_default_grid_is_55_configurations_of_1000() -> None:
    assert DEFAULT_STEPS == (5, 14, 23, 32, 41, 50, 59, 68, 77, 86, 95)
    assert DEFAULT_LOOKBACKS == (1, 2, 3, 5, 7)
    assert DEFAULT_PER_CONFIG == 1000
    assert len(DEFAULT_STEPS) * len(DEFAULT_LOOKBACKS) * DEFAULT_PER_CONFIG == 55_000
    configs = {(i.n_steps, i.lookback) for i in generate_grid(per_config=1)}
    assert len(configs) == 55


@pytest.mark.slow
def test_values_within_bound_and_inputs_in_range(sample: list) -> None:
    for inst in sample:
        assert 2 <= inst.inputs["x"] <= 20 and 2 <= inst.inputs["y"] <= 20
        assert all(abs(v) < 1000 for v in inst.expected.values())
        assert inst.answer == inst.expected[f"S{inst.n_steps}"]


def test_expected_values_agree_with_the_evaluator(sample: list) -> None:
    for inst in sample[::7]:
        inst.check_expected()
        assert inst.to_procedure().expected_values(inst.inputs) == inst.expected


def test_step_shape_lookback_and_multiplication_rule(sample: list) -> None:
    orders, ops = set(), set()
    for inst in sample:
        assert [s.var for s in inst.steps] == [f"S{k}" for k in range(1, inst.n_steps + 1)]
        assert (inst.steps[0].expr, inst.steps[1].expr) == ("x", "y")
        values = inst.expected
        for k in range(3, inst.n_steps + 1):
            left, op, right = _OPERAND.match(inst.steps[k - 1].expr).groups()  # type: ignore[union-attr]
            prev = f"S{k - 1}"
            other = right if left == prev else left
            assert prev in (left, right)
            orders.add(left == prev)
            ops.add(op)
            if inst.lookback == 1:
                assert other.isdigit() and 1 <= int(other) <= 9
                b = int(other)
            else:
                assert other == f"S{max(1, k - inst.lookback)}"
                b = values[other]
            if op == "*":
                assert min(abs(values[prev]), abs(b)) <= 12
    assert orders == {True, False}  # both operand orders occur
    assert ops == {"+", "-", "*"}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_steps": 1, "lookback": 2},
        {"n_steps": 5, "lookback": 0},
        {"n_steps": 5, "lookback": 2, "bound": 20},
        {"n_steps": 5, "lookback": 2, "input_range": (9, 3)},
    ],
)
def test_bad_parameters_are_refused(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        generate_instance(**kwargs)
    with pytest.raises(ValueError):
        next(generate_grid((kwargs["n_steps"],), (kwargs["lookback"],), 1, bound=kwargs.get("bound", 1000),
                           input_range=kwargs.get("input_range", (2, 20))))


def test_custom_bound_and_range_hold() -> None:
    for inst in generate_grid((40,), (1, 3), 10, seed=9, bound=50, input_range=(-5, 5)):
        assert all(abs(v) < 50 for v in inst.expected.values())
        assert -5 <= inst.inputs["x"] <= 5
