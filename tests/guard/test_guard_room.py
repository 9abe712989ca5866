"""Issue 15: rungs are registered objects the controller reads by attribute; observers cannot break a run."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from stepguard import Guard, GuardConfig, Procedure
from stepguard.guard import Rung, get_rung, register_rung, rung_names
from tests._fakes import CHAIN_INPUTS as INPUTS, ScriptedModel, chain_procedure as _procedure


@register_rung
class _Spelled(Rung):
    """A rung written for this test, in one class and one registration: the failing step asked as
    a one-step procedure over its operand values (``S4 = 10 - 3``), checked by a nested guard."""

    name = "test-spelled"
    derives = True
    nested_ladder = ("narrow",)
    nested_tries = 1

    def derive(self, procedure: Procedure, index: int, env: Mapping[str, object]) -> Procedure | None:
        step = procedure.steps[index]
        expr = step.expr or ""
        for name in procedure.reads(index):
            expr = expr.replace(name, str(env[name]))
        return Procedure.model_validate({"name": f"{procedure.name}:{step.var}:spelled", "steps": [{"var": step.var, "expr": expr}]})


def test_a_registered_rung_is_used_by_the_ladder_with_no_other_change() -> None:
    assert "test-spelled" in rung_names() and get_rung("test-spelled").derives
    model = ScriptedModel(faults={"S4": ["wrong"]})
    result = Guard(model, GuardConfig(ladder=("test-spelled",), chunk_size=3)).run(_procedure(8), INPUTS)
    assert result.status == "verified"
    assert [d.rung for d in result.deviations if d.action == "reprompt"] == ["test-spelled"]
    asked = model.calls[2][-1]["content"]  # the nested guard's one-step procedure over values
    assert "S4 = " in asked and "S3" not in asked.split("Steps:")[-1]


def test_unknown_and_duplicate_rungs_are_refused_with_the_names() -> None:
    with pytest.raises(ValueError, match=r"unknown ladder rung 'nope'.*bridge"):
        GuardConfig(ladder=("nope",))
    with pytest.raises(ValueError, match="taken"):
        register_rung(type("Again", (Rung,), {"name": "bridge"}))
    with pytest.raises(KeyError, match="narrow"):
        get_rung("nope")


@pytest.mark.parametrize("rung", ["restate", "narrow", "resample", "bridge", "decompose", "commute"])
def test_every_built_in_rung_is_registered_with_its_behaviour(rung: str) -> None:
    r = get_rung(rung)
    assert r.whole_chunk == (rung == "restate")
    assert r.resamples == (rung == "resample")
    assert r.derives == (rung in ("bridge", "decompose", "commute"))


class _Exploding:
    """An observer every hook of which raises."""

    def __getattr__(self, name: str):
        def boom(*args, **kwargs):
            raise RuntimeError(f"observer hook {name} failed")
        return boom


@pytest.mark.parametrize("use_async", [False, True])
def test_an_observer_that_raises_in_every_hook_never_breaks_a_run(use_async: bool) -> None:
    import asyncio

    model = ScriptedModel(faults={"S5": ["wrong"]})
    guard = Guard(model, GuardConfig(chunk_size=4), observer=_Exploding())  # type: ignore[arg-type]
    result = asyncio.run(guard.arun(_procedure(10), INPUTS)) if use_async else guard.run(_procedure(10), INPUTS)
    assert result.status == "verified" and result.reprompts == 1
