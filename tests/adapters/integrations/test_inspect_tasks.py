"""The benchmark in Inspect AI: `inspect eval stepguard/...` (found by the entry point, no file path)
against the stub server through Inspect's OpenAI-compatible provider gives, sample by sample, the
scores `stepguard bench run` gives on the same instances and replies.

The stub's ``simpaper`` model answers as ``sim:paper`` to the whole request, so a raw reply has the
paper's kinds of error and both harnesses get the same reply to the same request.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests._paths import ROOT

pytest.importorskip("inspect_ai")

from inspect_ai.log import EvalLog, read_eval_log

from stepguard.bench.case import OUTCOMES, row_outcomes
from tests._stub_server import StubServer

BIN = Path(sys.executable).parent
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stub() -> Any:
    with StubServer() as server:
        yield server


def _inspect(stub: StubServer, tmp: Path, task: str, solver: str, *args: str) -> EvalLog:
    """Run `inspect eval` as a user would and read back its log."""
    logs = tmp / "logs"
    cmd = [str(BIN / "inspect"), "eval", task, *args, "--solver", solver, "--model", "openai-api/stub/simpaper",
           "--model-base-url", stub.base_url, "--log-dir", str(logs), "--display", "none"]
    env = {**os.environ, "STUB_API_KEY": "unused", "INSPECT_LOG_FORMAT": "eval"}
    done = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=400)
    assert done.returncode == 0, done.stdout + done.stderr + "".join(
        f"\n{f.name}: {read_eval_log(str(f)).error}" for f in logs.glob("*.eval"))
    (log_file,) = logs.glob("*.eval")
    log = read_eval_log(str(log_file))
    assert log.status == "success", log.error
    return log


def _bench(stub: StubServer, tmp: Path, instances: Path, mode: str) -> dict[str, dict[str, Any]]:
    """Run `stepguard bench run` on the same stub model; its rows by id."""
    out = tmp / f"bench-{mode}"
    cmd = [sys.executable, "-m", "stepguard.cli", "bench", "run", "--instances", str(instances), "--mode", mode,
           "--model", f"{stub.base_url}#simpaper", "--out", str(out)]
    done = subprocess.run(cmd, cwd=tmp, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines() if line.strip()]
    return {row["id"]: row for row in rows}


def _agree(log: EvalLog, rows: dict[str, dict[str, Any]]) -> None:
    """Every sample's score equals the measures of bench run's row, and every metric the mean over rows."""
    assert log.samples is not None and {str(s.id) for s in log.samples} == set(rows)
    for sample in log.samples:
        assert sample.scores is not None
        score = sample.scores["fidelity"]
        assert score.value == row_outcomes(rows[str(sample.id)]), sample.id
        assert score.answer == (None if rows[str(sample.id)]["first_answer"] is None else str(rows[str(sample.id)]["first_answer"]))
    assert log.results is not None
    metrics = {s.name: s.metrics["mean"].value for s in log.results.scores}
    for name in OUTCOMES:
        want = sum(row_outcomes(r)[name] for r in rows.values()) / len(rows)
        assert metrics[name] == pytest.approx(want), name


@pytest.mark.parametrize("mode", ["raw", "guarded"])
def test_procedural_task_scores_what_bench_run_scores(stub: StubServer, tmp_path: Path, mode: str) -> None:
    instances = tmp_path / "instances.jsonl"
    subprocess.run([sys.executable, "-m", "stepguard.cli", "bench", "generate", "--out", str(instances), "--steps", "5,23",
                    "--lookback", "1,7", "--per-config", "3"], check=True, capture_output=True, timeout=120)
    log = _inspect(stub, tmp_path, "stepguard/procedural", f"stepguard/{mode}",
                   "-T", "steps=5,23", "-T", "lookbacks=1,7", "-T", "per_config=3")
    rows = _bench(stub, tmp_path, instances, mode)
    _agree(log, rows)
    if mode == "raw":  # the stub model errs: the comparison is not of all-right runs
        assert 0 < sum(r["correct"] for r in rows.values()) < len(rows)
        assert any(r["labels"] != ["exact"] for r in rows.values())
    assert log.samples is not None
    for sample in log.samples:
        assert sample.scores is not None
        meta = sample.scores["fidelity"].metadata or {}
        assert meta["mode"] == mode and len(meta["steps"]) == sample.metadata["n_steps"]
        assert {s["verdict"] for s in meta["steps"]} <= {"right", "wrong", "missing"}
        if mode == "guarded":  # every model call the guard made is an Inspect model event
            assert all("provenance" in s for s in meta["steps"])
            calls = [e for e in sample.events if e.event == "model"]
            assert len(calls) == rows[str(sample.id)]["usage"]["model_calls"] >= 1


def test_guarded_deviations_show_rung_and_provenance(stub: StubServer, tmp_path: Path) -> None:
    """A deviation the guard caught is in the sample's step verdicts with the rung it re-asked by."""
    log = _inspect(stub, tmp_path, "stepguard/procedural", "stepguard/guarded", "-T", "steps=23", "-T", "lookbacks=7",
                   "-T", "per_config=6", "-S", "chunk_size=23")
    assert log.samples is not None
    caught = [d for s in log.samples for step in (s.scores["fidelity"].metadata or {})["steps"] for d in step["deviations"]]  # type: ignore[index]
    assert caught, "sim:paper at 23 steps in one chunk deviates somewhere"
    assert all(d["kind"] and d["action"] for d in caught)
    assert any(d["rung"] for d in caught)


def test_procedures_task_over_a_users_folder(stub: StubServer, tmp_path: Path) -> None:
    """The suite task over a folder of procedure files (one with the user's own prompt file) scores as bench run does."""
    folder = tmp_path / "mine"
    folder.mkdir()
    for name in ("invoice.yaml", "invoice.inputs.yaml", "shipping.yaml", "shipping.inputs.yaml", "shipping.prompt.yaml"):
        shutil.copy(ROOT / "benchmarks" / "production" / name, folder / name)
    for mode in ("raw", "guarded"):
        run_dir = tmp_path / mode
        run_dir.mkdir()
        log = _inspect(stub, run_dir, "stepguard/procedures", f"stepguard/{mode}", "-T", f"path={folder}")
        _agree(log, _bench(stub, run_dir, folder, mode))


def test_guarded_solver_refuses_a_bad_option(stub: StubServer, tmp_path: Path) -> None:
    cmd = [str(BIN / "inspect"), "eval", "stepguard/procedural", "-T", "steps=5", "-T", "lookbacks=1", "-T", "per_config=1",
           "--solver", "stepguard/guarded", "-S", "ladder=nosuchrung", "--model", "openai-api/stub/simpaper",
           "--model-base-url", stub.base_url, "--log-dir", str(tmp_path / "logs"), "--display", "none"]
    done = subprocess.run(cmd, cwd=tmp_path, env={**os.environ, "STUB_API_KEY": "unused"}, capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "nosuchrung" in done.stdout + done.stderr
