"""Raw mode as an lm-evaluation-harness task: `lm-eval run` with the written task folder against the
stub server through `local-chat-completions` sends the requests `stepguard bench run --mode raw`
sends, and its metrics, sample by sample, are bench run's on the same replies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("lm_eval")

from stepguard.adapters.lm_eval import process_results, write_task
from stepguard.bench.case import OUTCOMES, row_outcomes
from stepguard.bench.generate import generate_instance
from tests._stub_server import StubServer

BIN = Path(sys.executable).parent
pytestmark = pytest.mark.slow


def _sent(requests: list[dict[str, Any]]) -> list[str]:
    """What decides the stub's reply to each request: the messages, seed and temperature."""
    return sorted(json.dumps([r["messages"], r.get("seed"), float(r.get("temperature") or 0)]) for r in requests)


@pytest.mark.slow
def test_lm_eval_run_scores_what_bench_run_scores(tmp_path: Path) -> None:
    instances = tmp_path / "instances.jsonl"
    subprocess.run([sys.executable, "-m", "stepguard.cli", "bench", "generate", "--out", str(instances), "--steps", "5,23",
                    "--lookback", "1,7", "--per-config", "3"], check=True, capture_output=True, timeout=120)
    task_dir = tmp_path / "task"
    subprocess.run([sys.executable, "-m", "stepguard.adapters.lm_eval", "--instances", str(instances), "--out", str(task_dir)],
                   check=True, capture_output=True, timeout=120)
    with StubServer() as stub:
        cmd = [str(BIN / "lm-eval"), "run", "--tasks", "stepguard_raw", "--include_path", str(task_dir),
               "--model", "local-chat-completions", "--model_args", f"model=simpaper,base_url={stub.base_url}/chat/completions",
               "--apply_chat_template", "--output_path", str(tmp_path / "out"), "--log_samples"]
        env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
        done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=400)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        lm_eval_sent = _sent(stub.requests)
        stub.requests.clear()
        bench = subprocess.run([sys.executable, "-m", "stepguard.cli", "bench", "run", "--instances", str(instances), "--mode", "raw",
                                "--model", f"{stub.base_url}#simpaper", "--out", str(tmp_path / "raw")],
                               capture_output=True, text=True, timeout=240)
        assert bench.returncode == 0, bench.stderr
        assert _sent(stub.requests) == lm_eval_sent  # the same prompt, seed and temperature for every instance
    rows = {r["id"]: r for r in map(json.loads, (tmp_path / "raw" / "results.jsonl").read_text().splitlines())}
    assert 0 < sum(r["correct"] for r in rows.values()) < len(rows)  # the stub model errs: not an all-right comparison
    (samples_file,) = (tmp_path / "out").rglob("samples_stepguard_raw_*.jsonl")
    samples = [json.loads(line) for line in samples_file.read_text().splitlines()]
    assert {s["doc"]["id"] for s in samples} == set(rows)
    for s in samples:
        assert {m: s[m] for m in OUTCOMES} == row_outcomes(rows[s["doc"]["id"]]), s["doc"]["id"]
    (results_file,) = (tmp_path / "out").rglob("results_*.json")
    results = json.loads(results_file.read_text())["results"]["stepguard_raw"]
    for m in OUTCOMES:
        assert results[f"{m},none"] == pytest.approx(sum(row_outcomes(r)[m] for r in rows.values()) / len(rows)), m


def test_process_results_scores_the_reply_without_the_expected_values_in_the_prompt(tmp_path: Path) -> None:
    inst = generate_instance(5, 1, seed=0, index=0)
    instances = tmp_path / "one.jsonl"
    instances.write_text(inst.model_dump_json() + "\n")
    write_task(instances, tmp_path / "task")
    doc = json.loads((tmp_path / "task" / "stepguard_raw.jsonl").read_text())
    assert str(inst.expected["S4"]) not in doc["user"].split("Procedure:")[1]  # the prompt gives expressions, never values
    right = "\n".join(f"{v} = {inst.expected[v]}" for v in inst.expected) + f"\nFinal answer: {inst.answer}"
    assert process_results(doc, [right])["correct"] == 1 and process_results(doc, [right])["exact"] == 1
    early = f"Final answer: {inst.answer + 1}"
    got = process_results(doc, [early])
    assert got["correct"] == 0 and got["exact"] == 0 and got["premature_answer"] + got["under_executed"] >= 1


def test_write_task_refuses_an_empty_file_and_a_bad_name(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(ValueError, match="no instances"):
        write_task(empty, tmp_path / "t")
    with pytest.raises(ValueError, match="task name"):
        write_task(empty, tmp_path / "t", name="a b")
