"""The Procedure model on its own: validation errors with their locations, reads,
expected_values and bind_inputs."""

from __future__ import annotations

from typing import Any

import pytest

from stepguard.errors import ProcedureError
from stepguard.procedure import Procedure


def proc(*steps: tuple[str, str], inputs: tuple[str, ...] = ("x", "y")) -> Procedure:
    return Procedure.model_validate({"name": "p", "inputs": list(inputs), "steps": [{"var": v, "expr": e} for v, e in steps]})


P = proc(("S1", "x"), ("S2", "S1 * y"), ("S3", "S2 - S1"))


@pytest.mark.parametrize(("steps", "location", "fragment"), [
    ((("S1", "x"), ("S2", "S3 + 1")), "steps[1].expr (S2)", "reads 'S3'"),
    ((("S1", "x"), ("S1", "x")), "steps[1].var", "already defined"),
    ((("S1", "x +"),), "steps[0].expr (S1)", "not a valid expression"),
])
def test_validation_errors_carry_their_location(steps: Any, location: str, fragment: str) -> None:
    with pytest.raises(ProcedureError, match=fragment) as info:
        proc(*steps)
    assert info.value.location == location and str(info.value).startswith(location)


def test_shape_and_reads() -> None:
    assert P.variables == ("S1", "S2", "S3") and P.answer_var == "S3"
    assert P.reads(0) == ("x",) and set(P.reads(1)) == {"S1", "y"} and set(P.reads(2)) == {"S2", "S1"}  # inputs too


def test_expected_values_evaluate_every_step_exactly() -> None:
    assert P.expected_values({"x": 7, "y": 3}) == {"S1": 7, "S2": 21, "S3": 14}
    endless = proc(("S1", "x / y"), inputs=("x", "y"))
    assert endless.expected_values({"x": 1, "y": 3}, writable=False)["S1"] * 3 == 1  # exact, as a rung's sub-procedure
    with pytest.raises(ProcedureError, match="no finite decimal form"):  # a step no model can write, refused by default
        endless.expected_values({"x": 1, "y": 3})


def test_bind_inputs_reads_numbers_and_names_what_is_wrong() -> None:
    assert P.bind_inputs({"x": "7", "y": 3}) == {"x": 7, "y": 3}
    with pytest.raises(ProcedureError, match=r"missing \['y'\]"):
        P.bind_inputs({"x": 7})
    with pytest.raises(ProcedureError, match=r"undeclared \['z'\]"):
        P.bind_inputs({"x": 7, "y": 3, "z": 1})
