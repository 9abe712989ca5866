"""One benchmark case, executed and scored: the row ``stepguard bench run`` writes, and what it counts.

:func:`arun_case` is what every harness runs for one instance or suite case (``stepguard bench
run``, the Inspect AI tasks in ``stepguard.adapters.integrations.inspect``), so a row means the same wherever
it was made. :func:`row_outcomes` reads a row back as the benchmark's measures: what the report,
``bench compare`` and the Inspect scorer count.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, Literal

from stepguard.bench._rawcase import raw_case_row, raw_max_tokens, raw_request
from stepguard.bench._runmeta import RAW_TOKENS_PER_STEP
from stepguard.bench.compare import METRIC_FIELDS
from stepguard.bench.rows import guarded_row
from stepguard.errors import BudgetExhausted, ModelOutputTruncated, StepDeviation
from stepguard.model import ChatModel, ChatResponse, Usage
from stepguard.verify import FAILURE_LABELS

if TYPE_CHECKING:
    from stepguard.bench.instances import Instance
    from stepguard.bench.suites import ProcedureCase
    from stepguard.guard import Guard, GuardConfig, GuardObserver
    from stepguard.procedure import Procedure

__all__ = ["OUTCOMES", "arun_case", "bound_model", "raw_case_row", "raw_max_tokens", "raw_request", "row_outcomes", "step_verdicts"]

OUTCOMES: tuple[str, ...] = ("correct", "first_answer", "exact", "verified", *FAILURE_LABELS)
"""The measures :func:`row_outcomes` gives, in order: the three of ``bench compare``
(:data:`~stepguard.bench.compare.METRIC_FIELDS`), the first answer right whatever its provenance,
then one per raw-mode failure label (the deviation taxonomy, docs/benchmark.md)."""


def refuse_computed(procedures: Iterable[Procedure]) -> None:
    """Refuse guarded mode on a procedure with a step the evaluator computes (``execute: evaluator``):
    the benchmark measures the model, and such a step's value is never the model's.

    Raises:
        ValueError: names the procedure and its first such step.
    """
    for procedure in procedures:
        step = next((s for s, computed in zip(procedure.steps, procedure.evaluated, strict=True) if computed), None)
        if step is not None:
            raise ValueError(f"procedure {procedure.name!r}: step {step.var!r} is computed by the evaluator (execute: evaluator), "
                             "and guarded mode measures the model: run it in raw mode, or remove execute: evaluator")


def bound_model(model: ChatModel, procedure: Procedure) -> ChatModel:
    """The simulated executor given ``procedure`` (so it follows instruction steps, as ``stepguard
    run`` gives it); any other model unchanged: one serves every case."""
    bind = getattr(model, "for_procedure", None)
    if model.simulated and callable(bind):
        bound: ChatModel = bind(procedure)
        return bound
    return model


async def arun_case(
    inst: Instance | ProcedureCase,
    mode: Literal["raw", "guarded", "reask"],
    model: ChatModel,
    *,
    guard_config: GuardConfig | None = None,
    guard: Guard | None = None,
    raw_tokens_per_step: int = RAW_TOKENS_PER_STEP,
    observer: GuardObserver | None = None,
) -> dict[str, Any]:
    """Execute one case raw or guarded and return its run-store row (:mod:`stepguard.bench.rows`).

    Args:
        inst: a generated instance or a suite's case.
        mode: ``"raw"`` (one request, :func:`raw_request`, scored by
            :func:`stepguard.verify.score_generation`) or ``"guarded"`` (:class:`~stepguard.guard.Guard`;
            a deviation or a spent budget that raises ends the row with ``stopped`` set) or
            ``"reask"`` (Instructor's re-ask loop, :mod:`stepguard.bench.reask`).
        model: the model; a simulated one is bound to the case's procedure.
        guard_config: guarded mode's configuration (``None``: the guard's defaults for the procedure).
        guard: a guard to reuse across cases (guarded mode; ignored for a simulated model, which is
            bound per case).
        raw_tokens_per_step: raw mode's token allowance per step.
        observer: guarded mode's observer.

    Returns:
        The row, JSON-ready.

    Raises:
        ModelError: the model failed (the caller writes an error row).
    """
    t0 = time.perf_counter()
    procedure = inst.to_procedure()
    used = bound_model(model, procedure)
    if mode == "reask":
        from stepguard.bench.reask import arun_reask

        return await arun_reask(inst, used)
    if mode == "raw":
        messages, settings = raw_request(inst, raw_tokens_per_step)
        try:
            resp = await used.acomplete(messages, settings)
        except ModelOutputTruncated as exc:  # an adapter told to raise on truncation: score what came
            resp = ChatResponse(exc.text, Usage(), "length", time.perf_counter() - t0, simulated=model.simulated)
        return raw_case_row(inst, resp, time.perf_counter() - t0)
    from stepguard.guard import Guard

    refuse_computed([procedure])
    if guard is None or used is not model:
        guard = Guard(used, guard_config, observer=observer)
    try:
        result = await guard.arun(procedure, inst.inputs, thread_id=inst.id)
    except StepDeviation as exc:
        return guarded_row(inst, exc.result, "deviation")
    except BudgetExhausted as exc:
        return guarded_row(inst, exc.result, f"budget:{exc.budget}")
    return guarded_row(inst, result)


def row_outcomes(row: dict[str, Any]) -> dict[str, int]:
    """A result row as the benchmark's measures, each 0 or 1 (:data:`OUTCOMES`).

    ``correct``, ``exact`` and ``verified`` read the fields :data:`~stepguard.bench.compare.METRIC_FIELDS`
    names for the row's mode (guarded ``correct``: verified and right; ``verified``: raw first answer
    right, guarded verified completion); ``first_answer``: the answer right whatever its provenance
    (guarded ``first_answer_correct``); each failure label: the row carries it.

    Raises:
        ValueError: the row's ``mode`` is neither ``raw`` nor ``guarded``.
    """
    mode = row.get("mode")
    if mode not in ("raw", "guarded", "reask"):
        raise ValueError(f"a row's mode must be 'raw', 'guarded' or 'reask', not {mode!r}")
    side = 1 if mode == "guarded" else 0  # a reask row is read as a raw one: the answer delivered
    out = {metric: int(bool(row.get(fields[side]))) for metric, fields in METRIC_FIELDS.items()}
    out["first_answer"] = int(bool(row.get("first_answer_correct" if mode == "guarded" else "correct")))
    labels = set(row.get("labels") or ())
    out.update({label: int(label in labels) for label in FAILURE_LABELS})
    return {name: out[name] for name in OUTCOMES}


def step_verdicts(inst: Instance | ProcedureCase, row: dict[str, Any]) -> list[dict[str, Any]]:
    """Each step of a row, as the reader of one sample wants it: what was written and whether it is right.

    Returns:
        One dict a step, in the procedure's order: ``var``, ``wrote`` (the value text, ``None`` when
        the reply or the guard has none), ``expected`` (the right value's text), ``verdict``
        (``"right"``, ``"wrong"`` or ``"missing"``); a guarded row's steps add ``provenance`` and
        ``reprompts`` (:class:`~stepguard.guard.StepOutcome`) and ``deviations``, each
        ``{kind, action, rung, attempt, detail}`` the guard caught at the step.
    """
    from stepguard.bench.rows import same_value
    from stepguard.evaluator import format_number

    expected = inst.expected

    def verdict(wrote: str | None, want: Any) -> str:
        return "missing" if wrote is None else "right" if same_value(wrote, want) else "wrong"

    guard = row.get("guard")
    if isinstance(guard, dict):
        caught: dict[str, list[dict[str, Any]]] = {}
        for d in guard.get("deviations") or ():
            caught.setdefault(str(d.get("step")), []).append(
                {k: d.get(k) for k in ("kind", "action", "rung", "attempt", "detail")})
        out = []
        for s in guard.get("steps") or ():
            var, wrote = s.get("var"), _text_of(s.get("value"))
            out.append({"var": var, "wrote": wrote, "expected": _text_of(expected.get(var)), "verdict": verdict(wrote, expected.get(var)),
                        "provenance": s.get("provenance"), "reprompts": s.get("reprompts", 0), "deviations": caught.get(str(var), [])})
        return out
    from stepguard.trace import parse_trace

    vars_ = [s.var for s in inst.to_procedure().steps]
    first: dict[str, Any] = {}
    for rec in parse_trace(str(row.get("text") or ""), var_names=vars_).records:
        first.setdefault(rec.var, rec)
    steps = []
    for var in vars_:
        found = first.get(var)
        wrote = None if found is None else (found.text if found.value is None else format_number(found.value))
        steps.append({"var": var, "wrote": wrote, "expected": _text_of(expected.get(var)), "verdict": verdict(wrote, expected.get(var))})
    return steps


def _text_of(value: Any) -> str | None:
    """A value as text: a row's JSON value (a number, a decimal's text, a boolean, a string) or an
    instance's expected value (an int, a Decimal, a Fraction)."""
    from decimal import Decimal

    from stepguard.evaluator import format_number

    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, Decimal)):
        return str(value)
    return format_number(value)
