"""The Inspect scorer ``stepguard/fidelity``: the benchmark's measures of one sample, as ``bench run`` counts them.

Its value is :func:`stepguard.bench.case.row_outcomes` of the row the solver made (each 0 or 1):
``correct`` (raw: the first answer right; guarded: verified and right), ``first_answer`` (the answer
right whatever its provenance), ``exact`` (exact-step execution), ``verified`` (raw: the first answer
right; guarded: verified completion) and one per failure label of the deviation taxonomy
(``premature_answer``, ``arithmetic_error``, ...). Each has the metric ``mean``, the first four
also ``stderr``. The score's metadata holds each step's verdict (what was written, what was right;
guarded: the provenance, the re-prompts and each deviation the guard caught with the rung it sent),
the status and the usage, so ``inspect view`` shows where a run deviated and what the guard did.
"""

from __future__ import annotations

from typing import Any

from inspect_ai.scorer import Metric, Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

from stepguard.bench.case import OUTCOMES, row_outcomes, step_verdicts

from ._samples import case_of
from ._solvers import ROW_KEY

__all__ = ["fidelity"]

_HEADLINE = ("correct", "first_answer", "exact", "verified")
_METRICS: dict[str, list[Metric]] = {name: [mean(), stderr()] if name in _HEADLINE else [mean()] for name in OUTCOMES}


@scorer(metrics=_METRICS)
def fidelity() -> Scorer:
    """Score a sample run by ``stepguard/raw`` or ``stepguard/guarded`` (the row in its store).

    Raises:
        ValueError: the sample was not run by a stepguard solver (no row in its store).
    """

    async def score(state: TaskState, target: Target) -> Score:
        row: dict[str, Any] | None = state.store.get(ROW_KEY)
        if row is None:
            raise ValueError("stepguard/fidelity scores samples run by the stepguard/raw or stepguard/guarded solver; "
                             f"sample {state.sample_id!r} has no stepguard row (run it with --solver stepguard/raw or stepguard/guarded)")
        steps = step_verdicts(case_of(state.metadata), row)
        first_wrong = next((s["var"] for s in steps if s["verdict"] != "right"), None)
        meta = {
            "mode": row["mode"], "status": row.get("status"), "stopped": row.get("stopped"), "labels": row.get("labels", []),
            "first_error_step": row.get("first_error_step") or first_wrong, "steps": steps,
            "reprompts": row.get("reprompts", 0), "repaired": row.get("repaired", 0), "usage": row.get("usage"),
            "simulated": row.get("simulated", False),
        }
        return Score(value=row_outcomes(row), answer=None if row.get("first_answer") is None else str(row["first_answer"]),
                     explanation=_explain(row, steps, target.text), metadata=meta)

    return score


def _explain(row: dict[str, Any], steps: list[dict[str, Any]], expected: str) -> str:
    """One paragraph: the answer against the expected one, how the run ended and where it first went wrong."""
    answer = row.get("first_answer")
    parts = [f"{row['mode']}: answer {answer if answer is not None else '(none)'}, expected {expected}"]
    if row["mode"] == "guarded":
        parts.append(f"status {row.get('status')}, {row.get('reprompts', 0)} re-prompts, {row.get('repaired', 0)} repaired")
    labels = [lb for lb in row.get("labels") or () if lb != "exact"]
    if labels:
        parts.append("labels " + ", ".join(labels))
    wrong = next((s for s in steps if s["verdict"] != "right"), None)
    if wrong is not None:
        parts.append(f"first step not right: {wrong['var']} wrote {wrong['wrote']}, expected {wrong['expected']}")
    return "; ".join(parts)
