"""Run one example procedure raw and guarded on the same model and print both outcomes.

Usage::

    python examples/run_example.py invoice                     # the embedded local model
    python examples/run_example.py tax_brackets --model sim:paper
    python examples/run_example.py refund --model sim:perfect   # an agent workflow: guarded only

Agent workflows (``AGENT_EXAMPLES``: tool, extract and text steps) run guarded only, with the
offline tools of ``examples/agent_tools.py`` given to the guard; raw mode has no tools to call.

Raw mode: the whole procedure in one prompt (``render_raw_prompt``), the reply parsed with
``parse_trace`` and compared, step by step, with the evaluator's expected values. Guarded mode:
``Guard(model).run``, with the settings ``stepguard run`` uses (the defaults by procedure); a
run a budget stops prints its partial result, as the CLI does. Values of steps with a ``scale``
are compared after the step's rounding rule, as the guard does.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from stepguard import BudgetExhausted, Guard, GuardResult, StepDeviation, load_procedure, parse_trace, render_raw_prompt
from stepguard.adapters import load_model
from stepguard.evaluator import format_number
from stepguard.procedure import Procedure, apply_scale
from stepguard.tools import as_decimal
from stepguard.verify import read_raw_value

HERE = Path(__file__).parent
EXAMPLES: dict[str, dict[str, Any]] = {
    "invoice": {"subtotal": "100.10", "rate": "0.1"},
    "medication": {"weight_kg": "72.5", "mg_per_kg": "15", "max_single_mg": "1000", "doses_per_day": 4, "max_daily_mg": "3000"},
    "tax_brackets": {"income": "52345.67"},
    "benchmark_n23": {"x": 6, "y": 10},
}
"""Each example's procedure file (``examples/NAME.yaml``) and the inputs it runs on."""

RECEIPT = """CORNER GROCER
12 March 2026, 14:02
Apples 1.2 kg          3.48
Bread                  2.95
Olive oil 500 ml      11.20
Subtotal              17.63
VAT 7%                 1.23
Total                $18.86
Thank you!"""

ARTICLE = (
    "The city council approved a new bicycle lane network on Tuesday after a two-year study. "
    "The network adds 40 kilometres of protected lanes across six districts. "
    "Construction starts in spring and should finish within three years."
)

AGENT_EXAMPLES: dict[str, dict[str, Any]] = {
    "refund": {"sku": "A-12", "amount": "19.99"},
    "age_power": {"person": "Ada Lovelace"},
    "receipt": {"receipt_text": RECEIPT},
    "summary_count": {"article": ARTICLE},
}
"""Agent-workflow examples (``examples/NAME.yaml``, tools from ``examples/agent_tools.py``) and their inputs."""


def _text(value: Any, places: int | None = None) -> str:
    """A value as the guard shows it: a decimal step's value with its ``places`` (``104.60``)."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    fixed = as_decimal(value, places) if places is not None and not isinstance(value, bool) else None
    return format(fixed, "f") if fixed is not None else format_number(value)


def raw_outcome(procedure: Procedure, inputs: dict[str, Any], model: Any) -> tuple[int, int, str]:
    """Run ``procedure`` in raw mode; return (steps right, steps, first answer text)."""
    expected = procedure.expected_values(inputs)
    reply = model.complete(render_raw_prompt(procedure, procedure.bind_inputs(inputs)))
    trace = parse_trace(reply.text, var_names=procedure.variables)
    got: dict[str, Any] = {}
    for rec in trace.records:
        if rec.var in expected and rec.var not in got:
            got[rec.var] = _read(procedure, rec.var, rec.value, rec)
    right = sum(1 for var, want in expected.items() if got.get(var) == want)
    first = trace.first_answer
    if first is None:
        return right, len(expected), "(none)"
    places = procedure.steps[procedure.index_of[procedure.answer_var]].scale
    return right, len(expected), _text(_read(procedure, procedure.answer_var, first.value, None), places)


def _read(procedure: Procedure, var: str, value: Any, record: Any) -> Any:
    """A model value as the guard reads it: raw text for boolean/string/one_of, the step's rounding for decimals."""
    step = procedure.steps[procedure.index_of[var]]
    if step.type in ("boolean", "string", "one_of") and record is not None:
        return read_raw_value(record, step.type, step.choices)
    return apply_scale(value, step) if step.scale is not None and value is not None else value


def guarded(guard: Guard, procedure: Procedure, inputs: dict[str, Any]) -> GuardResult:
    """``guard.run``, or the partial result a stopped run carries (``stepguard run`` prints it too)."""
    try:
        return guard.run(procedure, inputs)
    except (BudgetExhausted, StepDeviation) as exc:
        if exc.result is None:
            raise
        print(f"stopped: {exc}")
        return exc.result


def main(argv: list[str] | None = None) -> int:
    """Command-line entry: ``run_example.py NAME [--model SPEC]``; returns the exit status."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("name", choices=sorted(EXAMPLES) + sorted(AGENT_EXAMPLES))
    ap.add_argument("--model", default="local", help="model spec: local, sim:paper, http://host/v1#name, ...")
    args = ap.parse_args(argv)
    procedure = load_procedure(HERE / f"{args.name}.yaml")
    if args.name in AGENT_EXAMPLES:
        return run_agent(args.name, procedure, args.model)
    inputs = EXAMPLES[args.name]
    want = procedure.expected_values(inputs).get(procedure.answer_var)
    want_text = _text(want, procedure.steps[procedure.index_of[procedure.answer_var]].scale)
    model = load_model(args.model, procedure=procedure)
    try:
        right, total, first = raw_outcome(procedure, inputs, model)
        result = guarded(Guard(model), procedure, inputs)
    finally:
        close = getattr(model, "close", None)
        if close:
            close()
    sim = "  [SIMULATED: not a model's accuracy]" if getattr(model, "simulated", False) else ""
    print(f"{procedure.name} on {args.model}{sim}; inputs {inputs}; expected {procedure.answer_var} = {want_text}")
    print(f"raw:     {right}/{total} steps right; first answer {first} ({'right' if first == want_text else 'wrong'})")
    print(f"guarded: status {result.status}; answer {result.answer_text} ({'right' if result.answer is not None and result.answer == want else 'wrong'}); "
          f"re-prompts {result.reprompts}; model calls {result.usage.model_calls}")
    for d in result.deviations:
        print(f"  caught at {d.step}: {d.kind} -> {d.action}{' (' + d.rung + ')' if d.rung else ''}")
    return 0


def run_agent(name: str, procedure: Procedure, spec: str) -> int:
    """Run an agent-workflow example guarded, with the offline tools; print each value's provenance."""
    import sys

    sys.path.insert(0, str(HERE))
    from agent_tools import TOOLS

    inputs = AGENT_EXAMPLES[name]
    model = load_model(spec, procedure=procedure)
    try:
        result = guarded(Guard(model, tools=TOOLS), procedure, inputs)
    finally:
        close = getattr(model, "close", None)
        if close:
            close()
    sim = "  [SIMULATED: not a model's accuracy]" if getattr(model, "simulated", False) else ""
    print(f"{procedure.name} on {spec}{sim}")
    print(f"guarded: status {result.status}; answer {procedure.answer_var} = {result.answer_text}; "
          f"re-prompts {result.reprompts}; model calls {result.usage.model_calls}")
    for s in result.steps:
        print(f"  {s.var} = {s.text}  [{s.provenance}]")
    for d in result.deviations:
        print(f"  caught at {d.step}: {d.kind} -> {d.action}: {d.detail}")
    return 0 if result.status == "verified" else 1


if __name__ == "__main__":
    raise SystemExit(main())
