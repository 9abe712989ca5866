"""A step reads its own clause only (hostile tester, finding 2): with several assignments on one
line, a boolean, string or one_of step is never given the value of another variable's clause."""

from __future__ import annotations

import pytest

from stepguard import Guard, GuardConfig, Procedure
from stepguard.trace import Record, parse_trace
from stepguard.verify import read_raw_value
from tests._fakes import SameReply

# These tests give a whole GuardConfig on purpose (the ladder or chunking under test), so the
# warning that it replaces the procedure's defaults says nothing here.
pytestmark = pytest.mark.filterwarnings("ignore::stepguard.guard.LadderWarning")


def _proc(steps: list[dict[str, object]]) -> Procedure:
    return Procedure.model_validate({"name": "m", "inputs": {"x": "integer"}, "steps": steps})


SIZE = {"type": "one_of", "choices": ["small", "large"], "expr": "'large' if x > 5 else 'small'"}
CASES = [
    # (procedure, reply, what each step's own clause says)
    (_proc([{"var": "a", **SIZE}, {"var": "b", **SIZE}]), "a = small, b = large", {"a": "small", "b": "large"}),
    (_proc([{"var": "ok1", "type": "boolean", "expr": "x > 5"}, {"var": "ok2", "type": "boolean", "expr": "x > 5"}]),
     "ok1 = false; ok2 = true", {"ok1": False, "ok2": True}),
    (_proc([{"var": "S1", "expr": "x + 1"}, {"var": "tag", "type": "string", "expr": "'ok'"}]),
     "tag = bad, S1 = 8", {"tag": "bad", "S1": 8}),
    (_proc([{"var": "a", **SIZE}, {"var": "b", **SIZE}]), "a = small b = large", {"a": "small", "b": "large"}),  # no comma
]


@pytest.mark.parametrize(("proc", "reply", "own"), CASES)
def test_read_raw_value_reads_the_record_s_own_clause(proc: Procedure, reply: str, own: dict[str, object]) -> None:
    records = {r.var: r for r in parse_trace(reply, var_names=proc.variables).records}
    for step in proc.steps:
        if step.var in own and step.type in ("boolean", "string", "one_of"):
            assert read_raw_value(records[step.var], step.type, step.choices) == own[step.var]
            by_hand = Record(step.var, None, text=records[step.var].text)  # rhs None: split as the parser would
            assert read_raw_value(by_hand, step.type, step.choices) == own[step.var]


@pytest.mark.parametrize(("proc", "reply", "own"), CASES[:3])
@pytest.mark.parametrize("exhausted", ["flag", "repair"])
def test_guard_never_verifies_a_value_from_another_clause(proc: Procedure, reply: str, own: dict[str, object], exhausted: str) -> None:
    config = GuardConfig(chunk_size=len(proc.steps), max_reprompts_per_step=1, on_exhausted=exhausted)
    result = Guard(SameReply(reply), config).run(proc, {"x": 7})
    expected = proc.expected_values({"x": 7})
    assert result.status != "verified"
    for step in result.steps:
        if step.provenance in ("model_verified", "flagged"):
            assert step.value == own[step.var], step  # what its own clause says, never another's
        if own[step.var] != expected[step.var]:
            assert step.provenance != "model_verified", step
