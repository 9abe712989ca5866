"""The ``extract`` kind: the model reads the step's value from a text input, ``source``.

The value must occur in the source text (numbers and money read exactly, ``$1,234.50`` =
``1.234,50`` = ``1234.5``, or not at all when a number could mean two values: ``1,234`` alone,
``(18.86)``; dates in ISO or spelled form alike), right after ``label`` when given; then its type
and predicate are checked. Rules for numbers: :mod:`stepguard.verify._source_numbers`.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Mapping, Sequence
from typing import ClassVar, Any, Literal

from pydantic import Field, model_validator

from stepguard.errors import EvaluationError
from stepguard.evaluator import Number, format_number
from stepguard.kinds._base import Kind, Value, register_kind
from stepguard.kinds._reading import MAX_VALUE, KindVerdict, check_predicate, show_value, step_line
from stepguard.procedure import Procedure, Step, apply_scale
from stepguard.procedure._model import _field_error
from stepguard.tools import ToolCall
from stepguard.trace import parse_trace
from stepguard.verify import Deviation
from stepguard.verify._source_numbers import SourceNumbers, after_label, scan_numbers

__all__ = ["Extract", "ExtractStep", "dates_in", "label_tails", "numbers_in", "source_numbers", "verify_extract"]


class ExtractStep(Step):
    """An extract step: its value is read from the string input ``source``, after ``label`` when given."""

    value_from: ClassVar[str] = "source text"

    kind: Literal["extract"] = Field(description="extract: the model reads the value from a text input, source.")
    source: str = Field(description="The string input the value is read from; the value must occur in it.")
    label: str | None = Field(
        None, max_length=200, description="The value must follow this label on a line of the source (`Total`)."
    )

    @model_validator(mode="after")
    def _reads_a_value(self) -> ExtractStep:
        if self.type == "boolean":
            raise _field_error("type", "an extract step reads a number or a string, not a boolean")
        return self

    def text_inputs(self) -> tuple[str, ...]:
        """``source``."""
        return (self.source,)


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
        for m in pat.finditer(text[:MAX_VALUE * 50]):
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


def verify_extract(procedure: Procedure, index: int, env: Mapping[str, Any], reply: str) -> KindVerdict:
    """Check the value a reply extracts for step ``index`` from its ``source`` text.

    Returns:
        A :class:`KindVerdict` with the value (rounded per the step's ``scale``) or the first
        deviation: ``under_executed`` (no line), ``type_error``, ``not_in_source``, ``check_failed``.
    """
    step = procedure.steps[index]
    assert isinstance(step, ExtractStep)
    var = step.var
    out, raw = step_line(reply, var)
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
    source = str(env.get(step.source, ""))
    found = None if isinstance(value, str) else source_numbers(source, step.label)
    if not (_text_occurs(value, source, step.label) if found is None else any(n == value for n in found.exact)):
        where = f" right after {step.label!r}" if step.label else ""
        detail = f"{var} = {show_value(value)} does not occur in {step.source}{where}"
        doubt = [w for w, values in found.ambiguous if value in values] if found is not None else []
        if doubt:
            detail += f" as one exact number: {doubt[0]!r} there could mean more than one value, and is not read"
        out.deviation = Deviation(kind="not_in_source", step=var, detail=detail, got=got)
        return out
    if not isinstance(value, str):
        value = apply_scale(value, step)
    return check_predicate(procedure, index, env, value, out, got)


def _extract_step(procedure: Procedure, index: int) -> ExtractStep:
    step = procedure.steps[index]
    assert isinstance(step, ExtractStep)
    return step


_SOURCE = re.compile(r"read it from ([A-Za-z]\w*)(?:, after '([^']*)')?")


@register_kind
class Extract(Kind):
    """A value read from a text input; asked alone."""

    name = "extract"
    step_model = ExtractStep
    names_type = True

    def notes(self, procedure: Procedure, index: int) -> list[str]:
        """Where to read it, and its predicate."""
        step = _extract_step(procedure, index)
        notes = [f"read it from {step.source}" + (f", after {step.label!r}" if step.label else "") + ", as written there"]
        if step.check:
            notes.append(f"it must satisfy {step.check}")
        return notes

    def example(self, procedure: Procedure, index: int, values: Mapping[str, Value]) -> str:
        """``var = <the value as written in source>``."""
        step = _extract_step(procedure, index)
        return f"{step.var} = <the value as written in {step.source}>"

    def check(
        self, procedure: Procedure, index: int, env: Mapping[str, Value], reply: str, tool_calls: Sequence[ToolCall] = ()
    ) -> KindVerdict:
        """:func:`verify_extract`."""
        return verify_extract(procedure, index, env, reply)

    def correction_note(self, procedure: Procedure, index: int, deviation: Deviation, env: Mapping[str, Value]) -> str:
        """What was refused, and to copy the value as written in the source."""
        step = _extract_step(procedure, index)
        got = (deviation.got or "").strip()[:120]
        yours = f"Your reply `{got}` was not accepted" if got else "Your reply was not accepted"
        detail = deviation.detail.split(" [", 1)[0]
        return f"{yours}: {detail}. Copy the value for {step.var} exactly as it is written in {step.source}."

    def describe(self, procedure: Procedure, index: int) -> list[str]:
        """Where the value must occur."""
        step = _extract_step(procedure, index)
        where = f" after the label {step.label!r}" if step.label else ""
        return [f"extract: the value must occur in input {step.source}{where} (numbers, money and dates normalised)"]

    def perfect_reply(self, step: Step, env: Mapping[str, Value], procedure: Procedure | None = None) -> str | None:
        """The first value of the source (after the label) that the step's predicate accepts."""
        assert isinstance(step, ExtractStep)
        text = env.get(step.source)
        if not isinstance(text, str):
            return None
        lines = label_tails(text, step.label) if step.label else text.splitlines()
        candidates: list[Any]
        if step.type in ("string", "one_of"):
            candidates = [ln.strip(" :\t") for ln in lines if ln.strip(" :\t")]
        else:
            candidates = list(source_numbers(text, step.label).exact)
        check = None
        if step.check is not None:
            from stepguard.evaluator import compile_expression

            check = compile_expression(step.check)
        for value in candidates:
            try:
                if check is None or check.evaluate({**env, "value": value}) is True:
                    return f"{step.var} = {value if isinstance(value, str) else format_number(value)}"
            except EvaluationError:
                continue
        return None

    def parse_line(self, var: str, rhs: str, notes: str) -> Step | None:
        """``var = ?    (read it from receipt, after 'Total', ...)`` as an :class:`ExtractStep`."""
        m = _SOURCE.search(notes)
        if m is None:
            return None
        type_ = "string" if "a string" in notes else "number"
        try:
            return ExtractStep.model_validate({"var": var, "kind": "extract", "source": m.group(1), "label": m.group(2) or None, "type": type_})
        except ValueError:
            return None
