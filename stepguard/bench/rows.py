"""Result rows of the run store: what one instance's raw or guarded execution records.

Both modes share the keys the report reads: ``id``, ``n_steps``, ``lookback``, ``mode``,
``instance_sha256`` (:func:`instance_sha256`; rows written before it existed lack it),
``first_answer``, ``correct``, ``exact``, ``labels``, ``usage`` (``model_calls``,
``input_tokens``, ``output_tokens``, ``cached_tokens``, ``model_s``, ``wall_s``), ``simulated``.

``correct`` in raw mode: the first answer equals the expected answer (benchmark.md). In guarded
mode: the run ended ``verified`` and its answer equals the expected answer; ``first_answer_correct``
(the answer equals the expected one, whatever its provenance) and ``verified_correct`` (every step
``model_verified``, every value right, nothing repaired) are kept beside it. A value the guard
supplied (``repaired``) never counts as the model's.

:func:`caught_deviations` reads back, from a guarded row, each deviation the guard caught, what
the policy did and how the step ended (what the report counts per configuration).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from decimal import Decimal
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, get_args

from stepguard.errors import EvaluationError
from stepguard.evaluator import parse_number
from stepguard.model import ChatResponse
from stepguard.verify import FAILURE_LABELS

if TYPE_CHECKING:
    from stepguard.bench.instances import Instance
    from stepguard.bench.suites import ProcedureCase
    from stepguard.guard import GuardResult
    from stepguard.verify import Score

__all__ = ["ACTIONS", "ENDINGS", "MAX_TEXT_CHARS", "CaughtDeviation", "caught_deviations", "error_row", "guarded_row", "instance_sha256",
           "raw_row", "row_grades", "same_value"]

MAX_TEXT_CHARS = 100_000
"""Raw-mode generations are stored up to this many characters (``text_truncated`` marks a cut)."""

ACTIONS: tuple[str, ...] = ("reprompt", "repair", "flag", "raise", "note")
"""What the policy did about a deviation (:attr:`stepguard.guard.DeviationEvent.action`), in report order."""

Ending = Literal["verified", "repaired", "flagged", "stopped"]
ENDINGS: tuple[str, ...] = get_args(Ending)
"""How a caught deviation ended, from its step's final provenance: ``verified`` (the model's value
then verified: ``model_verified`` or ``unverifiable``), ``repaired`` (the guard supplied the value),
``flagged`` (kept unverified), ``stopped`` (no value: the run stopped first). A deviation of no step
ends as the run did (``verified``, ``repaired``, ``flagged``; ``failed`` reads ``stopped``)."""

_ENDING_OF = {"model_verified": "verified", "unverifiable": "verified", "repaired": "repaired", "flagged": "flagged",
              "missing": "stopped", "verified": "verified", "failed": "stopped"}


class CaughtDeviation(NamedTuple):
    """One deviation the guard caught in a guarded run."""

    kind: str
    """A :data:`~stepguard.verify.DeviationKind`."""
    action: str
    """One of :data:`ACTIONS`."""
    ended: str | None
    """One of :data:`ENDINGS`; ``None`` when the row holds no guard result to tell."""


def caught_deviations(row: dict[str, Any]) -> list[CaughtDeviation]:
    """The deviations a guarded row records, in the order the guard caught them.

    Args:
        row: a run-store result row (``[]`` for a raw-mode row).

    Returns:
        One :class:`CaughtDeviation` per event of ``row["guard"]["deviations"]`` (a digit rung's
        ``read`` record is not one); a row without the guard result (written by a foreign tool) gives
        one per ``deviation_counts`` entry, action ``reprompt``, ended ``None``.
    """
    guard = row.get("guard")
    if not isinstance(guard, dict):
        counts = row.get("deviation_counts") or {}
        return [CaughtDeviation(kind, "reprompt", None) for kind, k in counts.items() for _ in range(int(k))]
    provenance = {s.get("var"): s.get("provenance") for s in guard.get("steps") or ()}
    status = guard.get("status")
    out = []
    for d in guard.get("deviations") or ():
        if d.get("action") == "read":  # a value read by a digit rung: a record, not a deviation caught
            continue
        end = provenance.get(d.get("step")) if d.get("step") in provenance else status
        out.append(CaughtDeviation(str(d.get("kind")), str(d.get("action", "reprompt")), _ENDING_OF.get(str(end))))
    return out


def row_grades(row: dict[str, Any]) -> Counter[str]:
    """A guarded row's committed values by grade: its ``grades``, or for a row written before grades, its
    steps' grades read from their provenance (:func:`stepguard.guard.provenance_grade`)."""
    given = row.get("grades")
    if isinstance(given, dict):
        return Counter({str(k): int(v) for k, v in given.items()})
    from stepguard.guard import provenance_grade

    steps = (row.get("guard") or {}).get("steps") or ()
    return Counter(g for s in steps if isinstance(s, dict) for g in [s.get("grade") or provenance_grade(str(s.get("provenance")))] if g)


def same_value(text: str | None, expected: Any) -> bool:
    """Does the value text equal ``expected`` exactly, compared as what ``expected`` is: a boolean
    as ``true``/``false`` (the guard's text of one), a string as the text, a number as a number."""
    if text is None:
        return False
    if isinstance(expected, bool):
        return _BOOL_TEXT.get(text.strip().lower()) is expected
    if isinstance(expected, str):
        return text.strip() == expected.strip()
    try:
        want = expected if isinstance(expected, (int, float)) and not isinstance(expected, bool) else parse_number(str(expected))
        return parse_number(text) == want
    except (EvaluationError, ValueError, TypeError):
        return text.strip() == str(expected).strip()


_BOOL_TEXT = {"true": True, "false": False}


def instance_sha256(inst: Instance | ProcedureCase) -> str:
    """sha256 (hex) of an instance's or a case's canonical JSON (``model_dump_json``): what a row
    records as ``instance_sha256``, so rows of two runs are paired only on the same instance content."""
    return hashlib.sha256(inst.model_dump_json().encode("utf-8")).hexdigest()


def _base(inst: Instance | ProcedureCase, mode: str) -> dict[str, Any]:
    out = {"id": inst.id, "n_steps": inst.n_steps, "lookback": inst.lookback, "mode": mode, "instance_sha256": instance_sha256(inst)}
    from stepguard.bench.suites import ProcedureCase

    if isinstance(inst, ProcedureCase):  # a suite's case: what the per-case table shows beside the answers
        out["procedure"] = inst.procedure_name
        out["inputs"] = {k: _plain(inst.written.get(k, v)) for k, v in inst.inputs.items()}  # as the input set writes them: 1.50
        out["expected_answer"] = _plain(inst.answer)
    return out


def _plain(value: Any) -> Any:
    """A value as JSON writes it in a row: text, a boolean, a whole number, else a decimal's text."""
    from stepguard.evaluator import format_number

    if isinstance(value, (str, bool)) or type(value) is int:
        return value
    return str(value) if isinstance(value, Decimal) else format_number(value)


def raw_row(inst: Instance | ProcedureCase, resp: ChatResponse, score: Score, wall_s: float) -> dict[str, Any]:
    """The row of one raw-mode generation.

    Args:
        inst: the instance.
        resp: the model's reply.
        score: :func:`stepguard.verify.score_generation` of ``resp.text``.
        wall_s: seconds from the request to the score.

    Returns:
        A JSON-ready dict: the shared keys, the :class:`~stepguard.verify.Score` fields, ``text``
        (at most :data:`MAX_TEXT_CHARS` characters), ``finish_reason``, ``latency_s``.
    """
    fields = score.model_dump(mode="json")
    for k in ("id", "n_steps", "lookback"):
        fields.pop(k, None)
    u = resp.usage
    return {
        **_base(inst, "raw"),
        **fields,
        "text": resp.text[:MAX_TEXT_CHARS],
        "text_truncated": len(resp.text) > MAX_TEXT_CHARS,
        "finish_reason": resp.finish_reason,
        "latency_s": round(resp.latency_s, 6),
        "usage": {
            "model_calls": 1, "input_tokens": u.input_tokens, "output_tokens": u.output_tokens,
            "cached_tokens": u.cached_tokens, "model_s": round(resp.latency_s, 6), "wall_s": round(wall_s, 6),
        },
        "simulated": bool(resp.simulated),
    }


def guarded_row(inst: Instance | ProcedureCase, result: GuardResult, stopped: str | None = None) -> dict[str, Any]:
    """The row of one guarded execution.

    Args:
        inst: the instance.
        result: the guard's result (also a partial one from ``StepDeviation`` / ``BudgetExhausted``).
        stopped: why the guard raised (``"deviation"``, ``"budget:<name>"``), else ``None``.

    Returns:
        A JSON-ready dict: the shared keys (``labels`` are the raw-mode kinds the guard caught,
        ``deviation_counts`` every kind), ``first_answer_correct``, ``verified_correct``,
        ``status``, ``reprompts``, ``chunks``, ``repaired``, ``steps_model_verified``, ``grades`` (how
        many committed values have each grade: ``{"bounded": 1, "exact": 4}``),
        ``step_values_correct``, ``first_error_step`` / ``first_error_position`` (the first step
        not model-verified), and ``guard``: the whole :class:`~stepguard.guard.GuardResult`.
    """
    expected = inst.expected
    right = [s.provenance == "model_verified" and same_value(s.text, expected.get(s.var)) for s in result.steps]
    answer_right = same_value(result.answer_text, inst.answer)
    verified_correct = result.status == "verified" and result.repaired == 0 and all(right)
    kinds: Counter[str] = Counter(d.kind for d in result.deviations if d.action != "read")  # a read event is a record
    first_bad = next((i for i, ok in enumerate(right) if not ok), None)
    return {
        **_base(inst, "guarded"),
        "status": result.status,
        "first_answer": result.answer_text,
        "correct": result.status == "verified" and answer_right,
        "first_answer_correct": answer_right,
        "verified_correct": verified_correct,
        "exact": all(right) and result.repaired == 0,
        "labels": [k for k in FAILURE_LABELS if kinds.get(k)],
        "deviation_counts": dict(sorted(kinds.items())),
        "steps_model_verified": sum(s.provenance == "model_verified" for s in result.steps),
        "grades": dict(sorted(Counter(s.grade for s in result.steps if s.grade is not None).items())),
        "step_values_correct": sum(right),
        "first_error_step": result.steps[first_bad].var if first_bad is not None else None,
        "first_error_position": first_bad + 1 if first_bad is not None else None,
        **({"deviated_at": _guarded_deviation(result, first_bad, expected)} if hasattr(inst, "procedure") else {}),
        "reprompts": result.reprompts,
        "chunks": result.chunks,
        "repaired": result.repaired,
        "stopped": stopped,
        "usage": result.usage.model_dump(mode="json"),
        "simulated": bool(result.simulated),
        "guard": result.model_dump(mode="json"),
    }


def _guarded_deviation(result: GuardResult, first_bad: int | None, expected: dict[str, Any]) -> dict[str, Any] | None:
    """A suite case's guarded row: where the run first went unverified (the report's per-case table),
    ``{"step", "how", "wrote", "expected", "kinds"}`` (``how``: the step's provenance, ``kinds``: the
    deviations caught at that step), or ``None`` when every value is model-verified and right."""
    if first_bad is None:
        return None
    step = result.steps[first_bad]
    kinds = sorted({d.kind for d in result.deviations if d.step == step.var and d.action != "read"})
    want = expected.get(step.var)
    return {"step": step.var, "how": step.provenance, "wrote": step.text, "expected": None if want is None else _plain(want),
            "kinds": kinds}


def error_row(inst: Instance | ProcedureCase, mode: str, exc: BaseException, attempt_s: float) -> dict[str, Any]:
    """The errors.jsonl row of a failed attempt: ``{id, n_steps, lookback, mode, error, error_type, attempt_s}``."""
    return {**_base(inst, mode), "error": str(exc)[:2000], "error_type": type(exc).__name__, "attempt_s": round(attempt_s, 3)}
