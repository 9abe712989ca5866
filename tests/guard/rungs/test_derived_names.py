"""A derived sub-procedure for a step whose variable starts with ``t`` names its sub-steps ``u1 .. un``
(:func:`~stepguard.guard.rungs.arith._arith.derived`), so none is the step's own name: the rename reaches the
sub-steps' names, the names their expressions read, and the after-marks (a ``chain`` condition's branch is still
never asked with it), and never a text the step writes (``'t1'`` stays ``'t1'``).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from stepguard import Guard, GuardConfig, Procedure
from stepguard.guard.rungs import get_rung
from tests._fakes import ScriptedModel, asked_steps

RATE = "(0.07 if x >= 1.25 else (0.05 if x >= 1 else 0.03)) * x"


@pytest.mark.parametrize("var", ["rate", "tax_rate", "t2", "t", "u1"])
def test_the_after_marks_survive_the_rename(var: str) -> None:
    proc = Procedure.model_validate({"name": "c", "inputs": ["x"], "steps": [
        {"var": var, "expr": RATE, "type": "decimal", "scale": 4}]})
    sub = get_rung("chain").derive(proc, 0, {"x": Fraction("0.1606")})
    assert sub is not None
    p = "u" if var.startswith("t") else "t"
    assert [s.var for s in sub.steps] == [f"{p}{i}" for i in range(1, 6)] + [var]
    assert sub.after(2) == (f"{p}1", f"{p}2") and sub.after(5) == tuple(f"{p}{i}" for i in range(1, 5))
    model = ScriptedModel(faults={var: ["wrong"]})
    result = Guard(model, GuardConfig.for_procedure(proc)).run(proc, {"x": "0.1606"})
    assert result.status == "verified" and result.values[var] == Fraction("0.0048")
    assert [asked_steps(m) for m in model.calls[1:]] == [[f"{p}1", f"{p}2"], [f"{p}3", f"{p}4"], [f"{p}5", var]]


@pytest.mark.parametrize("var", ["tag", "t2", "r"])
@pytest.mark.parametrize("expr", ["'t1' if a > 1 else 't2'", "'t1' if a > 1 else ('t3' if b > 0 else 'u2')",
                                  "'t12 or t3' if a == b else 'x'"])
def test_a_text_the_step_writes_is_not_renamed(var: str, expr: str) -> None:
    proc = Procedure.model_validate({"name": "c", "inputs": ["a", "b"], "steps": [{"var": var, "type": "string", "expr": expr}]})
    for a, b in ((2, 1), (0, 1), (1, 1), (0, -1)):
        env = {"a": Fraction(a), "b": Fraction(b)}
        sub = get_rung("chain").derive(proc, 0, env)
        if sub is not None:
            assert sub.expected_values({})[var] == proc.expected_values(env)[var], (expr, a, b, [s.expression for s in sub.steps])
