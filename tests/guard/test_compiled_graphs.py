"""Guards without a checkpointer share one compiled controller graph per mode (issue 28, item 7):
a derived rung's nested run and a proxy's per-request guard compile nothing."""

from __future__ import annotations

import pytest

import stepguard.guard._guard as guard_module
from stepguard import Guard, GuardConfig
from stepguard.procedure import parse_procedure
from tests._fakes import ScriptedModel

PROC = parse_procedure("inputs: [x]\nsteps:\n  - {var: a, expr: x * 37}\n  - {var: b, expr: a + 12}\n")


def test_no_graph_is_compiled_for_a_new_guard_or_a_derived_rungs_nested_run(monkeypatch) -> None:
    Guard(ScriptedModel()).run(PROC, {"x": 3})  # the shared graphs exist from here on
    built: list[bool] = []
    real = guard_module.build_graph
    monkeypatch.setattr(guard_module, "build_graph", lambda use_async=False: built.append(use_async) or real(use_async))
    model = ScriptedModel(faults={"a": ["wrong"]})
    result = Guard(model, GuardConfig(ladder=("split", "resample"), chunk_size=1)).run(PROC, {"x": 3})
    assert result.status == "verified"
    assert any(e.rung == "split" for e in result.deviations)  # the nested run did happen
    assert built == []


@pytest.mark.slow
def test_a_guard_with_a_checkpointer_compiles_its_own(tmp_path, monkeypatch) -> None:
    from stepguard.guard import sqlite_checkpointer

    built: list[bool] = []
    real = guard_module.build_graph
    monkeypatch.setattr(guard_module, "build_graph", lambda use_async=False: built.append(use_async) or real(use_async))
    guard = Guard(ScriptedModel(), checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite"))
    assert built == []  # compiled on first use, not at construction
    assert guard.run(PROC, {"x": 3}, thread_id="t").status == "verified"
    assert built == [False]


EDGES = {
    ("__start__", "plan"), ("plan", "ask"), ("plan", "exhausted"), ("plan", "finish"), ("ask", "verify"), ("verify", "intend"),
    ("intend", "act"), ("act", "commit"), ("commit", "plan"), ("commit", "reprompt"), ("commit", "exhausted"), ("commit", "repair"),
    ("commit", "flag"), ("commit", "stop"), ("commit", "finish"), ("reprompt", "plan"), ("exhausted", "repair"),
    ("exhausted", "flag"), ("exhausted", "stop"), ("repair", "plan"), ("repair", "finish"), ("flag", "plan"), ("flag", "finish"),
    ("stop", "finish"), ("finish", "__end__"),
}
"""The controller's hops: each node declares where it may go (its ``Command[Literal[...]]``), no router works them out."""


def test_each_node_declares_its_next_hops_and_no_other() -> None:
    for use_async in (False, True):
        drawn = guard_module.build_graph(use_async).compile().get_graph()
        assert {(e.source, e.target) for e in drawn.edges} == EDGES
