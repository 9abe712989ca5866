"""Issue 14, kind 1: state that is resumed or reused is keyed by what decides the result.

A reused checkpoint thread returned an old answer marked verified. Every store that resumes a
run (a checkpoint thread through the Python API, sync and async, and the CLI; a run killed by a
server error; the LangGraph node, in test_adapters_wrappers; the benchmark run store) must refuse
or start afresh for other work, and resume the same work.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest
from typer.testing import CliRunner

from stepguard import CheckpointError, Guard, GuardConfig, ModelUnavailable, load_procedure
from stepguard.adapters import load_model
from stepguard.guard import sqlite_checkpointer
from tests._fakes import ScriptedModel
from tests._paths import ROOT

pytestmark = pytest.mark.slow

INVOICE = load_procedure(ROOT / "examples/invoice.yaml")
A = {"subtotal": "100.10", "rate": "0.1"}
B = {"subtotal": "250.00", "rate": "0.1"}


def _answer(inputs: dict[str, str]):
    """The expected answer, exact (compares equal to the result's Decimal)."""
    return INVOICE.expected_values(inputs)[INVOICE.answer_var]


def _run(guard: Guard, inputs: dict[str, str], thread: str, use_async: bool):
    if use_async:
        return asyncio.run(guard.arun(INVOICE, inputs, thread_id=thread))
    return guard.run(INVOICE, inputs, thread_id=thread)


@pytest.mark.parametrize("use_async", [False, True], ids=["sync", "async"])
def test_a_thread_refuses_other_inputs_and_names_them(tmp_path: Path, use_async: bool) -> None:
    guard = Guard(load_model("sim:perfect"), checkpointer=sqlite_checkpointer(tmp_path / "ck.sqlite"))
    first = _run(guard, A, "emp42", use_async)
    assert first.status == "verified" and first.answer == _answer(A)
    with pytest.raises(CheckpointError, match=r"inputs\.subtotal: stored 100\.1, now 250") as err:
        _run(guard, B, "emp42", use_async)
    assert "emp42" in str(err.value) and "inputs.rate" not in str(err.value)
    again = _run(guard, A, "emp42", use_async)  # the same work: the stored result, no new call
    assert again.answer == first.answer and again.usage.model_calls == first.usage.model_calls


def test_sync_and_async_runs_share_one_sqlite_thread(tmp_path: Path) -> None:
    """Item 8: arun on the embedded SQLite checkpointer raised NotImplementedError."""
    model = ScriptedModel()
    ck = sqlite_checkpointer(tmp_path / "ck.sqlite")
    sync = Guard(model, checkpointer=ck).run(INVOICE, A, thread_id="t")
    calls = len(model.calls)
    resumed = asyncio.run(Guard(model, checkpointer=ck).arun(INVOICE, A, thread_id="t"))
    assert resumed.answer == sync.answer == _answer(A) and len(model.calls) == calls


def test_a_users_own_sqlite_saver_works_in_async_runs(tmp_path: Path) -> None:
    import sqlite3

    from langgraph.checkpoint.sqlite import SqliteSaver

    saver = SqliteSaver(sqlite3.connect(str(tmp_path / "own.sqlite"), check_same_thread=False))
    result = asyncio.run(Guard(ScriptedModel(), checkpointer=saver).arun(INVOICE, A, thread_id="own"))
    assert result.status == "verified" and result.answer == _answer(A)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ("model", "model.spec"),
        ("settings", "settings.chunk_size"),
        ("procedure", "the procedure's content"),
        ("prompts", "the prompt templates' text"),
    ],
)
def test_a_thread_refuses_another_model_settings_procedure_or_prompts(tmp_path: Path, change: str, named: str) -> None:
    ck = sqlite_checkpointer(tmp_path / "ck.sqlite")
    Guard(ScriptedModel(), checkpointer=ck).run(INVOICE, A, thread_id="t")
    model, config, proc = ScriptedModel(), GuardConfig(), INVOICE
    if change == "model":
        model = load_model("sim:perfect")
    elif change == "settings":
        config = GuardConfig(chunk_size=2)
    elif change == "procedure":
        proc = INVOICE.model_copy(update={"description": "edited"})
    else:
        (tmp_path / "p").mkdir()
        (tmp_path / "p" / "system.txt").write_text("You compute carefully.\n")
        config = GuardConfig(prompt_dir=tmp_path / "p")
    with pytest.raises(CheckpointError) as err:
        Guard(model, config, checkpointer=ck).run(proc, A, thread_id="t")
    assert named in str(err.value)


def test_labels_alone_do_not_make_other_work(tmp_path: Path) -> None:
    ck = sqlite_checkpointer(tmp_path / "ck.sqlite")
    Guard(ScriptedModel(), checkpointer=ck).run(INVOICE, A, thread_id="t")
    labelled = Guard(ScriptedModel(), GuardConfig.for_procedure(INVOICE, extra={"id": "x"}), checkpointer=ck).run(INVOICE, A, thread_id="t")
    assert labelled.answer == _answer(A)


def test_a_guard_without_a_configuration_resumes_its_own_thread_and_refuses_other_settings(tmp_path: Path) -> None:
    """Without a configuration the settings come from the procedure (GuardConfig.for_procedure): the
    same procedure under the same guard resumes; an explicit configuration with other settings is other work."""
    ck = sqlite_checkpointer(tmp_path / "ck.sqlite")
    first = Guard(ScriptedModel(), checkpointer=ck).run(INVOICE, A, thread_id="t")
    again = Guard(ScriptedModel(), checkpointer=ck).run(INVOICE, A, thread_id="t")
    assert again.answer == first.answer == _answer(A)
    with pytest.raises(CheckpointError, match="settings.chunk_size"):
        Guard(ScriptedModel(), GuardConfig(), checkpointer=ck).run(INVOICE, A, thread_id="t")


class _DiesAfter(ScriptedModel):
    """The scripted model, but the endpoint goes down after ``n`` calls (a server error mid-run)."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def complete(self, messages, settings=None):
        if len(self.calls) >= self.n:
            raise ModelUnavailable("HTTP 500 from the stub", self.spec)
        return super().complete(messages, settings)


def test_a_run_interrupted_by_a_server_error_resumes_only_for_the_same_inputs(tmp_path: Path) -> None:
    ck = sqlite_checkpointer(tmp_path / "ck.sqlite")
    cfg = GuardConfig(chunk_size=1)
    with pytest.raises(ModelUnavailable):
        Guard(_DiesAfter(2), cfg, checkpointer=ck).run(INVOICE, A, thread_id="t")
    with pytest.raises(CheckpointError, match="inputs.subtotal"):
        Guard(ScriptedModel(), cfg, checkpointer=ck).run(INVOICE, B, thread_id="t")
    model = ScriptedModel()
    done = Guard(model, cfg, checkpointer=ck).run(INVOICE, A, thread_id="t")
    assert done.status == "verified" and done.answer == _answer(A)
    assert len(model.calls) == 2  # the two committed steps were not asked again


def test_cli_refuses_a_thread_reused_for_other_inputs(tmp_path: Path) -> None:
    from stepguard.cli._app import app

    runner = CliRunner()
    args = ["run", str(ROOT / "examples/invoice.yaml"), "--model", "sim:perfect",
            "--checkpoint", str(tmp_path / "ck.sqlite"), "--thread-id", "emp42", "-i", "rate=0.1"]
    first = runner.invoke(app, [*args, "-i", "subtotal=100.10", "--json"])
    assert first.exit_code == 0, first.output
    second = runner.invoke(app, [*args, "-i", "subtotal=250.00", "--json"])
    assert second.exit_code != 0
    assert "inputs.subtotal: stored 100.1, now 250" in second.output
    assert "104.60" not in second.stdout  # the old answer is not printed as this run's


def test_the_run_store_refuses_edited_prompt_templates(tmp_path: Path) -> None:
    """Same settings, same template folder, other template text: another experiment."""
    from stepguard import RunStoreError
    from stepguard.bench.generate import generate_instance
    from stepguard.bench.run import run_benchmark
    from stepguard.guard import _prompts

    insts = [generate_instance(5, 2)]
    model = load_model("sim:perfect")
    (tmp_path / "p").mkdir()
    system = tmp_path / "p" / "system.txt"
    system.write_text("You compute carefully.\n")
    config = GuardConfig(prompt_dir=tmp_path / "p", on_exhausted="flag")
    run_benchmark(insts, "guarded", model, tmp_path / "run", guard_config=config)
    system.write_text("You compute very carefully.\n")
    _prompts._read.cache_clear()  # as a new process would read them
    try:
        with pytest.raises(RunStoreError, match="prompts_sha256"):
            run_benchmark(insts, "guarded", model, tmp_path / "run", guard_config=replace(config))
    finally:
        _prompts._read.cache_clear()


def test_the_run_store_refuses_to_resume_from_instances_it_cannot_check(tmp_path: Path) -> None:
    """A one-shot iterable has no content hash: the same id with another instance reused its row."""
    from stepguard import RunStoreError
    from stepguard.bench.generate import generate_instance
    from stepguard.bench.run import run_benchmark

    model = load_model("sim:perfect")
    first = generate_instance(5, 2, index=0)
    run_benchmark((i for i in [first]), "guarded", model, tmp_path / "run")
    with pytest.raises(RunStoreError, match="one-shot iterable"):  # whatever it yields: it cannot be checked
        run_benchmark((i for i in [first]), "guarded", model, tmp_path / "run")
    again = run_benchmark([first], "guarded", model, tmp_path / "other")  # a list is hashed: resumable
    assert run_benchmark([first], "guarded", model, tmp_path / "other").skipped == 1 and again.written == 1


def test_a_thread_refuses_a_simulated_executor_of_another_seed(tmp_path: Path) -> None:
    ck = sqlite_checkpointer(tmp_path / "ck.sqlite")
    Guard(load_model("sim:perfect", seed=0), checkpointer=ck).run(INVOICE, A, thread_id="t")
    with pytest.raises(CheckpointError, match="model.seed: stored 0, now 5"):
        Guard(load_model("sim:perfect", seed=5), checkpointer=ck).run(INVOICE, A, thread_id="t")
