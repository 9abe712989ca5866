"""Numbers in free text, read by one set of rules: the last number of a reply, every number of a reply.

:func:`numbers_in` is the lexer that the raw baseline's ``last_number`` answer format and the
report's "does the reply show the value" use; the step reader (:mod:`stepguard.trace._parse`) reads
a value at a known place with the same refusals (:func:`around_problem` and
:func:`stepguard.evaluator.read_number`), so a number is read the same way wherever a model writes
it, or refused for the same named reason (docs/reading.md):

* ``unknown dash``: a dash that is no minus sign before the digits (``–42`` en dash, ``‐42``
  hyphen, ``－42`` full-width): the sign is unclear, so the number is not read (``-`` and U+2212
  are minus signs).
* ``accounting parentheses``: ``(42.00)`` with no sign inside is an accountant's negative or a
  plain bracket; which is not written, so it is refused (``(-42.00)`` is -42).
* ``unclear sign``: a sign the number does not carry (``- 42``, ``-$42``, ``-\u00a042``, ``_-42_``,
  ``minus 42``) or two signs (``--42``, ``-(-42)``): the step reader reads ``- 42`` as -42 and refuses
  the rest, so the sign is never dropped (a list's ``- 42`` at a line's head is a marker: 42).
* ``grouped digits``: digit groups joined by a plain space or an apostrophe (``1 176.50``,
  ``12 000``, ``12'000``): read whole they are one number in a notation this reader does not take,
  read in parts they are two; refused either way.
* what :func:`stepguard.evaluator.read_number` refuses (a decimal comma, misplaced groups, the
  digits of two scripts, too many digits), and a number that runs on into more of a number
  (``1e3``, ``0x1F``, ``7.5%``) or is part of a date, a time, a range or a fraction.
"""

from __future__ import annotations

import re
import unicodedata
from typing import NamedTuple

from stepguard.errors import EvaluationError
from stepguard.evaluator import Number, read_number
from stepguard.trace._scale import SCALE_AFTER

__all__ = ["DASHES", "WrittenNumber", "around_problem", "numbers_in"]

DASHES = "\u2010\u2011\u2012\u2013\u2014\u2015\u2043\u02d7\u2e3a\u2e3b\ufe58\ufe63\uff0d"
"""Dashes that are not minus signs: hyphen, non-breaking hyphen, figure, en and em dash, horizontal
bar, hyphen bullet, modifier minus, two- and three-em dash, small em dash, small and full-width
hyphen-minus. Written right before a number's digits, the number's sign is unclear."""

# A run of a written number: digits with the separators and points read_number knows, so that
# ``1,176.50`` is read whole and ``12,5`` is refused whole rather than read as 5.
_RUN = re.compile(r"(?<![\w.])([-+\u2212]?)(\d(?:[\d.,\u2009\u202f]|\{,\}|\\,)*+)")
_AFTER_REFUSED = re.compile(r"[eE][-+]?\d|\s*%")
_GLUE = "-/:\u2212\u2013\u2014\u00a0\u00b7"
"""Characters that join a number to digits before it into one token (a date, a time, a range, a fraction)."""
_TOKEN_HEAD = re.compile(r"[\w.,\-/:\u2212\u2013\u2014\u00a0\u00b7]*$")
_WORD_TAIL = re.compile(r"\w*")
_TOKEN_TAIL = re.compile(r"[\w\-/:\u2212\u2013\u2014\u00a0\u00b7]*")
_DASH_BEFORE = re.compile(rf"[{DASHES}][ \t]*+\Z")
_GROUP_BEFORE = re.compile(r"(?<!\d)\d{1,3}+(?:[ '’]\d{3})*+[ '’]\Z")
_PART_BEFORE = re.compile(r"\w(?:[,\u2009\u202f]|\{,\}|\\,)\Z")  # 319 of 54_085_558,319: a tail the run could not start at
_HEDGE_BEFORE = re.compile(r"[~∼≈≃±][ \t]*+[-+\u2212]?\Z")  # ~42, ≈ -42: approximately
_OPEN_BEFORE = re.compile(r"(?<!\\)\([ \t]*+[$€£¥]?[ \t]*+\Z")  # not LaTeX's \( ... \)
_CLOSE_AFTER = re.compile(r"[ \t]*+\)")
# a sign the run did not take: set apart by blanks, invisible characters, marks or a currency (- 42, -\u00a042,
# -$42, _-42_ where "_" kept the run from starting at the sign), or written as a word (minus 42)
_SIGN_APART = re.compile(
    r"(?:(?<![^\W_])[-+\u2212](?:[ \t\u00a0\u2009\u202f\u200b\u00ad*_`$€£¥]|\\\$)*+"
    r"|(?<![A-Za-z])(?i:minus|negative)[ \t]++)\Z"
)
_LINE_HEAD = re.compile(r"(?:\A|\n)[ \t>]*+\Z")  # where a list marker "- " may stand: a line's first mark
_SIGN_BEFORE_SIGN = re.compile(rf"[-+\u2212{DASHES}][ \t]*+(?:\([ \t]*+)?\Z")  # --42, -(-42), - -42, +-42
# 10^-3, 2**10, 1e-5, 3/-4, 3 / 4: a power's exponent, an exponent's digits, a fraction's denominator
_POWER_BEFORE = re.compile(r"[\d)}][ \t]*+(?:\^|\*\*)[ \t{(]*+[-+\u2212]?\Z|\d[eE][-+\u2212]?\Z|\d[ \t]*+[/÷∕⁄][ \t]*+[-+\u2212]?\Z")
_POWER_AFTER = re.compile(r"[ \t]*+(?:\^|\*\*)[ \t{(]*+[-+\u2212]?\d")  # not **42** (bold)
_LOOK_BACK = 40


class WrittenNumber(NamedTuple):
    """One number as a reply writes it, and how it reads."""

    start: int
    """Where it starts in the text (its sign, if any)."""
    end: int
    """Where it ends."""
    text: str
    """As written (``"1,176.50"``)."""
    value: Number | None
    """The exact value; ``None`` when refused."""
    why: str | None
    """Why it is refused (``"unknown dash: '–42'"``); ``None`` when read."""


def around_problem(text: str, start: int, end: int, signed: bool) -> str | None:
    """Why the number written at ``text[start:end]`` is not read on account of what stands around it.

    ``signed``: the number carries its own ``-``, ``+`` or U+2212 sign. Refusals (the module's
    docstring): ``unknown dash``, ``accounting parentheses``, ``grouped digits``, ``part of a
    longer number`` (``319`` of ``x_558,319``: digits right after a group separator that follows a
    letter, a digit or ``_``; a power's base or exponent, ``10^-3``, ``2**10``; an exponent's
    digits, ``5`` of ``1e-5``; a fraction's denominator, ``3 / -4``, ``3 / 4``), ``unclear sign`` (a
    sign the number does not carry: ``- 42``, ``-$42``, ``_-42_``, ``minus 42``; two signs: ``--42``,
    ``-(-42)``; a list's ``- 42`` at a line's head is a marker, read 42), ``correction or hedge``
    (``~42``, ``≈ 42``) and ``combining or invisible mark`` right after the digits (``42\u0338``,
    ``42\u200b``), as the step reader names them.
    """
    before = text[max(0, start - _LOOK_BACK):start]
    if not signed and _PART_BEFORE.search(before):
        return "part of a longer number"
    if _POWER_BEFORE.search(before) or _POWER_AFTER.match(text, end):
        return "part of a longer number"  # a power's base or exponent (10^-3, 2**10), 1e-5's 5, 3 / -4's -4
    if signed and _SIGN_BEFORE_SIGN.search(before):
        return "unclear sign"  # --42, -(-42): two signs, or a dash and a sign
    if not signed:
        apart = _SIGN_APART.search(before)
        if apart is not None and (apart.group()[:1].isalpha() or not _LINE_HEAD.search(before, 0, apart.start())
                                  or (apart.start() == 0 and start > _LOOK_BACK)):
            return "unclear sign"  # - 42, -$42, minus 42 (a list's "- 42" at a line's head is a marker)
    if not signed and _DASH_BEFORE.search(before):
        return "unknown dash"
    if _GROUP_BEFORE.search(before) and re.match(r"\d{3}(?!\d)", text[start + signed:end]):
        return "grouped digits"
    if not signed and _OPEN_BEFORE.search(before) and _CLOSE_AFTER.match(text, end):
        return "accounting parentheses"
    if _HEDGE_BEFORE.search(before):
        return "correction or hedge"
    if end < len(text) and unicodedata.category(text[end]) in ("Mn", "Mc", "Me", "Cf"):
        return "combining or invisible mark"
    return None


def _whole(text: str, run: re.Match[str]) -> tuple[str, int, str | None]:
    """A run of :data:`_RUN` as written, where it ends, and why it is not one number on its own
    (``None``: it is).

    It is not when it is the tail of a token joined to digits before it (``2024-05-01``, ``12:30``,
    ``05/01/2024``, ``40-45``, ``1 176.50`` with a no-break space), when the text runs on from it into
    more digits (``0x1F``, ``40_17``, ``40½``, ``2²``), when an exponent or a percent sign follows
    (``1e3``, ``7.5%``), or for what :func:`around_problem` finds.
    """
    body = run.group(2).rstrip(".,")
    written = run.group(1) + body
    start, end = run.start(), run.start(2) + len(body)
    tail = _WORD_TAIL.match(text, end)
    tail_text = tail.group() if tail else ""
    joined_before = not run.group(1) and start >= 2 and text[start - 1] in _GLUE and text[start - 2].isdigit()
    joined_after = text[end:end + 1] in tuple(_GLUE) and text[end + 1:end + 2].isdigit()
    if joined_before or joined_after:
        more = _TOKEN_TAIL.match(text, end) if joined_after else None
        tail_text = more.group() if more else tail_text
        head = _TOKEN_HEAD.search(text, max(0, start - _LOOK_BACK), start)  # a window: linear over many numbers
        token = (head.group() if head else "") + text[start:end] + tail_text
        return written, end, f"{token!r} is not one number (a date, a time, a range or a fraction: its last part is not the answer)"
    if _AFTER_REFUSED.match(text, end):
        return written, end, f"{written!r} is followed by an exponent or a percent sign"
    scale = SCALE_AFTER.match(text, end)
    if scale is not None:
        return written, end, f"number word: {written + scale.group()!r} is not the number alone"
    if any(c.isnumeric() for c in tail_text):
        return written, end, f"{written + tail_text!r} is not one number (it runs on into more digits)"
    around = around_problem(text, start, end, bool(run.group(1)))
    if around is not None:
        shown = text[max(0, start - 3):min(len(text), end + 1)].strip()
        return written, end, f"{around}: {shown!r} is not read as one number"
    return written, end, None


def numbers_in(text: str, max_digits: int = 400) -> list[WrittenNumber]:
    """Every number ``text`` writes, in order, each read exactly or refused with the reason.

    Args:
        text: what a model wrote.
        max_digits: a number with more digits is refused.

    Returns:
        The numbers in order of position; a refused one has ``value=None`` and ``why`` set.
    """
    out: list[WrittenNumber] = []
    for run in _RUN.finditer(text):
        written, end, why = _whole(text, run)
        value: Number | None = None
        if why is None:
            try:
                value = read_number(written, max_digits)
            except (EvaluationError, ValueError) as exc:
                why = f"{written!r} is not one number ({exc})"
        out.append(WrittenNumber(run.start(), end, written, value, why))
    return out
