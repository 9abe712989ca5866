"""The benchmark's raw mode as an lm-evaluation-harness task (``pip install "stepguard[lmeval]"``).

:func:`write_task` writes a task folder for an instances file: the YAML task (stepguard's raw
prompt, its system message as the task's ``description``; temperature 0, seed 0, no stop
sequence), the cases as a JSONL dataset and a two-line ``utils.py`` whose ``process_results`` is
:func:`process_results` here, stepguard's scorer, so the task's metrics are the benchmark's::

    python -m stepguard.adapters.lm_eval --instances instances.jsonl --out lmeval_task/
    lm-eval run --tasks stepguard_raw --include_path lmeval_task/ --model local-chat-completions \\
        --model_args model=NAME,base_url=http://host/v1/chat/completions --apply_chat_template

Guarded mode makes many model calls a sample, which an lm-eval task does not; it runs in Inspect AI
(``stepguard.adapters.integrations.inspect``). Figures and the one difference from ``bench run`` (one token cap
for the whole task): docs/lm-eval.md.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from stepguard.bench.case import OUTCOMES, raw_case_row, raw_max_tokens, raw_request, row_outcomes
from stepguard.bench.instances import Instance, iter_instances
from stepguard.bench.run import RAW_TOKENS_PER_STEP
from stepguard.model import ChatResponse

__all__ = ["TASK_NAME", "process_results", "write_task"]

TASK_NAME = "stepguard_raw"
"""The task's name unless :func:`write_task` is given another."""

_HIGHER_IS_BETTER = ("correct", "first_answer", "exact", "verified")


def process_results(doc: dict[str, Any], results: list[str]) -> dict[str, int]:
    """lm-eval's ``process_results``: the reply scored as ``stepguard bench run --mode raw`` scores it.

    Args:
        doc: one line of the task's dataset (``instance``: the instance's JSON text).
        results: the generations for the doc; the first is scored.

    Returns:
        :func:`stepguard.bench.case.row_outcomes` of the row: ``correct``, ``first_answer``,
        ``exact``, ``verified`` and one per failure label, each 0 or 1.

    Raises:
        ProcedureError: ``doc["instance"]`` is not a valid instance.
    """
    inst = Instance.model_validate_json(doc["instance"])
    return row_outcomes(raw_case_row(inst, ChatResponse(results[0] if results else "")))


def write_task(instances: str | Path, out_dir: str | Path, *, name: str = TASK_NAME,
               tokens_per_step: int = RAW_TOKENS_PER_STEP) -> Path:
    """Write an lm-eval task folder for the instances of a JSONL file.

    Args:
        instances: an instances file (``stepguard bench generate``).
        out_dir: the folder to write (``--include_path``); made if missing; its three files replaced.
        name: the task's name (``--tasks``).
        tokens_per_step: the token allowance per step; the task's one ``max_gen_toks`` is the cap
            raw mode gives the longest instance (lm-eval has one cap per task).

    Returns:
        The YAML file written.

    Raises:
        ProcedureError: a bad instances line (names the file and line).
        ValueError: no instances, or a name that is not a plain identifier.
    """
    if not name.replace("_", "").replace("-", "").isalnum():
        raise ValueError(f"task name {name!r}: use letters, digits, '_' and '-'")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    longest = 0
    data = out / f"{name}.jsonl"
    with data.open("w", encoding="utf-8", newline="\n") as fh:
        for inst in iter_instances(instances):
            messages, _ = raw_request(inst, tokens_per_step)
            system = next((m["content"] for m in messages if m["role"] == "system"), "")
            user = "\n\n".join(m["content"] for m in messages if m["role"] == "user")
            fh.write(json.dumps({"id": inst.id, "instance": inst.model_dump_json(), "system": system, "user": user,
                                 "answer": str(inst.answer)}) + "\n")
            longest = max(longest, inst.n_steps)
    if longest == 0:
        raise ValueError(f"{instances}: no instances")
    (out / "utils.py").write_text('"""stepguard\'s scorer for this task (written by stepguard.adapters.lm_eval.write_task)."""\n\n'
                                  "from stepguard.adapters.lm_eval import process_results  # noqa: F401\n", encoding="utf-8")
    metrics = "".join(f"  - metric: {m}\n    aggregation: mean\n    higher_is_better: {'true' if m in _HIGHER_IS_BETTER else 'false'}\n"
                      for m in OUTCOMES)
    yaml_file = out / f"{name}.yaml"
    yaml_file.write_text(
        f"# stepguard's raw mode (docs/lm-eval.md), written by stepguard.adapters.lm_eval.write_task from {Path(instances).name}\n"
        f"task: {name}\n"
        "dataset_path: json\n"
        "dataset_kwargs:\n"
        f"  data_files:\n    test: {json.dumps(str(data.resolve()))}\n"
        "test_split: test\n"
        "output_type: generate_until\n"
        "description: system\n"
        "doc_to_text: user\n"
        "doc_to_target: answer\n"
        "process_results: !function utils.process_results\n"
        "generation_kwargs:\n"
        "  until: []\n"
        "  do_sample: false\n"
        "  temperature: 0\n"
        "  seed: 0\n"
        f"  max_gen_toks: {raw_max_tokens(longest, tokens_per_step)}\n"
        "metric_list:\n" + metrics
        + "metadata:\n  version: 1.0\n",
        encoding="utf-8")
    return yaml_file
