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
(``12 thousand``, ``3 Mio``, ``12 ½``, ``6 万``).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from fractions import Fraction

from stepguard.evaluator import Number, normalize
from stepguard.trace._parse import SCALE_AFTER

__all__ = ["SourceNumbers", "scan_numbers"]

_DASHES = "-\u2212\u2013\u2012\uff0d\ufe63"  # hyphen-minus, minus sign, en dash, figure dash, full-width and small hyphen-minus
_THIN = "\u00a0\u2009\u202f"  # no-break, thin and narrow no-break space: group separators in either convention
_TOKEN = re.compile(
    rf"(?<![\w.,'’])(?P<open>\(\s*)?(?P<sign>[{_DASHES}+](?P<gap>[ \t]?))?"
    rf"(?P<body>[0-9](?:[0-9]|[.,'{_THIN} ](?=[0-9]))*)"
    rf"(?P<close>\s*\))?(?P<trail>[{_DASHES}](?![0-9]))?(?![\w]|[.,][0-9])"
)
_MAX_DIGITS = 60


@dataclass
class SourceNumbers:
    """What :func:`scan_numbers` read: ``exact`` numbers (in order), and ``ambiguous`` tokens as
    ``(text as written, the values it could mean)``; an ambiguous token supports none of them."""

    exact: list[Number] = field(default_factory=list)
    ambiguous: list[tuple[str, tuple[Number, ...]]] = field(default_factory=list)


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
    out: dict[str, Number] = {}
    if "'" in body or "’" in body:  # Swiss groups: 1'234.56
        value = _grouped(body.replace("’", "'"), "'" + _THIN, ".")
        return {"point": value} if value is not None else {}
    for name, group, point in (("point", "," + _THIN, "."), ("comma", "." + _THIN, ",")):
        value = _grouped(body, group, point)
        if value is not None:
            out[name] = value
    return out


def _numeric_after(text: str, end: int) -> bool:
    """A numeric character of another script or a vulgar fraction right after ``end`` (``12 ½``, ``6 万``)."""
    rest = text[end:end + 4].lstrip(" \t" + _THIN)
    return bool(rest) and rest[0] > "\x7f" and unicodedata.numeric(rest[0], None) is not None


_Found = list[tuple[str, dict[str, Number], bool, int]]  # (as written, readings, doubtful, sign)
_SPACE_GROUPS = re.compile(r"[0-9]{1,3}(?: [0-9]{3})+(?![0-9])")


def _tokens(text: str) -> _Found:
    found: _Found = []
    for m in _TOKEN.finditer(text[:1_000_000]):
        body, sign = m.group("body"), m.group("sign") or ""
        negative = -1 if sign[:1] in _DASHES and sign else 1
        doubtful = bool(m.group("open") and m.group("close")) or bool(m.group("trail")) or bool(sign and m.group("gap"))
        doubtful = doubtful or bool(SCALE_AFTER.match(text, m.end())) or _numeric_after(text, m.end())
        if " " in body:  # plain-space groups: one number (1 234.56) or several (5 120.00: a quantity and a price?)
            if _SPACE_GROUPS.match(body) and " " not in body[_SPACE_GROUPS.match(body).end():]:  # type: ignore[union-attr]
                found.append((m.group(), _readings(body.replace(" ", "")), True, negative))
                continue
            found.extend((p, _readings(p), doubtful, negative if i == 0 else 1) for i, p in enumerate(body.split(" ")))
            continue
        found.append((m.group(), _readings(body), doubtful, negative))
    return found


def _convention(found: _Found) -> str | None:
    """The one convention the tokens that only one convention reads show (18.86, 0,81, 1.234,56), if one."""
    shown = {name for _, readings, doubtful, _ in found if len(readings) == 1 and not doubtful for name in readings}
    return next(iter(shown)) if len(shown) == 1 else None


def scan_numbers(text: str, context: str | None = None) -> SourceNumbers:
    """Read every number ``text`` writes (rules: the module's docstring).

    Args:
        text: the part of a document to read; only its first 1,000,000 characters are read.
        context: the whole document, when ``text`` is a part of it: the convention is judged on it.

    Returns:
        A :class:`SourceNumbers`: the exactly read numbers, and the tokens that could mean more than
        one value (or a value with another sign or scale) with the values they could mean.
    """
    found = _tokens(text)
    convention = _convention(_tokens(context) if context is not None else found)
    out = SourceNumbers()
    for written, readings, doubtful, negative in found:
        values = tuple(dict.fromkeys(negative * v for v in readings.values()))
        if not values:
            continue
        if not doubtful and (convention is None or convention in readings) and len(values) == 1:
            out.exact.append(values[0])
        elif not doubtful and convention in readings:
            out.exact.append(negative * readings[convention])  # type: ignore[index]
        else:  # two values, or a value of the convention the document does not use (12,5 beside 18.86)
            if any(c in written for c in _DASHES + "()"):
                values = tuple(dict.fromkeys(values + tuple(-v for v in values)))  # either sign
            out.ambiguous.append((written.strip(), values))
    return out
