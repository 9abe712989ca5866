"""``stepguard init`` and ``stepguard check``: write a starter procedure file, and validate one.

``init`` writes a commented YAML procedure that explains every field; ``check`` loads a file with
the same loader the guard uses and prints, step by step, what the guard will verify. Errors name
the file, the step and the field (``invoice.yaml: steps[2].expr (tax): reads 'rat', ...``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from stepguard.cli._exit import ExitCode, fail
from stepguard.errors import ProcedureError

if TYPE_CHECKING:
    from stepguard.procedure import Procedure

__all__ = ["STARTER", "bounded_warnings", "check_command", "describe_step", "init_command", "register"]

STARTER = """\
# A stepguard procedure. Reference: docs/procedures.md; JSON Schema: docs/schemas/procedure.schema.json
# Validate:  stepguard check {name}
# Run:       stepguard run {name} -i subtotal=100.10 -i rate=0.1 --model sim:paper
#            (sim:paper: the simulated executor, seconds, no set-up; a real model: --model local once
#            `bash scripts/setup.sh` installed it, or --model http://HOST:PORT/v1#NAME for any
#            OpenAI-compatible endpoint)

# name: used in traces, reports and the GuardResult.
name: {stem}
# description: free text for people (optional).
description: Net, tax and total of an invoice, money rounded to cents.

# inputs: NAME: TYPE, or NAME: {{type: TYPE, description: TEXT}}.
# TYPE is number (the default: an int or an exact decimal), integer, decimal, boolean, string or one_of.
inputs:
  subtotal: {{type: decimal, description: "Sum of the line items."}}
  rate: {{type: decimal, description: "Tax rate as a fraction (0.1 = 10%)."}}

# steps: in order; each produces one variable (var) that later steps may read.
steps:
  # expr: the expected-value expression, shown to the model and computed exactly by the safe
  #   evaluator (+ - * / // % **, comparisons, and/or/not, `a if c else b`, abs min max round;
  #   decimal literals such as 0.05 are exact).
  # type/scale/rounding: decimal with `scale` places, rounded ROUND_HALF_EVEN (the default) or
  #   ROUND_HALF_UP; the guard applies the rule to the expected value and to the model's value.
  # check: a predicate over `value` (the model's value) and earlier variables.
  - var: discount
    expr: subtotal * 0.05 if subtotal >= 100 else 0
    type: decimal
    scale: 2
    rounding: ROUND_HALF_UP
    check: 0 <= value <= subtotal
  - var: net
    expr: subtotal - discount
    type: decimal
    scale: 2
  # instruction: natural language shown to the model. With no expr, a check that does NOT mention
  #   `value` is a hidden expected-value expression: the model's value must equal it.
  - var: tax
    instruction: Apply the tax rate to the net amount.
    check: net * rate
    type: decimal
    scale: 2
    rounding: ROUND_HALF_UP
  - var: total
    expr: net + tax
    type: decimal
    scale: 2
  # Other value types (the model's line is read as written: `large_order = true`, `size = large`):
  - var: large_order
    expr: total >= 1000
    type: boolean
  - var: size
    instruction: Classify the order as small, medium or large by its total.
    type: one_of
    choices: [small, medium, large]
    check: value == ('large' if total >= 1000 else 'medium' if total >= 100 else 'small')

# answer: the variable holding the final answer (default: the last step's).
answer: total
"""
"""The commented starter procedure ``stepguard init`` writes (``{name}`` is the file name)."""


def describe_step(procedure: Procedure, index: int) -> list[str]:
    """What the guard verifies for step ``index`` (0-based), as short lines for a person.

    Returns:
        Lines such as ``"expected value: subtotal * rate"``, ``"predicate: 0 <= value <= subtotal"``,
        ``"type: decimal, 2 places, ROUND_HALF_UP"``.
    """
    step = procedure.steps[index]
    lines: list[str] = []
    if step.instruction:
        lines.append(f"instruction: {step.instruction}")
    if step.expression:
        lines.append(f"expected value: {step.expression}  (shown to the model)")
    if step.check and procedure.check_is_expected[index]:
        lines.append(f"expected value: {step.check}  (hidden check, not shown to the model)")
        if step.type != "boolean" and _is_condition(step.check):
            lines.append(f"warning: this check does not mention value, so it is the expected value, and it gives "
                         f"true or false, which a {step.type} step cannot hold; to state a condition the model's "
                         "value must meet, write it over value (such as value > 0)")
    elif step.check:
        lines.append(f"predicate: {step.check}")
    from stepguard.kinds import StepContext, kind_of

    lines += kind_of(step).describe(StepContext(procedure, index))
    kind: str = step.type
    if step.scale is not None:
        kind += f", {step.scale} places, {step.rounding}"
    if step.choices and not step.choices_per_item:
        kind += f", one of {', '.join(step.choices)}"
    lines.append(f"type: {kind}")
    divides = _divides(step.expression) or (procedure.check_is_expected[index] and _divides(step.check))
    if divides and step.scale is None and step.type in ("number", "decimal"):
        lines.append("warning: '/' can give a quotient with no finite decimal form (1 / 3 is 0.333...), which no "
                     "model can write as a value, so such a run is refused; declare type: decimal with a scale "
                     "(scale: 2: the guard rounds the quotient) or round it in the expression (round(..., 2))")
    if step.computes and not step.expression and not step.check:
        lines.append("unverifiable: presence, order and type only (a run with it is flagged, not verified)")
    grade = kind_of(step).grade(StepContext(procedure, index))
    accepted = "  (accepted: named in accept_bounded)" if step.var in procedure.accept_bounded and grade in _WEAK else ""
    lines.append(f"grade: {grade}{accepted}")
    reads = procedure.reads(index)
    if reads:
        lines.append(f"reads: {', '.join(reads)}")
    return lines


def _divides(source: str | None) -> bool:
    """Whether an expression divides (``/``) outside any ``round(...)``: its value may be ``1/3``."""
    import ast

    if not source:
        return False
    try:
        tree = ast.parse(source.strip(), mode="eval")
    except SyntaxError:
        return False

    def walk(node: ast.AST) -> bool:
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "round":
            return False
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            return True
        return any(walk(child) for child in ast.iter_child_nodes(node))

    return walk(tree)


def _is_condition(source: str) -> bool:
    """Whether an expression's result is a truth value whatever the inputs (a comparison, ``and``/``or``, ``not``)."""
    import ast

    try:
        node = ast.parse(source.strip(), mode="eval").body
    except SyntaxError:
        return False
    return (isinstance(node, (ast.Compare, ast.BoolOp)) or (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not))
            or (isinstance(node, ast.Constant) and isinstance(node.value, bool)))


def init_command(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="Where to write the starter procedure.")] = Path("procedure.yaml"),
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a commented starter procedure (YAML) explaining every field; its folder is made if missing.

    Exits 2 where the file exists (without --force) or is not named .yaml/.yml, 7 where it cannot be written.
    """
    if file.suffix.lower() not in (".yaml", ".yml"):
        raise fail(f"{file}: the starter is YAML with comments; name it {file.stem or 'procedure'}.yaml "
                   "(a .json procedure file is read by check and run, but init does not write one)", ExitCode.USAGE)
    if file.exists() and not force:
        typer.echo(f"error: {file} exists (use --force to overwrite)", err=True)
        raise typer.Exit(2)
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(STARTER.format(name=file, stem=file.stem), encoding="utf-8")
    except OSError as exc:
        raise fail(f"{file}: cannot be written ({exc.strerror or exc})", ExitCode.DATA) from None
    typer.echo(f"wrote {file}; next: stepguard check {file}")


def check_command(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="Procedure file (.yaml, .yml, .json).", show_default=False)],
) -> None:
    """Validate a procedure file and print what each step will verify.

    An invalid file exits with 5 and prints every error, each with its location.
    """
    from stepguard.procedure import load_procedure

    try:
        proc = load_procedure(file)
    except ProcedureError as exc:
        raise fail(exc) from None
    inputs = ", ".join(f"{i.name} ({i.type})" for i in proc.inputs) or "none"
    typer.echo(f"{file}: procedure {proc.name!r} is valid: {len(proc.steps)} step{'s' if len(proc.steps) != 1 else ''}; inputs {inputs}; answer {proc.answer_var}")
    for i, step in enumerate(proc.steps):
        typer.echo(f"  {i + 1}. {step.var}")
        for line in describe_step(proc, i):
            typer.echo(f"       {line}")
    for line in bounded_warnings(proc):
        typer.echo(line)


_WEAK = ("bounded", "free_text")
_WHY = {"bounded": "its only check is a predicate, which any value in range passes",
        "free_text": "only its format is checked (length, pattern, choices, schema, predicate)"}


def bounded_warnings(procedure: Procedure) -> list[str]:
    """One ``warning:`` line for each step graded ``bounded`` or ``free_text`` that the procedure does not
    name in ``accept_bounded``: a run with its value ends ``bounded``, not ``verified`` (docs/concepts.md, Grades)."""
    from stepguard.kinds import StepContext, bounded_steps, kind_of

    out = []
    for var in bounded_steps(procedure):
        i = procedure.index_of[var]
        grade = kind_of(procedure.steps[i]).grade(StepContext(procedure, i))
        out.append(f"warning: step {var} is graded {grade}: {_WHY[grade]}, so it proves no one value; a run "
                   f"ends bounded (exit 8), not verified, unless the procedure accepts it: accept_bounded: [{var}]")
    return out


def register(app: typer.Typer) -> None:
    """Add ``init`` (:func:`init_command`) and ``check`` (:func:`check_command`) to ``app``."""
    app.command("init")(init_command)
    app.command("check")(check_command)
