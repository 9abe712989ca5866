"""The numbers a source document writes, read exactly or not at all (the ``extract`` kind's check).

A document is not a model's reply: it may write ``1.234,56`` or ``1,234.56``, a credit as ``–18.86``
or ``(18.86)``, and groups with spaces. Each number is read as a whole token, never a part of one
(``1.234,56`` is not 1.234 and 56), under the two conventions in use: a decimal point with comma
(or thin-space) groups, and a decimal comma with point (or thin-space) groups. A token one
convention alone can read is read so; a token both can read differently (``1,234``: 1234 or 1.234)
takes the convention of the document's other numbers when they show exactly one, and is otherwise
*ambiguous*: it supports no value, and is reported as such. Also ambiguous, never read with a sign
dropped or a scale ignored: a number in brackets (``(18.86)``, accounting's credit), with a trailing
minus (``18.86-``), with a dash and a space before it (``– 18.86``), groups split by plain spaces
(``1 234.56``: one number or two), and a number followed by a scale word or a numeric character
(``12 thousand``, ``3 Mio``, ``12 ½``, ``6 万``), and a part of a spelled date (``5 March 2024``,
``March 5, 2024``: a day and a year, not numbers).

A number written as a percent (``15%``, ``15 %``, ``15 percent``) has no value of its own: ``15%``
is 0.15 to one reader and 15 to another, so a reader must declare which (``percent="fraction"``:
0.15, ``"points"``: 15); undeclared, the token is listed in :attr:`SourceNumbers.percents` and
supports no value. Per mille and basis points (``‰``, ``‱``, ``bp``) are not read.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache

from stepguard.evaluator import Number, normalize
from stepguard.procedure import Percent
from stepguard.trace import SCALE_AFTER

__all__ = ["Percent", "SourceNumbers", "after_label", "number_text", "scan_numbers"]


# hyphen-minus, minus, hyphens, figure, en, em dash, super/subscript minus, small and full-width
_DASHES = "-\u2212\u2010\u2011\u2012\u2013\u2014\u207b\u208b\ufe63\uff0d"
_THIN = "\u00a0\u2009\u202f"  # no-break, thin and narrow no-break space: group separators in either convention
_SPACES = "".join(c for c in map(chr, range(0x3001)) if c.isspace() and c not in "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029" + _THIN)
"""Spaces within a line other than the thin ones (plain, tab, figure, en, ideographic...): groups split by
one of them are one number or several."""
_CURRENCY = "".join(c for c in map(chr, range(0x20d0)) if unicodedata.category(c) == "Sc") + "\ufe69\uff04\uffe0\uffe1\uffe5\uffe6"
_TOKEN = re.compile(
    rf"(?<![\w.,'’])(?P<open>\(\s*)?(?P<sign>[{_DASHES}+](?P<gap>[ \t{_THIN}]*))?(?:[{_CURRENCY}][ \t{_THIN}]?)?"
    rf"(?P<body>[0-9](?:[0-9]|[.,'’{_THIN}{_SPACES}](?=[0-9]))*)"
    rf"(?P<close>\s*\))?(?P<trail>[{_DASHES}](?![0-9]))?(?!\w|[.,][0-9])"
)
_JOINED_AFTER = re.compile(r"[^\s\w]*[0-9]")  # 3/4, 2^10, 1·234, 12**2: more of a number that is not read
_CREDIT_AFTER = re.compile(r"[ \t]*(?:CR|DR|Cr|Dr|cr|dr)(?![A-Za-z])")  # 18.86 CR: a credit, another sign
_PERCENT_AFTER = re.compile(r"[ \t\u00a0\u2009\u202f]?(?:[%\uff05\u066a]|per[ \t]?cent(?![A-Za-z])|pct(?![A-Za-z]))", re.I)
_MILLE_AFTER = re.compile(r"[ \t\u00a0\u2009\u202f]?(?:[\u2030\u2031]|per[ \t]?mille(?![A-Za-z])|bps?(?![A-Za-z])"
                          r"|basis[ \t]+points?)", re.I)
_MONTH = (r"(?:january|february|march|april|may|june|july|august|september|october|november|december"
          r"|jan|feb|mar|apr|jun|jul|aug|sept?|oct|nov|dec)\.?")
_MONTH_AFTER = re.compile(rf"(?:st|nd|rd|th)?[ \t{_THIN}]+{_MONTH}(?![A-Za-z])", re.I)  # 5 March 2024: a day, not a number
_MONTH_BEFORE = re.compile(rf"(?<![A-Za-z]){_MONTH}[ \t{_THIN}]+(?:[0-9]{{1,2}}(?:st|nd|rd|th)?,?[ \t{_THIN}]+)?$", re.I)  # March 5, 2024
_MAX_DIGITS = 60


@dataclass
class SourceNumbers:
    """What :func:`scan_numbers` read: ``exact`` numbers (in order), and ``ambiguous`` tokens as
    ``(text as written, the values it could mean)``; an ambiguous token supports none of them."""

    exact: list[Number] = field(default_factory=list)
    ambiguous: list[tuple[str, tuple[Number, ...]]] = field(default_factory=list)
    percents: list[tuple[str, tuple[Number, ...]]] = field(default_factory=list)
    """Numbers written as a percent, read with no declared meaning: ``("15%", (15, 3/20))``; they support no value."""


def _grouped(body: str, group: str, point: str) -> Number | None:
    """``body`` read with ``group`` characters between groups of three and ``point`` as the decimal mark; None if it does not fit."""
    whole, _, frac = body.partition(point) if point in body else (body, "", "")
    if point in frac or any(c in frac for c in group) or (point in body and not frac):
        return None
    parts = re.split(f"[{re.escape(group)}]", whole)
    if len(parts) > 1 and (not 1 <= len(parts[0]) <= 3 or parts[0].startswith("0") or any(len(p) != 3 for p in parts[1:])):
        return None
    if len(whole) - len(parts) + 1 + len(frac) > _MAX_DIGITS:
        return None
    return normalize(Fraction(f"{''.join(parts)}.{frac}" if frac else "".join(parts)))


def _readings(body: str) -> dict[str, Number]:
    """The values ``body`` has under each convention that can read it: ``{"point": .., "comma": ..}``."""
    if body.isdigit():  # no separator: the same in both conventions
        if len(body) > _MAX_DIGITS:
            return {}
        whole = int(body)
        return {"point": whole, "comma": whole}
    out: dict[str, Number] = {}
    if "'" in body or "’" in body:  # Swiss groups: 1'234.56
        value = _grouped(body.replace("’", "'"), "'" + _THIN, ".")
        return {"point": value} if value is not None else {}
    for name, group, point in (("point", "," + _THIN, "."), ("comma", "." + _THIN, ",")):
        value = _grouped(body, group, point)
        if value is not None:
            out[name] = value
    return out


def _joined_before(text: str, start: int) -> bool:
    """A digit right before ``start`` with only marks between (``3/4``, ``1·234``): the token is a part of something."""
    i = start
    while i > 0 and not text[i - 1].isspace() and not text[i - 1].isalnum() and text[i - 1] != "_" and start - i < 8:
        i -= 1
    return i < start and i > 0 and text[i - 1].isdigit()


def _numeric_after(text: str, end: int) -> bool:
    """A numeric character of another script or a vulgar fraction right after ``end`` (``12 ½``, ``6 万``)."""
    rest = text[end:end + 4].lstrip(" \t" + _THIN)
    return bool(rest) and rest[0] > "\x7f" and unicodedata.numeric(rest[0], None) is not None


_Token = tuple[str, dict[str, Number], bool, int, bool]  # (as written, readings, doubtful, sign, a percent)
_Found = list[_Token]
_SPACE_GROUPS = re.compile(r"[0-9]{1,3}(?: [0-9]{3})+(?![0-9])")
_SPACE = re.compile(f"[{_SPACES}]")


def _doubtful(text: str, m: re.Match[str]) -> bool:
    """Whether the token ``m`` of ``text`` may not be the number it reads as: bracketed or trailed,
    a sign set apart, or a scale, a credit mark, a joined part, a per-mille, a month or another
    script's numeral beside it."""
    sign, end = m.group("sign") or "", m.end()
    doubtful = bool(m.group("open") and m.group("close")) or bool(m.group("trail")) or bool(sign and m.group("gap"))
    return (doubtful or bool(SCALE_AFTER.match(text, end)) or _numeric_after(text, end) or bool(_CREDIT_AFTER.match(text, end))
            or bool(_JOINED_AFTER.match(text, end)) or _joined_before(text, m.start()) or bool(_MILLE_AFTER.match(text, end))
            or bool(_MONTH_AFTER.match(text, end)) or bool(_MONTH_BEFORE.search(text, max(0, m.start() - 24), m.start())))


def _token(text: str, m: re.Match[str]) -> _Found:
    """What the token ``m`` of ``text`` reads as: one number, or, where spaces split it other than
    into groups of three, each part (the sign on the first, the percent on the last)."""
    body, sign = m.group("body"), m.group("sign") or ""
    negative = -1 if sign[:1] in _DASHES and sign else 1
    doubtful = _doubtful(text, m)
    pct = _PERCENT_AFTER.match(text, m.end())
    written = m.group() + (pct.group() if pct else "")
    body = _SPACE.sub(" ", body)
    if " " in body:  # groups split by spaces: one number (1 234.56) or several (5 120.00: a quantity and a price?)
        groups = _SPACE_GROUPS.match(body)
        if groups and " " not in body[groups.end():]:
            return [(written, _readings(body.replace(" ", "")), True, negative, bool(pct))]
        parts = body.split(" ")
        return [(p, _readings(p), doubtful, negative if i == 0 else 1, bool(pct) and i == len(parts) - 1)
                for i, p in enumerate(parts)]
    return [(written, _readings(body), doubtful, negative, bool(pct))]


def _tokens(text: str, first_only: bool = False) -> _Found:
    """Every number token of ``text`` (its first 1,000,000 characters; with ``first_only``, the one it starts with, if any), read."""
    found: _Found = []
    matches = ([m] if (m := _TOKEN.match(text)) else []) if first_only else _TOKEN.finditer(text[:1_000_000])
    for m in matches:
        found.extend(_token(text, m))
    return found


def _convention(found: _Found) -> str | None:
    """The one convention the tokens that only one convention reads show (18.86, 0,81, 1.234,56), if one."""
    shown = {name for _, readings, doubtful, _, _ in found if len(readings) == 1 and not doubtful for name in readings}
    return next(iter(shown)) if len(shown) == 1 else None


@lru_cache(maxsize=8)
def _convention_of(text: str) -> str | None:
    return _convention(_tokens(text))


_LEAD = re.compile(rf"[ \t{_THIN}:=|*_#>]*(?:\(?(?:[A-Z]{{3}}|[{_CURRENCY}])\)?[ \t{_THIN}:=]*)?")


_RATE = re.compile(rf"[ \t{_THIN}]*(?:@[ \t]*)?(\()?[ \t]*[0-9]{{1,3}}(?:[.,][0-9]+)?[ \t{_THIN}]?[%\uff05](?(1)[ \t]*\))[ \t{_THIN}]*[:=]")
_SEPARATOR = re.compile("[:=]")


def after_label(tail: str) -> str:
    """``tail`` (a line's text after a label) from where its value may start: past punctuation,
    spaces and one currency (``: EUR ``, `` ($): ``), and past a rate that qualifies the label up to
    its ``:`` (``VAT 19%: 3.80``, ``VAT (7%): 0,81``). ``""``, no value, when the text starts with a
    word (``Total due: 18.86``), a bracketed aside (``Total (3 items): 18.86``), or, with no ``:``
    or ``=`` right after the label, a number that a ``:`` or ``=`` later on the line shows to be
    part of a longer label (``Total 3 items: 18.86``): the number of a label's own text is never
    its value."""
    rate = _RATE.match(tail)
    if rate:
        tail = tail[rate.end():]
    lead = _LEAD.match(tail)
    assert lead is not None  # every part of the pattern is optional: it matches at least ""
    rest = tail[lead.end():]
    m = _TOKEN.match(rest)
    if m is None or (m.group("open") and not m.group("close")):
        return ""
    if not rate and not _SEPARATOR.search(lead.group()) and _SEPARATOR.search(rest, m.end()):
        return ""
    return rest


def number_text(text: str) -> str:
    """The number ``text`` starts with, as written (``$18.86``, ``1.234,50``, ``(18.86)``), stripped; ``""`` for none."""
    m = _TOKEN.match(text)
    return m.group().strip() if m else ""


def scan_numbers(text: str, context: str | None = None, first_only: bool = False, percent: Percent | None = None) -> SourceNumbers:
    """Read every number ``text`` writes (rules: the module's docstring).

    Args:
        text: the part of a document to read; only its first 1,000,000 characters are read.
        context: the whole document, when ``text`` is a part of it: the convention is judged on it.
        first_only: read only a number that starts ``text`` (the value right after a label).
        percent: how a number written as a percent reads (:data:`Percent`); ``None``: it is not read
            (listed in ``percents``).

    Returns:
        A :class:`SourceNumbers`: the exactly read numbers, and the tokens that could mean more than
        one value (or a value with another sign or scale) with the values they could mean, and the
        percents read with no declared meaning.
    """
    found = _tokens(text, first_only)
    convention = _convention_of(context) if context is not None else _convention(found)
    out = SourceNumbers()
    for token in found:
        _place(out, token, convention, percent)
    return out


def _place(out: SourceNumbers, token: _Token, convention: str | None, percent: Percent | None) -> None:
    """Put one token of :func:`scan_numbers` where it belongs in ``out``: a percent read with no
    declared meaning, an exact number (one reading, or the document's convention's), or an ambiguous
    token with every value it could mean (either sign, when a dash or a bracket is in it)."""
    written, readings, doubtful, negative, pct = token
    if pct and percent == "fraction":
        readings = {k: normalize(Fraction(v) / 100) for k, v in readings.items()}
    values = tuple(dict.fromkeys(negative * v for v in readings.values()))
    if not values:
        return
    if pct and percent is None:
        out.percents.append((written.strip(), tuple(dict.fromkeys(values + tuple(normalize(Fraction(v) / 100) for v in values)))))
        return
    exact = None if doubtful else _exact(readings, values, negative, convention)
    if exact is not None:
        out.exact.append(exact)
        return
    # two values, or a value of the convention the document does not use (12,5 beside 18.86)
    if any(c in written for c in _DASHES + "()"):
        values = tuple(dict.fromkeys(values + tuple(-v for v in values)))  # either sign
    out.ambiguous.append((written.strip(), values))


def _exact(readings: dict[str, Number], values: tuple[Number, ...], negative: int, convention: str | None) -> Number | None:
    """A token's one value: the same in every convention that reads it (and the document shows no
    other), or the one the document's convention gives; ``None`` when neither."""
    if (convention is None or convention in readings) and len(values) == 1:
        return values[0]
    if convention in readings:
        return negative * readings[convention]
    return None
