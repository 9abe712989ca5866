"""Checks of the agent-workflow step kinds: tool calls (before they run), extracted values, text.

Each check reads the model's reply (never evaluates it) for one step asked alone, and returns a
:class:`KindVerdict`: the value to commit, the call to execute, every argument's verdict, and the
first deviation. What each kind checks (docs/agent-workflows.md):

* ``tool``: exactly one call, of the step's tool; every argument the step names and no other; an
  expression argument equal to the evaluator's value (exactly: ``"ORD-7"`` is not ``"ORD-9"``,
  ``age ^ 0.23`` as text is not a number); a free argument of its type and passing its predicate.
* ``extract``: the value occurs in the source text (numbers and money read exactly, ``$1,234.50``
  = ``1.234,50`` = ``1234.5``, or not at all when a number could mean two values: ``1,234`` alone,
  ``(18.86)``; dates in ISO or spelled form alike), right after ``label`` when given; then type and predicate.
* ``text``: one line of text (or a JSON list of strings, or JSON), within ``min_length``..``max_length``,
  matching ``pattern``, each item among ``choices``, valid against ``schema``; then the predicate.
"""

from __future__ import annotations

import datetime as _dt
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction
from typing import Any

from stepguard.errors import EvaluationError, ProcedureError
from stepguard.evaluator import Number, format_number, parse_number
from stepguard.procedure import Procedure, ToolArg, apply_scale, coerce_value
from stepguard.tools import ToolCall
from stepguard.trace import parse_trace
from stepguard.verify._deviation import Deviation
from stepguard.verify._source_numbers import SourceNumbers, after_label, scan_numbers

__all__ = ["ArgVerdict", "KindVerdict", "dates_in", "label_tails", "numbers_in", "source_numbers", "verify_extract", "verify_text", "verify_tool_call"]

_MAX_VALUE = 20_000


@dataclass(frozen=True)
class ArgVerdict:
    """The check of one tool argument: ``ok``, and why not (or what it was checked against)."""

    name: str
    ok: bool
    detail: str
    value: str | None = None


@dataclass
class KindVerdict:
    """The outcome of checking one tool, extract or text step.

    Attributes:
        value: the checked value to commit (extract, text), else ``None``.
        call: the accepted tool call, arguments as the evaluator computes them (tool), else ``None``.
        args: every argument's verdict, in the step's order (tool).
        deviation: the first deviation, or ``None``.
        model_value: what the model wrote, when it wrote a value.
    """

    value: Number | str | None = None
    call: ToolCall | None = None
    args: list[ArgVerdict] = field(default_factory=list)
    deviation: Deviation | None = None
    model_value: str | None = None


def _show(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return repr(v[:80])
    return format_number(v)


def _same(want: Number | str | bool, got: Number | str | bool) -> bool:
    """Exact equality; a numeric string the model wrote for a number counts as that number."""
    if isinstance(want, bool) or isinstance(got, bool):
        return isinstance(want, bool) and isinstance(got, bool) and want == got
    if isinstance(want, str):
        return isinstance(got, str) and got == want
    if isinstance(got, str):
        try:
            got = parse_number(got.strip())
        except EvaluationError:
            return False
    return got == want


def verify_tool_call(procedure: Procedure, index: int, env: Mapping[str, Number | str], calls: Sequence[ToolCall], reply: str = "") -> KindVerdict:
    """Check the tool call(s) a reply holds for tool step ``index``, before anything is executed.

    Args:
        procedure: the procedure; ``procedure.steps[index].kind == "tool"``.
        index: 0-based step index.
        env: committed values (inputs and verified variables).
        calls: the reply's calls (:func:`stepguard.tools.parse_calls` or native ones).
        reply: the reply text (to say what the model wrote instead of a call).

    Returns:
        A :class:`KindVerdict`; its ``call`` (set only when every check passed) carries the
        evaluator's values of the expression arguments and the model's values of the free ones.
    """
    step = procedure.steps[index]
    var, tool = step.var, str(step.tool)
    out = KindVerdict()
    if not calls:
        wrote = reply.strip().splitlines()[0][:120] if reply.strip() else ""
        why = f"; the reply `{wrote}` holds no call (a value written by the model is not the tool's result)" if wrote else ""
        out.deviation = Deviation(kind="under_executed", step=var, detail=f"step {var} needs one call of tool {tool}{why}", got=wrote or None)
        return out
    broken = next((c for c in calls if c.error), None)
    if broken is not None:
        out.deviation = Deviation(kind="bad_argument", step=var, detail=f"call {broken.text[:120]!r}: {broken.error}", got=broken.text[:200])
        return out
    other = next((c for c in calls if c.name != tool), None)
    if other is not None:
        out.deviation = Deviation(kind="wrong_tool", step=var, detail=f"step {var} calls {tool}, not {other.name}", got=other.text[:200])
        return out
    if len(calls) > 1:
        out.deviation = Deviation(kind="repeated_call", step=var, detail=f"{tool} was called {len(calls)} times; call it once", got=calls[1].text[:200])
        return out
    call = calls[0]
    specs = procedure.compiled_args[index]
    checked: dict[str, Number | str | bool] = {}
    for name, spec in specs.items():
        if name not in call.args:
            out.args.append(ArgVerdict(name, False, f"argument {name} is missing"))
            continue
        got = call.args[name]
        if isinstance(spec, ToolArg):
            verdict, value = _free_arg(name, spec, got, env)
        else:
            try:
                want = spec.evaluate(env)
            except EvaluationError as exc:
                verdict, value = ArgVerdict(name, False, f"argument {name} cannot be evaluated: {exc}", _show(got)), None
            else:
                ok = _same(want, got)
                said = f"{name} = {spec.source}"
                verdict = ArgVerdict(name, ok, f"{said}: checked exactly" if ok else f"argument {name} = {_show(got)} is not {spec.source}"
                                     + (" (the value of that known variable)" if spec.names else ""), _show(got))
                value = want
        out.args.append(verdict)
        if verdict.ok and value is not None:
            checked[name] = value
    for name in call.args:
        if name not in specs:
            out.args.append(ArgVerdict(name, False, f"argument {name} is not an argument of step {var} (its arguments: {', '.join(specs) or 'none'})", _show(call.args[name])))
    bad = next((a for a in out.args if not a.ok), None)
    if bad is not None:
        out.deviation = Deviation(kind="bad_argument", step=var, detail=bad.detail, got=call.text[:200])
        return out
    out.call = ToolCall(call.name, checked, call.text)
    return out


def _free_arg(name: str, spec: ToolArg, got: Number | str | bool, env: Mapping[str, Number | str]) -> tuple[ArgVerdict, Any]:
    try:
        value = coerce_value(got if not isinstance(got, Fraction) else Decimal(format_number(got)) if "/" not in format_number(got) else got,
                             spec.type, f"argument {name}")
    except ProcedureError as exc:
        return ArgVerdict(name, False, f"argument {name} must be of type {spec.type} ({exc})", _show(got)), None
    if spec.check is None:
        return ArgVerdict(name, True, f"{name}: free, of type {spec.type}", _show(value)), value
    from stepguard.evaluator import compile_expression

    try:
        ok = compile_expression(spec.check).evaluate({**env, "value": value}) is True
        why = f"check {spec.check!r} is false"
    except EvaluationError as exc:
        ok, why = False, str(exc)
    if not ok:
        return ArgVerdict(name, False, f"argument {name} = {_show(value)}: {why}", _show(value)), None
    return ArgVerdict(name, True, f"{name}: {spec.check}", _show(value)), value


# --- reading a step's line ----------------------------------------------------------------
def _step_line(reply: str, var: str) -> tuple[KindVerdict, str | None]:
    """A verdict for step ``var`` and the text after ``var =`` in ``reply``; ``None`` (and an
    ``under_executed`` deviation in the verdict) when the reply has no such line."""
    out = KindVerdict()
    raw = _line_of(reply, var)
    if raw is None:
        out.deviation = Deviation(kind="under_executed", step=var, detail=f"step {var} is missing", got=reply.strip()[:120] or None)
        return out, None
    out.model_value = raw[:200]
    return out, raw


def _line_of(reply: str, var: str) -> str | None:
    """The right-hand side of the reply's first ``var = ...`` line (markdown marks around it stripped)."""
    pat = re.compile(rf"^[ \t>*_`-]*{re.escape(var)}[ \t*_`]*[=:][ \t]*(.*?)[ \t]*$")
    for line in reply.splitlines():
        if len(line) > _MAX_VALUE:
            continue
        m = pat.match(line)
        if m:
            return m.group(1)
    return None


# --- extract ---------------------------------------------------------------------------------
_MONTHS = {m: i + 1 for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                           "september", "october", "november", "december"))}
_MONTHS.update({k[:3]: v for k, v in list(_MONTHS.items())})
_MON = r"(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\.?"
_DATES = (
    (re.compile(r"\b(\d{4})[-/.](\d{1,2})[-/.](\d{1,2})\b"), "ymd"),
    (re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?[ \t]+{_MON},?[ \t]+(\d{{4}})\b", re.I), "dmy"),
    (re.compile(rf"\b{_MON}[ \t]+(\d{{1,2}})(?:st|nd|rd|th)?,?[ \t]+(\d{{4}})\b", re.I), "mdy"),
    (re.compile(r"\b(\d{1,2})\.(\d{1,2})\.(\d{4})\b"), "dmy_num"),
)


def numbers_in(text: str, context: str | None = None) -> list[Number]:
    """Every number written in ``text`` that reads as exactly one value: ``1,234.50``, ``$1234.5`` and
    ``1.234,50`` are 1234.5, ``–18.86`` and ``-$18.86`` are -18.86; ``1,234`` alone, ``(18.86)``,
    ``3/4`` or ``12 thousand`` are ambiguous and give nothing (rules:
    :mod:`stepguard.verify._source_numbers`). ``context``: the whole document ``text`` is part of,
    whose other numbers decide the decimal mark."""
    return scan_numbers(text, context).exact


def source_numbers(source: str, label: str | None) -> SourceNumbers:
    """The numbers an ``extract`` step's value may be: every number of ``source``, or with a ``label``,
    on each line that has it, the number written right after it (past punctuation, spaces and one
    currency: ``Total: $18.86``, ``Total (EUR): 18,86``; not ``Total due: 18.86`` nor
    ``Total (incl. VAT 7%): 18.86``, whose value the label does not point at)."""
    if not label:
        return scan_numbers(source)
    out = SourceNumbers()
    for tail in label_tails(source, label):
        found = scan_numbers(after_label(tail), source, first_only=True)
        out.exact += found.exact
        out.ambiguous += found.ambiguous
    return out


def _date(y: str, mo: str | int, d: str) -> str | None:
    try:
        month = int(mo) if isinstance(mo, int) or str(mo).isdigit() else _MONTHS[str(mo).lower().rstrip(".")[:3]]
        return _dt.date(int(y), month, int(d)).isoformat()
    except (ValueError, KeyError):
        return None


def dates_in(text: str) -> list[str]:
    """Every date written in ``text``, as ISO ``YYYY-MM-DD``: ``2024-03-05``, ``5 March 2024``,
    ``March 5, 2024``, ``05.03.2024`` (day first). Slash dates such as ``03/05/2024`` are ambiguous and not read."""
    out: list[str] = []
    for pat, order in _DATES:
        for m in pat.finditer(text[:_MAX_VALUE * 50]):
            g = m.groups()
            iso = {"ymd": lambda: _date(g[0], g[1], g[2]), "dmy": lambda: _date(g[2], g[1], g[0]),
                   "mdy": lambda: _date(g[2], g[0], g[1]), "dmy_num": lambda: _date(g[2], g[1], g[0])}[order]()
            if iso:
                out.append(iso)
    return out


def _region(source: str, label: str | None) -> str:
    """The part of ``source`` a value must occur in: all of it, or the text after ``label`` on each line that has it."""
    if not label:
        return source
    return "\n".join(label_tails(source, label))


def label_tails(source: str, label: str) -> list[str]:
    """The text after ``label`` (a whole word or phrase, any case: ``Total`` is not in ``Subtotal``) on each line that has it."""
    pat = re.compile(rf"(?<!\w){re.escape(label)}(?!\w)", re.I)
    out = []
    for line in source.splitlines():
        m = pat.search(line)
        if m:
            out.append(line[m.end():])
    return out


def _text_occurs(value: str, source: str, label: str | None) -> bool:
    text = _region(source, label)
    want = " ".join(value.split()).lower()
    if not want:
        return False
    iso = dates_in(value)
    if iso and len(dates_in(value)) == 1 and iso[0] in dates_in(text):
        return True
    return want in " ".join(text.split()).lower()


def verify_extract(procedure: Procedure, index: int, env: Mapping[str, Number | str], reply: str) -> KindVerdict:
    """Check the value a reply extracts for step ``index`` from its ``source`` text.

    Returns:
        A :class:`KindVerdict` with the value (rounded per the step's ``scale``) or the first
        deviation: ``under_executed`` (no line), ``type_error``, ``not_in_source``, ``check_failed``.
    """
    step = procedure.steps[index]
    var = step.var
    out, raw = _step_line(reply, var)
    if raw is None:
        return out
    got = f"{var} = {raw}"[:200]
    text = raw.strip().strip("\"'`").strip()
    value: Number | str | None
    if step.type in ("string", "one_of"):
        value = text or None
        if step.type == "one_of" and value not in (step.choices or ()):
            value = None
    else:
        records = parse_trace(f"{var} = {text}", var_names=(var,)).records
        value = records[0].value if records else None
        if value is not None and step.type == "integer" and not isinstance(value, int):
            value = None
    if value is None:
        out.deviation = Deviation(kind="type_error", step=var, detail=f"{var} must be of type {step.type}", got=got)
        return out
    source = str(env.get(str(step.source), ""))
    found = None if isinstance(value, str) else source_numbers(source, step.label)
    if not (_text_occurs(value, source, step.label) if found is None else any(n == value for n in found.exact)):
        where = f" right after {step.label!r}" if step.label else ""
        detail = f"{var} = {_show(value)} does not occur in {step.source}{where}"
        doubt = [w for w, values in found.ambiguous if value in values] if found is not None else []
        if doubt:
            detail += f" as one exact number: {doubt[0]!r} there could mean more than one value, and is not read"
        out.deviation = Deviation(kind="not_in_source", step=var, detail=detail, got=got)
        return out
    if not isinstance(value, str):
        value = apply_scale(value, step)
    return _predicate(procedure, index, env, value, out, got)


def _predicate(procedure: Procedure, index: int, env: Mapping[str, Number | str], value: Number | str, out: KindVerdict, got: str) -> KindVerdict:
    step = procedure.steps[index]
    check = procedure.compiled_checks[index]
    if check is not None:
        try:
            ok = check.evaluate({**env, "value": value}) is True
            why = f"check {step.check!r} is false"
        except EvaluationError as exc:
            ok, why = False, str(exc)
        if not ok:
            out.deviation = Deviation(kind="check_failed", step=step.var, detail=f"{step.var} = {_show(value)}: {why}", got=got)
            return out
    out.value = value
    return out


# --- text ------------------------------------------------------------------------------------
def _schema_errors(schema: Mapping[str, Any], data: Any) -> str | None:
    try:
        import jsonschema
    except ImportError:
        from stepguard.errors import MissingExtraError

        raise MissingExtraError("a text step's schema needs the jsonschema package: pip install 'stepguard[agent]'", "agent", "jsonschema") from None
    errors = sorted(jsonschema.Draft202012Validator(dict(schema)).iter_errors(data), key=lambda e: list(e.absolute_path))
    if not errors:
        return None
    e = errors[0]
    where = "/".join(map(str, e.absolute_path)) or "the value"
    return f"{where}: {e.message[:200]}"


def verify_text(procedure: Procedure, index: int, env: Mapping[str, Number | str], reply: str) -> KindVerdict:
    """Check the text (or list, or JSON) a reply writes for text step ``index``.

    Returns:
        A :class:`KindVerdict` with the value (the text; a list or JSON as compact JSON text) or the
        first deviation: ``under_executed``, ``type_error`` (not a list / not JSON), ``check_failed``
        (length, pattern, choices, schema or predicate).
    """
    step = procedure.steps[index]
    var = step.var
    out, raw = _step_line(reply, var)
    if raw is None:
        return out
    got = f"{var} = {raw}"[:200]

    def fail(kind: str, detail: str) -> KindVerdict:
        out.deviation = Deviation(kind=kind, step=var, detail=f"{var}: {detail}", got=got)  # type: ignore[arg-type]
        return out

    items: list[str]
    if step.format == "text":
        text = raw.strip()
        if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'`":
            text = text[1:-1].strip()
        if not text:
            return fail("type_error", "the text is empty")
        value: str = text
        items, size = [text], len(text)
    else:
        try:
            data = json.loads(raw.strip().strip("`"))
        except (ValueError, RecursionError):
            return fail("type_error", "not valid JSON on one line" if step.format == "json" else "not a JSON list of strings on one line")
        if step.format == "list" and not (isinstance(data, list) and all(isinstance(x, str) for x in data)):
            return fail("type_error", "not a JSON list of strings")
        value = json.dumps(data, ensure_ascii=False, separators=(", ", ": "))
        items = list(data) if step.format == "list" else [value]
        size = len(data) if step.format == "list" else len(value)
        if step.json_schema is not None:
            err = _schema_errors(step.json_schema, data)
            if err:
                return fail("check_failed", f"does not match the schema ({err})")
    unit = "items" if step.format == "list" else "characters"
    if step.min_length is not None and size < step.min_length:
        return fail("check_failed", f"{size} {unit}, fewer than {step.min_length}")
    if step.max_length is not None and size > step.max_length:
        return fail("check_failed", f"{size} {unit}, more than {step.max_length}")
    for item in items if step.format != "json" else ():
        if step.pattern is not None and re.fullmatch(step.pattern, item) is None:
            return fail("check_failed", f"{item[:60]!r} does not match the pattern {step.pattern!r}")
        if step.choices is not None and item not in step.choices:
            return fail("check_failed", f"{item[:60]!r} is not one of {', '.join(step.choices)}")
    return _predicate(procedure, index, env, value, out, got)
