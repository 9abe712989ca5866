"""The ``extract`` kind: the model reads the step's value from a text input, ``source``.

A value is accepted only when it *is* a value of the source, whole, never a part of one, and it is
committed in one normal form per type, the form that was checked:

* a **number** (``number``, ``integer``, ``decimal``) is a number the source writes, read exactly
  (``$1,234.50`` = ``1.234,50`` = ``1234.5``) or not at all when it could mean two values
  (``1,234`` alone, ``(18.86)``); with a ``label``, the number right after it, never one of the
  label's own text (``Total (3 items): 18.86``, ``VAT 19%: 3.80`` reads 3.80). A number written as
  a percent (``15%``) is read only when the step declares ``percent``: ``fraction`` (0.15) or
  ``points`` (15). Committed with the step's ``scale``. Rules: :mod:`stepguard.verify._source_numbers`.
* a **date** (a ``string`` reply that is exactly one date, ISO or spelled: ``2024-03-05``,
  ``March 5, 2024``, ``5 March 2024``, ``05.03.2024``) is a date the source writes (with a label,
  the date right after it), compared as a date and committed in ISO ``YYYY-MM-DD``.
* any other **string** is, with a ``label``, the whole field after it: the rest of the line past
  punctuation and spaces, up to ``|``, ``;``, a tab or two spaces, without a trailing ``.`` or
  ``,`` (and optionally without a trailing bracketed aside); without a label, a run of whole words
  of one line, not joined to more of a token (``1234`` is not in ``ORD-1234``). Case and words
  exactly as written (runs of spaces count as one). Committed as written.
* a **choice** (``one_of``) is one of the step's choices (exactly, else case-insensitively when
  that picks one), equal, case aside, to a whole field (as a string is); committed as the choice
  is spelled.

A ``label`` that occurs more than once in the source (each whole-word copy counts, also inside a
longer label: ``Grand Total`` for ``Total``; a copy that points at no value, ``Total due: 5.00``,
does not) reads one value only when every copy gives the same one (``Total: 18.86`` and ``TOTAL:
$18.860``; two dates the same day). Copies with different values make the source *ambiguous*: no
reply passes, and the ``not_in_source`` deviation names the label and each copy's value and line,
unless the step's ``occurrence`` (``first``, ``last`` or a 1-based count of the copies that give a
value) says which copy it reads. The other way round, a value the source writes under two labels is
one value: an unlabelled step accepts it (the value committed is the same whichever copy the model
read), and a labelled step reads only what its label points at.

Under the ``flag`` policy the model's value is kept in the same normal form, or not at all when it
has none (a number that does not read, a string that is not a choice).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import islice
from typing import Any

from stepguard.evaluator import Number, format_number, normalize
from stepguard.kinds._base import Kind, StepContext, Value, register_kind
from stepguard.kinds._reading import MAX_VALUE, KindVerdict, check_predicate, lines_of, show_value, step_line
from stepguard.procedure import ExtractStep, Occurrence, Procedure, Step, apply_scale, format_value
from stepguard.tools import ToolCall
from stepguard.trace import NOT_ONE_VALUE, parse_trace
from stepguard.verify import Deviation, Percent, SourceNumbers, after_label, number_text, scan_numbers

__all__ = ["Extract", "ExtractStep", "Occurrence", "dates_in", "fields_after", "label_places", "label_tails", "normal_value",
           "numbers_in", "one_date", "source_numbers", "verify_extract"]



_MONTHS = {m: i + 1 for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                           "september", "october", "november", "december"))}
_MONTHS.update({k[:3]: v for k, v in list(_MONTHS.items())})
_MON = (r"(january|february|march|april|may|june|july|august|september|october|november|december"
        r"|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)\.?")
_B, _E = r"(?<![\w.,/-])", r"(?!\w|[-/.,]\d)"  # a date is a whole token: not 2024-03-05 in INV-2024-03-05-7
_DATES = (
    (re.compile(rf"{_B}(\d{{4}})[-/.](\d{{1,2}})[-/.](\d{{1,2}}){_E}"), "ymd"),
    (re.compile(rf"{_B}(\d{{1,2}})(?:st|nd|rd|th)?[ \t]+{_MON},?[ \t]+(\d{{4}}){_E}", re.I), "dmy"),
    (re.compile(rf"{_B}{_MON}[ \t]+(\d{{1,2}})(?:st|nd|rd|th)?,?[ \t]+(\d{{4}}){_E}", re.I), "mdy"),
    (re.compile(rf"{_B}(\d{{1,2}})\.(\d{{1,2}})\.(\d{{4}}){_E}"), "dmy_num"),
)


def numbers_in(text: str, context: str | None = None, percent: Percent | None = None) -> list[Number]:
    """Every number written in ``text`` that reads as exactly one value: ``1,234.50``, ``$1234.5`` and
    ``1.234,50`` are 1234.5, ``–18.86`` and ``-$18.86`` are -18.86; ``1,234`` alone, ``(18.86)``,
    ``3/4`` or ``12 thousand`` are ambiguous and give nothing, nor does ``15%`` unless ``percent``
    says how it reads (rules: :mod:`stepguard.verify._source_numbers`). ``context``: the whole
    document ``text`` is part of, whose other numbers decide the decimal mark."""
    return scan_numbers(text, context, percent=percent).exact


def source_numbers(source: str, label: str | None, percent: Percent | None = None) -> SourceNumbers:
    """The numbers an ``extract`` step's value may be: every number of ``source``, or with a ``label``,
    on each line that has it, the number written right after it (past punctuation, spaces and one
    currency: ``Total: $18.86``, ``Total (EUR): 18,86``, past a rate in the label: ``VAT 19%: 3.80``
    is 3.80; not ``Total due: 18.86``, ``Total (3 items): 18.86`` nor ``Total 3 items: 18.86``,
    whose value the label does not point at). ``percent``: how ``15%`` reads (``None``: not at all)."""
    if not label:
        return scan_numbers(source, percent=percent)
    return _numbers_after(label_tails(source, label), source, percent)


def _numbers_after(tails: Sequence[str], source: str, percent: Percent | None) -> SourceNumbers:
    """The number right after a label in each of ``tails`` (the text after a copy of it in ``source``)."""
    return _merged([scan_numbers(after_label(tail), source, first_only=True, percent=percent) for tail in tails])


def _merged(parts: Sequence[SourceNumbers]) -> SourceNumbers:
    """The numbers of ``parts``, in order, as one :class:`SourceNumbers`."""
    out = SourceNumbers()
    for found in parts:
        out.exact += found.exact
        out.ambiguous += found.ambiguous
        out.percents += found.percents
    return out


def _date(y: str, mo: str | int, d: str) -> str | None:
    try:
        month = int(mo) if isinstance(mo, int) or str(mo).isdigit() else _MONTHS[str(mo).lower().rstrip(".")[:3]]
        return _dt.date(int(y), month, int(d)).isoformat()
    except (ValueError, KeyError):
        return None


def _iso(m: re.Match[str], order: str) -> str | None:
    g = m.groups()
    if order == "ymd":
        return _date(g[0], g[1], g[2])
    if order == "mdy":
        return _date(g[2], g[0], g[1])
    return _date(g[2], g[1], g[0])  # dmy, dmy_num


def dates_in(text: str) -> list[str]:
    """Every date written in ``text`` as a whole token, as ISO ``YYYY-MM-DD``: ``2024-03-05``,
    ``5 March 2024``, ``March 5, 2024``, ``05.03.2024`` (day first). Slash dates such as
    ``03/05/2024`` are ambiguous and not read; nor is a date joined to more of a token (``INV-2024-03-05-7``)."""
    out: list[str] = []
    for pat, order in _DATES:
        for m in pat.finditer(text[:MAX_VALUE * 50]):
            iso = _iso(m, order)
            if iso:
                out.append(iso)
    return out


def one_date(text: str) -> str | None:
    """The date ``text`` is, in ISO ``YYYY-MM-DD``, when it is exactly one date and nothing else
    (a trailing period aside); ``None`` otherwise (``NOT 2024-03-05 (cancelled)`` is not a date)."""
    text = text.strip()
    for candidate in dict.fromkeys((text, text[:-1] if text.endswith(".") else text)):
        for pat, order in _DATES:
            m = pat.fullmatch(candidate)
            if m:
                return _iso(m, order)
    return None


_FIELD_LEAD = re.compile(r"[ \t\u00a0:=|*_#>]*(?:[-\u2013\u2014]+[ \t]+)?")


def _lead_end(tail: str) -> int:
    """Where a field's value starts in ``tail``: after the separators :data:`_FIELD_LEAD` takes."""
    lead = _FIELD_LEAD.match(tail)
    assert lead is not None  # every part of the pattern is optional: it matches at least ""
    return lead.end()
_FIELD_END = re.compile(r"[|;\t]| {2,}")
_ASIDE = re.compile(r"\s*\([^()]*\)$")


def _date_after(tail: str) -> str | None:
    """The date written right after a label (``: 2024-03-05``, ``: March 5, 2024 (paid)``), in ISO."""
    rest = tail[_lead_end(tail):]
    for pat, order in _DATES:
        m = pat.match(rest)
        if m:
            return _iso(m, order)
    return None


def _plain(text: str) -> str:
    """A string in the form it is compared and committed in: runs of spaces as one, no surrounding
    quotes, no trailing ``.`` or ``,``."""
    return " ".join(text.split()).strip("\"'`").strip().rstrip(".,").rstrip()


def fields_after(tail: str) -> list[str]:
    """The string values a label's ``tail`` gives: the whole field after it (past punctuation and
    spaces, up to ``|``, ``;``, a tab or two spaces), and that field without a trailing bracketed
    aside (``UNPAID (since May)``: also ``UNPAID``)."""
    rest = tail[_lead_end(tail):]
    end = _FIELD_END.search(rest)
    field = _plain(rest[:end.start()] if end else rest)
    out = [field] if field else []
    short = _plain(_ASIDE.sub("", field))
    if short and short != field:
        out.append(short)
    return out


_JOINERS = "-_./@'\u2019+&"


def _whole_words(value: str, source: str, fold: bool) -> bool:
    """Whether ``value`` is a run of whole words on one line of ``source``: bounded by the line's ends,
    spaces or punctuation, never joined to more of a token (``3`` is not in ``ORD-1234``, nor ``paid`` in ``UNPAID``)."""
    words = value.split()
    if not words:
        return False
    j = re.escape(_JOINERS)
    body = r"[ \t\u00a0]+".join(re.escape(w) for w in words)
    pat = re.compile(rf"(?<!\w)(?<!\w[{j}]){body}(?!\w)(?![{j}]\w)", re.I if fold else 0)
    return pat.search(source[:MAX_VALUE * 50]) is not None


def _region(source: str, label: str | None) -> str:
    """The part of ``source`` a value must occur in: all of it, or the text after ``label`` on each line that has it."""
    if not label:
        return source
    return "\n".join(label_tails(source, label))


def label_places(source: str, label: str) -> list[tuple[int, str]]:
    """Every copy of ``label`` in ``source`` (a whole word or phrase, any case: ``Total`` is not in
    ``Subtotal``), in order, as ``(line number from 1, the text after it)``: up to the line's end, or
    to the label's next copy on the same line."""
    pat = re.compile(rf"(?<!\w){re.escape(label)}(?!\w)", re.I)
    out: list[tuple[int, str]] = []
    for number, line in enumerate(source.splitlines(), 1):
        found = list(pat.finditer(line))
        starts, ends = [m.start() for m in found], [m.end() for m in found]
        if found:
            out.extend((number, line[end:stop]) for end, stop in zip(ends, [*starts[1:], len(line)], strict=True))
    return out


def label_tails(source: str, label: str) -> list[str]:
    """The text after each copy of ``label`` (:func:`label_places` without the line numbers)."""
    return [tail for _, tail in label_places(source, label)]


@dataclass(frozen=True)
class _Place:
    """One copy of a step's label that gives a value: its line (from 1), the text after it, the value
    as a message shows it (a number as written, a date in ISO, a string's whole field), the value as
    copies are compared (a number exactly read as its value: ``18.860`` and ``$18.86`` are one; a
    choice's field case aside), and for a number step, what the scan read there."""

    line: int
    tail: str
    shown: str
    key: str
    numbers: SourceNumbers | None


def _place(step: ExtractStep, line: int, tail: str, source: str) -> _Place | None:
    """The copy at ``line`` with text ``tail`` after it, or ``None`` when it points at no value of the step's type."""
    if step.type in ("string", "one_of"):
        iso = _date_after(tail) if step.type == "string" else None
        fields = fields_after(tail)
        value = iso or (fields[0] if fields else None)
        if value is None:
            return None
        return _Place(line, tail, repr(value[:40]), value.casefold() if step.type == "one_of" else value, None)
    rest = after_label(tail)
    found = scan_numbers(rest, source, first_only=True, percent=step.percent)
    if found.exact:
        return _Place(line, tail, number_text(rest), format_number(found.exact[0]), found)
    doubtful = found.ambiguous or found.percents
    return _Place(line, tail, doubtful[0][0], doubtful[0][0], found) if doubtful else None


def _chosen(step: ExtractStep, source: str) -> list[_Place] | str:
    """The copies of the step's label its value may be read at, or why none may be: the copies give
    different values and the step names no ``occurrence``, or the ``occurrence`` it names is not there."""
    assert step.label
    label = step.label
    places = [p for line, tail in label_places(source, label) if (p := _place(step, line, tail, source)) is not None]
    n = len(places)
    if step.occurrence is not None:
        k = step.occurrence if isinstance(step.occurrence, int) else {"first": 1, "last": n}[step.occurrence]
        if not 1 <= k <= n:
            return f"{label!r} is followed by a value {n} time{'s' if n != 1 else ''} in {step.source}, so it has no occurrence {k}"
        return [places[k - 1]]
    if len({p.key for p in places}) > 1:
        shown = ", ".join(f"{p.shown} (line {p.line})" for p in places[:6]) + (", ..." if n > 6 else "")
        return (f"the label {label!r} occurs {n} times in {step.source} with different values: {shown}; "
                "which one the step reads is ambiguous (the step's occurrence: first, last or a number says which)")
    return places


def _choice(text: str, choices: Sequence[str]) -> str | None:
    """The choice ``text`` names: equal to one, else equal to exactly one case aside; as the choice is spelled."""
    if text in choices:
        return text
    folded = [c for c in choices if c.casefold() == text.casefold()]
    return folded[0] if len(folded) == 1 else None


def _string_occurs(value: str, step: ExtractStep, source: str, tails: Sequence[str]) -> bool:
    """Whether the string or choice ``value`` (in its normal form) is a whole value of the source, or
    with a label, of one of ``tails`` (rules: the module docstring)."""
    fold = step.type == "one_of" and sum(c.casefold() == value.casefold() for c in step.choices or ()) == 1
    if not step.label:
        return _whole_words(value, source, fold)
    same: Callable[[str, str], bool] = (lambda a, b: a.casefold() == b.casefold()) if fold else (lambda a, b: a == b)
    return any(same(f, value) for tail in tails for f in fields_after(tail))


def _date_occurs(iso: str, step: ExtractStep, source: str, tails: Sequence[str]) -> bool:
    if not step.label:
        return iso in dates_in(source)
    return any(_date_after(tail) == iso for tail in tails)


_PERCENT_REPLY = re.compile(r"(.*?\d)[ \t\u00a0]?(?:%|\uff05|percent)", re.I)


def _reply_number(step: ExtractStep, var: str, text: str) -> Number | None:
    """The number the reply writes, in the step's terms: ``15%`` reads by the step's ``percent``
    (none: not a number), an integer step takes only a whole number."""
    m = _PERCENT_REPLY.fullmatch(text)
    if m is not None and step.percent is None:
        return None
    records = parse_trace(f"{var} = {m.group(1) if m else text}", var_names=(var,)).records
    value = records[0].value if records else None
    if value is not None and m is not None and step.percent == "fraction":
        value = normalize(Fraction(value) / 100)
    if value is not None and step.type == "integer" and not isinstance(value, int):
        return None
    return value


def normal_value(step: ExtractStep, text: str, scaled: bool = True) -> Number | str | None:
    """The value a reply's right-hand side ``text`` writes for ``step``, in the form it is checked and
    committed in: a number (``$99.99`` is 99.99, rounded to the step's ``scale``), a date in ISO, a
    string with runs of spaces as one, a choice as spelled; ``None`` when it is not a value of the
    step's type. ``scaled=False``: a number as written, before the ``scale`` (the form compared
    with the source's numbers, which must be copied exactly)."""
    text = text.strip().strip("\"'`").strip()
    if step.type == "one_of":
        return _choice(_plain(text), step.choices or ()) if text else None
    if step.type == "string":
        return (one_date(text) or _plain(text) or None) if text else None
    value = _reply_number(step, step.var, text)
    return value if value is None or not scaled else apply_scale(value, step)


def _type_detail(step: ExtractStep, raw: str) -> str:
    """Why the reply's ``raw`` is no value of the step's type (a percent where the step declares none: said so)."""
    var = step.var
    detail = f"{var} must be of type {step.type}"
    if step.type not in ("string", "one_of") and _PERCENT_REPLY.fullmatch(raw.strip()) and step.percent is None:
        detail += " (a percent reads only where the step declares percent: fraction or points)"
    return detail


def _occurs(step: ExtractStep, value: Number | str, source: str, places: Sequence[_Place]) -> tuple[bool, SourceNumbers | None]:
    """Whether ``value`` occurs in ``source`` (after the label, at ``places``), and for a number the
    source's numbers it was looked for among (None for a string, a date or a choice)."""
    tails = [p.tail for p in places]
    if isinstance(value, str):
        iso = one_date(value) if step.type == "string" else None
        ok = _date_occurs(iso, step, source, tails) if iso else _string_occurs(value, step, source, tails)
        found = None
    else:
        found = _merged([p.numbers for p in places if p.numbers]) if step.label else scan_numbers(source, percent=step.percent)
        ok = any(n == value for n in found.exact)
    return ok, found


def _absent_detail(step: ExtractStep, value: Number | str, found: SourceNumbers | None) -> str:
    """Where ``value`` was looked for and not found; for a number the source writes only in a form not
    read (ambiguous, or a percent the step does not declare), which form."""
    var = step.var
    where = (f" right after {step.label!r}" + (f" (occurrence {step.occurrence})" if step.occurrence is not None else "")
             if step.label else "")
    what = "as a whole value" if isinstance(value, str) else ""
    detail = f"{var} = {show_value(value)} does not occur in {step.source}{where}" + (f" {what}" if what else "")
    if found is not None:
        doubt = [w for w, values in found.ambiguous if value in values]
        pct = [w for w, values in found.percents if value in values]
        if doubt:
            detail += f" as one exact number: {doubt[0]!r} there could mean more than one value, and is not read"
        elif pct:
            detail += (f" as a number: {pct[0]!r} there is a percent, and the step does not declare how it reads"
                       " (percent: fraction for 0.15, points for 15)")
    return detail


_MAX_LINES = 64  # lines of one step read from an extract reply: a reply of many lines costs bounded time


def verify_extract(procedure: Procedure, index: int, env: Mapping[str, Any], reply: str) -> KindVerdict:
    """Check the value a reply extracts for step ``index`` from its ``source`` text.

    Returns:
        A :class:`KindVerdict` with the value in its normal form (a number rounded per the step's
        ``scale``, a date in ISO, a choice as spelled) or the first deviation: ``under_executed``
        (no line), ``type_error`` (also: the step's line written again with another value),
        ``not_in_source`` (also: the step's label occurs with different values and the step names
        no ``occurrence``, or not the one it names), ``check_failed``.
        Its ``model_value`` is the reply's value in the same normal form, or ``None`` when the
        reply has none.
    """
    step = procedure.steps[index]
    assert isinstance(step, ExtractStep)
    var = step.var
    out, raw = step_line(reply, var)
    if raw is None:
        return out
    got = f"{var} = {raw}"[:200]
    own = next((r for r in parse_trace(got, var_names=procedure.variables).records if r.var == var), None)
    if own is not None and own.error in NOT_ONE_VALUE:  # x = 20 / total = 5: the next step's value, not x's
        out.deviation = Deviation(kind="type_error", step=var, detail=f"{var}: {own.error} on its line (write its value alone)", got=got)
        return out
    value = normal_value(step, raw, scaled=False)
    out.model_value = None if value is None else format_value(apply_scale(value, step))
    if value is None:
        out.deviation = Deviation(kind="type_error", step=var, detail=_type_detail(step, raw), got=got)
        return out
    again = next((r for r in islice(lines_of(reply, var), 1, _MAX_LINES) if normal_value(step, r, scaled=False) != value), None)
    if again is not None:  # total = 20 then total = 5.00: a correction on the next line; which is meant is not written
        out.deviation = Deviation(kind="type_error", step=var, got=got,
                                  detail=f"{var} is written again with another value ({var} = {again[:40]}); write its value once")
        return out
    source = str(env.get(step.source, ""))
    places = _chosen(step, source) if step.label else []
    if isinstance(places, str):
        out.deviation = Deviation(kind="not_in_source", step=var, detail=f"no value of {var} can be checked: {places}", got=got)
        return out
    ok, found = _occurs(step, value, source, places)
    if not ok:
        out.deviation = Deviation(kind="not_in_source", step=var, detail=_absent_detail(step, value, found), got=got)
        return out
    return check_predicate(procedure, index, env, apply_scale(value, step), out, got)


def _extract_step(step: Step) -> ExtractStep:
    assert isinstance(step, ExtractStep)
    return step


def candidates(step: ExtractStep, text: str) -> list[Any]:
    """The values ``text`` offers for ``step``, in order: its fields (after the label; a choice as
    spelled), or its exact numbers (after the label)."""
    candidates: list[Any]
    if step.type in ("string", "one_of"):
        lines = label_tails(text, step.label) if step.label else text.splitlines()
        candidates = [f for ln in lines for f in (fields_after(ln) if step.label else [_plain(ln)]) if f]
        if step.type == "one_of":
            candidates = [c for c in (_choice(f, step.choices or ()) for f in candidates) if c is not None]
    else:
        candidates = list(source_numbers(text, step.label, step.percent).exact)
    return candidates


def _after(step: ExtractStep) -> str:
    """Where the value is, as the prompt says it: ``, after 'Total'`` (``, occurrence last``), or ``""``."""
    if not step.label:
        return ""
    return f", after {step.label!r}" + (f", occurrence {step.occurrence}" if step.occurrence is not None else "")


@register_kind
class Extract(Kind):
    """A value read from a text input; asked alone."""

    name = "extract"
    step_model = ExtractStep
    names_type = True

    def notes(self, ctx: StepContext) -> list[str]:
        """Where to read it, and its predicate."""
        step = _extract_step(ctx.step)
        notes = [f"read it from {step.source}{_after(step)}, as written there"]
        if step.percent == "fraction":
            notes.append("a percent as a fraction: 15% is 0.15")
        elif step.percent == "points":
            notes.append("a percent as its number: 15% is 15")
        if step.check:
            notes.append(f"it must satisfy {step.check}")
        return notes

    def example(self, ctx: StepContext, values: Mapping[str, Value]) -> str:
        """``var = <the value as written in source>``."""
        step = _extract_step(ctx.step)
        return f"{step.var} = <the value as written in {step.source}>"

    def check(
        self, ctx: StepContext, env: Mapping[str, Value], reply: str, tool_calls: Sequence[ToolCall] = ()
    ) -> KindVerdict:
        """:func:`verify_extract`."""
        return verify_extract(ctx.procedure, ctx.index, env, reply)

    def correction_note(self, ctx: StepContext, deviation: Deviation, env: Mapping[str, Value]) -> str:
        """What was refused, and to copy the value as written in the source."""
        step = _extract_step(ctx.step)
        got = (deviation.got or "").strip()[:120]
        yours = f"Your reply `{got}` was not accepted" if got else "Your reply was not accepted"
        detail = deviation.detail.split(" [", 1)[0]
        return f"{yours}: {detail}. Copy the value for {step.var} exactly as it is written in {step.source}."

    def grade(self, ctx: StepContext) -> str:
        """``matched``: the value is one the source writes, found whole (after its label)."""
        return "matched"

    def describe(self, ctx: StepContext) -> list[str]:
        """Where the value must occur."""
        step = _extract_step(ctx.step)
        where = f" after the label {step.label!r}" if step.label else ""
        if step.occurrence is not None:
            where += f" (occurrence {step.occurrence} of it)"
        elif step.label:
            where += " (its copies must agree)"
        pct = {"fraction": "; a percent reads as a fraction (15% is 0.15)", "points": "; a percent reads as its number (15% is 15)",
               None: "; a number written as a percent gives no value"}[step.percent]
        what = "a whole field, case as written" if step.type in ("string", "one_of") else "a whole number"
        return [f"extract: the value must occur in input {step.source}{where}, as {what} (numbers, money and dates "
                f"normalised, a date committed as YYYY-MM-DD{pct if step.type not in ('string', 'one_of') else ''})"]
