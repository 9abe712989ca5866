"""Prompt forms are versioned data, and a forms change does not strand a checkpoint whose
committed values do not depend on the wording (issue 42, part 5).

A checkpoint is written under today's forms (6 when this was written), the forms are bumped by a
test-only forms file (version 7, one text reworded), and the thread is resumed: it goes on where
every committed value was verified exactly at a step boundary, and is refused, naming both
versions and the step, where a value is the model's own, was read by position, or a step was in
the middle of its re-prompts.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from stepguard import Guard, GuardConfig, Procedure
from stepguard.errors import CheckpointError, RunClosed, StepguardError
from stepguard.guard import _forms_resume, _prompts, sqlite_checkpointer
from stepguard.guard._forms import FORMS_DIR, TEXT_KEYS, current_forms, load_forms
from stepguard.guard._result import DeviationEvent
from stepguard.guard._state import GuardState, Progress
from stepguard.model import ChatMessage, ChatResponse, GenerationSettings
from tests._fakes import CHAIN_INPUTS as INPUTS, ScriptedModel, chain_expected as _expected, chain_procedure as _procedure

NEW_COUNT = "Now write $n lines, one a step, from $first to $last, in order, each as"


def _bump(monkeypatch: pytest.MonkeyPatch, folder: Path) -> int:
    """Today's forms file again as version + 1 with the count line reworded, in ``folder``, made the forms in use."""
    data = json.loads((FORMS_DIR / f"{_prompts.PROMPT_FORMS}.json").read_text(encoding="utf-8"))
    data["version"] += 1
    data["history"][str(data["version"])] = "test only: the count line reworded"
    data["texts"]["count_many"] = NEW_COUNT
    folder.mkdir(exist_ok=True)
    (folder / f"{data['version']}.json").write_text(json.dumps(data), encoding="utf-8")
    forms = current_forms(folder)
    monkeypatch.setattr(_prompts, "FORMS", forms)
    monkeypatch.setattr(_prompts, "PROMPT_FORMS", forms.version)
    return forms.version


class _StopsAfter(ScriptedModel):
    """A scripted model whose caller stops the run after its ``n``-th call (the reply is still given)."""

    def __init__(self, n: int, stop: threading.Event, **kw: Any) -> None:
        super().__init__(**kw)
        self.n, self.stop = n, stop

    def complete(self, messages: list[ChatMessage], settings: GenerationSettings | None = None) -> ChatResponse:
        if len(self.calls) + 1 >= self.n:
            self.stop.set()
        return super().complete(messages, settings)


def _stopped(tmp_path: Path, n: int, config: GuardConfig, **faults: Any) -> Guard:
    """A run of 8 steps checkpointed in ``tmp_path`` and stopped by its caller after ``n`` model calls."""
    stop = threading.Event()
    guard = Guard(_StopsAfter(n, stop, **faults), config, checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite"))
    with pytest.raises(RunClosed):
        guard.run(_procedure(8), INPUTS, thread_id="t", stop=stop)
    return guard


@pytest.mark.slow
def test_a_checkpoint_of_exact_values_resumes_under_the_new_forms(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written = _prompts.PROMPT_FORMS
    _stopped(tmp_path, 2, GuardConfig(chunk_size=2))  # S1..S4 committed, verified exactly
    now = _bump(monkeypatch, tmp_path / "forms")
    model = ScriptedModel()
    guard = Guard(model, GuardConfig(chunk_size=2), checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite"))
    result = guard.run(_procedure(8), INPUTS, thread_id="t")
    assert now == written + 1
    assert result.status == "verified" and result.values == _expected(_procedure(8))
    asked = [m[-1]["content"] for m in model.calls]
    assert len(asked) == 2 and "Now write 2 lines, one a step, from S5 to S6" in asked[0]  # today's wording, from S5 on


@pytest.mark.slow
def test_a_flagged_value_refuses_the_resume_naming_both_forms_and_the_step(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written = _prompts.PROMPT_FORMS
    _stopped(tmp_path, 2, GuardConfig(chunk_size=2, policy="flag"), faults={"S3": ["wrong"]})
    now = _bump(monkeypatch, tmp_path / "forms")
    guard = Guard(ScriptedModel(), GuardConfig(chunk_size=2, policy="flag"), checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite"))
    with pytest.raises(CheckpointError, match=rf"written under prompt forms {written} and resumed under prompt forms {now}: "
                                              r"step S3's committed value is graded flagged \(the model's own, kept unverified\)"):
        guard.run(_procedure(8), INPUTS, thread_id="t")
    with pytest.raises(CheckpointError, match="step S3's committed value"):  # the proxy's check before a run says the same
        guard.check_thread(_procedure(8), INPUTS, "t")


@pytest.mark.slow
def test_a_step_stopped_in_its_re_prompts_refuses_the_resume(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written = _prompts.PROMPT_FORMS
    _stopped(tmp_path, 2, GuardConfig(chunk_size=2), faults={"S3": ["wrong"]})  # S3 wrong: its re-prompt is next
    now = _bump(monkeypatch, tmp_path / "forms")
    guard = Guard(ScriptedModel(), GuardConfig(chunk_size=2), checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite"))
    with pytest.raises(CheckpointError, match=rf"forms {written} and resumed under prompt forms {now}: step S3 stopped in the "
                                              r"middle of its re-prompts \(re-prompt 1, rung \w+\)"):
        guard.run(_procedure(8), INPUTS, thread_id="t")


def test_a_forms_change_with_another_difference_is_other_work_named_as_both(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    written = _prompts.PROMPT_FORMS
    _stopped(tmp_path, 2, GuardConfig(chunk_size=2))
    now = _bump(monkeypatch, tmp_path / "forms")
    guard = Guard(ScriptedModel(), GuardConfig(chunk_size=2), checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite"))
    with pytest.raises(CheckpointError, match=rf"inputs.x: stored 7, now 8; prompt forms: stored {written}, now {now}"):
        guard.run(_procedure(8), {**INPUTS, "x": 8}, thread_id="t")


@pytest.mark.slow
def test_the_same_forms_and_other_templates_are_still_other_work(tmp_path: Path) -> None:
    """The rule reads the forms out of the fingerprint only where the templates are today's."""
    _stopped(tmp_path, 2, GuardConfig(chunk_size=2))
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "system.txt").write_text("You compute steps.\n", encoding="utf-8")
    guard = Guard(ScriptedModel(), GuardConfig(chunk_size=2, prompt_dir=folder), checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite"))
    with pytest.raises(CheckpointError, match="the prompt templates' text"):
        guard.run(_procedure(8), INPUTS, thread_id="t")


def _one(kind_steps: list[dict[str, Any]]) -> Procedure:
    return Procedure.model_validate({"name": "p", "inputs": ["a"], "steps": kind_steps})


@pytest.mark.parametrize(("provenance", "extra", "allowed"), [
    ("model_verified", {}, True),
    ("repaired", {}, True),
    ("flagged", {}, False),
    ("unverifiable", {}, False),
])
def test_which_committed_values_depend_on_the_wording(provenance: str, extra: dict[str, Any], allowed: bool) -> None:
    proc = _one([{"var": "b", "expr": "a + 1"}, {"var": "c", "expr": "b * 2"}])
    state = GuardState(Progress(cursor=1, values={"b": "3"}, provenance={"b": provenance}))
    why = _forms_resume.forms_refusal(state, proc, 6, 7)
    assert (why is None) is allowed, why
    if not allowed:
        grade = {"flagged": "flagged (the model's own, kept unverified)",
                 "unverifiable": "unchecked (the model's, with nothing to check it)"}
        assert why == (f"written under prompt forms 6 and resumed under prompt forms 7: step b's committed value is graded "
                       f"{grade[provenance]}, not decided exactly by the evaluator, so it depends on the forms' wording")


def test_a_value_read_by_position_depends_on_the_wording() -> None:
    proc = _one([{"var": "b", "expr": "a * 17"}, {"var": "c", "expr": "b * 2"}])
    read = DeviationEvent(kind="arithmetic_error", step="b", detail="b read by position", action="read", rung="digits")
    state = GuardState(Progress(cursor=1, values={"b": "34"}, provenance={"b": "model_verified"}), events=[read])
    why = _forms_resume.forms_refusal(state, proc, 6, 7)
    assert why is not None and "step b's committed value was read by position from the sub-steps of the digits rung" in why


def test_a_value_checked_by_a_predicate_depends_on_the_wording_and_a_hidden_expected_value_does_not() -> None:
    proc = _one([{"var": "b", "check": "value > a"}, {"var": "c", "expr": "b * 2"}])
    state = GuardState(Progress(cursor=1, values={"b": "9"}, provenance={"b": "model_verified"}))
    why = _forms_resume.forms_refusal(state, proc, 6, 7)
    assert why is not None and "step b's committed value is graded bounded (only a predicate over it held)" in why
    hidden = _one([{"var": "b", "check": "a * 3"}, {"var": "c", "expr": "b * 2"}])
    assert _forms_resume.forms_refusal(state, hidden, 6, 7) is None


def test_the_forms_in_use_are_the_highest_versions_file_and_the_fingerprint_names_its_version() -> None:
    forms = current_forms()
    assert forms.version == _prompts.PROMPT_FORMS and set(TEXT_KEYS) <= set(forms.texts)
    assert sorted(forms.history) == list(range(2, forms.version + 1))
    prompts = _prompts.PromptSet()
    assert prompts.fingerprint(version=forms.version) == prompts.fingerprint()
    assert prompts.fingerprint(version=forms.version - 1) != prompts.fingerprint()


@pytest.mark.parametrize(("change", "said"), [
    ({"version": 0}, "'version' must be a whole number of 1 or more, not 0"),
    ({"history": {}}, "'history' must say what each version from 2 to 6 changed (missing: [2, 3, 4, 5, 6])"),
    ({"texts": {"count_one": "x"}}, "'texts.count_many' is missing"),
])
def test_a_bad_forms_file_is_refused_naming_the_file_and_the_field(tmp_path: Path, change: dict[str, Any], said: str) -> None:
    data = {**json.loads((FORMS_DIR / "6.json").read_text(encoding="utf-8")), **change}
    path = tmp_path / "6.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(StepguardError) as err:
        load_forms(path)
    assert str(err.value) == f"{path}: {said}"


def test_a_run_store_records_the_forms_and_names_them_when_it_refuses(tmp_path: Path) -> None:
    """A store is not resumed across forms (its calls, tokens and re-prompts measure the wording); its refusal names them."""
    from stepguard.bench.store import RunStore
    from stepguard.errors import RunStoreError

    meta = {"model": {"spec": "sim"}, "mode": "guarded", "guard_config": {}, "generation": {}, "instances_sha256": "i",
            "raw_prompt": None, "prompts_sha256": "a", "prompt_forms": 6}
    RunStore.open(tmp_path, meta).close()
    with pytest.raises(RunStoreError, match=r"prompts_sha256: stored 'a', now 'b'; prompt forms: stored 6, now 7"):
        RunStore.open(tmp_path, {**meta, "prompts_sha256": "b", "prompt_forms": 7})


def test_a_guarded_runs_meta_records_the_forms_version_and_a_raw_runs_none() -> None:
    from stepguard.adapters import load_model
    from stepguard.bench._runmeta import run_meta

    inst = {"file": None, "sha256": "i"}
    assert run_meta("guarded", load_model("sim:paper"), GuardConfig(), inst)["prompt_forms"] == _prompts.PROMPT_FORMS
    assert run_meta("raw", load_model("sim:paper"), None, inst)["prompt_forms"] is None
