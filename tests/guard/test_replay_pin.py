"""Issue 15: the guard room's rebuild changes no behaviour. Guarded runs recorded on the embedded
Qwen2.5-Coder-1.5B (``benchmarks/record_guarded_cassette.py``, before the rebuild) replay with the
same prompts (a request that differs by one character is not in the cassette: ModelError) and the
same results: status, values, provenance, re-prompts, deviations, model calls."""

from __future__ import annotations

import json

import pytest

from stepguard import Guard, GuardConfig
from stepguard.adapters import ReplayModel
from stepguard.bench.generate import generate_instance
from tests._paths import DATA

DATA = DATA
RECORDED = json.loads((DATA / "guarded_qwen.results.json").read_text())
_SAME = ("status", "answer", "answer_var", "first_unverified", "chunks", "reprompts", "repaired", "inputs", "model")


def _deviations(result: dict) -> list[tuple]:
    return [(d["step"], d["kind"], d["action"], d["rung"], d["attempt"]) for d in result["deviations"]]


@pytest.mark.parametrize("row", RECORDED, ids=[r["id"] for r in RECORDED])
def test_a_recorded_guarded_run_replays_with_the_same_prompts_and_result(row: dict) -> None:
    inst = generate_instance(row["n_steps"], 2, index=row["index"])
    model = ReplayModel(DATA / "guarded_qwen.cassette.jsonl", spec="local:qwen2.5-coder-1.5b")
    now = Guard(model, GuardConfig(on_exhausted="flag")).run(inst.to_procedure(), inst.inputs, thread_id=inst.id)
    got = now.model_dump(mode="json")
    want = row["result"]
    assert {k: got[k] for k in _SAME} == {k: want[k] for k in _SAME}
    assert [(s["var"], s["value"], s["provenance"], s["reprompts"]) for s in got["steps"]] == [
        (s["var"], s["value"], s["provenance"], s["reprompts"]) for s in want["steps"]
    ]
    assert _deviations(got) == _deviations(want)


def test_the_recording_exercises_re_prompts_and_derived_rungs() -> None:
    rungs = {d["rung"] for r in RECORDED for d in r["result"]["deviations"] if d["action"] == "reprompt"}
    assert sum(r["result"]["reprompts"] for r in RECORDED) >= 1, "a recording with no re-prompt pins little"
    assert rungs & {"bridge", "decompose", "commute"}, rungs
