"""The simulated executor's answers for tool, extract and text steps (one step asked alone).

It reads the step's line (``var = CALL tool(sku=sku)``, or ``var = ?    (read it from receipt_text,
after 'Total', ...)``), the ``Known values`` and the ``Text NAME:`` blocks of the prompt, and writes
what a model that follows the step would write: the call with each argument's value (an
expression argument computed from the known values; a free one, the first candidate its predicate
accepts), the value read from the source text, or a first sentence of it. With the procedure it
takes each step's rules from there, else from the prompt's notes. No faults are injected into
these kinds (every preset answers them as ``perfect`` does): their checks are shown by the
scripted-model tests, not by the simulator.
"""

from __future__ import annotations

import ast
import json
import re
from typing import TYPE_CHECKING, Any

from stepguard.errors import EvaluationError
from stepguard.evaluator import compile_expression, format_number, parse_number

if TYPE_CHECKING:
    from stepguard.procedure import Procedure, Step

__all__ = ["answer_kind"]

_STEPS = re.compile(r"^Steps:[ \t]*\n(.*?)(?:\n\n|\Z)", re.M | re.S)
_KNOWN = re.compile(r"^Known values:[ \t]*\n(.*?)(?:\n\n|\Z)", re.M | re.S)
_TEXT = re.compile(r'^Text ([A-Za-z]\w*):\n"""\n(.*?)\n"""', re.M | re.S)
_LINE = re.compile(r"^([A-Za-z]\w*) = (.*?)(?:[ \t]{2,}\((.*)\))?[ \t]*$")
_CALL = re.compile(r"^CALL ([\w.-]+)\((.*)\)$")
_SOURCE = re.compile(r"read it from ([A-Za-z]\w*)(?:, after '([^']*)')?")
_FROM = re.compile(r"\bfrom ([A-Za-z]\w*)")
_MOST = re.compile(r"at most (\d+) (characters|items)")


def _known(prompt: str) -> dict[str, Any]:
    m = _KNOWN.search(prompt)
    env: dict[str, Any] = {}
    for line in (m.group(1).splitlines() if m else ()):
        if " = " in line:
            k, v = line.split(" = ", 1)
            v = v.strip()
            try:
                env[k.strip()] = parse_number(v)
            except EvaluationError:
                env[k.strip()] = {"true": True, "false": False}.get(v.lower(), v)
    for name, body in _TEXT.findall(prompt):
        env[name] = body
    return env


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    return format_number(value)


def _split_args(text: str) -> list[tuple[str, str]]:
    """``sku=sku, n=<string: len(value) <= 3>`` -> ``[("sku", "sku"), ("n", "<string: ...>")]`` (top-level commas)."""
    out, depth, cur = [], 0, ""
    for ch in text + ",":
        if ch == "," and depth == 0:
            if "=" in cur:
                k, v = cur.split("=", 1)
                out.append((k.strip(), v.strip()))
            cur = ""
            continue
        depth += ch in "(<["
        depth -= ch in ")>]" and depth > 0
        cur += ch
    return out


def _free(spec: str, env: dict[str, Any]) -> Any:
    """A value for a free argument ``<type: check>``: the first candidate its predicate accepts."""
    inner = spec.strip("<>")
    type_, _, check = inner.partition(":")
    check = check.strip()
    numeric = type_.strip() in ("integer", "decimal", "number")
    consts: list[Any] = []
    if check:
        try:
            tree = compile_expression(check).tree
            consts = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)]
        except EvaluationError:
            pass
    tries = [c for c in consts if isinstance(c, (int, float)) != (not numeric) and not isinstance(c, bool)]
    tries += [0, 1, 10] if numeric else ["ok", "refund"]
    for value in tries:
        try:
            if not check or compile_expression(check).evaluate({**env, "value": value}) is True:
                return value
        except EvaluationError:
            continue
    return tries[0]


def _tool(var: str, rhs: str, env: dict[str, Any]) -> str | None:
    m = _CALL.match(rhs.strip())
    if m is None:
        return None
    args = []
    for name, src in _split_args(m.group(2)):
        if src.startswith("<"):
            value = _free(src, env)
        else:
            try:
                value = compile_expression(src).evaluate(env)
            except EvaluationError:
                return None
        args.append(f"{name}={_literal(value)}")
    return f"CALL {m.group(1)}({', '.join(args)})"


def _region(source: str, label: str | None) -> list[str]:
    from stepguard.verify._kinds import label_tails

    return label_tails(source, label) if label else source.splitlines()


def _extract(var: str, step: Step | None, notes: str, env: dict[str, Any], procedure: Procedure | None) -> str | None:
    from stepguard.verify._kinds import source_numbers

    m = _SOURCE.search(notes)
    source = step.source if step is not None else (m.group(1) if m else None)
    label = (step.label if step is not None else (m.group(2) if m else None)) or None
    text = env.get(str(source))
    if not isinstance(text, str):
        return None
    lines = _region(text, label)
    string = step is not None and step.type in ("string", "one_of") or (step is None and "a string" in notes)
    candidates: list[Any] = [ln.strip(" :\t") for ln in lines if ln.strip(" :\t")] if string else source_numbers(text, label).exact
    check = procedure.compiled_checks[procedure.index_of[var]] if procedure is not None and step is not None else None
    for value in candidates:
        try:
            if check is None or check.evaluate({**env, "value": value}) is True:
                return f"{var} = {value if isinstance(value, str) else format_number(value)}"
        except EvaluationError:
            continue
    return None


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", " ".join(text.split())) if s.strip()]


def _text(var: str, step: Step | None, notes: str, env: dict[str, Any]) -> str | None:
    fmt = step.format if step is not None else "list" if "JSON list" in notes else "json" if "JSON on one line" in notes else "text"
    m = _FROM.search(notes)
    source = step.source if step is not None else (m.group(1) if m else None)
    text = env.get(str(source)) if source else None
    sentences = _sentences(text) if isinstance(text, str) else ["Done."]
    most = step.max_length if step is not None else (int(_MOST.search(notes).group(1)) if _MOST.search(notes) else None)
    if fmt == "json":
        return f"{var} = {json.dumps({'summary': sentences[0]})}"
    if fmt == "list":
        items = sentences[: most or 3]
        return f"{var} = {json.dumps(items)}"
    first = sentences[0]
    if most is not None and len(first) > most:
        first = first[:most].rsplit(" ", 1)[0]
    return f"{var} = {first}"


def answer_kind(prompt: str, procedure: Procedure | None) -> str | None:
    """The reply to a prompt that asks one tool, extract or text step; ``None`` for any other prompt."""
    m = _STEPS.search(prompt[prompt.rfind("\nSteps:") + 1:] if "\nSteps:" in prompt else prompt)
    if m is None:
        return None
    lines = [ln for ln in m.group(1).splitlines() if ln.strip()]
    if len(lines) != 1:
        return None
    line = _LINE.match(lines[0])
    if line is None:
        return None
    var, rhs, notes = line.group(1), line.group(2), line.group(3) or ""
    step = procedure.steps[procedure.index_of[var]] if procedure is not None and var in procedure.index_of else None
    env = _known(prompt)
    if rhs.startswith("CALL "):
        return _tool(var, rhs, env)
    kind = step.kind if step is not None else "extract" if "read it from" in notes else "text" if "on one line" in notes else "compute"
    if kind == "extract":
        return _extract(var, step, notes, env, procedure)
    if kind == "text":
        return _text(var, step, notes, env)
    return None
